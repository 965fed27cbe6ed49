#include "core.h"

#include <utility>

#ifdef {{ NAME }}_SDK_BUILD_INFO
// The vendor SDK this library was built against ([tool.devkit.sdk]: name=version), for
// whoever asks which SDK a plugin needs (devkit reads it from the ELF file).
extern "C" __attribute__((visibility("default"), used)) const char {{ p }}_sdk_build_info[] =
    "{{ p }}-sdk-build: " {{ NAME }}_SDK_BUILD_INFO;
#endif

namespace {{ p }}::core {
namespace {
thread_local std::string g_error_detail;  // what {{ p }}_error_detail returns
}  // namespace

void set_error_detail(std::string detail) { g_error_detail = std::move(detail); }

void clear_error_detail() { g_error_detail.clear(); }

{{ p }}_status_t fail(const char* call, {{ p }}_status_t status, const std::string& reason) {
  set_error_detail(std::string(call) + " failed: " + {{ p }}_status_string(status) + ": " + reason);
  return status;
}

const char* dtype_name(int dtype) {
  switch (static_cast<{{ p }}_dtype_t>(dtype)) {
    case {{ NAME }}_BOOL: return "bool";
    case {{ NAME }}_UINT8: return "uint8";
    case {{ NAME }}_INT8: return "int8";
    case {{ NAME }}_INT16: return "int16";
    case {{ NAME }}_INT32: return "int32";
    case {{ NAME }}_INT64: return "int64";
    case {{ NAME }}_FLOAT16: return "float16";
    case {{ NAME }}_BFLOAT16: return "bfloat16";
    case {{ NAME }}_FLOAT32: return "float32";
    case {{ NAME }}_FLOAT64: return "float64";
  }
  return "unknown-dtype";
}

{{ p }}_status_t unimplemented(const char* op, const char* implementation) {
  set_error_detail(std::string(op) + " is not implemented by " + implementation);
  return {{ NAME }}_ERROR_UNSUPPORTED;
}

}  // namespace {{ p }}::core

extern "C" {

const char* {{ p }}_status_string({{ p }}_status_t status) {
  switch (status) {
    case {{ NAME }}_OK: return "ok";
    case {{ NAME }}_ERROR_INVALID_VALUE: return "invalid value";
    case {{ NAME }}_ERROR_OUT_OF_MEMORY: return "out of device memory";
    case {{ NAME }}_ERROR_NOT_READY: return "not ready";
    case {{ NAME }}_ERROR_UNSUPPORTED: return "unsupported";
    case {{ NAME }}_ERROR_PEER: return "a peer rank failed";
  }
  return "unknown status";
}

const char* {{ p }}_error_detail(void) { return {{ p }}::core::g_error_detail.c_str(); }

size_t {{ p }}_dtype_size({{ p }}_dtype_t dtype) {
  switch (dtype) {
    case {{ NAME }}_BOOL: case {{ NAME }}_UINT8: case {{ NAME }}_INT8: return 1;
    case {{ NAME }}_INT16: case {{ NAME }}_FLOAT16: case {{ NAME }}_BFLOAT16: return 2;
    case {{ NAME }}_INT32: case {{ NAME }}_FLOAT32: return 4;
    case {{ NAME }}_INT64: case {{ NAME }}_FLOAT64: return 8;
  }
  return 0;
}

}  // extern "C"
