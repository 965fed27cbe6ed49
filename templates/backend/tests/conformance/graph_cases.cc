// Conformance, area graph: graph capture and replay ({{ p }}_stream_begin_capture ...
// {{ p }}_graph_*). A capturing stream records its work and runs none of it (under {{ NAME }}_SYNC=1
// too); a launch replays it as one item, bit for bit what eager work gives, as often as asked;
// while it captures, calls that would wait for its work or that a graph cannot replay are
// refused, naming themselves and the stream; a launch whose buffer was freed since capture
// fails naming the graph, the node and the allocation; other streams run eagerly meanwhile;
// a graph destroyed while its launch is queued still runs that launch.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conformance.h"

namespace graph_area {

// A graph, destroyed with the case (a capture still underway is ended first).
class Graph {
 public:
  explicit Graph({{ p }}_stream_t s) : s_(s) { REQUIRE_OK({{ p }}_stream_begin_capture(s)); }
  ~Graph() {  // (no REQUIRE here: it throws)
    int capturing = 0;
    if ({{ p }}_stream_is_capturing(s_, &capturing) == {{ NAME }}_OK && capturing) {{ p }}_stream_end_capture(s_, &g_);
    if (g_) {{ p }}_graph_destroy(g_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void end() {
    REQUIRE_OK({{ p }}_stream_end_capture(s_, &g_));
    REQUIRE(g_ != nullptr);
  }
  {{ p }}_graph_t get() const { return g_; }
  {{ p }}_graph_t release() { return std::exchange(g_, nullptr); }
  size_t nodes() const {
    size_t n = 0;
    REQUIRE_OK({{ p }}_graph_node_count(g_, &n));
    return n;
  }

 private:
  {{ p }}_stream_t s_;
  {{ p }}_graph_t g_ = nullptr;
};

std::string detail() {
  const char* d = {{ p }}_error_detail();
  return d ? d : "";
}

bool mentions(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  std::fprintf(stderr, "  detail \"%s\" does not mention \"%s\"\n", text.c_str(), part.c_str());
  return false;
}

uint64_t stream_id({{ p }}_stream_t s) {
  uint64_t id = 0;
  REQUIRE_OK({{ p }}_stream_get_id(s, &id));
  return id;
}

void count_call(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

// A small chain on `s`: out = gemm(relu((x + b) * 2 - 1), w) with `b` broadcast over rows (a
// shape argument the library must keep: it lives in `shapes`, which the case scribbles over
// after the capture).
struct Shapes {
  {{ p }}_shape_t x, b;
};
void queue_chain({{ p }}_stream_t s, const Shapes* shapes, const float* x, const float* b, const float* w, float* t,
                 float* out) {
  EXPECT_OK({{ p }}_binary(s, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, x, &shapes->x, b, &shapes->b, t, &shapes->x));
  EXPECT_OK({{ p }}_scale(s, {{ NAME }}_FLOAT32, t, t, 4 * 8, 2.0, -1.0, 1));
  EXPECT_OK({{ p }}_unary(s, {{ NAME }}_UNARY_RELU, {{ NAME }}_FLOAT32, t, t, 4 * 8));
  EXPECT_OK({{ p }}_gemm(s, {{ NAME }}_FLOAT32, 0, 0, 4, 3, 8, 1.0f, t, 8, w, 3, 0.0f, out, 3));
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.0f) + 0.125f * static_cast<float>(i);
  return v;
}

}  // namespace graph_area

using graph_area::Graph;
using conformance::Stream;

// Work queued onto a capturing stream is recorded, not run: its buffers keep their values, a host
// function is not called, the stream has nothing queued; the graph counts the nodes.
CONFORMANCE_CASE("graph", capture_records_and_does_not_run) {
  Stream s;
  Dev<float> x(16, 1.0f), y(16, 1.0f);
  std::atomic<int> calls{0};
  Graph g(s.get());
  int capturing = 0;
  EXPECT_OK({{ p }}_stream_is_capturing(s.get(), &capturing));
  EXPECT(capturing == 1);
  EXPECT_OK({{ p }}_fill(s.get(), {{ NAME }}_FLOAT32, x.ptr(), 16, 7.0));
  EXPECT_OK({{ p }}_scale(s.get(), {{ NAME }}_FLOAT32, x.ptr(), y.ptr(), 16, 2.0, 0.0, 1));
  EXPECT_OK({{ p }}_memcpy_async(s.get(), x.ptr(), y.ptr(), 16 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_launch_host_func(s.get(), graph_area::count_call, &calls));
  EXPECT_STATUS({{ p }}_stream_begin_capture(s.get()), {{ NAME }}_ERROR_INVALID_VALUE);  // capturing already
  g.end();
  EXPECT_OK({{ p }}_stream_is_capturing(s.get(), &capturing));
  EXPECT(capturing == 0);
  EXPECT(g.nodes() == 4);
  EXPECT_OK({{ p }}_stream_query(s.get()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  EXPECT(calls.load() == 0);
  EXPECT(x.host() == std::vector<float>(16, 1.0f));
  EXPECT(y.host() == std::vector<float>(16, 1.0f));
  // Launched, it runs: x = 7, y = 14, x = y, the host function once.
  EXPECT_STATUS({{ p }}_graph_launch(g.get(), s.get()), {{ NAME }}_ERROR_INVALID_VALUE);  // not instantiated
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  EXPECT_OK({{ p }}_graph_launch(g.get(), s.get()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  EXPECT(calls.load() == 1);
  EXPECT(x.host() == std::vector<float>(16, 14.0f));
  EXPECT(y.host() == std::vector<float>(16, 14.0f));
}

// A replay gives exactly the bytes the same work gives eagerly (ops with kept shape arguments,
// an in-place chain, a GEMM), though the host memory the shapes were read from was overwritten
// after the capture.
CONFORMANCE_CASE("graph", replay_matches_eager_bit_for_bit) {
  Stream s;
  const std::vector<float> xs = graph_area::ramp(4 * 8, 0.37f), bs = graph_area::ramp(8, -0.21f),
                           ws = graph_area::ramp(8 * 3, 0.113f);
  Dev<float> x(xs), b(bs), w(ws), t(4 * 8), eager(4 * 3), replayed(4 * 3);
  graph_area::Shapes shapes{conformance::shape({4, 8}), conformance::shape({8})};
  graph_area::queue_chain(s.get(), &shapes, x.ptr(), b.ptr(), w.ptr(), t.ptr(), eager.ptr());
  Graph g(s.get());
  graph_area::queue_chain(s.get(), &shapes, x.ptr(), b.ptr(), w.ptr(), t.ptr(), replayed.ptr());
  g.end();
  shapes = {conformance::shape({1}), conformance::shape({3, 3})};  // what a replay must not read
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  EXPECT_OK({{ p }}_graph_launch(g.get(), s.get()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  const std::vector<float> want = eager.host(), got = replayed.host();
  REQUIRE(want.size() == 12 && got.size() == 12);
  EXPECT(std::memcmp(want.data(), got.data(), sizeof(float) * 12) == 0);
  bool nonzero = false;
  for (float v : want) nonzero |= v != 0.0f;
  EXPECT(nonzero);  // (a chain that computed nothing would match too)
}

// One graph launched many times runs its nodes each time (y = y + 1, 200 launches), also
// launched onto another stream of its device, and each launch is one queued item.
CONFORMANCE_CASE("graph", a_graph_replays_many_times) {
  Stream s, other;
  Dev<float> y(8, 0.0f);
  Graph g(s.get());
  EXPECT_OK({{ p }}_scale(s.get(), {{ NAME }}_FLOAT32, y.ptr(), y.ptr(), 8, 1.0, 1.0, 1));
  g.end();
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  for (int i = 0; i < 150; ++i) EXPECT_OK({{ p }}_graph_launch(g.get(), s.get()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  for (int i = 0; i < 50; ++i) EXPECT_OK({{ p }}_graph_launch(g.get(), other.get()));
  EXPECT_OK({{ p }}_stream_synchronize(other.get()));
  EXPECT(y.host() == std::vector<float>(8, 200.0f));
}

// While a stream captures, each call that would make the host wait for its work, copy host
// memory the replay could not, or free a buffer a node uses is refused (UNSUPPORTED), the detail
// naming the call and the capturing stream; the capture goes on, and after it ends they work.
CONFORMANCE_CASE("graph", capture_refuses_host_synchronising_calls_naming_them) {
  Stream s;
  Dev<float> x(4, 1.0f);
  std::vector<float> host(4, 0.0f);
  void* used = nullptr;
  REQUIRE_OK({{ p }}_malloc(0, &used, 64));
  {{ p }}_event_t event = nullptr;
  REQUIRE_OK({{ p }}_event_create(0, &event));
  Graph g(s.get());
  EXPECT_OK({{ p }}_fill(s.get(), {{ NAME }}_FLOAT32, used, 16, 3.0));
  EXPECT_OK({{ p }}_event_record(event, s.get()));
  const std::string stream = "stream " + std::to_string(graph_area::stream_id(s.get()));
  struct Refused {
    const char* call;
    {{ p }}_status_t status;
  };
  const Refused refused[] = {
      {"stream_synchronize", {{ p }}_stream_synchronize(s.get())},
      {"stream_query", {{ p }}_stream_query(s.get())},
      {"device_synchronize", {{ p }}_device_synchronize(0)},
      {"event_synchronize", {{ p }}_event_synchronize(event)},
      {"event_query", {{ p }}_event_query(event)},
      {"memcpy", {{ p }}_memcpy(host.data(), x.ptr(), sizeof(float) * 4, {{ NAME }}_COPY_DEVICE_TO_HOST)},
      {"memcpy_h2d", {{ p }}_memcpy_async(s.get(), x.ptr(), host.data(), sizeof(float) * 4, {{ NAME }}_COPY_HOST_TO_DEVICE)},
      {"memcpy_d2h", {{ p }}_memcpy_async(s.get(), host.data(), x.ptr(), sizeof(float) * 4, {{ NAME }}_COPY_DEVICE_TO_HOST)},
      {"memset", {{ p }}_memset(0, x.ptr(), 0, sizeof(float) * 4)},
      {"free", {{ p }}_free(0, used)},
  };
  for (const Refused& r : refused) {
    if (r.status != {{ NAME }}_ERROR_UNSUPPORTED) {
      std::fprintf(stderr, "  %s during a capture returned %s\n", r.call, {{ p }}_status_string(r.status));
      EXPECT(r.status == {{ NAME }}_ERROR_UNSUPPORTED);
    }
  }
  // The detail of each, one call at a time.
  EXPECT_STATUS({{ p }}_stream_synchronize(s.get()), {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT(graph_area::mentions(graph_area::detail(), "stream_synchronize"));
  EXPECT(graph_area::mentions(graph_area::detail(), stream));
  EXPECT_STATUS({{ p }}_device_synchronize(0), {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT(graph_area::mentions(graph_area::detail(), "device_synchronize"));
  EXPECT(graph_area::mentions(graph_area::detail(), stream));
  EXPECT_STATUS({{ p }}_memcpy_async(s.get(), x.ptr(), host.data(), 16, {{ NAME }}_COPY_HOST_TO_DEVICE),
                {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT(graph_area::mentions(graph_area::detail(), "memcpy_h2d"));
  EXPECT_STATUS({{ p }}_free(0, used), {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT(graph_area::mentions(graph_area::detail(), "node 0 (fill)"));
  // Still capturing, and only the fill was recorded.
  int capturing = 0;
  EXPECT_OK({{ p }}_stream_is_capturing(s.get(), &capturing));
  EXPECT(capturing == 1);
  g.end();
  EXPECT(g.nodes() == 1);
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  EXPECT_OK({{ p }}_device_synchronize(0));
  EXPECT_OK({{ p }}_event_synchronize(event));
  EXPECT_OK({{ p }}_memcpy(host.data(), x.ptr(), sizeof(float) * 4, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT(host == std::vector<float>(4, 1.0f));
  EXPECT_OK({{ p }}_event_destroy(event));
  EXPECT_OK({{ p }}_free(0, used));
}

// A launch whose node's buffer was freed since the capture (or freed and given out again at
// the same address) fails at once, naming the graph, the node (index and op) and the allocation
// (address and size), and runs nothing.
CONFORMANCE_CASE("graph", replay_after_free_names_graph_node_and_allocation) {
  Stream s;
  Dev<float> x(64, 2.0f);
  void* out = nullptr;
  REQUIRE_OK({{ p }}_malloc(0, &out, 64 * sizeof(float)));
  Graph g(s.get());
  EXPECT_OK({{ p }}_fill(s.get(), {{ NAME }}_FLOAT32, x.ptr(), 64, 5.0));
  EXPECT_OK({{ p }}_scale(s.get(), {{ NAME }}_FLOAT32, x.ptr(), out, 64, 3.0, 0.0, 1));
  g.end();
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  REQUIRE_OK({{ p }}_free(0, out));
  char address[32];
  std::snprintf(address, sizeof(address), "%p", out);
  const auto expect_refused = [&] {
    EXPECT_STATUS({{ p }}_graph_launch(g.get(), s.get()), {{ NAME }}_ERROR_INVALID_VALUE);
    const std::string d = graph_area::detail();
    EXPECT(graph_area::mentions(d, "graph "));
    EXPECT(graph_area::mentions(d, "node 1 (scale)"));
    EXPECT(graph_area::mentions(d, address));
    EXPECT(graph_area::mentions(d, std::to_string(64 * sizeof(float)) + "-byte"));
  };
  expect_refused();
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  EXPECT(x.host() == std::vector<float>(64, 2.0f));  // the fill (node 0) did not run either
  // Freed and given out again: the address may be the same, the allocation is not.
  void* again = nullptr;
  REQUIRE_OK({{ p }}_malloc(0, &again, 64 * sizeof(float)));
  if (again == out) expect_refused();
  else std::fprintf(stderr, "  (the allocator gave another address: the reuse half is not exercised)\n");
  EXPECT_OK({{ p }}_free(0, again));
}

// While one stream captures, another stream's work runs eagerly as ever (ops, a host
// synchronisation of it, its events), and nothing of it lands in the graph.
CONFORMANCE_CASE("graph", another_stream_runs_eagerly_while_one_captures) {
  Stream capturing, eager;
  Dev<float> a(8, 0.0f), b(8, 0.0f);
  {{ p }}_event_t event = nullptr;
  REQUIRE_OK({{ p }}_event_create(0, &event));
  Graph g(capturing.get());
  EXPECT_OK({{ p }}_fill(capturing.get(), {{ NAME }}_FLOAT32, a.ptr(), 8, 1.0));
  EXPECT_OK({{ p }}_fill(eager.get(), {{ NAME }}_FLOAT32, b.ptr(), 8, 4.0));
  EXPECT_OK({{ p }}_scale(eager.get(), {{ NAME }}_FLOAT32, b.ptr(), b.ptr(), 8, 2.0, 0.0, 1));
  EXPECT_OK({{ p }}_event_record(event, eager.get()));
  EXPECT_OK({{ p }}_stream_synchronize(eager.get()));
  EXPECT_OK({{ p }}_event_synchronize(event));
  EXPECT_OK({{ p }}_stream_query(eager.get()));
  int is = 1;
  EXPECT_OK({{ p }}_stream_is_capturing(eager.get(), &is));
  EXPECT(is == 0);
  g.end();
  EXPECT(g.nodes() == 1);
  EXPECT(b.host() == std::vector<float>(8, 8.0f));
  EXPECT(a.host() == std::vector<float>(8, 0.0f));
  EXPECT_OK({{ p }}_event_destroy(event));
}

// One thread captures while another queues work on its own stream, synchronises it, allocates
// and frees: the capture gets exactly its own thread's 300 nodes, the other stream's work all
// runs (also a check for the sanitizer builds: the capture's state is shared between threads).
CONFORMANCE_CASE("graph", capture_on_one_thread_while_another_works_eagerly) {
  Stream capturing, eager;
  Dev<float> x(16, 0.0f), sum(16, 0.0f);
  const {{ p }}_shape_t shape = conformance::shape({16});
  // Each op the threads use, once here and changing nothing: a flavour that lacks one reports the
  // case unimplemented before a thread starts (its exception must not end a thread, or leave one).
  REQUIRE_OK({{ p }}_fill(eager.get(), {{ NAME }}_FLOAT32, x.ptr(), 16, 0.0));
  REQUIRE_OK({{ p }}_binary(eager.get(), {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, sum.ptr(), &shape, x.ptr(), &shape,
                            sum.ptr(), &shape));
  REQUIRE_OK({{ p }}_scale(eager.get(), {{ NAME }}_FLOAT32, x.ptr(), x.ptr(), 16, 1.0, 0.0, 1));
  REQUIRE_OK({{ p }}_stream_synchronize(eager.get()));
  Graph g(capturing.get());
  std::exception_ptr failed;  // (a failed EXPECT/REQUIRE of the other thread, raised after its join)
  std::thread other([&] {
    try {
      for (int i = 0; i < 300; ++i) {
        void* scratch = nullptr;
        EXPECT_OK({{ p }}_malloc(0, &scratch, 16 * sizeof(float)));
        EXPECT_OK({{ p }}_fill(eager.get(), {{ NAME }}_FLOAT32, scratch, 16, 1.0));
        EXPECT_OK({{ p }}_binary(eager.get(), {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, sum.ptr(), &shape, scratch, &shape,
                               sum.ptr(), &shape));
        if (i % 50 == 0) EXPECT_OK({{ p }}_stream_synchronize(eager.get()));
        EXPECT_OK({{ p }}_free(0, scratch));
      }
      EXPECT_OK({{ p }}_stream_synchronize(eager.get()));
    } catch (...) {
      failed = std::current_exception();
    }
  });
  for (int i = 0; i < 300; ++i) EXPECT_OK({{ p }}_scale(capturing.get(), {{ NAME }}_FLOAT32, x.ptr(), x.ptr(), 16, 1.0, 1.0, 1));
  other.join();
  if (failed) std::rethrow_exception(failed);
  g.end();
  EXPECT(g.nodes() == 300);
  EXPECT(x.host() == std::vector<float>(16, 0.0f));
  EXPECT(sum.host() == std::vector<float>(16, 300.0f));
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  EXPECT_OK({{ p }}_graph_launch(g.get(), capturing.get()));
  EXPECT_OK({{ p }}_stream_synchronize(capturing.get()));
  EXPECT(x.host() == std::vector<float>(16, 300.0f));
}

// Destroying a graph while a launch of it waits in the queue (behind a host function that
// sleeps) is safe: the launch still runs all its nodes.
CONFORMANCE_CASE("graph", destroy_while_a_launch_is_queued_is_safe) {
  Stream s;
  Dev<float> y(32, 0.0f);
  const int sleep = 50;
  Graph g(s.get());
  EXPECT_OK({{ p }}_fill(s.get(), {{ NAME }}_FLOAT32, y.ptr(), 32, 3.0));
  EXPECT_OK({{ p }}_scale(s.get(), {{ NAME }}_FLOAT32, y.ptr(), y.ptr(), 32, 2.0, 1.0, 1));
  g.end();
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  EXPECT_OK({{ p }}_launch_host_func(s.get(), conformance::sleep_ms, conformance::millis(sleep)));
  EXPECT_OK({{ p }}_graph_launch(g.get(), s.get()));
  EXPECT_OK({{ p }}_graph_destroy(g.release()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  EXPECT(y.host() == std::vector<float>(32, 7.0f));
}

// A traced launch leaves a record per node (its op, ids following the launch's), inside the
// launch's own record, which comes last: one queued item, its parts visible to a profiler.
CONFORMANCE_CASE("graph", a_traced_launch_records_each_node_and_the_launch) {
  Stream s;
  Dev<float> y(8, 0.0f);
  std::atomic<int> calls{0};
  Graph g(s.get());
  EXPECT_OK({{ p }}_fill(s.get(), {{ NAME }}_FLOAT32, y.ptr(), 8, 1.0));
  EXPECT_OK({{ p }}_scale(s.get(), {{ NAME }}_FLOAT32, y.ptr(), y.ptr(), 8, 2.0, 0.0, 1));
  EXPECT_OK({{ p }}_launch_host_func(s.get(), graph_area::count_call, &calls));
  g.end();
  REQUIRE_OK({{ p }}_graph_instantiate(g.get()));
  REQUIRE_OK({{ p }}_trace_enable(1, 64));
  EXPECT_OK({{ p }}_graph_launch(g.get(), s.get()));
  EXPECT_OK({{ p }}_stream_synchronize(s.get()));
  {{ p }}_trace_enable(0, 0);
  std::vector<{{ p }}_trace_record_t> records(16);
  size_t n = 0;
  REQUIRE_OK({{ p }}_trace_drain(records.data(), records.size(), &n));
  REQUIRE(n == 4);
  const char* const names[4] = {"fill", "scale", "host_func", "graph_launch"};
  const {{ p }}_trace_record_t& launch = records[3];
  for (size_t i = 0; i < 4; ++i) {
    EXPECT(records[i].name != nullptr && std::string(records[i].name) == names[i]);
    EXPECT(records[i].stream_id == graph_area::stream_id(s.get()));
    EXPECT(records[i].status == {{ NAME }}_OK);
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT(records[i].correlation_id == launch.correlation_id + 1 + i);
    EXPECT(launch.start_ns <= records[i].start_ns && records[i].end_ns <= launch.end_ns);
  }
  EXPECT(calls.load() == 1);
  EXPECT(y.host() == std::vector<float>(8, 2.0f));
}
