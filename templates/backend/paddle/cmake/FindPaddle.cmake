# Finds the C++ side of an installed (or unpacked) paddlepaddle wheel.
#
# Input (cache or -D):
#   PADDLE_ROOT               the wheel's `paddle` package directory; found
#                             from the Python interpreter when unset
#   PADDLE_REQUIRED_VERSION   fail unless the found Paddle is exactly this
#   PADDLE_INFERENCE_DIR      with ON_INFER: an unpacked Paddle Inference
#                             release to link instead of the wheel's libraries
# Output:
#   Paddle::Paddle, PADDLE_VERSION, PADDLE_INCLUDE_DIR, PADDLE_CXX11_ABI

if(NOT PADDLE_ROOT AND DEFINED ENV{PADDLE_ROOT})
  set(PADDLE_ROOT "$ENV{PADDLE_ROOT}")
endif()
if(NOT PADDLE_ROOT)
  find_package(Python REQUIRED COMPONENTS Interpreter)
  # find_spec locates the package without importing it (importing takes seconds
  # and would load any plugin already installed).
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import importlib.util as u, os; s = u.find_spec('paddle'); print(os.path.dirname(s.origin) if s else '')"
    OUTPUT_VARIABLE PADDLE_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT PADDLE_ROOT)
    message(FATAL_ERROR
      "paddlepaddle is not installed for ${Python_EXECUTABLE}. "
      "Install the wheel to build against (pip install paddlepaddle==<version>) or pass -DPADDLE_ROOT=<site-packages>/paddle.")
  endif()
endif()

set(PADDLE_INCLUDE_DIR "${PADDLE_ROOT}/include")
if(NOT EXISTS "${PADDLE_INCLUDE_DIR}/paddle/phi/backends/device_ext.h")
  message(FATAL_ERROR
    "Paddle's C++ headers are missing: ${PADDLE_INCLUDE_DIR}/paddle/phi/backends/device_ext.h not found. "
    "This paddlepaddle build does not ship headers for custom devices; use an official paddlepaddle wheel.")
endif()

file(STRINGS "${PADDLE_ROOT}/version/__init__.py" _paddle_version_line REGEX "^full_version *=")
string(REGEX REPLACE "^full_version *= *['\"]([^'\"]+)['\"].*" "\\1" PADDLE_VERSION "${_paddle_version_line}")
if(NOT PADDLE_VERSION)
  message(FATAL_ERROR "Cannot read Paddle's version from ${PADDLE_ROOT}/version/__init__.py")
endif()
if(PADDLE_REQUIRED_VERSION AND NOT PADDLE_VERSION STREQUAL PADDLE_REQUIRED_VERSION)
  message(FATAL_ERROR
    "Found Paddle ${PADDLE_VERSION} in ${PADDLE_ROOT} but this build is pinned to ${PADDLE_REQUIRED_VERSION}. "
    "Install paddlepaddle==${PADDLE_REQUIRED_VERSION} in the build environment or change the pin.")
endif()

set(PADDLE_CXX11_ABI 1)
add_library(Paddle::Paddle INTERFACE IMPORTED)
target_include_directories(Paddle::Paddle SYSTEM INTERFACE "${PADDLE_INCLUDE_DIR}")

if(ON_INFER AND PADDLE_INFERENCE_DIR)
  set(_inference_lib "${PADDLE_INFERENCE_DIR}/paddle/lib/libpaddle_inference.so")
  if(NOT EXISTS "${_inference_lib}")
    message(FATAL_ERROR
      "PADDLE_INFERENCE_DIR=${PADDLE_INFERENCE_DIR} has no paddle/lib/libpaddle_inference.so; "
      "point it at an unpacked Paddle Inference release.")
  endif()
  target_link_libraries(Paddle::Paddle INTERFACE "${_inference_lib}")
  add_library(Paddle::PIR INTERFACE IMPORTED)  # (the inference library holds PIR too)
  message(STATUS "Paddle ${PADDLE_VERSION}: headers from ${PADDLE_ROOT}, linking ${_inference_lib}")
  return()
endif()
# Paddle's PIR (programs, passes, the Custom Engine's executor) is in libpaddle.so, the Python
# extension module: what the int8 engine (engine/) links. Only its shared library links it: an
# executable would need libpython for the extension's Python symbols.
find_library(PADDLE_PIR_LIBRARY NAMES paddle PATHS "${PADDLE_ROOT}/base" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
if(NOT PADDLE_PIR_LIBRARY)
  message(FATAL_ERROR "libpaddle.so not found in ${PADDLE_ROOT}/base: the int8 engine needs Paddle's PIR. "
                      "Is ${PADDLE_ROOT} a complete paddlepaddle wheel?")
endif()
add_library(Paddle::PIR INTERFACE IMPORTED)
target_link_libraries(Paddle::PIR INTERFACE "${PADDLE_PIR_LIBRARY}")
# Some releases (3.2.2 for aarch64) keep PIR's core in a library of its own beside libphi_core.
find_library(PADDLE_PIR_CORE_LIBRARY NAMES pir PATHS "${PADDLE_ROOT}/libs" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
if(PADDLE_PIR_CORE_LIBRARY)
  target_link_libraries(Paddle::PIR INTERFACE "${PADDLE_PIR_CORE_LIBRARY}")
endif()

# PD_RegisterPhiKernel and the phi runtime live in libphi_core.so and
# libcommon.so; linking only libpaddle.so leaves them undefined at load time.
foreach(_lib phi_core common)
  # NO_CMAKE_FIND_ROOT_PATH: PADDLE_ROOT is a host path even when cross-compiling.
  find_library(PADDLE_${_lib}_LIBRARY NAMES ${_lib} PATHS "${PADDLE_ROOT}/libs" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  if(NOT PADDLE_${_lib}_LIBRARY)
    message(FATAL_ERROR
      "lib${_lib}.so not found in ${PADDLE_ROOT}/libs: the plugin's kernels need it. "
      "Is ${PADDLE_ROOT} a complete paddlepaddle wheel?")
  endif()
  target_link_libraries(Paddle::Paddle INTERFACE "${PADDLE_${_lib}_LIBRARY}")
endforeach()
message(STATUS "Paddle ${PADDLE_VERSION} from ${PADDLE_ROOT}")
