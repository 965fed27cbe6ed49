#!/usr/bin/env bash
# Run the Python inference demo on {{ device_type }} with this bundle's plugin.
#   ./run.sh [--model-dir DIR] [--warmup N] [--repeats N]
#   ./run.sh --check     the bundle's int8 check: its quantized model against its goldens
# Needs python3 with the paddlepaddle version named in manifest.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CUSTOM_DEVICE_ROOT="$here/lib"
if [ "${1:-}" = "--check" ]; then
  shift
  exec "${PYTHON:-python3}" "$here/demo/python/infer.py" --check "$here/check" "$@"
fi
exec "${PYTHON:-python3}" "$here/demo/python/infer.py" "$@"
