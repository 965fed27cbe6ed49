// Conformance, area event: events and the errors of queued work -- an error belongs to its
// place in the queue and is reported by the synchronisations that cover that place.
#include <string>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("event", record_query_synchronize) {
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t e = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &e));
  EXPECT_OK({{ p }}_event_query(e));  // never recorded: complete
  EXPECT_OK({{ p }}_event_synchronize(e));
  static int ms = 20;
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, &ms));
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
  static int ms = 20;
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t before = nullptr, after = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  REQUIRE_OK({{ p }}_event_create(0, &before));
  REQUIRE_OK({{ p }}_event_create(0, &after));
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), out(6);
  Dev<int64_t> bad(std::vector<int64_t>{3, 0, 2});
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, &ms));
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
