// Graph capture and replay: paddle.device.cuda.graphs.CUDAGraph(place=CustomPlace(...)) reaches
// the plugin through Paddle 3.3.1's custom-device CUDAGraph (phi/backends/custom/cuda_graph.cc),
// which calls these slots; they are the device library's {{ p }}_stream_begin_capture /
// {{ p }}_graph_* under Paddle's names. Before it captures, Paddle creates the context's BLAS
// handles (custom_context.cc: "The Custom Device blas handle is nullptr" when there is none), so
// the BLAS handle slots hand it a token: the library's ops take the stream, not a handle.
#include <cstdio>

#include "adapter.h"

namespace {{ p }}_runtime {
namespace {

{{ p }}_stream_t stream_of(C_Stream stream) { return reinterpret_cast<{{ p }}_stream_t>(stream); }

// The one BLAS "handle": nothing is behind it, and none of the plugin's kernels asks for it.
char g_no_blas_handle;

// Paddle asks for it just before a capture begins, and a capture that fails to begin leaves Paddle
// believing it captures (CUDAGraph::BeginCapture sets its capturing graph before it asks the
// plugin: each later allocation then fails on a null cuda_graph_allocator_). So a device
// library that cannot capture refuses here, while Paddle's state is still whole.
C_Status InitBlasHandle(const C_Device, C_BLASHandle* handle, C_Stream stream) {
  int capturing = 0;
  const {{ p }}_status_t status = {{ p }}_stream_is_capturing(stream_of(stream), &capturing);
  if (status == {{ NAME }}_ERROR_UNSUPPORTED) {
    std::fprintf(stderr, "[{{ p }}] CUDAGraph: the {{ NAME }} device library does not capture graphs (%s)\n",
                 {{ p }}_status_string(status));
    return C_ERROR;
  }
  *handle = reinterpret_cast<C_BLASHandle>(&g_no_blas_handle);
  return C_SUCCESS;
}
C_Status InitBlasLtHandle(const C_Device, C_BLASLtHandle* handle) {
  *handle = reinterpret_cast<C_BLASLtHandle>(&g_no_blas_handle);
  return C_SUCCESS;
}
C_Status BlasSetMathMode(const C_Device, C_BLASHandle, int) { return C_SUCCESS; }
C_Status DestroyBlasHandle(const C_Device, C_BLASHandle) { return C_SUCCESS; }
C_Status DestroyBlasLtHandle(const C_Device, C_BLASLtHandle) { return C_SUCCESS; }

// The stream-capture slots: Paddle 3.3's (a Paddle without them, such as 3.2, has the BLAS
// handles above only; CMakeLists.txt defines {{ NAME }}_PADDLE_GRAPH_CAPTURE where device_ext.h has them).
#ifdef {{ NAME }}_PADDLE_GRAPH_CAPTURE
{{ p }}_graph_t graph_of(C_CudaGraph graph) { return reinterpret_cast<{{ p }}_graph_t>(graph); }

// The library's capture has one mode: what each capturing stream refuses is fixed (see
// {{ p }}_stream_begin_capture). Paddle's mode is kept per thread for the exchange below.
thread_local C_StreamCaptureMode t_capture_mode = C_StreamCaptureModeGlobal;

C_Status BeginCapture(const C_Device, C_Stream stream, C_StreamCaptureMode) {
  return to_c("cuda_stream_begin_capture", {{ p }}_stream_begin_capture(stream_of(stream)));
}
C_Status EndCapture(const C_Device, C_Stream stream, C_CudaGraph* graph) {
  {{ p }}_graph_t captured = nullptr;
  const C_Status status = to_c("cuda_stream_end_capture", {{ p }}_stream_end_capture(stream_of(stream), &captured));
  *graph = reinterpret_cast<C_CudaGraph>(captured);
  return status;
}
C_Status CaptureInfo(const C_Device, C_Stream stream, C_StreamCaptureStatus* status, unsigned long long* id,  // NOLINT
                     C_CudaGraph* graph, C_CudaGraphNode* dependencies, void** edge_data, size_t* num_dependencies) {
  int capturing = 0;
  const C_Status st = to_c("cuda_stream_capture_info", {{ p }}_stream_is_capturing(stream_of(stream), &capturing));
  if (st != C_SUCCESS) return st;
  if (status) *status = capturing ? C_StreamCaptureStatusActive : C_StreamCaptureStatusNone;
  // (the library names no capture, graph or dependency nodes while it captures)
  if (id) *id = 0;
  if (graph) *graph = nullptr;
  if (dependencies) *dependencies = nullptr;
  if (edge_data) *edge_data = nullptr;
  if (num_dependencies) *num_dependencies = 0;
  return C_SUCCESS;
}
C_Status ExchangeCaptureMode(C_StreamCaptureMode* mode) {
  const C_StreamCaptureMode previous = t_capture_mode;
  t_capture_mode = *mode;
  *mode = previous;
  return C_SUCCESS;
}

// Paddle asks for the count only (nodes == nullptr): the library names no nodes.
C_Status GraphNodes(C_CudaGraph graph, C_CudaGraphNode* nodes, size_t* count) {
  if (nodes) {
    std::fprintf(stderr, "[{{ p }}] cuda_graph_get_nodes: the {{ NAME }} library gives a graph's node count, not its nodes\n");
    return C_ERROR;
  }
  return to_c("cuda_graph_get_nodes", {{ p }}_graph_node_count(graph_of(graph), count));
}
// The instantiated graph is the graph itself, frozen: so the exec's destroy is the graph's
// (Paddle destroys both, the graph first).
C_Status Instantiate(C_GraphExec* exec, C_CudaGraph* graph, void**, char*, size_t) {
  const C_Status status = to_c("cuda_graph_instantiate", {{ p }}_graph_instantiate(graph_of(*graph)));
  *exec = status == C_SUCCESS ? reinterpret_cast<C_GraphExec>(*graph) : nullptr;
  return status;
}
C_Status Launch(const C_Device, C_GraphExec exec, C_Stream stream) {
  return to_c("cuda_graph_launch", {{ p }}_graph_launch(reinterpret_cast<{{ p }}_graph_t>(exec), stream_of(stream)));
}
C_Status DestroyGraph(C_CudaGraph graph) { return to_c("cuda_graph_destroy", {{ p }}_graph_destroy(graph_of(graph))); }
C_Status DestroyExec(C_GraphExec) { return C_SUCCESS; }
// CUDAGraph.print_to_dot_files: refused in words (with the slot empty Paddle writes nothing and
// says nothing); the library gives a graph's node count, not its nodes.
C_Status DotPrint(C_CudaGraph graph, const char* path, unsigned int) {
  size_t nodes = 0;
  {{ p }}_graph_node_count(graph_of(graph), &nodes);
  std::fprintf(stderr,
               "[{{ p }}] cuda_graph_debug_dot_print: not written to %s: the {{ NAME }} device library names no "
               "graph nodes (this graph has %zu)\n",
               path ? path : "?", nodes);
  return C_ERROR;
}
// Hooks that rewrite a CUDA kernel node's parameters before each replay (Paddle's
// CUDAGraphNodeLauncher, CUDA kernels only): none here.
C_Status ParameterSetters(C_CudaGraph, C_GraphHookManager* hooks) {
  hooks->size = 0;
  hooks->hooks = nullptr;
  hooks->user_data = nullptr;
  return C_SUCCESS;
}

#endif  // {{ NAME }}_PADDLE_GRAPH_CAPTURE

}  // namespace

void fill_graph_capture(C_DeviceInterface* ifc) {
  ifc->init_blas_handle = InitBlasHandle;
  ifc->init_blaslt_handle = InitBlasLtHandle;
  ifc->blas_set_math_mode = BlasSetMathMode;
  ifc->destroy_blas_handle = DestroyBlasHandle;
  ifc->destroy_blaslt_handle = DestroyBlasLtHandle;
#ifdef {{ NAME }}_PADDLE_GRAPH_CAPTURE
  ifc->cuda_stream_begin_capture = BeginCapture;
  ifc->cuda_stream_end_captrue = EndCapture;  // (Paddle's spelling)
  ifc->cuda_stream_capture_info = CaptureInfo;
  ifc->cuda_thread_exchange_stream_capthure_mode = ExchangeCaptureMode;
  ifc->cuda_graph_get_nodes = GraphNodes;
  ifc->cuda_graph_instantiate = Instantiate;
  ifc->cuda_graph_launch = Launch;
  ifc->cuda_graph_destroy = DestroyGraph;
  ifc->cuda_graph_exec_destroy = DestroyExec;
  ifc->get_parameter_setter_for_exec_graph = ParameterSetters;
  ifc->cuda_graph_debug_dot_print = DotPrint;
#endif
}

}  // namespace {{ p }}_runtime
