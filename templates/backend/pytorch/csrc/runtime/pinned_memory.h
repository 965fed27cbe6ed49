// Pinned host memory for the {{ device_type }} device: what tensor.pin_memory() and
// DataLoader(pin_memory=True) allocate, and what tensor.is_pinned() recognises.
#pragma once

#include <c10/core/Allocator.h>

namespace torch_{{ p }} {

// Host memory the adapter hands out as pinned. The device library has no page-locked host
// allocation (the host-backed device copies from any host memory at the same speed), so the
// blocks are ordinary host memory, recorded so that is_pinned() can answer for them.
at::Allocator* pinned_memory_allocator();

// True when `ptr` lies inside a live block of pinned_memory_allocator().
bool is_pinned_ptr(const void* ptr);

}  // namespace torch_{{ p }}
