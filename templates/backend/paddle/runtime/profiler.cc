// The profiler slots of C_DeviceInterface: paddle.profiler.Profiler with
// ProfilerTarget.CUSTOM_DEVICE (a default target whenever a custom device is loaded) drives
// them through Paddle's CustomTracer. They turn the device library's tracer on and off and
// hand its records to Paddle: each queued item as a device event (its run, on its stream)
// and a runtime event (its enqueue, on the host) that share a correlation id, which is how
// Paddle ties the device time to the operator that queued it.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "adapter.h"
#include "paddle/phi/api/profiler/trace_event.h"

namespace {{ p }}_runtime {
namespace {

constexpr size_t kTraceCapacity = size_t{1} << 18;  // records held between start and collect (14 MiB)

// One profiling session: from paddle.profiler.Profiler() to its end (Paddle's user_data).
struct ProfilerSession {
  bool traced = false;   // false: the device library records no trace; CPU events only
  bool tracing = false;  // between start and stop
  // Paddle's clock (CLOCK_REALTIME, phi::PosixInNsec) minus the device clock, in ns.
  int64_t host_minus_device_ns = 0;
  // The records carry no host thread: their enqueues are put on the thread that started
  // tracing, where Paddle's dynamic-graph ops run, so each lands under the op that queued it.
  uint64_t thread_id = 0;
  uint64_t process_id = 0;
};

uint64_t host_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The two clocks' difference: the host clock read between two reads of the device clock, the
// closest bracket of a few tries taken (its error is at most half the bracket, under a
// microsecond).
{{ p }}_status_t measure_clock_offset(int64_t* host_minus_device) {
  uint64_t best_bracket = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    uint64_t before = 0, after = 0;
    {{ p }}_status_t status = {{ p }}_trace_clock_ns(&before);
    if (status != {{ NAME }}_OK) return status;
    const uint64_t host = host_now_ns();
    status = {{ p }}_trace_clock_ns(&after);
    if (status != {{ NAME }}_OK) return status;
    if (after - before < best_bracket) {
      best_bracket = after - before;
      *host_minus_device = static_cast<int64_t>(host) - static_cast<int64_t>(before + (after - before) / 2);
    }
  }
  return {{ NAME }}_OK;
}

// What Paddle's summary and trace call the item: copies and fills by the names the library
// gives them, everything else a kernel.
phi::TracerEventType event_type(const char* name) {
  if (std::strncmp(name, "memcpy", 6) == 0) return phi::TracerEventType::Memcpy;
  if (std::strncmp(name, "memset", 6) == 0) return phi::TracerEventType::Memset;
  return phi::TracerEventType::Kernel;
}

const char* copy_kind(const char* name) {
  if (std::strcmp(name, "memcpy_h2d") == 0) return "HtoD";
  if (std::strcmp(name, "memcpy_d2h") == 0) return "DtoH";
  if (std::strcmp(name, "memcpy_peer") == 0) return "PtoP";
  return "DtoD";
}

void hand_over(C_Profiler prof, const ProfilerSession& session, const {{ p }}_trace_record_t& record) {
  const auto on_host_clock = [&](uint64_t device_ns) {
    return static_cast<uint64_t>(static_cast<int64_t>(device_ns) + session.host_minus_device_ns);
  };
  std::string name = record.name ? record.name : "?";
  if (record.status != {{ NAME }}_OK)
    name += std::string(" (failed: ") + {{ p }}_status_string(static_cast<{{ p }}_status_t>(record.status)) + ")";
  // Paddle's ids are 32-bit: the library's count from 1 and wrap only after 4 billion items.
  const auto correlation = static_cast<uint32_t>(record.correlation_id);

  const uint64_t enqueued = on_host_clock(record.enqueue_ns);
  phi::RuntimeTraceEvent enqueue("{{ p }}_enqueue " + name, enqueued, enqueued, session.process_id,
                                 session.thread_id, correlation, 0);
  profiler_add_runtime_trace_event(prof, &enqueue);

  phi::DeviceTraceEvent run{};  // (value-initialized: its kernel/memcpy/memset union zeroed)
  run.name = name;
  run.type = event_type(run.name.c_str());
  run.start_ns = on_host_clock(record.start_ns);
  run.end_ns = on_host_clock(record.end_ns);
  run.device_id = static_cast<uint64_t>(record.device);
  run.context_id = 0;
  run.stream_id = record.stream_id;
  run.correlation_id = correlation;
  if (run.type == phi::TracerEventType::Memcpy)
    std::snprintf(run.memcpy_info.copy_kind, phi::kMemKindMaxLen, "%s", copy_kind(record.name ? record.name : ""));
  profiler_add_device_trace_event(prof, &run);
}

ProfilerSession* session_of(void* user_data) { return static_cast<ProfilerSession*>(user_data); }

// A device library without a tracer (its trace calls unsupported) leaves the profile with
// CPU events only: said once per process, never an error.
void say_untraced_once({{ p }}_status_t status) {
  static bool said = false;
  if (said) return;
  said = true;
  std::fprintf(stderr,
               "[{{ p }}] paddle.profiler: the {{ NAME }} device library records no trace (%s): the profile "
               "has CPU events only, no {{ device_type }} rows\n",
               {{ p }}_status_string(status));
}

C_Status ProfilerInitialize(C_Profiler, void** user_data) {
  auto* session = new (std::nothrow) ProfilerSession();
  if (!session) return C_FAILED;
  int64_t offset = 0;
  const {{ p }}_status_t status = measure_clock_offset(&offset);
  if (status == {{ NAME }}_ERROR_UNSUPPORTED) {
    say_untraced_once(status);
  } else if (status != {{ NAME }}_OK) {
    delete session;
    return to_c("profiler_initialize", status);
  } else {
    session->traced = true;
  }
  *user_data = session;
  return C_SUCCESS;
}

C_Status ProfilerFinalize(C_Profiler, void* user_data) {
  ProfilerSession* session = session_of(user_data);
  if (session && session->tracing) {{ p }}_trace_enable(0, 0);
  delete session;
  return C_SUCCESS;
}

C_Status ProfilerPrepareTracing(C_Profiler, void*) { return C_SUCCESS; }

C_Status ProfilerStartTracing(C_Profiler, void* user_data) {
  ProfilerSession* session = session_of(user_data);
  if (!session || !session->traced) return C_SUCCESS;
  const C_Status enabled = to_c("profiler_start_tracing", {{ p }}_trace_enable(1, kTraceCapacity));
  if (enabled != C_SUCCESS) return enabled;
  session->tracing = true;
  session->thread_id = static_cast<uint64_t>(syscall(SYS_gettid));
  session->process_id = static_cast<uint64_t>(getpid());
  return to_c("profiler_start_tracing", measure_clock_offset(&session->host_minus_device_ns));
}

// Stops recording new items, then waits for the queued ones, so each has run and written its
// record before Paddle collects. Like any synchronising call it reports an earlier queued op's
// failure (named).
C_Status ProfilerStopTracing(C_Profiler, void* user_data) {
  ProfilerSession* session = session_of(user_data);
  if (!session || !session->tracing) return C_SUCCESS;
  {{ p }}_trace_enable(0, 0);
  session->tracing = false;
  int devices = 0;
  C_Status status = to_c("profiler_stop_tracing", {{ p }}_device_count(&devices));
  for (int device = 0; device < devices && status == C_SUCCESS; ++device)
    status = to_c("profiler_stop_tracing", {{ p }}_device_synchronize(device));
  return status;
}

C_Status ProfilerCollectTraceData(C_Profiler prof, uint64_t, void* user_data) {
  ProfilerSession* session = session_of(user_data);
  if (!session || !session->traced) return C_SUCCESS;
  try {
    std::vector<{{ p }}_trace_record_t> records(4096);
    size_t count = 0;
    do {
      const C_Status drained =
          to_c("profiler_collect_trace_data", {{ p }}_trace_drain(records.data(), records.size(), &count));
      if (drained != C_SUCCESS) return drained;
      for (size_t i = 0; i < count; ++i) hand_over(prof, *session, records[i]);
    } while (count == records.size());
  } catch (const std::exception& error) {  // (allocation): nothing crosses into Paddle
    std::fprintf(stderr, "[{{ p }}] profiler_collect_trace_data: %s\n", error.what());
    return C_FAILED;
  }
  uint64_t dropped = 0;
  if ({{ p }}_trace_dropped(&dropped) == {{ NAME }}_OK && dropped > 0)
    std::fprintf(stderr,
                 "[{{ p }}] paddle.profiler: %llu {{ device_type }} items are missing from the profile: the "
                 "tracer holds %zu records between start and stop; profile fewer steps at a time\n",
                 static_cast<unsigned long long>(dropped), kTraceCapacity);
  return C_SUCCESS;
}

}  // namespace

void fill_profiler(C_DeviceInterface* ifc) {
  ifc->profiler_initialize = ProfilerInitialize;
  ifc->profiler_finalize = ProfilerFinalize;
  ifc->profiler_prepare_tracing = ProfilerPrepareTracing;
  ifc->profiler_start_tracing = ProfilerStartTracing;
  ifc->profiler_stop_tracing = ProfilerStopTracing;
  ifc->profiler_collect_trace_data = ProfilerCollectTraceData;
}

}  // namespace {{ p }}_runtime
