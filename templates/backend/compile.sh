#!/usr/bin/env bash
# Build the {{ NAME }} plugin without devkit: configure, compile, test the device
# library, and package the wheel into dist/. Needs cmake, a C++17 compiler and the
# target paddlepaddle installed for `python3`.
set -euo pipefail
cd "$(dirname "$0")"

BUILD_DIR=${BUILD_DIR:-build/cmake}
ON_INFER=${ON_INFER:-OFF}
PYTHON=${PYTHON:-python3}

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DWITH_TESTING=ON -DON_INFER="$ON_INFER" \
  -DPython_EXECUTABLE="$(command -v "$PYTHON")"
cmake --build "$BUILD_DIR" -j "$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure

# The wheel (scikit-build-core builds in its own tree under build/).
"$PYTHON" -m pip wheel --no-build-isolation --no-deps -w dist .
ls -l dist/
