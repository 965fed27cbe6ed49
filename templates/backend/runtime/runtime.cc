// Paddle runtime adapter for {{ NAME }}: implements Paddle's C_DeviceInterface
// (paddle/phi/backends/device_ext.h of the installed wheel) on top of the
// {{ NAME }} device library. No device logic lives here; only translation.
#include <cstdio>
#include <cstring>

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

namespace {

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

}  // namespace

namespace {{ p }}_kernels {
void ApplyFallbackOps();  // kernels/fallback_ops.cc
}

extern "C" void InitPlugin(CustomRuntimeParams* params) {
  // Refuses (leaves the version unset) when Paddle's struct sizes differ from
  // the device_ext.h this plugin was compiled against.
  PADDLE_CUSTOM_RUNTIME_CHECK_VERSION(params);
  {{ p }}_kernels::ApplyFallbackOps();
  params->device_type = const_cast<char*>("{{ device_type }}");
  params->sub_device_type = const_cast<char*>("{{ device_type }}-host-v" {{ NAME }}_PLUGIN_VERSION);

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
}
