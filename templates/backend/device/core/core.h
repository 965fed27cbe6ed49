// The {{ NAME }} device core: what every device library has, whatever runs its ops (the
// host-backed device, an SDK flavour, a vendor's own). A flavour's device/src provides its
// runtime and its ops; it keeps this directory and copies nothing from it.
//
//   core.cc         status and dtype names, dtype sizes, the calling thread's error detail
//   half_types.h    float16 and bfloat16 storage: rounding conversions from and to float
//   op_patterns.cc  lists of op-name patterns ({{ NAME }}_FALLBACK_OPS, unimplemented ops),
//                   which both framework adapters match kernel names against
#pragma once

#include <string>

#include "{{ p }}_device.h"

namespace {{ p }}::core {

// What {{ p }}_error_detail() returns on this thread until the next call sets or clears it.
void set_error_detail(std::string detail);
void clear_error_detail();

// Sets "<call> failed: <status name>: <reason>" as the detail; returns `status`.
{{ p }}_status_t fail(const char* call, {{ p }}_status_t status, const std::string& reason);

// "float32", "bfloat16", ...: the name of a {{ p }}_dtype_t value ("unknown-dtype" for others:
// an int, since a peer's message header or a caller's argument may hold any value).
const char* dtype_name(int dtype);

// Sets "<op> is not implemented by <implementation>" as the detail; returns UNSUPPORTED
// (device/src/unimplemented.cc: the C API ops a flavour lacks).
{{ p }}_status_t unimplemented(const char* op, const char* implementation);

}  // namespace {{ p }}::core
