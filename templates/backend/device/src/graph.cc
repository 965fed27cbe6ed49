// {{ NAME }} device library: graph capture and replay ({{ p }}_stream_begin_capture ...
// {{ p }}_graph_* in the C API).
//
// A capturing stream's queue (enqueue in streams.cc) hands each item it is given to
// capture_item instead of its worker: the item's work, the host arguments kept for it and the
// allocations its op noted (device_views and the copies call note_device_pointer) become the
// graph's next node. Nothing runs and the stream's position does not move. A launch queues one
// item that runs the nodes in order on the stream's worker (inline under {{ NAME }}_SYNC=1, where
// a capture records alike); it shares the nodes with the graph, so destroying the graph while
// a launch is queued is safe. Before queuing, the launch checks that every allocation a node
// used is still the live allocation it saw at capture: a freed (or freed and given out again)
// buffer fails the launch, naming the graph, the node and the allocation, instead of letting
// the replay read and write memory that now belongs to someone else.
//
// One mutex guards the capturing streams and their graphs; it is taken only while a capture
// is underway (g_captures > 0): the queue of a process that never captures pays one relaxed
// load per item.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "debug.h"
#include "internal.h"
#include "tracer.h"

namespace {{ p }} {

std::atomic<int> g_captures{0};

struct GraphNode {
  std::function<{{ p }}_status_t()> work;
  KeptArguments kept;  // the host arguments `work` reads
  const char* op = nullptr;
  const char* kernel = nullptr;
  std::vector<AllocationUse> uses;  // the device allocations its op was given
};

using Nodes = std::vector<GraphNode>;

namespace {

std::string hex(uintptr_t address) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", reinterpret_cast<void*>(address));
  return text;
}

}  // namespace
}  // namespace {{ p }}

struct {{ p }}_graph_st {
  uint64_t id = 0;  // "graph <id>" in error details
  int device = 0;
  uint64_t stream_id = 0;  // where it was captured
  bool instantiated = false;
  // Shared with the launches queued: they run the nodes after the graph may be destroyed.
  std::shared_ptr<{{ p }}::Nodes> nodes = std::make_shared<{{ p }}::Nodes>();
  std::shared_ptr<const std::string> label;  // "graph <id> (captured on stream <id> of device <n>)"
  std::vector<{{ p }}::AllocationUse> uses;   // the nodes' allocations, each once (instantiate)

  const std::string& name() const { return *label; }
};

namespace {{ p }} {
namespace {

struct Captures {
  std::mutex mu;
  std::map<{{ p }}_stream_t, {{ p }}_graph_t> graphs;  // capturing stream -> the graph it records into
};

Captures& captures() {
  static Captures* c = new Captures();  // never destroyed: a worker may queue during exit
  return *c;
}

// The allocations the calling thread's next queued op uses (noted while a capture is underway).
thread_local std::vector<AllocationUse> t_noted;

{{ p }}_stream_t normalised({{ p }}_stream_t stream) { return stream ? stream : default_stream(); }

uint64_t id_of({{ p }}_stream_t stream) {
  uint64_t id = 0;
  {{ p }}_stream_get_id(stream, &id);
  return id;
}

// The graph `stream` records into, or NULL. captures().mu held.
{{ p }}_graph_t capturing_graph({{ p }}_stream_t stream) {
  auto it = captures().graphs.find(normalised(stream));
  return it == captures().graphs.end() ? nullptr : it->second;
}

{{ p }}_status_t refuse(const std::string& call, {{ p }}_stream_t stream) {
  return fail_call(call.c_str(), {{ NAME }}_ERROR_UNSUPPORTED,
                   "stream " + std::to_string(id_of(stream)) + " of device " + std::to_string(stream_device(stream)) +
                       " is capturing a graph, which cannot replay this call (end the capture first: " +
                       "{{ p }}_stream_end_capture)");
}

// OK, or INVALID_VALUE naming the graph's first node whose allocation is no longer the one it
// captured. (Each allocation is looked up once: the nodes are searched only for the message.)
{{ p }}_status_t check_allocations(const char* call, const {{ p }}_graph_st& graph) {
  bool live = true;
  for (const AllocationUse& use : graph.uses) live = live && allocation_live(use);
  if (live) return {{ NAME }}_OK;
  const Nodes& nodes = *graph.nodes;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const AllocationUse& use : nodes[i].uses)
      if (!allocation_live(use))
        return fail_call(call, {{ NAME }}_ERROR_INVALID_VALUE,
                         graph.name() + ": node " + std::to_string(i) + " (" + nodes[i].op + ") uses the " +
                             std::to_string(use.size) + "-byte allocation at " + hex(use.base) + " of device " +
                             std::to_string(use.device) +
                             ", freed since the capture; keep a graph's buffers alive while it may be launched "
                             "(or capture it again)");
  return {{ NAME }}_OK;
}

// Runs the nodes in order (a launch's one queued item): the first that fails ends the launch,
// named in the failure. Traced launches write a record per node under the launch's
// correlation id's reserved successors.
{{ p }}_status_t run_nodes(const Nodes& nodes, const std::string& graph, int device, uint64_t stream_id) {
  const tracer::Submitted launch = tracer::running();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& node = nodes[i];
    {{ p }}_debug_kernel(node.kernel);
    const uint64_t start_ns = launch ? tracer::now_ns() : 0;
    {{ p }}_status_t status;
    std::string reason;
    try {
      status = node.work();
      if (status != {{ NAME }}_OK) reason = take_failure_reason();
    } catch (...) {
      status = exception_status(&reason);
    }
    if (launch) {
      tracer::Submitted part = launch;
      part.correlation += 1 + i;
      tracer::record(node.op, device, stream_id, part, start_ns, status);
    }
    if (status != {{ NAME }}_OK) {
      set_failure_reason(graph + ": node " + std::to_string(i) + " (" + node.op + ") failed" +
                         (reason.empty() ? "" : ": " + reason));
      return status;
    }
  }
  return {{ NAME }}_OK;
}

}  // namespace

bool stream_captures({{ p }}_stream_t stream) {
  if (!capture_underway()) return false;
  std::lock_guard<std::mutex> lock(captures().mu);
  return capturing_graph(stream) != nullptr;
}

bool capture_item({{ p }}_stream_t stream, const char* op, std::function<{{ p }}_status_t()>* work) {
  std::vector<AllocationUse> uses = std::move(t_noted);
  t_noted.clear();
  std::lock_guard<std::mutex> lock(captures().mu);
  {{ p }}_graph_t graph = capturing_graph(stream);
  if (graph == nullptr) return false;
  GraphNode node;
  node.work = std::move(*work);
  node.kept = std::move(kept_arguments());
  kept_arguments() = KeptArguments();
  node.op = op;
  node.kernel = debug::current_kernel();
  node.uses = std::move(uses);
  graph->nodes->push_back(std::move(node));
  return true;
}

void note_device_pointer(const void* ptr, int device) {
  AllocationUse use;
  if (ptr == nullptr || !allocation_holding(ptr, device, &use)) return;
  for (const AllocationUse& noted : t_noted)
    if (noted.device == use.device && noted.base == use.base) return;
  t_noted.push_back(use);
}

{{ p }}_status_t refuse_if_capturing(const char* call, {{ p }}_stream_t stream) {
  return stream_captures(stream) ? refuse(call, normalised(stream)) : {{ NAME }}_OK;
}

{{ p }}_status_t refuse_if_device_captures(const char* call, int device) {
  if (!capture_underway()) return {{ NAME }}_OK;
  {{ p }}_stream_t capturing = nullptr;
  {
    std::lock_guard<std::mutex> lock(captures().mu);
    for (const auto& kv : captures().graphs)
      if (kv.second->device == device) capturing = kv.first;
  }
  return capturing ? refuse(std::string(call) + " (which waits for all of device " + std::to_string(device) + ")",
                            capturing)
                   : {{ NAME }}_OK;
}

{{ p }}_status_t refuse_free_of_captured(const void* ptr, int device) {
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(captures().mu);
    const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
    for (const auto& kv : captures().graphs) {
      const Nodes& nodes = *kv.second->nodes;
      for (size_t i = 0; i < nodes.size() && detail.empty(); ++i)
        for (const AllocationUse& use : nodes[i].uses)
          if (use.device == device && use.base == base) {
            detail = "the " + std::to_string(use.size) + "-byte allocation at " + hex(base) + " is used by node " +
                     std::to_string(i) + " (" + nodes[i].op + ") of the " + kv.second->name() +
                     " being captured, which could not replay it; free it after the capture ends";
            break;
          }
      if (!detail.empty()) break;
    }
  }
  return detail.empty() ? {{ NAME }}_OK : fail_call("free", {{ NAME }}_ERROR_UNSUPPORTED, detail);
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_stream_begin_capture({{ p }}_stream_t stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_begin_capture");
  return guard_call("stream_begin_capture", [&] {
    stream = normalised(stream);
    auto graph = std::make_unique<{{ p }}_graph_st>();
    static std::atomic<uint64_t> ids{0};
    graph->device = stream_device(stream);
    graph->stream_id = id_of(stream);
    std::lock_guard<std::mutex> lock(captures().mu);
    if (capturing_graph(stream) != nullptr)
      return fail_call("stream_begin_capture", {{ NAME }}_ERROR_INVALID_VALUE,
                       "stream " + std::to_string(graph->stream_id) + " is capturing already");
    graph->id = ids.fetch_add(1) + 1;
    graph->label = std::make_shared<const std::string>("graph " + std::to_string(graph->id) + " (captured on stream " +
                                                       std::to_string(graph->stream_id) + " of device " +
                                                       std::to_string(graph->device) + ")");
    captures().graphs[stream] = graph.release();
    g_captures.fetch_add(1);
    return {{ NAME }}_OK;
  });
}

{{ p }}_status_t {{ p }}_stream_end_capture({{ p }}_stream_t stream, {{ p }}_graph_t* graph) {
  if (!graph) return {{ NAME }}_ERROR_INVALID_VALUE;
  stream = normalised(stream);
  std::lock_guard<std::mutex> lock(captures().mu);
  auto it = captures().graphs.find(stream);
  if (it == captures().graphs.end())
    return fail_call("stream_end_capture", {{ NAME }}_ERROR_INVALID_VALUE,
                     "stream " + std::to_string(id_of(stream)) + " is not capturing");
  *graph = it->second;
  captures().graphs.erase(it);
  g_captures.fetch_sub(1);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_is_capturing({{ p }}_stream_t stream, int* capturing) {
  if (!capturing) return {{ NAME }}_ERROR_INVALID_VALUE;
  *capturing = stream_captures(stream) ? 1 : 0;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_graph_instantiate({{ p }}_graph_t graph) {
  if (!graph) return {{ NAME }}_ERROR_INVALID_VALUE;
  return guard_call("graph_instantiate", [&] {
    graph->uses.clear();
    for (const GraphNode& node : *graph->nodes)
      for (const AllocationUse& use : node.uses)
        if (std::none_of(graph->uses.begin(), graph->uses.end(), [&](const AllocationUse& u) {
              return u.device == use.device && u.base == use.base && u.serial == use.serial;
            }))
          graph->uses.push_back(use);
    const {{ p }}_status_t status = check_allocations("graph_instantiate", *graph);
    if (status == {{ NAME }}_OK) graph->instantiated = true;
    return status;
  });
}

{{ p }}_status_t {{ p }}_graph_launch({{ p }}_graph_t graph, {{ p }}_stream_t stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("graph_launch");
  if (!graph) return {{ NAME }}_ERROR_INVALID_VALUE;
  return guard_call("graph_launch", [&]() -> {{ p }}_status_t {
    stream = normalised(stream);
    if (!graph->instantiated)
      return fail_call("graph_launch", {{ NAME }}_ERROR_INVALID_VALUE,
                       graph->name() + " is not instantiated ({{ p }}_graph_instantiate)");
    if (stream_device(stream) != graph->device)
      return fail_call("graph_launch", {{ NAME }}_ERROR_INVALID_VALUE,
                       graph->name() + " launched onto a stream of device " + std::to_string(stream_device(stream)));
    const {{ p }}_status_t capturing = refuse_if_capturing("graph_launch", stream);
    if (capturing != {{ NAME }}_OK) return capturing;
    const {{ p }}_status_t freed = check_allocations("graph_launch", *graph);
    if (freed != {{ NAME }}_OK) return freed;
    auto run = [nodes = graph->nodes, name = graph->label, device = graph->device, stream_id = id_of(stream)] {
      return run_nodes(*nodes, *name, device, stream_id);
    };
    const uint64_t parts = graph->nodes->size();
    if (execution().synchronous)
      return run_inline(stream, "graph_launch", [](void* w) { return (*static_cast<decltype(run)*>(w))(); }, &run,
                        parts);
    return enqueue(stream, "graph_launch", run, parts);
  });
}

{{ p }}_status_t {{ p }}_graph_node_count({{ p }}_graph_t graph, size_t* count) {
  if (!graph || !count) return {{ NAME }}_ERROR_INVALID_VALUE;
  *count = graph->nodes->size();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_graph_destroy({{ p }}_graph_t graph) {
  if (!graph) return {{ NAME }}_ERROR_INVALID_VALUE;
  delete graph;  // queued launches hold the nodes
  return {{ NAME }}_OK;
}

}  // extern "C"
