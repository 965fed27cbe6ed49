// Paddle runtime adapter for {{ NAME }}: implements Paddle's C_DeviceInterface
// (paddle/phi/backends/device_ext.h of the installed wheel) on top of the
// {{ NAME }} device library. No device logic lives here; only translation.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adapter.h"
#include "inference_passes.h"
#include "paddle/phi/backends/device_base.h"
#include "paddle/phi/backends/device_ext.h"
#include "{{ p }}_device.h"

#ifndef {{ NAME }}_PLUGIN_VERSION
#define {{ NAME }}_PLUGIN_VERSION "0.0.0"
#endif
#ifndef {{ NAME }}_PADDLE_VERSION
#define {{ NAME }}_PADDLE_VERSION "unknown"
#endif
#define {{ NAME }}_STR2(x) #x
#define {{ NAME }}_STR(x) {{ NAME }}_STR2(x)

// What this plugin was compiled against, read by `devkit check-abi` without
// loading the library.
extern "C" __attribute__((visibility("default"), used)) const char {{ p }}_paddle_build_info[] =
    "paddle_version=" {{ NAME }}_PADDLE_VERSION
    ";custom_runtime_version=" {{ NAME }}_STR(PADDLE_CUSTOM_RUNTIME_MAJOR_VERSION) "." {{ NAME }}_STR(
        PADDLE_CUSTOM_RUNTIME_MINOR_VERSION) "." {{ NAME }}_STR(PADDLE_CUSTOM_RUNTIME_PATCH_VERSION)
    ";plugin_version=" {{ NAME }}_PLUGIN_VERSION;

namespace {{ p }}_runtime {

// The device library reports its own status codes; Paddle understands C_Status.
C_Status to_c(const char* what, {{ p }}_status_t status) {
  switch (status) {
    case {{ NAME }}_OK: return C_SUCCESS;
    case {{ NAME }}_ERROR_NOT_READY: return C_FAILED;  // query: still busy
    case {{ NAME }}_ERROR_OUT_OF_MEMORY:
      std::fprintf(stderr, "[{{ p }}] %s: %s\n", what, {{ p }}_status_string(status));
      return C_FAILED;
    default:  // a synchronising call may return an error of earlier queued work: its op is named
      std::fprintf(stderr, "[{{ p }}] %s: %s %s\n", what, {{ p }}_status_string(status), {{ p }}_error_detail());
      return C_ERROR;
  }
}

}  // namespace {{ p }}_runtime

namespace {

using {{ p }}_runtime::to_c;

{{ p }}_stream_t stream_of(C_Stream stream) { return reinterpret_cast<{{ p }}_stream_t>(stream); }
{{ p }}_event_t event_of(C_Event event) { return reinterpret_cast<{{ p }}_event_t>(event); }

C_Status Initialize() { return to_c("initialize", {{ p }}_init()); }
C_Status Finalize() { return to_c("finalize", {{ p }}_finalize()); }

C_Status InitDevice(const C_Device device) { return to_c("init_device", {{ p }}_set_device(device->id)); }
C_Status SetDevice(const C_Device device) { return to_c("set_device", {{ p }}_set_device(device->id)); }
C_Status GetDevice(const C_Device device) { return to_c("get_device", {{ p }}_get_device(&device->id)); }
C_Status DeInitDevice(const C_Device device) { return to_c("deinit_device", {{ p }}_device_synchronize(device->id)); }

C_Status CreateStream(const C_Device device, C_Stream* stream) {
  {{ p }}_stream_t s = nullptr;
  C_Status st = to_c("create_stream", {{ p }}_stream_create(device->id, &s));
  *stream = reinterpret_cast<C_Stream>(s);
  return st;
}
C_Status DestroyStream(const C_Device, C_Stream stream) {
  return to_c("destroy_stream", {{ p }}_stream_destroy(stream_of(stream)));
}
C_Status QueryStream(const C_Device, C_Stream stream) {
  return to_c("query_stream", {{ p }}_stream_query(stream_of(stream)));
}

struct CallbackArgs {
  C_Device device;
  C_Stream stream;
  C_Callback callback;
  void* user_data;
};

void RunCallback(void* data) {
  CallbackArgs* args = static_cast<CallbackArgs*>(data);
  C_Status status = C_SUCCESS;
  args->callback(args->device, args->stream, args->user_data, &status);
  delete args;
}

C_Status AddCallback(const C_Device device, C_Stream stream, C_Callback callback, void* user_data) {
  auto* args = new CallbackArgs{device, stream, callback, user_data};
  return to_c("stream_add_callback", {{ p }}_launch_host_func(stream_of(stream), RunCallback, args));
}

C_Status CreateEvent(const C_Device device, C_Event* event) {
  {{ p }}_event_t e = nullptr;
  C_Status st = to_c("create_event", {{ p }}_event_create(device->id, &e));
  *event = reinterpret_cast<C_Event>(e);
  return st;
}
C_Status RecordEvent(const C_Device, C_Stream stream, C_Event event) {
  return to_c("record_event", {{ p }}_event_record(event_of(event), stream_of(stream)));
}
C_Status DestroyEvent(const C_Device, C_Event event) {
  return to_c("destroy_event", {{ p }}_event_destroy(event_of(event)));
}
C_Status QueryEvent(const C_Device, C_Event event) {
  return to_c("query_event", {{ p }}_event_query(event_of(event)));
}

C_Status SyncDevice(const C_Device device) { return to_c("synchronize_device", {{ p }}_device_synchronize(device->id)); }
C_Status SyncStream(const C_Device, C_Stream stream) {
  return to_c("synchronize_stream", {{ p }}_stream_synchronize(stream_of(stream)));
}
C_Status SyncEvent(const C_Device, C_Event event) {
  return to_c("synchronize_event", {{ p }}_event_synchronize(event_of(event)));
}
C_Status StreamWaitEvent(const C_Device, C_Stream stream, C_Event event) {
  return to_c("stream_wait_event", {{ p }}_stream_wait_event(stream_of(stream), event_of(event)));
}

C_Status Allocate(const C_Device device, void** ptr, size_t size) {
  return to_c("device_memory_allocate", {{ p }}_malloc(device->id, ptr, size));
}
C_Status Deallocate(const C_Device device, void* ptr, size_t) {
  return to_c("device_memory_deallocate", {{ p }}_free(device->id, ptr));
}
C_Status MemSet(const C_Device device, void* ptr, unsigned char value, size_t size) {
  return to_c("device_memory_set", {{ p }}_memset(device->id, ptr, value, size));
}

C_Status CopyH2D(const C_Device, void* dst, const void* src, size_t size) {
  return to_c("memory_copy_h2d", {{ p }}_memcpy(dst, src, size, {{ NAME }}_COPY_HOST_TO_DEVICE));
}
C_Status CopyD2H(const C_Device, void* dst, const void* src, size_t size) {
  return to_c("memory_copy_d2h", {{ p }}_memcpy(dst, src, size, {{ NAME }}_COPY_DEVICE_TO_HOST));
}
C_Status CopyD2D(const C_Device, void* dst, const void* src, size_t size) {
  return to_c("memory_copy_d2d", {{ p }}_memcpy(dst, src, size, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
}
C_Status CopyP2P(const C_Device dst_device, const C_Device src_device, void* dst, const void* src, size_t size) {
  return to_c("memory_copy_p2p", {{ p }}_memcpy_peer(dst, dst_device->id, src, src_device->id, size));
}
C_Status AsyncCopyP2P(const C_Device dst_device, const C_Device src_device, C_Stream stream, void* dst,
                      const void* src, size_t size) {
  return to_c("async_memory_copy_p2p",
              {{ p }}_memcpy_peer_async(stream_of(stream), dst, dst_device->id, src, src_device->id, size));
}
C_Status AsyncCopyH2D(const C_Device, C_Stream stream, void* dst, const void* src, size_t size) {
  return to_c("async_memory_copy_h2d",
              {{ p }}_memcpy_async(stream_of(stream), dst, src, size, {{ NAME }}_COPY_HOST_TO_DEVICE));
}
// Paddle's host tensors are pageable memory it reads right after a non-blocking copy
// (`t._copy_to(cpu, False).numpy()` synchronises nothing), so this copy returns when done,
// as CUDA's copies into pageable memory do. The device streams stay asynchronous otherwise.
C_Status AsyncCopyD2H(const C_Device, C_Stream stream, void* dst, const void* src, size_t size) {
  const C_Status queued = to_c("async_memory_copy_d2h",
                               {{ p }}_memcpy_async(stream_of(stream), dst, src, size, {{ NAME }}_COPY_DEVICE_TO_HOST));
  return queued != C_SUCCESS ? queued : to_c("async_memory_copy_d2h", {{ p }}_stream_synchronize(stream_of(stream)));
}
C_Status AsyncCopyD2D(const C_Device, C_Stream stream, void* dst, const void* src, size_t size) {
  return to_c("async_memory_copy_d2d",
              {{ p }}_memcpy_async(stream_of(stream), dst, src, size, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
}

C_Status GetDeviceCount(size_t* count) {
  int n = 0;
  C_Status st = to_c("get_device_count", {{ p }}_device_count(&n));
  *count = static_cast<size_t>(n);
  return st;
}
C_Status GetDeviceList(size_t* devices) {
  int n = 0;
  C_Status st = to_c("get_device_list", {{ p }}_device_count(&n));
  for (int i = 0; i < n; ++i) devices[i] = static_cast<size_t>(i);
  return st;
}
C_Status MemoryStats(const C_Device device, size_t* total, size_t* free_bytes) {
  return to_c("device_memory_stats", {{ p }}_mem_info(device->id, total, free_bytes));
}
C_Status MinChunkSize(const C_Device, size_t* size) {
  *size = 512;  // allocator granularity, bytes
  return C_SUCCESS;
}
C_Status MaxChunkSize(const C_Device device, size_t* size) {
  size_t total = 0, free_bytes = 0;
  C_Status st = MemoryStats(device, &total, &free_bytes);
  *size = total / 4;  // let Paddle's allocator grab at most a quarter at once
  return st;
}
C_Status ExtraPaddingSize(const C_Device, size_t* size) {
  *size = 0;
  return C_SUCCESS;
}
C_Status ComputeCapability(const C_Device, size_t* value) {
  *value = 1;
  return C_SUCCESS;
}
C_Status RuntimeVersion(const C_Device, size_t* value) {
  *value = {{ NAME }}_DEVICE_API_VERSION;
  return C_SUCCESS;
}
C_Status DriverVersion(const C_Device, size_t* value) {
  *value = {{ NAME }}_DEVICE_API_VERSION;
  return C_SUCCESS;
}
// paddle.amp.is_float16_supported / is_bfloat16_supported: whether the float16 and bfloat16
// kernels are registered (flavour.toml: half-precision).
C_Status Float16Supported(const C_Device, bool* supported) {
  *supported = {{ "true" if half_precision else "false" }};
  return C_SUCCESS;
}
C_Status BFloat16Supported(const C_Device, bool* supported) {
  *supported = {{ "true" if half_precision else "false" }};
  return C_SUCCESS;
}
// Paddle's DeviceProp (phi/backends/device_base.h) for core.get_device_properties; Paddle
// 3.3.1's paddle.device.get_device_properties reaches it only for metax_gpu and iluvatar_gpu.
// The device library has no name or multiprocessor query: the name is {{ NAME }}, the count 0,
// the version the device API's (as get_compute_capability).
C_Status DeviceProperties(const C_Device device, void* properties) {
  int id = device->id;
  if (id < 0) {  // (the current device)
    const C_Status st = to_c("get_device_properties", {{ p }}_get_device(&id));
    if (st != C_SUCCESS) return st;
  }
  size_t total = 0, free_bytes = 0;
  const C_Status st = to_c("get_device_properties", {{ p }}_mem_info(id, &total, &free_bytes));
  if (st != C_SUCCESS) return st;
  *static_cast<phi::DeviceProp*>(properties) =
      phi::DeviceProp("{{ NAME }}", {{ NAME }}_DEVICE_API_VERSION, 0, total, 0, false, false);
  return C_SUCCESS;
}

// ---- collectives: Paddle's xccl slots on the library's {{ p }}_ccl_* ----

{{ p }}_comm_t comm_of(C_CCLComm comm) { return reinterpret_cast<{{ p }}_comm_t>(comm); }

// Paddle's dtypes the library has; false for the others (float16, bfloat16, unsigned > 8 bit).
bool ccl_dtype(C_DataType in, {{ p }}_dtype_t* out) {
  switch (in) {
    case C_DataType::BOOL: *out = {{ NAME }}_BOOL; return true;
    case C_DataType::UINT8: *out = {{ NAME }}_UINT8; return true;
    case C_DataType::INT8: *out = {{ NAME }}_INT8; return true;
    case C_DataType::INT16: *out = {{ NAME }}_INT16; return true;
    case C_DataType::INT32: *out = {{ NAME }}_INT32; return true;
    case C_DataType::INT64: *out = {{ NAME }}_INT64; return true;
    case C_DataType::FLOAT32: *out = {{ NAME }}_FLOAT32; return true;
    case C_DataType::FLOAT64: *out = {{ NAME }}_FLOAT64; return true;
    default: return false;
  }
}

// AVG is a sum scaled by 1/nranks afterwards (on the same stream), as collective libraries
// without an average do; `avg` says whether that is due.
bool ccl_op(C_CCLReduceOp in, {{ p }}_ccl_op_t* out, bool* avg) {
  *avg = in == C_CCLReduceOp::AVG;
  switch (in) {
    case C_CCLReduceOp::SUM: case C_CCLReduceOp::AVG: *out = {{ NAME }}_CCL_SUM; return true;
    case C_CCLReduceOp::MAX: *out = {{ NAME }}_CCL_MAX; return true;
    case C_CCLReduceOp::MIN: *out = {{ NAME }}_CCL_MIN; return true;
    case C_CCLReduceOp::PRODUCT: *out = {{ NAME }}_CCL_PROD; return true;
  }
  return false;
}

C_Status unsupported(const char* what, const char* why) {
  std::fprintf(stderr, "[{{ p }}] %s: %s\n", what, why);
  return C_ERROR;
}

C_Status CclCommName(C_CCLComm comm, char* name) {
  int rank = 0, nranks = 0;
  C_Status st = to_c("xccl_get_comm_name", {{ p }}_ccl_comm_rank(comm_of(comm), &rank, &nranks));
  if (st == C_SUCCESS) std::snprintf(name, 128, "{{ p }}ccl-rank%d-of%d", rank, nranks);
  return st;
}
C_Status CclUniqueIdSize(size_t* size) {
  *size = sizeof({{ p }}_ccl_id_t);
  return C_SUCCESS;
}
C_Status CclUniqueId(C_CCLRootId* id) {
  if (!id || !id->data || id->sz < sizeof({{ p }}_ccl_id_t)) return unsupported("xccl_get_unique_id", "id buffer too small");
  return to_c("xccl_get_unique_id", {{ p }}_ccl_get_unique_id(static_cast<{{ p }}_ccl_id_t*>(id->data)));
}
C_Status CclCommInit(size_t nranks, C_CCLRootId* id, size_t rank, C_CCLComm* comm) {
  if (!id || !id->data || id->sz < sizeof({{ p }}_ccl_id_t)) return unsupported("xccl_comm_init_rank", "bad unique id");
  {{ p }}_comm_t c = nullptr;
  const C_Status st = to_c("xccl_comm_init_rank", {{ p }}_ccl_comm_init(static_cast<const {{ p }}_ccl_id_t*>(id->data),
                                                                  static_cast<int>(nranks), static_cast<int>(rank), &c));
  *comm = reinterpret_cast<C_CCLComm>(c);
  return st;
}
C_Status CclCommDestroy(C_CCLComm comm) { return to_c("xccl_destroy_comm", {{ p }}_ccl_comm_destroy(comm_of(comm))); }

// After a SUM that stands for AVG: recv *= 1/nranks.
C_Status average(const char* what, void* recv, size_t count, {{ p }}_dtype_t dtype, C_CCLComm comm, C_Stream stream) {
  int rank = 0, nranks = 1;
  {{ p }}_ccl_comm_rank(comm_of(comm), &rank, &nranks);
  return to_c(what, {{ p }}_scale(stream_of(stream), dtype, recv, recv, static_cast<int64_t>(count), 1.0 / nranks, 0.0, 1));
}

C_Status CclAllReduce(void* send, void* recv, size_t count, C_DataType dtype, C_CCLReduceOp op, C_CCLComm comm,
                      C_Stream stream) {
  {{ p }}_dtype_t d;
  {{ p }}_ccl_op_t o;
  bool avg = false;
  if (!ccl_dtype(dtype, &d) || !ccl_op(op, &o, &avg)) return unsupported("xccl_all_reduce", "dtype or reduction");
  C_Status st = to_c("xccl_all_reduce", {{ p }}_ccl_all_reduce(stream_of(stream), send, recv, count, d, o, comm_of(comm)));
  return st == C_SUCCESS && avg ? average("xccl_all_reduce", recv, count, d, comm, stream) : st;
}
C_Status CclBroadcast(void* buf, size_t count, C_DataType dtype, size_t root, C_CCLComm comm, C_Stream stream) {
  {{ p }}_dtype_t d;
  if (!ccl_dtype(dtype, &d)) return unsupported("xccl_broadcast", "dtype");
  return to_c("xccl_broadcast",
              {{ p }}_ccl_broadcast(stream_of(stream), buf, count, d, static_cast<int>(root), comm_of(comm)));
}
C_Status CclReduce(void* send, void* recv, size_t count, C_DataType dtype, C_CCLReduceOp op, size_t root,
                   C_CCLComm comm, C_Stream stream) {
  {{ p }}_dtype_t d;
  {{ p }}_ccl_op_t o;
  bool avg = false;
  if (!ccl_dtype(dtype, &d) || !ccl_op(op, &o, &avg)) return unsupported("xccl_reduce", "dtype or reduction");
  C_Status st = to_c("xccl_reduce", {{ p }}_ccl_reduce(stream_of(stream), send, recv, count, d, o,
                                                       static_cast<int>(root), comm_of(comm)));
  int rank = 0, nranks = 1;
  {{ p }}_ccl_comm_rank(comm_of(comm), &rank, &nranks);
  return st == C_SUCCESS && avg && static_cast<size_t>(rank) == root ? average("xccl_reduce", recv, count, d, comm, stream)
                                                                      : st;
}
C_Status CclAllGather(void* send, void* recv, size_t count, C_DataType dtype, C_CCLComm comm, C_Stream stream) {
  {{ p }}_dtype_t d;
  if (!ccl_dtype(dtype, &d)) return unsupported("xccl_all_gather", "dtype");
  return to_c("xccl_all_gather", {{ p }}_ccl_all_gather(stream_of(stream), send, recv, count, d, comm_of(comm)));
}
C_Status CclReduceScatter(void* send, void* recv, size_t count, C_DataType dtype, C_CCLReduceOp op, C_CCLComm comm,
                          C_Stream stream) {
  {{ p }}_dtype_t d;
  {{ p }}_ccl_op_t o;
  bool avg = false;
  if (!ccl_dtype(dtype, &d) || !ccl_op(op, &o, &avg)) return unsupported("xccl_reduce_scatter", "dtype or reduction");
  C_Status st = to_c("xccl_reduce_scatter",
                     {{ p }}_ccl_reduce_scatter(stream_of(stream), send, recv, count, d, o, comm_of(comm)));
  return st == C_SUCCESS && avg ? average("xccl_reduce_scatter", recv, count, d, comm, stream) : st;
}
// Inside a group, the order of sends and receives is free (as in NCCL). The library's sends
// never wait, but a receive holds its stream until the message comes: so receives wait for
// the group's end and are issued after its sends.
thread_local int g_group_depth = 0;
thread_local std::vector<std::function<C_Status()>> g_group_receives;

C_Status CclGroupStart() {
  ++g_group_depth;
  return C_SUCCESS;
}
C_Status CclGroupEnd() {
  if (g_group_depth == 0 || --g_group_depth > 0) return C_SUCCESS;
  C_Status first = C_SUCCESS;
  for (auto& receive : std::exchange(g_group_receives, {})) {
    const C_Status st = receive();
    if (first == C_SUCCESS) first = st;
  }
  return first;
}
C_Status CclSend(void* buf, size_t count, C_DataType dtype, size_t peer, C_CCLComm comm, C_Stream stream) {
  {{ p }}_dtype_t d;
  if (!ccl_dtype(dtype, &d)) return unsupported("xccl_send", "dtype");
  return to_c("xccl_send", {{ p }}_ccl_send(stream_of(stream), buf, count, d, static_cast<int>(peer), comm_of(comm)));
}
C_Status CclRecv(void* buf, size_t count, C_DataType dtype, size_t peer, C_CCLComm comm, C_Stream stream) {
  {{ p }}_dtype_t d;
  if (!ccl_dtype(dtype, &d)) return unsupported("xccl_recv", "dtype");
  auto receive = [=] {
    return to_c("xccl_recv", {{ p }}_ccl_recv(stream_of(stream), buf, count, d, static_cast<int>(peer), comm_of(comm)));
  };
  if (g_group_depth == 0) return receive();
  g_group_receives.emplace_back(receive);
  return C_SUCCESS;
}

}  // namespace

namespace {{ p }}_kernels {
void ApplyFallbackOps();  // kernels/fallback_ops.cc
}

// The PIR passes Paddle Inference runs on a program for this device: for a custom device it runs
// these and no device passes of its own ([tool.devkit] inference-passes, through the generated
// inference_passes.h). The default is the CPU's first three: a quantized (QDQ) program's
// quantize_linear/dequantize_linear pairs are folded away, so its float program runs on the
// device kernels (Paddle 3.3.1 lowers a loaded program's dequantize_linear to the quantize
// kernel: unfolded, the pairs would compute garbage). Paddle copies the list after InitPlugin
// returns; a user drops one with Config.delete_pass.
const std::vector<std::string> kInferencePasses = { {{- NAME }}_INFERENCE_PASSES};

extern "C" void InitPlugin(CustomRuntimeParams* params) {
  // Refuses (leaves the version unset) when Paddle's struct sizes differ from
  // the device_ext.h this plugin was compiled against.
  PADDLE_CUSTOM_RUNTIME_CHECK_VERSION(params);
  {{ p }}_kernels::ApplyFallbackOps();
  params->device_type = const_cast<char*>("{{ device_type }}");
  params->sub_device_type = const_cast<char*>("{{ device_type }}-host-v" {{ NAME }}_PLUGIN_VERSION);
  params->pir_default_passes = const_cast<std::vector<std::string>*>(&kInferencePasses);

  C_DeviceInterface* ifc = params->interface;
  std::memset(reinterpret_cast<void*>(ifc), 0, sizeof(C_DeviceInterface));
  ifc->size = sizeof(C_DeviceInterface);

  ifc->initialize = Initialize;
  ifc->finalize = Finalize;
  ifc->init_device = InitDevice;
  ifc->set_device = SetDevice;
  ifc->get_device = GetDevice;
  ifc->deinit_device = DeInitDevice;

  ifc->create_stream = CreateStream;
  ifc->destroy_stream = DestroyStream;
  ifc->query_stream = QueryStream;
  ifc->stream_add_callback = AddCallback;
  ifc->create_event = CreateEvent;
  ifc->record_event = RecordEvent;
  ifc->destroy_event = DestroyEvent;
  ifc->query_event = QueryEvent;
  ifc->synchronize_device = SyncDevice;
  ifc->synchronize_stream = SyncStream;
  ifc->synchronize_event = SyncEvent;
  ifc->stream_wait_event = StreamWaitEvent;

  ifc->device_memory_allocate = Allocate;
  ifc->device_memory_deallocate = Deallocate;
  ifc->device_memory_set = MemSet;
  ifc->memory_copy_h2d = CopyH2D;
  ifc->memory_copy_d2h = CopyD2H;
  ifc->memory_copy_d2d = CopyD2D;
  ifc->memory_copy_p2p = CopyP2P;
  ifc->async_memory_copy_p2p = AsyncCopyP2P;
  ifc->async_memory_copy_h2d = AsyncCopyH2D;
  ifc->async_memory_copy_d2h = AsyncCopyD2H;
  ifc->async_memory_copy_d2d = AsyncCopyD2D;

  ifc->get_device_count = GetDeviceCount;
  ifc->get_device_list = GetDeviceList;
  ifc->device_memory_stats = MemoryStats;
  ifc->device_min_chunk_size = MinChunkSize;
  ifc->device_max_chunk_size = MaxChunkSize;
  ifc->device_extra_padding_size = ExtraPaddingSize;
  ifc->get_compute_capability = ComputeCapability;
  ifc->get_runtime_version = RuntimeVersion;
  ifc->get_driver_version = DriverVersion;
  ifc->get_device_properties = DeviceProperties;
  ifc->is_float16_supported = Float16Supported;
  ifc->is_bfloat16_supported = BFloat16Supported;

  ifc->xccl_get_comm_name = CclCommName;
  ifc->xccl_get_unique_id_size = CclUniqueIdSize;
  ifc->xccl_get_unique_id = CclUniqueId;
  ifc->xccl_comm_init_rank = CclCommInit;
  ifc->xccl_destroy_comm = CclCommDestroy;
  ifc->xccl_all_reduce = CclAllReduce;
  ifc->xccl_broadcast = CclBroadcast;
  ifc->xccl_reduce = CclReduce;
  ifc->xccl_all_gather = CclAllGather;
  ifc->xccl_reduce_scatter = CclReduceScatter;
  ifc->xccl_group_start = CclGroupStart;
  ifc->xccl_group_end = CclGroupEnd;
  ifc->xccl_send = CclSend;
  ifc->xccl_recv = CclRecv;

  {{ p }}_runtime::fill_profiler(ifc);
  {{ p }}_runtime::fill_graph_capture(ifc);
}
