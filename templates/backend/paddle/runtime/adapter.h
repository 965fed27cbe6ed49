// What the Paddle runtime adapter's files share: runtime.cc fills C_DeviceInterface and calls
// these for the slots that live in their own files.
#pragma once

#include "paddle/phi/backends/device_ext.h"
#include "{{ p }}_device.h"

namespace {{ p }}_runtime {

// The device library's status as Paddle's C_Status, an error printed with its detail (the
// failed op of earlier queued work, for a synchronising call). `what`: the slot.
C_Status to_c(const char* what, {{ p }}_status_t status);

// profiler.cc: the profiler slots (paddle.profiler with ProfilerTarget.CUSTOM_DEVICE).
void fill_profiler(C_DeviceInterface* ifc);

// graph.cc: graph capture and replay (paddle.device.cuda.graphs.CUDAGraph on a CustomPlace) and
// the BLAS handle slots Paddle asks before it captures.
void fill_graph_capture(C_DeviceInterface* ifc);

}  // namespace {{ p }}_runtime
