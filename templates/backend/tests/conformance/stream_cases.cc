// Conformance, area stream: submission order, host functions, work that runs later than its
// call, queries of busy streams, streams destroyed while other work still refers to them.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"

namespace stream_area {

void append(void* data) {
  auto* log = static_cast<std::vector<int>*>(data);
  log->push_back(static_cast<int>(log->size()));
}

std::atomic<bool> g_released{false};
void wait_until_released(void*) {
  while (!g_released.load()) usleep(1000);
}

// New threads get a stack no address space can hold (or, `refused` false, the default again):
// the system refuses every thread the library starts from then on (std::thread throws).
void refuse_threads(bool refused) {
  static pthread_attr_t saved;
  static bool have_saved = pthread_getattr_default_np(&saved) == 0;
  if (!refused) {
    if (have_saved) pthread_setattr_default_np(&saved);
    return;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  pthread_attr_setstacksize(&attr, (std::numeric_limits<size_t>::max() / 2 + 1) & ~(page - 1));
  pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
}

// A call refused a thread returns (an error with words, or OK when it needs none): it does not
// end the process. `what` names the call in the output.
void refused_call_returns(const char* what, {{ p }}_status_t status) {
  const std::string detail = {{ p }}_error_detail();
  std::fprintf(stderr, "%s without threads: %s%s%s\n", what, {{ p }}_status_string(status), detail.empty() ? "" : ": ",
               detail.c_str());
  if (status != {{ NAME }}_OK) EXPECT(!detail.empty());
}

// `--threads-refused`, a process of its own (the refusal is process-wide): the first queued item
// of a stream (its worker thread is made then) and a communicator's init (its heartbeat thread)
// while no thread can be made, then both once threads can be made again.
int threads_refused_main(char**) {
  const bool synchronous = conformance::synchronous_mode();
  Dev<float> x(std::vector<float>(16, 1.f));  // (the device set up, its default stream's worker running)
  REQUIRE(x.ptr());
  EXPECT_OK({{ p }}_device_synchronize(0));
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  std::vector<float> host(16, 2.f);
  {{ p }}_ccl_id_t id;
  const bool collectives = {{ p }}_ccl_get_unique_id(&id) == {{ NAME }}_OK;  // (a flavour without them: skipped)
  refuse_threads(true);
  {{ p }}_status_t copied = {{ NAME }}_OK;
  {{ p }}_comm_t comm = nullptr;
  try {  // (this binary is C++ too: an exception that crossed the C API would land here)
    copied = {{ p }}_memcpy_async(s, x.ptr(), host.data(), sizeof(float) * 16, {{ NAME }}_COPY_HOST_TO_DEVICE);
    refused_call_returns("memcpy_async", copied);
    if (collectives) {
      const {{ p }}_status_t joined = {{ p }}_ccl_comm_init(&id, 1, 0, &comm);
      refused_call_returns("ccl_comm_init", joined);
      if (joined == {{ NAME }}_OK) EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
    }
  } catch (const std::exception& e) {
    refuse_threads(false);
    conformance::record_failure(__FILE__, __LINE__, std::string("an exception crossed the C API: ") + e.what());
    return 1;
  }
  refuse_threads(false);
  if (copied != {{ NAME }}_OK) EXPECT(!synchronous);  // (inline work needs no thread)
  EXPECT_OK({{ p }}_memcpy_async(s, x.ptr(), host.data(), sizeof(float) * 16, {{ NAME }}_COPY_HOST_TO_DEVICE));
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT(x.host() == host);
  EXPECT_OK({{ p }}_stream_destroy(s));
  if (collectives) {
    REQUIRE_OK({{ p }}_ccl_get_unique_id(&id));
    EXPECT_OK({{ p }}_ccl_comm_init(&id, 1, 0, &comm));
    if (comm) EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
  }
  std::fflush(stdout);
  return conformance::failed() ? 1 : 0;
}
const conformance::Subcommand threads_refused_subcommand("--threads-refused", 0, threads_refused_main);

}  // namespace stream_area

// When the system refuses the library a thread (a stream's worker, a communicator's heartbeat),
// the call that needed it returns an error with words: no exception crosses the C API (that
// would end the process through std::terminate).
CONFORMANCE_CASE("stream", a_refused_thread_is_an_error_not_an_abort) {
  conformance::expect_subcommand_passes("--threads-refused");
}

CONFORMANCE_CASE("stream", submission_order_and_waits) {
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s1));
  REQUIRE_OK({{ p }}_stream_create(0, &s2));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  std::vector<int> log;
  for (int i = 0; i < 5; ++i) EXPECT_OK({{ p }}_launch_host_func(s1, stream_area::append, &log));
  EXPECT_OK({{ p }}_event_record(e, s1));
  // s2 waits on e, so its work sees all of s1's work before it.
  EXPECT_OK({{ p }}_stream_wait_event(s2, e));
  size_t seen_by_s2 = 0;
  auto observe = [](void* d) { *static_cast<size_t*>(d) = 1; };
  EXPECT_OK({{ p }}_launch_host_func(s2, observe, &seen_by_s2));
  EXPECT_OK({{ p }}_event_synchronize(e));
  EXPECT(log.size() == 5);
  for (size_t i = 0; i < log.size(); ++i) EXPECT(log[i] == static_cast<int>(i));  // submission order
  EXPECT_OK({{ p }}_stream_synchronize(s2));
  EXPECT(seen_by_s2 == 1);
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_destroy(s2));
}

// A device-to-device copy on one stream waits for an op on another through an event.
CONFORMANCE_CASE("stream", ops_ordered_across_streams_by_events) {
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s1));
  REQUIRE_OK({{ p }}_stream_create(0, &s2));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  Dev<float> a(1 << 16), b(1 << 16);
  EXPECT_OK({{ p }}_fill(s1, {{ NAME }}_FLOAT32, a.ptr(), 1 << 16, 3.0));
  EXPECT_OK({{ p }}_event_record(e, s1));
  EXPECT_OK({{ p }}_stream_wait_event(s2, e));  // s2's copy sees the fill
  EXPECT_OK({{ p }}_memcpy_async(s2, b.ptr(), a.ptr(), sizeof(float) << 16, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_stream_synchronize(s2));
  const std::vector<float> back = b.host();
  EXPECT(!back.empty() && back[0] == 3.f && back.back() == 3.f);
  // Done, so a query says so -- within a bound: a query is a marker the device runs too, and
  // under load (CI's other worker keeps every core busy) it may say NOT_READY first.
  EXPECT(conformance::within(2, [&] { return {{ p }}_stream_query(s1) == {{ NAME }}_OK; }));
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_destroy(s2));
}

// Ops and *_async copies return before their work runs; events and synchronisation wait for it.
CONFORMANCE_CASE("stream", queued_work_runs_later) {
  const bool inline_mode = conformance::synchronous_mode();
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  const int ms = 300;  // long enough that nothing queued behind it can have run when checked
  Dev<float> x(1000, 1.f), y(1000);
  std::vector<float> back(1000, -1.f);
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_scale(s, {{ NAME }}_FLOAT32, x.ptr(), y.ptr(), 1000, 2.0, 0.0, 1));
  EXPECT_OK({{ p }}_memcpy_async(s, back.data(), y.ptr(), 1000 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT_OK({{ p }}_event_record(e, s));
  if (!inline_mode) {
    EXPECT_STATUS({{ p }}_stream_query(s), {{ NAME }}_ERROR_NOT_READY);
    EXPECT_STATUS({{ p }}_event_query(e), {{ NAME }}_ERROR_NOT_READY);
    EXPECT(back[0] == -1.f);  // not written yet: reading it now is the missing-synchronisation bug
  }
  EXPECT_OK({{ p }}_event_synchronize(e));
  EXPECT(back[0] == 2.f && back[999] == 2.f);
  // done (a query is itself work the device runs: on a loaded machine it may say NOT_READY first)
  EXPECT(conformance::within(2, [&] { return {{ p }}_stream_query(s) == {{ NAME }}_OK; }));
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// A query of a busy stream answers NOT_READY within about a millisecond, also when every core
// is busy (it is asked in a loop: a query that sleeps or yields costs a scheduler tick each);
// at worst as slowly as a query of an idle stream under the same load (a flavour whose query
// waits on its runtime's own threads, as pocl's does, pays their preemption either way).
// The stream stays busy until the queries are done, however long a loaded machine takes for
// them; launching the host function on the idle stream returns at once (were it run inside
// the launch, this case would never get past it: the alarm).
CONFORMANCE_CASE("stream", query_is_quick_under_load) {
  if (conformance::synchronous_mode()) return;  // inline: no stream is ever busy
  {{ p }}_stream_t s = nullptr, idle = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_stream_create(0, &idle));
  stream_area::g_released = false;
  alarm(60);
  EXPECT_OK({{ p }}_launch_host_func(s, stream_area::wait_until_released, nullptr));
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
    load.emplace_back([&] {
      while (!stop.load()) {
      }
    });
  auto ms_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  // What the load alone does to a millisecond: spinning until it has passed, timed the same
  // way. A query is judged against this (a preempted thread takes longer whatever it runs).
  std::vector<double> spin, took;
  for (int i = 0; i < 10; ++i) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1)) {
    }
    spin.push_back(ms_since(start));
  }
  {{ p }}_status_t answer = {{ NAME }}_ERROR_NOT_READY;  // the first other answer, if any
  std::vector<double> idle_took;  // the busy stream's queries alternate with the idle one's
  for (int i = 0; i < 10; ++i) {
    auto start = std::chrono::steady_clock::now();
    const {{ p }}_status_t status = {{ p }}_stream_query(s);
    took.push_back(ms_since(start));
    if (answer == {{ NAME }}_ERROR_NOT_READY) answer = status;
    start = std::chrono::steady_clock::now();
    (void){{ p }}_stream_query(idle);
    idle_took.push_back(ms_since(start));
  }
  stop = true;
  stream_area::g_released = true;
  alarm(0);
  for (std::thread& t : load) t.join();
  std::sort(took.begin(), took.end());
  std::sort(spin.begin(), spin.end());
  std::sort(idle_took.begin(), idle_took.end());
  // (measured on pocl with three more busy processes: 0.0 ms; 1-3.3 ms, and 11 ms with a CI
  // run beside it, while every query put a marker behind the busy work and waited up to 1 ms
  // for it; polling by sleeps took 20 ms)
  const double limit = std::max({10.0, 2.0 * spin[5], 2.0 * idle_took[5]});
  if (took[5] >= limit)
    std::printf("  stream_query took %.1f ms (median) under load, a 1 ms spin %.1f ms, an idle stream's query %.1f ms\n",
                took[5], spin[5], idle_took[5]);
  EXPECT(answer == {{ NAME }}_ERROR_NOT_READY);
  EXPECT(took[5] < limit);
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT_OK({{ p }}_stream_destroy(s));
  EXPECT_OK({{ p }}_stream_destroy(idle));
}

// A stream destroyed while an event recorded on it, or another stream's queued wait, still
// refers to it: both complete (no read of freed memory, no wait on a stream made later at the
// same address).
CONFORMANCE_CASE("stream", streams_outlive_events_and_waits) {
  const int short_ms = 50, long_ms = 200;
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr, reused = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_event_create(0, &e));
  REQUIRE_OK({{ p }}_stream_create(0, &s1));
  REQUIRE_OK({{ p }}_stream_create(0, &s2));
  EXPECT_OK({{ p }}_launch_host_func(s1, conformance::sleep_ms, conformance::millis(short_ms)));
  EXPECT_OK({{ p }}_event_record(e, s1));
  EXPECT_OK({{ p }}_launch_host_func(s2, conformance::sleep_ms, conformance::millis(long_ms)));  // its wait runs after s1 is gone
  EXPECT_OK({{ p }}_stream_wait_event(s2, e));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  REQUIRE_OK({{ p }}_stream_create(0, &reused));  // often at s1's address, nothing submitted
  const bool e_done = conformance::within(2, [&] { return {{ p }}_event_query(e) == {{ NAME }}_OK; });
  EXPECT(e_done);
  if (e_done) EXPECT_OK({{ p }}_event_synchronize(e));
  const bool s2_done = conformance::within(2, [&] { return {{ p }}_stream_query(s2) == {{ NAME }}_OK; });
  REQUIRE(s2_done);  // (else s2 is left: destroying it would wait for ever)
  EXPECT_OK({{ p }}_stream_destroy(s2));
  EXPECT_OK({{ p }}_stream_destroy(reused));
  EXPECT_OK({{ p }}_event_destroy(e));
}
