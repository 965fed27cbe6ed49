// {{ NAME }} device library: the collectives' C API, between ranks, one process per rank --
// communicators, the collectives and send/recv. Each call checks its arguments, takes its place
// in the communicator's call order and queues its work on the stream; the ranks exchange their
// data through the shared-memory transport (collectives_transport.h).
// Real hardware replaces the bodies with its collective library (HCCL, CNCL, ...).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "collectives_transport.h"
#include "debug.h"

namespace {{ p }} {
namespace {

template <typename T>
T combine({{ p }}_ccl_op_t op, T a, T b) {
  switch (op) {
    case {{ NAME }}_CCL_SUM: return static_cast<T>(a + b);
    case {{ NAME }}_CCL_PROD: return static_cast<T>(a * b);
    case {{ NAME }}_CCL_MAX: return std::max(a, b);
    case {{ NAME }}_CCL_MIN: return std::min(a, b);
  }
  return a;
}

// out[i] = op over the ranks of parts[r][i], in rank order (every rank gets the same bits).
bool reduce_parts({{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, const std::vector<const char*>& parts, size_t count,
                  void* out) {
  return dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out);
    const T* first = reinterpret_cast<const T*>(parts[0]);
    std::copy(first, first + count, o);  // (out may be one of the parts' own buffers: not here, they are files)
    for (size_t r = 1; r < parts.size(); ++r) {
      const T* x = reinterpret_cast<const T*>(parts[r]);
      for (size_t i = 0; i < count; ++i) o[i] = combine(op, o[i], x[i]);
    }
  });
}

}  // namespace
}  // namespace {{ p }}

namespace {

{{ p }}_status_t unsupported_dtype() {
  set_failure_reason("the library has no such dtype");
  return {{ NAME }}_ERROR_UNSUPPORTED;
}

// A header for the next collective of `comm`, its sequence number taken in call order.
Header next_header({{ p }}_comm_t comm, Kind kind, size_t count, {{ p }}_dtype_t dtype, int op, int root,
                   uint64_t bytes) {
  std::lock_guard<std::mutex> lock(comm->issue_mu);
  return Header{++comm->issued, kind, static_cast<int32_t>(dtype), op, root, count, bytes};
}

bool everyone(int) { return true; }

}  // namespace

extern "C" {

{{ p }}_status_t {{ p }}_ccl_get_unique_id({{ p }}_ccl_id_t* id) {
  return guard_call("ccl_get_unique_id", [&] { return ccl_get_unique_id_unguarded(id); });
}

{{ p }}_status_t {{ p }}_ccl_comm_init(const {{ p }}_ccl_id_t* id, int nranks, int rank, {{ p }}_comm_t* comm) {
  return guard_call("ccl_comm_init", [&] { return ccl_comm_init_unguarded(id, nranks, rank, comm); });
}

{{ p }}_status_t {{ p }}_ccl_comm_destroy({{ p }}_comm_t comm) {
  return guard_call("ccl_comm_destroy", [&] { return ccl_comm_destroy_unguarded(comm); });
}

{{ p }}_status_t {{ p }}_ccl_comm_rank({{ p }}_comm_t comm, int* rank, int* nranks) {
  if (check_comm(comm) != {{ NAME }}_OK || !rank || !nranks) return {{ NAME }}_ERROR_INVALID_VALUE;
  *rank = comm->rank;
  *nranks = comm->nranks;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_ccl_all_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                 {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_all_reduce");
  trace_.attr("count", count).attr("op", static_cast<int>(op));
  if (check_comm(comm) != {{ NAME }}_OK || (count > 0 && (!send || !recv))) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, send, recv);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const Header h = next_header(comm, Kind::kAllReduce, count, dtype, op, -1, bytes);
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(h, send, everyone, [&](const std::vector<const char*>& parts) {
      if (count == 0) return {{ NAME }}_OK;
      return reduce_parts(dtype, op, parts, count, recv) ? {{ NAME }}_OK : unsupported_dtype();
    });
  });
}

{{ p }}_status_t {{ p }}_ccl_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                             {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, int root, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_reduce");
  trace_.attr("count", count).attr("root", root);
  if (check_comm(comm, root) != {{ NAME }}_OK || (count > 0 && (!send || (comm->rank == root && !recv))))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, send, recv);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const Header h = next_header(comm, Kind::kReduce, count, dtype, op, root, bytes);
  const bool is_root = comm->rank == root;
  {{ NAME }}_SUBMIT(s, {
    // Every rank puts its data in; only the root reads.
    status_ = comm->exchange(h, send, [is_root](int) { return is_root; }, [&](const std::vector<const char*>& parts) {
      if (!is_root || count == 0) return {{ NAME }}_OK;
      return reduce_parts(dtype, op, parts, count, recv) ? {{ NAME }}_OK : unsupported_dtype();
    });
  });
}

{{ p }}_status_t {{ p }}_ccl_broadcast({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype, int root,
                                {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_broadcast");
  trace_.attr("count", count).attr("root", root);
  if (check_comm(comm, root) != {{ NAME }}_OK || (count > 0 && !buf)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, buf);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const bool is_root = comm->rank == root;
  const Header h = next_header(comm, Kind::kBroadcast, count, dtype, -1, root, is_root ? bytes : 0);
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(h, buf, [is_root, root](int r) { return !is_root && r == root; },
                             [&](const std::vector<const char*>& parts) {
                               if (!is_root && bytes > 0) std::memcpy(buf, parts[root], bytes);
                               return {{ NAME }}_OK;
                             });
  });
}

{{ p }}_status_t {{ p }}_ccl_all_gather({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                 {{ p }}_dtype_t dtype, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_all_gather");
  trace_.attr("count", count);
  if (check_comm(comm) != {{ NAME }}_OK || (count > 0 && (!send || !recv))) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, send, recv);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const Header h = next_header(comm, Kind::kAllGather, count, dtype, -1, -1, bytes);
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(h, send, everyone, [&](const std::vector<const char*>& parts) {
      for (size_t r = 0; r < parts.size() && bytes > 0; ++r) std::memcpy(static_cast<char*>(recv) + r * bytes, parts[r], bytes);
      return {{ NAME }}_OK;
    });
  });
}

{{ p }}_status_t {{ p }}_ccl_reduce_scatter({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                     {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_reduce_scatter");
  trace_.attr("count", count);
  if (check_comm(comm) != {{ NAME }}_OK || (count > 0 && (!send || !recv))) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, send, recv);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const int rank = comm->rank, nranks = comm->nranks;
  const Header h = next_header(comm, Kind::kReduceScatter, count, dtype, op, -1, bytes * nranks);
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(h, send, everyone, [&](std::vector<const char*> parts) {
      if (count == 0) return {{ NAME }}_OK;
      for (const char*& part : parts) part += rank * bytes;  // this rank's block
      return reduce_parts(dtype, op, parts, count, recv) ? {{ NAME }}_OK : unsupported_dtype();
    });
  });
}

{{ p }}_status_t {{ p }}_ccl_barrier({{ p }}_stream_t s, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_barrier");
  if (check_comm(comm) != {{ NAME }}_OK) return {{ NAME }}_ERROR_INVALID_VALUE;
  const Header h = next_header(comm, Kind::kBarrier, 0, {{ NAME }}_FLOAT32, -1, -1, 0);
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(h, nullptr, [](int) { return false; },
                             [](const std::vector<const char*>&) { return {{ NAME }}_OK; });
  });
}

{{ p }}_status_t {{ p }}_ccl_send({{ p }}_stream_t s, const void* buf, size_t count, {{ p }}_dtype_t dtype, int peer,
                           {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_send");
  trace_.attr("count", count).attr("peer", peer);
  if (check_comm(comm, peer) != {{ NAME }}_OK || peer == comm->rank || (count > 0 && !buf))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, buf);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  std::string name;
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    name = comm->message_file(comm->rank, peer, ++comm->sent[peer]);
  }
  {{ NAME }}_SUBMIT(s, { status_ = post_message(comm, peer, name, count, dtype, buf, bytes); });
}

{{ p }}_status_t {{ p }}_ccl_recv({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype, int peer,
                           {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_recv");
  trace_.attr("count", count).attr("peer", peer);
  if (check_comm(comm, peer) != {{ NAME }}_OK || peer == comm->rank || (count > 0 && !buf))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, buf);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  std::string name;
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    name = comm->message_file(peer, comm->rank, ++comm->received[peer]);
  }
  {{ NAME }}_SUBMIT(s, { status_ = take_message(comm, peer, name, count, dtype, buf, bytes); });
}

}  // extern "C"