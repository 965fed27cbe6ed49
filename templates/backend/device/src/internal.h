// Internal helpers shared by the {{ NAME }} device library sources.
#pragma once

#include <functional>

#include "{{ p }}_device.h"

namespace {{ p }} {

// The stream used when a caller passes NULL.
{{ p }}_stream_t default_stream();

// Submit `work` to `stream` (NULL: the default stream), keeping the stream's
// ordering bookkeeping. The host-backed device runs it before returning.
void run_on_stream({{ p }}_stream_t stream, const std::function<void()>& work);

}  // namespace {{ p }}
