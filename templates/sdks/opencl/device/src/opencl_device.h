// Internals of the {{ NAME }} device library on OpenCL, shared by runtime.cc (devices,
// memory, streams, events) and ops.cc (the compute ops as OpenCL C kernels). Not part of
// the C API ({{ p }}_device.h).
//
// The mapping, in one place:
//   device         one OpenCL device (every device of every platform, in platform order;
//                  {{ NAME }}_OPENCL_PLATFORM=<text> keeps the platforms whose name holds it);
//                  a context per platform, so copies between its devices stay on the device
//   device memory  one cl_mem buffer per allocation, handed out at an address reserved
//                  (PROT_NONE) for it alone: the host cannot read it, and an op's pointer
//                  into an allocation is that buffer plus an offset
//   stream         an in-order command queue; events are marker events on it
//   ops            kernels of one program per device, built from ops.cl at first use
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core.h"
#include "{{ p }}_device.h"

namespace {{ p }} {

// Where a device pointer lives: its allocation's buffer and the offset into it.
struct BufferRef {
  cl_mem buffer = nullptr;
  size_t offset = 0;
  size_t available = 0;  // bytes of the buffer from `offset` on: a copy or fill of more is refused
};

struct DeviceInfo {
  cl_context context;
  cl_device_id id;
  bool fp64;  // cl_khr_fp64: FLOAT64 ops run; without it they are UNSUPPORTED
  bool fp16;  // cl_khr_fp16 (said when FLOAT16 is asked: this flavour has no 16-bit kernels yet)
};

// Devices are discovered once, at the first call that needs them.
int device_count();
bool valid_device(int device);
const DeviceInfo& device_info(int device);
int current_device();

// The queue of `stream` (NULL: the current device's default stream) and its device.
cl_command_queue queue_of({{ p }}_stream_t stream);
int stream_device({{ p }}_stream_t stream);

// The buffer holding device pointer `ptr` of `device`; false when it is not device memory
// of that device (the op returns INVALID_VALUE).
bool resolve(const void* ptr, int device, BufferRef* ref);

// OpenCL's status as ours; records `op` and the OpenCL error for {{ p }}_error_detail().
{{ p }}_status_t from_cl(cl_int err, const char* op);

// The kernel `name` of `device`'s program (built on first use, then cached), locked for
// setting its arguments and enqueueing: cl_kernel arguments are not thread-safe.
class KernelLock {
 public:
  KernelLock(int device, const std::string& name);
  ~KernelLock();
  KernelLock(const KernelLock&) = delete;
  KernelLock& operator=(const KernelLock&) = delete;
  cl_kernel kernel() const { return kernel_; }
  cl_int status() const { return status_; }

 private:
  int device_;
  cl_kernel kernel_ = nullptr;
  cl_int status_ = CL_SUCCESS;
};

}  // namespace {{ p }}
