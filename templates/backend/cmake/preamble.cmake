# The preamble every build of the project includes (the root CMakeLists.txt, and each adapter's
# paddle/CMakeLists.txt and pytorch/CMakeLists.txt when built on its own), after project():
# compiler settings, reproducible paths, unity builds, ccache, the sanitizer switch, and the
# device library both adapters link. Once per build: the root's inclusion serves the adapters
# it adds.
include_guard(GLOBAL)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

# The generated project's root (this file is its cmake/), whichever adapter builds.
get_filename_component({{ NAME }}_PROJECT_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT EXISTS ${ {{- NAME }}_PROJECT_DIR}/device/CMakeLists.txt)
  message(FATAL_ERROR "{{ NAME }} device library not found at ${ {{- NAME }}_PROJECT_DIR}/device: build from the generated project")
endif()

# Reproducible binaries: no checkout, build or cache path is compiled in (__FILE__, debug
# info), so the same tree gives the same wheel from any directory. Sources are named from the
# project's root (device/src/..., paddle/kernels/..., pytorch/csrc/...).
add_compile_options("-ffile-prefix-map=${ {{- NAME }}_PROJECT_DIR}/=" "-ffile-prefix-map=${CMAKE_BINARY_DIR}/=")
# ccache (its base_dir is the project) passes the compiler the project's paths relative to the
# build directory, where Ninja runs it (../../device/src/...): mapped alike.
file(RELATIVE_PATH _project_from_build "${CMAKE_BINARY_DIR}" "${ {{- NAME }}_PROJECT_DIR}")
string(REGEX REPLACE "/$" "" _project_from_build "${_project_from_build}")  # (CMake 4 ends it with /)
if(_project_from_build)
  add_compile_options("-ffile-prefix-map=${_project_from_build}/=")
endif()

# Unity builds: an adapter's files share the framework's headers and the template code they
# instantiate, so compiling them in batches (one per core of a small machine) takes a fifth of
# the compiler time of one file at a time (measured: 14 Paddle kernel files, 86 s one by one,
# 18 s as one unit). Errors still name the original file and line. -DCMAKE_UNITY_BUILD=OFF
# compiles file by file: a faster rebuild after editing one file, and the way to find a name
# two files define alike (they share one unit here).
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
endif()
# Units that include their sources by paths from the source directory (CMake 4.0+; older versions
# ignore it), so that a unit's text does not depend on where the project lies: ccache's direct mode
# (a hash of the unit's text and its headers, no preprocessor run) then serves the same tree
# elsewhere. (The PyTorch build's source directory is pytorch/: the device library's units there
# keep absolute paths, and ccache serves them after running the preprocessor.)
set(CMAKE_UNITY_BUILD_RELOCATABLE ON)
# The files edited since devkit first built this tree (DEVKIT_SOLO_SOURCES, paths from the
# project's root) compile alone, out of their batch: after the edit that takes a file out, its
# next edits recompile that file only (measured, host g++: device/src/activation_ops.cc's batch
# 22.7 s, the file alone 5.7 s; paddle/kernels/activation_kernels.cc's batch 9.6 s, alone 2.9 s).
# Each CMakeLists.txt with a unity target applies the list (source properties are per directory).
set({{ NAME }}_SOLO_SOURCES "")
set(_solo_sources "$ENV{DEVKIT_SOLO_SOURCES}")
foreach(_source IN LISTS _solo_sources)
  if(NOT _source MATCHES "^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*$")
    message(FATAL_ERROR "DEVKIT_SOLO_SOURCES has '${_source}', which is not a source path below the project")
  endif()
  list(APPEND {{ NAME }}_SOLO_SOURCES "${ {{- NAME }}_PROJECT_DIR}/${_source}")
endforeach()

# Unity batches of `size` sources for `target` (called in the directory that made it, once its
# sources are in): each source's batch is fixed by its place among the target's sources, as CMake's
# BATCH mode forms them from nothing, and a source edited since the tree was made compiles alone
# while keeping its place. In BATCH mode the batches after it shifted, so its first edit
# recompiled each of them (CI's short benchmark: 4 compiler runs instead of 2).
function({{ p }}_unity_batches target size)
  get_target_property(_sources ${target} SOURCES)
  set(_place 0)
  foreach(_source IN LISTS _sources)
    get_source_file_property(_skip "${_source}" SKIP_UNITY_BUILD_INCLUSION)
    get_source_file_property(_options "${_source}" COMPILE_OPTIONS)
    if(_source MATCHES "\\.(c|cc|cpp|cxx)$" AND NOT _skip AND NOT _options)  # what BATCH mode takes
      math(EXPR _batch "${_place} / ${size}")
      set_source_files_properties("${_source}" PROPERTIES UNITY_GROUP "batch_${_batch}")
      math(EXPR _place "${_place} + 1")
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD_MODE GROUP)
  set_source_files_properties(${ {{- NAME }}_SOLO_SOURCES} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()

# -D{{ NAME }}_SANITIZE=address (ASan+UBSan) or =thread (TSan): everything after this point
# built with GCC's or Clang's sanitizers, at -O1 with line tables (how CI runs the device
# library's tests: configure with -DWITH_PADDLE=OFF, build test_{{ p }}_device, run it).
set({{ NAME }}_SANITIZE "" CACHE STRING "address or thread: build with that sanitizer (debugging, CI)")
if({{ NAME }}_SANITIZE STREQUAL "address")
  set(_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif({{ NAME }}_SANITIZE STREQUAL "thread")
  set(_sanitize_flags -fsanitize=thread)
elseif({{ NAME }}_SANITIZE)
  message(FATAL_ERROR "{{ NAME }}_SANITIZE=${ {{- NAME }}_SANITIZE} is not address or thread")
endif()
if(_sanitize_flags)
  add_compile_options(${_sanitize_flags} -O1 -g1 -fno-omit-frame-pointer)
  add_link_options(${_sanitize_flags})
endif()

# GNU gold where the toolchain has it (-D{{ NAME }}_LINKER=default keeps the toolchain's own): it
# links an adapter against the framework's large libraries in half GNU ld's time (measured, host:
# the Paddle adapter against libpaddle.so, 0.42 s vs 0.85 s), which every rebuild waits for.
set({{ NAME }}_LINKER "gold" CACHE STRING "gold (when the toolchain has it) or default")
if({{ NAME }}_LINKER STREQUAL "gold" AND NOT _sanitize_flags)  # (sanitizers: the toolchain's)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=gold" {{ NAME }}_HAVE_GOLD)
  if({{ NAME }}_HAVE_GOLD)
    add_link_options(-fuse-ld=gold)
  endif()
elseif(NOT {{ NAME }}_LINKER MATCHES "^(gold|default)$")
  message(FATAL_ERROR "{{ NAME }}_LINKER=${ {{- NAME }}_LINKER} is not gold or default")
endif()

# The device library ({{ p }}_device): one C library under both frameworks.
add_subdirectory(${ {{- NAME }}_PROJECT_DIR}/device ${CMAKE_BINARY_DIR}/device)

# The device library's conformance suite (tests/conformance: every flavour's cases, by area) and
# the flavour's own cases (tests/flavour), one binary; and the golden checker
# (devkit test-ops --golden). devkit builds them with each plugin and bundles them with the
# device library, so that verify runs the suite on the target.
option(WITH_TESTING "Build the device library's conformance suite" ON)
if(WITH_TESTING)
  enable_testing()
  set(_tests ${ {{- NAME }}_PROJECT_DIR}/tests)
  file(GLOB _conformance_cases CONFIGURE_DEPENDS ${_tests}/conformance/*_cases.cc ${_tests}/flavour/*.cc)
  add_executable(test_{{ p }}_device ${_tests}/conformance/harness.cc ${_conformance_cases})
  target_include_directories(test_{{ p }}_device PRIVATE ${_tests}/conformance)
  target_link_libraries(test_{{ p }}_device PRIVATE {{ p }}_device ${CMAKE_DL_LIBS})  # dlsym: glibc < 2.34 has it in libdl
  add_test(NAME {{ p }}_device_conformance COMMAND test_{{ p }}_device)
  add_executable(golden_{{ p }}_device ${_tests}/conformance/golden_check.cc)
  target_link_libraries(golden_{{ p }}_device PRIVATE {{ p }}_device)
  # The test code at -O1 (after the build type's -O3): it compiles in half the time and the
  # suite runs as fast (measured: its time is the library's work and the cases' waits).
  target_compile_options(test_{{ p }}_device PRIVATE -O1)
  target_compile_options(golden_{{ p }}_device PRIVATE -O1)
  install(TARGETS test_{{ p }}_device golden_{{ p }}_device RUNTIME DESTINATION tests COMPONENT tests EXCLUDE_FROM_ALL)
endif()
