#!/usr/bin/env bash
# Set up devkit in a virtual environment and run its main job on defaults:
# render the STPU backend, build its plugin wheel, verify it trains MNIST on stpu:0.
#
#   bash compile.sh            # main job; work directory ./work-stpu (WORK_DIR to change)
#   bash compile.sh test       # run the test suite (extra arguments go to pytest)
set -euo pipefail
cd "$(dirname "$0")"

VENV=${VENV:-.venv}
WORK_DIR=${WORK_DIR:-work-stpu}
PYTHON=${PYTHON:-python3}

# The main job needs devkit alone; the tests add their tools ([test]). Each set has a stamp,
# and an install is redone when devkit's sources are newer than it. --no-compile: bytecode is
# written on first import, for the modules a run uses, instead of for every installed file.
current() { [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ] && [ -z "$(find toolchain templates recipes images -newer "$1" -print -quit)" ]; }
if [ "${1:-}" = "test" ]; then wanted=(test); spec=".[test]"; else wanted=(main test); spec="."; fi
installed=""
for set in "${wanted[@]}"; do current "$VENV/.devkit-installed-$set" && installed=$set && break; done
if [ ! -x "$VENV/bin/devkit" ] || [ -z "$installed" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-compile -q "$spec"
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
