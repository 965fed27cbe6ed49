// Conformance, area event: events and the errors of queued work -- an error belongs to its
// place in the queue and is reported by the synchronisations that cover that place.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("event", record_query_synchronize) {
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  EXPECT_OK({{ p }}_event_query(e));  // never recorded: complete
  EXPECT_OK({{ p }}_event_synchronize(e));
  const int ms = 20;
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_event_record(e, s));
  EXPECT_OK({{ p }}_event_synchronize(e));
  EXPECT_OK({{ p }}_event_query(e));
  EXPECT_STATUS({{ p }}_event_record(nullptr, s), {{ NAME }}_ERROR_INVALID_VALUE);
  int count = 0;
  EXPECT_OK({{ p }}_device_count(&count));
  if (count > 1) {  // an event of device 0 cannot be recorded on device 1's queue
    {{ p }}_stream_t s1 = nullptr;
    EXPECT_OK({{ p }}_stream_default(1, &s1));
    EXPECT_STATUS({{ p }}_event_record(e, s1), {{ NAME }}_ERROR_INVALID_VALUE);
  }
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// An index out of range is device data: the op fails where it runs, and the next synchronising
// call reports it with the op's name (inline mode: the call itself), once.
CONFORMANCE_CASE("event", queued_errors_name_the_op) {
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), out(6);
  Dev<int64_t> bad(std::vector<int64_t>{3, 0, 2});
  const {{ p }}_status_t queued = conformance::checked(
      {{ p }}_gather(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, bad.ptr(), 3, -1, out.ptr()));
  if (conformance::synchronous_mode()) {
    EXPECT(queued == {{ NAME }}_ERROR_INVALID_VALUE);
  } else {
    EXPECT(queued == {{ NAME }}_OK);
    EXPECT_STATUS({{ p }}_stream_synchronize(nullptr), {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT(std::string({{ p }}_error_detail()).find("gather") != std::string::npos);
    EXPECT_OK({{ p }}_stream_synchronize(nullptr));  // reported once
  }
}

// A synchronisation reports a queued error when it covers that place (an event recorded before
// the failing op: OK), every time, until a synchronisation of the whole stream has reported it.
CONFORMANCE_CASE("event", errors_go_to_the_synchronisations_that_cover_them) {
  if (conformance::synchronous_mode()) return;  // inline: the failing call itself returns the error
  const int ms = 20;
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t before = nullptr, after = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &before));
  REQUIRE_OK({{ p }}_event_create(0, &after));
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), out(6);
  Dev<int64_t> bad(std::vector<int64_t>{3, 0, 2});
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_event_record(before, s));
  REQUIRE_OK({{ p }}_gather(s, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, bad.ptr(), 3, -1, out.ptr()));
  EXPECT_OK({{ p }}_event_record(after, s));
  EXPECT(conformance::within(5, [&] { return {{ p }}_stream_query(s) == {{ NAME }}_OK; }));  // the gather has failed by now
  EXPECT_OK({{ p }}_event_synchronize(before));
  EXPECT_STATUS({{ p }}_event_synchronize(after), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT(std::string({{ p }}_error_detail()).find("gather") != std::string::npos);
  EXPECT_STATUS({{ p }}_event_synchronize(after), {{ NAME }}_ERROR_INVALID_VALUE);  // sticky
  EXPECT_OK({{ p }}_event_synchronize(before));
  EXPECT_STATUS({{ p }}_stream_synchronize(s), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT(std::string({{ p }}_error_detail()).find("gather") != std::string::npos);
  EXPECT_OK({{ p }}_stream_synchronize(s));  // reported to the whole stream's synchronisation: done
  EXPECT_OK({{ p }}_event_synchronize(after));
  EXPECT_OK({{ p }}_event_destroy(before));
  EXPECT_OK({{ p }}_event_destroy(after));
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// An event recorded again and again on one thread while another queries it, synchronises it and
// makes a stream wait on it: every call sees a whole recording (a record replaces the one before
// under the event's lock; a waiter holds what it read), none a released one.
CONFORMANCE_CASE("event", recorded_while_another_thread_waits_on_it) {
  {{ p }}_stream_t s = nullptr, waiting = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_stream_create(0, &waiting));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  REQUIRE_OK({{ p }}_event_record(e, s));
  std::atomic<bool> recording{true};
  std::atomic<int> wrong{0}, waits{0};
  std::string first_wrong;  // (written by the waiter only, read after the join)
  std::thread waiter([&] {
    while (recording.load()) {
      const {{ p }}_status_t q = {{ p }}_event_query(e);
      const {{ p }}_status_t w = {{ p }}_event_synchronize(e);
      const {{ p }}_status_t b = {{ p }}_stream_wait_event(waiting, e);
      if ((q != {{ NAME }}_OK && q != {{ NAME }}_ERROR_NOT_READY) || w != {{ NAME }}_OK || b != {{ NAME }}_OK) {
        if (wrong.fetch_add(1) == 0) first_wrong = {{ p }}_error_detail();
      }
      waits.fetch_add(1);
    }
  });
  // (until the waiter has been through 10000 rounds, or 5 s have passed)
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (waits.load() < 10000 && wrong.load() == 0 && std::chrono::steady_clock::now() < until)
    EXPECT_OK({{ p }}_event_record(e, s));
  recording.store(false);
  waiter.join();
  EXPECT(wrong.load() == 0);
  EXPECT(waits.load() > 0);
  if (wrong.load() != 0) std::printf("  %d calls failed, the first: %s\n", wrong.load(), first_wrong.c_str());
  EXPECT_OK({{ p }}_stream_synchronize(waiting));
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s));
  EXPECT_OK({{ p }}_stream_destroy(waiting));
}

// Event.elapsed_time: milliseconds between two events' completions on the device clock -- of
// queued work (a 30 ms host function between them), and of records on an idle stream (each
// completes when it is made); never recorded is an error, not yet complete is NOT_READY.
CONFORMANCE_CASE("event", elapsed_time_between_completions) {
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t a = nullptr, b = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &a));
  REQUIRE_OK({{ p }}_event_create(0, &b));
  float ms = -1;
  EXPECT_STATUS({{ p }}_event_elapsed_time(a, b, &ms), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT(std::string({{ p }}_error_detail()).find("never recorded") != std::string::npos);
  const int sleep = 30;
  EXPECT_OK({{ p }}_event_record(a, s));
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(sleep)));
  EXPECT_OK({{ p }}_event_record(b, s));
  if (!conformance::synchronous_mode()) EXPECT_STATUS({{ p }}_event_elapsed_time(a, b, &ms), {{ NAME }}_ERROR_NOT_READY);
  EXPECT_OK({{ p }}_event_synchronize(b));
  EXPECT_OK({{ p }}_event_elapsed_time(a, b, &ms));
  EXPECT(ms >= 29.0f && ms < 5000.0f);
  EXPECT_OK({{ p }}_event_elapsed_time(b, a, &ms));
  EXPECT(ms <= -29.0f);
  EXPECT_OK({{ p }}_event_record(a, s));  // idle: complete now
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_OK({{ p }}_event_record(b, s));
  EXPECT_OK({{ p }}_event_elapsed_time(a, b, &ms));
  EXPECT(ms >= 19.0f && ms < 5000.0f);
  EXPECT_OK({{ p }}_event_destroy(a));
  EXPECT_OK({{ p }}_event_destroy(b));
  EXPECT_OK({{ p }}_stream_destroy(s));
}
