// The OpenCL device library's own cases (area flavour.opencl), beside the conformance suite every
// flavour runs (tests/conformance/): what it must do where OpenCL itself can fail.
#include <dlfcn.h>
#include <unistd.h>

#include <CL/cl.h>

#include "conformance.h"

// clSetEventCallback as the ICD loader has it, or failing (g_fail_event_callback): defined here,
// the library's calls resolve to it at link time.
bool g_fail_event_callback = false;
extern "C" cl_int CL_API_CALL clSetEventCallback(cl_event event, cl_int type,
                                                 void(CL_CALLBACK* notify)(cl_event, cl_int, void*), void* data) {
  using Real = cl_int(CL_API_CALL*)(cl_event, cl_int, void(CL_CALLBACK*)(cl_event, cl_int, void*), void*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "clSetEventCallback"));
  return g_fail_event_callback ? CL_OUT_OF_HOST_MEMORY : real(event, type, notify, data);
}

// A host function whose callback cannot be registered is an error of that call; the stream goes
// on (alarm: a stream that waits for ever ends the run instead of hanging it).
CONFORMANCE_CASE("flavour.opencl", a_failed_host_function_does_not_block_the_stream) {
  const int ms = 1;
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  g_fail_event_callback = true;
  const {{ p }}_status_t failed = {{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms));
  g_fail_event_callback = false;
  EXPECT(failed != {{ NAME }}_OK);
  alarm(20);
  EXPECT_OK({{ p }}_stream_synchronize(s));
  alarm(0);
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT_OK({{ p }}_stream_destroy(s));
}
