// torch.accelerator.Graph on {{ device_type }}: capture and replay through the device library's
// graphs ({{ p }}_stream_begin_capture ... {{ p }}_graph_launch), registered with torch's
// GraphImplRegistry as CUDA's and XPU's graphs are. Capture records what is queued on the current
// stream; what it allocates meanwhile comes from a private pool of the caching allocator that
// outlives the capture (a replay writes into it) until the graph is reset. Torch releases before
// 2.13 have no graph registry (nor torch.accelerator.Graph): this file is empty there.
#if __has_include(<ATen/core/GraphImplInterface.h>)
#include <ATen/core/GraphImplInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <atomic>

#include "runtime/caching_allocator.h"
#include "runtime/device.h"
#include "runtime/streams.h"

namespace torch_{{ p }} {
namespace {

// A pool id of its own for a graph given none: {n, 0}, as CUDA numbers them ({0, n} are the
// handles users make).
PoolId fresh_graph_pool() {
  static std::atomic<unsigned long long> next{1};
  return {next++, 0};
}

class DeviceGraph final : public at::GraphImplInterface {
 public:
  explicit DeviceGraph(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}
  ~DeviceGraph() override { release(); }
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // Every capture mode behaves alike: the device library refuses, on the capturing stream, each
  // call a replay could not repeat (host synchronisation, copies to or from host memory).
  void capture_begin(at::MempoolId_t pool, at::GraphCaptureMode /*capture_mode*/) override {
    TORCH_CHECK(!capturing_ && graph_ == nullptr,
                "this {{ device_type }} graph already holds a capture: reset() it (or make a new "
                "torch.accelerator.Graph) before capturing again");
    const c10::DeviceIndex device = current_index();
    const c10::Stream stream = Streams::get().current(device);
    TORCH_CHECK(stream.id() != 0,
                "{{ device_type }} graphs must be captured on a non-default stream (as CUDA's): capture "
                "inside `with torch.Stream():`; the graph may then be replayed on any stream");
    const {{ p }}_stream_t handle = Streams::get().handle(stream);
    const PoolId id = pool.first != 0 || pool.second != 0 ? PoolId(pool) : fresh_graph_pool();
    begin_allocate_to_pool(device, id, handle);
    const {{ p }}_status_t st = {{ p }}_stream_begin_capture(handle);
    if (st != {{ NAME }}_OK) {
      end_allocate_to_pool(device, handle);
      release_pool(device, id);
      TORCH_CHECK(st != {{ NAME }}_ERROR_UNSUPPORTED,
                  "{{ device_type }} graph capture is unavailable: this device library does not implement "
                  "stream capture ({{ p }}_stream_begin_capture: ", {{ p }}_error_detail(), ")");
      check(st, "stream_begin_capture");
    }
    device_ = device;
    stream_ = handle;
    pool_ = id;
    capturing_ = true;
  }

  void capture_end() override {
    TORCH_CHECK(capturing_, "capture_end() of a {{ device_type }} graph that is not capturing: call capture_begin() first");
    TORCH_CHECK(current_stream_of(device_) == stream_,
                "a {{ device_type }} graph's capture must end on the stream it began on (the current stream "
                "is another one)");
    end_allocate_to_pool(device_, stream_);
    capturing_ = false;
    {{ p }}_graph_t graph = nullptr;
    const {{ p }}_status_t st = {{ p }}_stream_end_capture(stream_, &graph);
    if (st != {{ NAME }}_OK) {
      release_pool(device_, pool_);
      check(st, "stream_end_capture");
    }
    graph_ = graph;
    size_t nodes = 0;
    check({{ p }}_graph_node_count(graph_, &nodes), "graph_node_count");
    if (nodes == 0) TORCH_WARN("the captured {{ device_type }} graph is empty: nothing was queued on the capturing stream");
    if (!keep_graph_) instantiate();
  }

  void instantiate() override {
    TORCH_CHECK(graph_ != nullptr, "instantiate() of a {{ device_type }} graph without a capture: capture_begin() and capture_end() first");
    if (instantiated_) return;
    check({{ p }}_graph_instantiate(graph_), "graph_instantiate");
    instantiated_ = true;
  }

  // Queues the whole graph on the current stream of the capture's device as one item.
  void replay() override {
    TORCH_CHECK(graph_ != nullptr, "replay() of a {{ device_type }} graph without a capture: capture_begin() and capture_end() first");
    if (!instantiated_) instantiate();
    const c10::DeviceGuard guard(device_of(device_));
    check({{ p }}_graph_launch(graph_, current_stream_of(device_)), "graph_launch");
  }

  void reset() override { release(); }

  at::MempoolId_t pool() const override {
    TORCH_CHECK(graph_ != nullptr, "pool() of a {{ device_type }} graph without a capture: capture_begin() and capture_end() first");
    return pool_;
  }

  void enable_debug_mode() override {}  // the device library has nothing more to record

  void debug_dump(const std::string& /*path*/) override {
    TORCH_CHECK(false, "debug_dump: {{ device_type }} graphs cannot be dumped (by design: the device library "
                "exports a graph's node count only)");
  }

 private:
  static {{ p }}_stream_t current_stream_of(c10::DeviceIndex device) {
    return Streams::get().handle(Streams::get().current(device));
  }

  // Ends a capture still open, destroys the graph and gives its pool back: noexcept (a destructor's).
  void release() noexcept {
    if (capturing_) {
      end_allocate_to_pool(device_, stream_);
      {{ p }}_graph_t abandoned = nullptr;
      if ({{ p }}_stream_end_capture(stream_, &abandoned) == {{ NAME }}_OK) {{ p }}_graph_destroy(abandoned);
      capturing_ = false;
    } else if (graph_ == nullptr) {
      return;  // nothing captured: no pool held
    }
    if (graph_ != nullptr) {{ p }}_graph_destroy(graph_);
    graph_ = nullptr;
    instantiated_ = false;
    release_pool(device_, pool_);
  }

  const bool keep_graph_;
  bool capturing_ = false;
  bool instantiated_ = false;
  {{ p }}_graph_t graph_ = nullptr;
  c10::DeviceIndex device_ = -1;
  {{ p }}_stream_t stream_ = nullptr;
  PoolId pool_{0, 0};
};

}  // namespace
}  // namespace torch_{{ p }}

namespace at {
// The registry's key is c10::DeviceTypeName(PrivateUse1, false): the backend's name in capitals.
C10_REGISTER_TYPED_CLASS(GraphImplRegistry, "{{ device_type | upper }}", torch_{{ p }}::DeviceGraph)
}  // namespace at
#endif
