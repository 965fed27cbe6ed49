# The OpenCL device library's kernels (src/ops.cl) are embedded as a string literal: the
# library builds its program from them on each device at run time.
file(READ ${CMAKE_CURRENT_SOURCE_DIR}/src/ops.cl _ops_cl)
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/ops_cl.inc CONTENT "R\"CLC(@_ops_cl@)CLC\"" @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/ops.cl)
target_include_directories({{ p }}_device PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
if(NOT DEFINED ENV{DEVKIT_SDK})
  # Built by hand, without devkit: the system's OpenCL (headers and ICD loader).
  find_package(OpenCL)
  if(NOT OpenCL_FOUND)
    message(FATAL_ERROR "the {{ NAME }} device library needs OpenCL: install the headers and the ICD loader "
                        "(Debian: opencl-c-headers ocl-icd-opencl-dev), or build with devkit")
  endif()
  target_link_libraries({{ p }}_device PUBLIC OpenCL::OpenCL)
endif()
