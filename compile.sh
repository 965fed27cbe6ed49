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

if [ ! -x "$VENV/bin/devkit" ] || [ pyproject.toml -nt "$VENV/.devkit-installed" ] || [ -n "$(find toolchain templates recipes -newer "$VENV/.devkit-installed" -print -quit 2>/dev/null)" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q ".[test]"
  touch "$VENV/.devkit-installed"
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
