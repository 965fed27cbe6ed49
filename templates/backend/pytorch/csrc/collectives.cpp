// Collectives for torch.distributed: the device library's communicators and collectives as
// ops (torch.ops.{{ p }}.ccl_*), which the "{{ p }}ccl" process group in
// torch_{{ p }}/distributed.py calls. Each op is queued on the current stream of its tensors'
// device, like every kernel: it returns before the data has moved, and an error of a peer
// (a rank that died or timed out) comes back from the next synchronising call.
#include <mutex>
#include <string>
#include <vector>

#include "common.h"

namespace torch_{{ p }} {
namespace {

// Communicators by handle (1, 2, ...): Python holds integers, not pointers.
class Communicators {
 public:
  static Communicators& get() {
    static Communicators* c = new Communicators();  // leaked: may be used at exit
    return *c;
  }
  int64_t add({{ p }}_comm_t comm) {
    std::lock_guard<std::mutex> lock(mu_);
    comms_.push_back(comm);
    return static_cast<int64_t>(comms_.size());
  }
  {{ p }}_comm_t at(int64_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK(handle >= 1 && handle <= static_cast<int64_t>(comms_.size()) && comms_[handle - 1],
                "{{ p }}ccl: communicator ", handle, " does not exist (destroyed, or never made)");
    return comms_[handle - 1];
  }
  {{ p }}_comm_t take(int64_t handle) {
    {{ p }}_comm_t comm = at(handle);
    std::lock_guard<std::mutex> lock(mu_);
    comms_[handle - 1] = nullptr;
    return comm;
  }

 private:
  std::mutex mu_;
  std::vector<{{ p }}_comm_t> comms_;
};

// A device buffer of the collective: contiguous, of a dtype the device library has.
struct Buffer {
  void* data;
  size_t count;
  {{ p }}_dtype_t dtype;
};

Buffer buffer(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "{{ p }}ccl ", op, ": a {{ device_type }} tensor is needed, got one on ",
              t.device());
  TORCH_CHECK(t.is_contiguous(), "{{ p }}ccl ", op, ": the tensor must be contiguous");
  {{ p }}_dtype_t dtype;
  TORCH_CHECK(device_dtype(t.scalar_type(), &dtype), "{{ p }}ccl ", op, ": dtype ", t.scalar_type(),
              " is not supported by the {{ NAME }} device library (bool, uint8, int8, int16, int32, int64, float32, float64)");
  return {t.data_ptr(), static_cast<size_t>(t.numel()), dtype};
}

// The current stream of `t`'s device, with that device current (the library's calls
// are per device).
struct OnDevice {
  explicit OnDevice(const at::Tensor& t) : guard(t.device()), stream(current_stream()) {}
  c10::DeviceGuard guard;
  {{ p }}_stream_t stream;
};

{{ p }}_ccl_op_t reduce_op(int64_t op) {
  TORCH_CHECK(op >= {{ NAME }}_CCL_SUM && op <= {{ NAME }}_CCL_MIN, "{{ p }}ccl: unknown reduce op ", op);
  return static_cast<{{ p }}_ccl_op_t>(op);
}

std::string unique_id() {
  {{ p }}_ccl_id_t id;
  check({{ p }}_ccl_get_unique_id(&id), "ccl_get_unique_id");
  return std::string(id.bytes);
}

int64_t comm_init(const std::string& id, int64_t nranks, int64_t rank) {
  {{ p }}_ccl_id_t raw = {};
  TORCH_CHECK(id.size() < sizeof(raw.bytes), "{{ p }}ccl: unique id too long (", id.size(), " bytes)");
  id.copy(raw.bytes, id.size());
  {{ p }}_comm_t comm = nullptr;
  check({{ p }}_ccl_comm_init(&raw, static_cast<int>(nranks), static_cast<int>(rank), &comm), "ccl_comm_init");
  return Communicators::get().add(comm);
}

void comm_destroy(int64_t handle) { check({{ p }}_ccl_comm_destroy(Communicators::get().take(handle)), "ccl_comm_destroy"); }

void all_reduce(const at::Tensor& tensor, int64_t op, int64_t comm) {
  const Buffer b = buffer(tensor, "all_reduce");
  OnDevice on(tensor);
  check({{ p }}_ccl_all_reduce(on.stream, b.data, b.data, b.count, b.dtype, reduce_op(op), Communicators::get().at(comm)),
        "ccl_all_reduce");
}

void broadcast(const at::Tensor& tensor, int64_t root, int64_t comm) {
  const Buffer b = buffer(tensor, "broadcast");
  OnDevice on(tensor);
  check({{ p }}_ccl_broadcast(on.stream, b.data, b.count, b.dtype, static_cast<int>(root), Communicators::get().at(comm)),
        "ccl_broadcast");
}

// output: the ranks' inputs one after the other (nranks x input.numel()).
void all_gather(const at::Tensor& output, const at::Tensor& input, int64_t comm) {
  const Buffer in = buffer(input, "all_gather"), out = buffer(output, "all_gather");
  {{ p }}_comm_t c = Communicators::get().at(comm);
  int rank = 0, nranks = 0;
  check({{ p }}_ccl_comm_rank(c, &rank, &nranks), "ccl_comm_rank");
  TORCH_CHECK(out.dtype == in.dtype && out.count == in.count * static_cast<size_t>(nranks),
              "{{ p }}ccl all_gather: the output needs ", nranks, " x ", in.count, " elements of the input's dtype, has ",
              out.count);
  OnDevice on(input);
  check({{ p }}_ccl_all_gather(on.stream, in.data, out.data, in.count, in.dtype, c), "ccl_all_gather");
}

// input: one block of output.numel() per rank; output: op over the ranks' block `rank`.
void reduce_scatter(const at::Tensor& output, const at::Tensor& input, int64_t op, int64_t comm) {
  const Buffer in = buffer(input, "reduce_scatter"), out = buffer(output, "reduce_scatter");
  {{ p }}_comm_t c = Communicators::get().at(comm);
  int rank = 0, nranks = 0;
  check({{ p }}_ccl_comm_rank(c, &rank, &nranks), "ccl_comm_rank");
  TORCH_CHECK(out.dtype == in.dtype && in.count == out.count * static_cast<size_t>(nranks),
              "{{ p }}ccl reduce_scatter: the input needs ", nranks, " x ", out.count, " elements of the output's dtype, has ",
              in.count);
  OnDevice on(input);
  check({{ p }}_ccl_reduce_scatter(on.stream, in.data, out.data, out.count, in.dtype, reduce_op(op), c),
        "ccl_reduce_scatter");
}

void send(const at::Tensor& tensor, int64_t peer, int64_t comm) {
  const Buffer b = buffer(tensor, "send");
  OnDevice on(tensor);
  check({{ p }}_ccl_send(on.stream, b.data, b.count, b.dtype, static_cast<int>(peer), Communicators::get().at(comm)),
        "ccl_send");
}

void recv(const at::Tensor& tensor, int64_t peer, int64_t comm) {
  const Buffer b = buffer(tensor, "recv");
  OnDevice on(tensor);
  check({{ p }}_ccl_recv(on.stream, b.data, b.count, b.dtype, static_cast<int>(peer), Communicators::get().at(comm)),
        "ccl_recv");
}

void barrier(int64_t device, int64_t comm) {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
  check({{ p }}_ccl_barrier(current_stream(), Communicators::get().at(comm)), "ccl_barrier");
}

}  // namespace

TORCH_LIBRARY_FRAGMENT({{ p }}, m) {
  m.def("ccl_unique_id() -> str", &unique_id);
  m.def("ccl_comm_init(str id, int nranks, int rank) -> int", &comm_init);
  m.def("ccl_comm_destroy(int comm) -> ()", &comm_destroy);
  // The tensors are written in place behind the schema's back (no aliasing info): these are
  // called from the process group only, outside autograd and tracing.
  m.def("ccl_all_reduce(Tensor tensor, int op, int comm) -> ()", &all_reduce);
  m.def("ccl_broadcast(Tensor tensor, int root, int comm) -> ()", &broadcast);
  m.def("ccl_all_gather(Tensor output, Tensor input, int comm) -> ()", &all_gather);
  m.def("ccl_reduce_scatter(Tensor output, Tensor input, int op, int comm) -> ()", &reduce_scatter);
  m.def("ccl_send(Tensor tensor, int peer, int comm) -> ()", &send);
  m.def("ccl_recv(Tensor tensor, int peer, int comm) -> ()", &recv);
  m.def("ccl_barrier(int device, int comm) -> ()", &barrier);
}

}  // namespace torch_{{ p }}
