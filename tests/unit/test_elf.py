"""The ELF reader on libraries the real g++ and ld build: what pyelftools' own symbol API reads
(the reader decodes the tables in bulk), for 64- and 32-bit libraries, read from bytes and from a file."""

from __future__ import annotations

import io
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from devkit.building.elf import LibraryAbi, read_library, read_library_file

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++ (.ci/run installs it)")

FRAMEWORK = 'extern "C" double framework_entry(double x) { return x; }\n'
PLUGIN = """
extern "C" double framework_entry(double);  // versioned FRAMEWORK_1.0 by libframework.so
extern "C" double unversioned_entry(double);
extern "C" double exp(double);  // GLIBC_2.x where libm is linked
extern "C" __attribute__((weak)) double optional_entry(double);
// as the generated device library embeds it (device/core/core.cc)
extern "C" __attribute__((visibility("default"), used)) const char stpu_sdk_build_info[] = "stpu-sdk-build: acme=1.2.3";
extern "C" __attribute__((visibility("hidden"))) double hidden_helper(double x) { return x * 2; }
extern "C" double plugin_entry(double x) {
  return framework_entry(x) + unversioned_entry(x) + exp(x) + hidden_helper(x) + (optional_entry ? optional_entry(x) : 0);
}
"""


def build(tmp: Path, bits: int) -> Path:
    """libplugin.so linked to libframework.so, whose symbol carries a version: 64-bit by g++ with
    the C and C++ runtimes, 32-bit by g++ -m32 and ld alone (no 32-bit runtime needed)."""
    (tmp / "framework.cc").write_text(FRAMEWORK)
    (tmp / "plugin.cc").write_text(PLUGIN)
    (tmp / "framework.map").write_text("FRAMEWORK_1.0 { global: framework_entry; local: *; };\n")
    framework, plugin, script = tmp / "libframework.so", tmp / "libplugin.so", str(tmp / "framework.map")
    if bits == 64:
        gxx = ["g++", "-shared", "-fPIC", "-O1"]
        run(
            [*gxx, "-Wl,-soname,libframework.so", f"-Wl,--version-script,{script}", str(tmp / "framework.cc")],
            framework,
        )
        run([*gxx, str(tmp / "plugin.cc"), str(framework), "-lm"], plugin)
        return plugin
    try:
        for name in ("framework", "plugin"):
            run(["g++", "-m32", "-fPIC", "-O1", "-c", str(tmp / f"{name}.cc")], tmp / f"{name}.o")
        ld = ["ld", "-m", "elf_i386", "-shared"]
        run([*ld, "-soname", "libframework.so", "--version-script", script, str(tmp / "framework.o")], framework)
        run([*ld, str(tmp / "plugin.o"), str(framework)], plugin)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"this g++ or ld builds no 32-bit x86 library: {exc.stderr.strip()[:200]}")
    return plugin


def run(argv: list[str], out: Path) -> None:
    subprocess.run([*argv, "-o", str(out)], check=True, capture_output=True, text=True)


def pyelftools_reading(path: Path) -> LibraryAbi:
    """The same questions asked symbol by symbol through pyelftools' own API (how devkit read
    libraries before: 5 s for libpaddle.so)."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

    data = path.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    lib = LibraryAbi(name=path.name, machine=elf["e_machine"])
    versions = {}
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            lib.needed = [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
        elif isinstance(section, GNUVerNeedSection):
            versions |= {aux.entry.vna_other: aux.name for _, auxes in section.iter_versions() for aux in auxes}
    dynsym, versym = elf.get_section_by_name(".dynsym"), elf.get_section_by_name(".gnu.version")
    assert isinstance(dynsym, SymbolTableSection) and isinstance(versym, GNUVerSymSection)
    for index, sym in enumerate(dynsym.iter_symbols()):
        if not sym.name:
            continue
        if sym["st_shndx"] != "SHN_UNDEF":
            lib.defined.add(sym.name)
        elif sym["st_info"]["bind"] != "STB_WEAK":
            ndx = versym.get_symbol(index)["ndx"]
            lib.undefined[sym.name] = versions.get(ndx) if isinstance(ndx, int) else None
    lib.sdk = ("acme", "1.2.3") if b"stpu-sdk-build: acme=1.2.3" in data else None
    return lib


@pytest.mark.parametrize("bits", [64, 32])
def test_library_reads_as_pyelftools_reads_it(tmp_path, bits):
    plugin = build(tmp_path, bits)
    lib = read_library_file(plugin)
    assert (
        asdict(lib) == asdict(read_library(plugin.read_bytes(), "libplugin.so")) == asdict(pyelftools_reading(plugin))
    )
    assert lib.machine == ("EM_X86_64" if bits == 64 else "EM_386")
    assert "libframework.so" in lib.needed
    assert lib.undefined["framework_entry"] == "FRAMEWORK_1.0"
    assert lib.undefined["unversioned_entry"] is None
    assert (lib.undefined["exp"] or "").startswith("GLIBC_2.") if bits == 64 else lib.undefined["exp"] is None
    assert "optional_entry" not in lib.undefined  # weak: absence is allowed
    assert {"plugin_entry", "stpu_sdk_build_info"} <= lib.defined and "hidden_helper" not in lib.defined
    assert lib.sdk == ("acme", "1.2.3")


def test_a_symbol_table_past_the_end_of_the_file_is_an_error(tmp_path):
    """A damaged library whose .dynsym runs past its end is not read as one with fewer symbols."""
    from elftools.elf.elffile import ELFFile

    plugin = build(tmp_path, 64)
    data = bytearray(plugin.read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    header = elf["e_shoff"] + elf.get_section_index(".dynsym") * elf["e_shentsize"]
    size = int.from_bytes(data[header + 32 : header + 40], "little")  # Elf64_Shdr.sh_size
    data[header + 32 : header + 40] = (size + 24 * len(data)).to_bytes(8, "little")
    damaged = tmp_path / "libdamaged.so"
    damaged.write_bytes(data)
    with pytest.raises(ValueError, match="runs past the end of the file"):
        read_library_file(damaged)
    with pytest.raises(ValueError, match="runs past the end of the file"):
        read_library(bytes(data), damaged.name)
