#!/usr/bin/env bash
# Set up devkit in a virtual environment and run its main job on defaults:
# render the STPU backend, build its plugin wheel, verify it trains MNIST on stpu:0.
#
#   bash compile.sh            # main job; work directory ./work-stpu (WORK_DIR to change)
#   bash compile.sh test       # run the test suite (extra arguments go to pytest)
#   INSTALLER=pip bash compile.sh   # set up with pip even where uv could (see install below)
set -euo pipefail
cd "$(dirname "$0")"

VENV=${VENV:-.venv}
WORK_DIR=${WORK_DIR:-work-stpu}
PYTHON=${PYTHON:-python3}
INSTALLER=${INSTALLER:-auto}  # auto: uv when pip's settings allow (below), else pip; pip: always pip
case "$INSTALLER" in auto | pip) ;; *) echo "compile.sh: INSTALLER=$INSTALLER is not auto or pip: unset it, or set INSTALLER=pip to set up with pip" >&2; exit 2 ;; esac

# The main job needs devkit alone; the tests add their tools ([test]). Each set has a stamp,
# and an install is redone when devkit's sources are newer than it. No bytecode at install (uv
# writes none, pip is told --no-compile): it is written on first import, for the modules a run uses.
current() { [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ] && [ -z "$(find toolchain templates recipes images -newer "$1" -print -quit)" ]; }
if [ "${1:-}" = "test" ]; then wanted=(test); spec=".[test]"; else wanted=(main test); spec="."; fi
installed=""
for set in "${wanted[@]}"; do current "$VENV/.devkit-installed-$set" && installed=$set && break; done
# uv installs devkit's ~40 packages in 2 s where pip takes 12 (a fresh venv, empty caches). It is used
# when every pip setting that applies has a uv equivalent (toolchain/util/pip_config_for_uv.py prints
# them), so an index set up for pip is honoured; otherwise, or if uv fails, pip installs.
install() {
  local uv_env=()
  [ "$INSTALLER" = pip ] || mapfile -d '' uv_env < <("$VENV/bin/python" toolchain/util/pip_config_for_uv.py)
  if [ ${#uv_env[@]} -gt 0 ] && "$VENV/bin/python" -m pip install --disable-pip-version-check -q "uv>=0.5"; then
    env "${uv_env[@]}" "$VENV/bin/uv" pip install --python "$VENV/bin/python" --reinstall-package accelerator-devkit -q "$1" && return
    echo "compile.sh: uv did not install $1 (above); installing with pip" >&2
  fi
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-compile -q "$1"
}
if [ ! -x "$VENV/bin/devkit" ] || [ -z "$installed" ]; then
  "$PYTHON" -m venv "$VENV"
  install "$spec"
  touch "$VENV/.devkit-installed-${wanted[0]}"
fi

if [ "${1:-}" = "test" ]; then
  shift
  # Lint, format and types first (seconds), as both anchors' test commands do; then the suite.
  "$VENV/bin/ruff" check toolchain tests benchmarks
  "$VENV/bin/ruff" format --check toolchain tests benchmarks
  "$VENV/bin/mypy"
  exec "$VENV/bin/python" -m pytest "$@"
fi

"$VENV/bin/devkit" new-backend STPU --out "$WORK_DIR/STPU" --force
"$VENV/bin/devkit" build "$WORK_DIR/STPU"
"$VENV/bin/devkit" verify "$WORK_DIR/STPU" --model mnist
