// {{ NAME }} device library: collectives between ranks, one process per rank.
//
// The host-backed device exchanges data through /dev/shm. A communicator is a small shared
// control block, named by the unique id: each rank's pid, and how many collectives each rank
// has put its data in for (`arrived`) and finished reading (`consumed`). Each collective's
// data is one file per rank; a rank removes its file once every rank has read it. A message
// of send/recv is a file of its own, published by a rename, so a send never waits.
// Waits are bounded: a rank that exits, or does not come within {{ NAME }}_CCL_TIMEOUT_S,
// fails the waiting op with {{ NAME }}_ERROR_PEER and a reason naming the rank.
// Real hardware replaces the bodies with its collective library (HCCL, CNCL, ...).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {

constexpr int kMaxRanks = 64;

// Shared by the ranks (a file mapped by each): address-free, so lock-free atomics only; the
// counters are 32-bit (lock-free on every target) and compared by difference.
struct CommControl {
  std::atomic<int32_t> joined;
  std::atomic<int32_t> left;
  std::atomic<int32_t> pid[kMaxRanks];
  std::atomic<uint32_t> arrived[kMaxRanks];
  std::atomic<uint32_t> consumed[kMaxRanks];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the control block is shared between processes");

namespace {

constexpr char kIdPrefix[] = "{{ p }}ccl-";

bool seq_reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

long timeout_seconds() {
  static const long s = [] {
    const char* v = std::getenv("{{ NAME }}_CCL_TIMEOUT_S");
    char* end = nullptr;
    const long n = v && *v ? std::strtol(v, &end, 10) : 0;
    return v && *v && *end == '\0' && n > 0 ? n : 300L;
  }();
  return s;
}

// False once the process has exited, also while it waits to be reaped (a zombie).
bool alive(int32_t pid) {
  if (pid <= 0) return true;  // not known yet
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64], stat[256] = {0};
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return true;
  const ssize_t n = read(fd, stat, sizeof(stat) - 1);
  close(fd);
  const char* end = n > 0 ? std::strrchr(stat, ')') : nullptr;  // "pid (comm) S ..."
  return !(end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X'));
}

// Writes `bytes` at `data` to `path` whole (a temporary name, then a rename when `atomic`).
bool write_file(const std::string& path, const void* data, size_t bytes, bool atomic) {
  const std::string tmp = atomic ? path + ".part" : path;
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done != bytes) return false;
  return !atomic || std::rename(tmp.c_str(), path.c_str()) == 0;
}

// A file mapped read-only (another rank's data).
class Mapped {
 public:
  explicit Mapped(const std::string& path, size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED) data_ = m;
  }
  ~Mapped() {
    if (data_) munmap(data_, bytes_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const char* data() const { return static_cast<const char*>(data_); }
  bool ok() const { return bytes_ == 0 || data_ != nullptr; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
};

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

using namespace {{ p }};  // NOLINT

struct {{ p }}_comm_st {
  std::string name;  // /dev/shm/<id>
  int rank = 0;
  int nranks = 1;
  CommControl* control = nullptr;
  // Issued at submission, so the order of the collectives is the order of the calls.
  uint32_t issued = 0;
  std::vector<uint32_t> sent, received;  // messages to / from each peer, issued at submission
  std::mutex files_mu;
  std::deque<std::pair<uint32_t, std::string>> own_files;  // this rank's data, until all have read it

  std::string data_file(uint32_t seq, int r) const {
    return name + ".c" + std::to_string(seq) + ".r" + std::to_string(r);
  }
  std::string message_file(int from, int to, uint32_t n) const {
    return name + ".p" + std::to_string(from) + "-" + std::to_string(to) + "." + std::to_string(n);
  }

  // Polls `pending` (the first rank still awaited, -1 when none) until no rank is awaited; a
  // rank that exited or the timeout ends the wait with {{ NAME }}_ERROR_PEER and `why`.
  template <typename Pending>
  {{ p }}_status_t wait_for(Pending pending, std::string* why) {
    const auto start = std::chrono::steady_clock::now();
    const auto limit = std::chrono::seconds(timeout_seconds());
    long sleep_us = 10;
    for (unsigned i = 0;; ++i) {
      const int missing = pending();
      if (missing < 0) return {{ NAME }}_OK;
      if (i % 64 == 63) {
        const int32_t pid = missing < nranks ? control->pid[missing].load() : 0;
        const bool gone = !alive(pid);
        if (gone || std::chrono::steady_clock::now() - start > limit) {
          char reason[200];
          if (gone)
            std::snprintf(reason, sizeof(reason), "rank %d of %d waited for rank %d (pid %d), which has exited", rank,
                          nranks, missing, static_cast<int>(pid));
          else
            std::snprintf(reason, sizeof(reason),
                          "rank %d of %d waited %ld s for rank %d ({{ NAME }}_CCL_TIMEOUT_S=%ld)", rank, nranks,
                          timeout_seconds(), missing, timeout_seconds());
          *why = reason;
          return {{ NAME }}_ERROR_PEER;
        }
      }
      if (i >= 16) {  // a short spin, then sleeps growing to 1 ms
        const timespec ts{0, sleep_us * 1000};
        nanosleep(&ts, nullptr);
        sleep_us = std::min(sleep_us * 2, 1000L);
      }
    }
  }

  // wait_for from queued work: the reason goes to the op's error detail.
  template <typename Pending>
  {{ p }}_status_t queued_wait(Pending pending) {
    std::string why;
    const {{ p }}_status_t st = wait_for(pending, &why);
    if (st != {{ NAME }}_OK) set_failure_reason(why);
    return st;
  }

  // The first rank whose counter (`arrived` or `consumed`) has not reached collective `seq`
  // (-1: all have).
  int first_behind(const std::atomic<uint32_t>* counters, uint32_t seq) const {
    for (int r = 0; r < nranks; ++r)
      if (!seq_reached(counters[r].load(std::memory_order_acquire), seq)) return r;
    return -1;
  }

  // Removes this rank's data files every rank has read.
  void remove_read_files() {
    uint32_t all_read = control->consumed[0].load(std::memory_order_acquire);
    for (int r = 1; r < nranks; ++r) {
      const uint32_t c = control->consumed[r].load(std::memory_order_acquire);
      if (!seq_reached(c, all_read)) all_read = c;
    }
    std::lock_guard<std::mutex> lock(files_mu);
    while (!own_files.empty() && seq_reached(all_read, own_files.front().first)) {
      unlink(own_files.front().second.c_str());
      own_files.pop_front();
    }
  }

  // Collective `seq` on this rank: puts in `bytes` of `data` (nothing when null), waits for
  // every rank (`wait_all`), for rank `only` (>= 0) or for none, maps `peer_bytes` of each
  // awaited rank's data, runs `use` on them (parts[r], null for ranks not awaited) and marks
  // the collective read by this rank.
  template <typename Use>
  {{ p }}_status_t exchange(uint32_t seq, const void* data, size_t bytes, size_t peer_bytes,
                          bool wait_all, int only, Use use) {
    remove_read_files();
    if (data != nullptr) {
      const std::string path = data_file(seq, rank);
      if (!write_file(path, data, bytes, false)) {
        set_failure_reason("cannot write " + path + ": " + std::strerror(errno));
        return {{ NAME }}_ERROR_PEER;
      }
      std::lock_guard<std::mutex> lock(files_mu);
      own_files.emplace_back(seq, path);
    }
    control->arrived[rank].store(seq, std::memory_order_release);
    {{ p }}_status_t st = {{ NAME }}_OK;
    if (wait_all) {
      st = queued_wait([&] { return first_behind(control->arrived, seq); });
    } else if (only >= 0) {
      st = queued_wait([&] { return seq_reached(control->arrived[only].load(std::memory_order_acquire), seq) ? -1 : only; });
    }
    if (st == {{ NAME }}_OK) {
      std::vector<std::unique_ptr<Mapped>> maps(nranks);
      std::vector<const char*> parts(nranks, nullptr);
      for (int r = 0; r < nranks && st == {{ NAME }}_OK; ++r) {
        if (!(wait_all || r == only) || peer_bytes == 0) continue;
        maps[r] = std::make_unique<Mapped>(data_file(seq, r), peer_bytes);
        parts[r] = maps[r]->data();
        if (!maps[r]->ok()) {
          set_failure_reason("rank " + std::to_string(r) + "'s data is missing");
          st = {{ NAME }}_ERROR_PEER;
        }
      }
      if (st == {{ NAME }}_OK) st = use(parts);
    }
    control->consumed[rank].store(seq, std::memory_order_release);
    return st;
  }
};

namespace {

{{ p }}_status_t check_comm({{ p }}_comm_t comm, int root = 0) {
  return comm && comm->control && root >= 0 && root < comm->nranks ? {{ NAME }}_OK : {{ NAME }}_ERROR_INVALID_VALUE;
}

{{ p }}_status_t unsupported_dtype() {
  set_failure_reason("the library has no such dtype");
  return {{ NAME }}_ERROR_UNSUPPORTED;
}

}  // namespace

extern "C" {

{{ p }}_status_t {{ p }}_ccl_get_unique_id({{ p }}_ccl_id_t* id) {
  if (!id) return {{ NAME }}_ERROR_INVALID_VALUE;
  static std::atomic<uint64_t> counter{0};
  const uint64_t bits = mix64(static_cast<uint64_t>(getpid()) << 32 ^
                              static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                              mix64(counter.fetch_add(1)));
  std::memset(id->bytes, 0, sizeof(id->bytes));
  std::snprintf(id->bytes, sizeof(id->bytes), "%s%d-%016llx", kIdPrefix, static_cast<int>(getpid()),
                static_cast<unsigned long long>(bits));
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_ccl_comm_init(const {{ p }}_ccl_id_t* id, int nranks, int rank, {{ p }}_comm_t* comm) {
  if (!id || !comm || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks ||
      std::strncmp(id->bytes, kIdPrefix, sizeof(kIdPrefix) - 1) != 0 ||
      std::memchr(id->bytes, '\0', sizeof(id->bytes)) == nullptr || std::strchr(id->bytes, '/') != nullptr)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  auto* c = new {{ p }}_comm_st();
  c->name = std::string("/dev/shm/") + id->bytes;
  c->rank = rank;
  c->nranks = nranks;
  c->sent.assign(nranks, 0);
  c->received.assign(nranks, 0);
  const int fd = open(c->name.c_str(), O_RDWR | O_CREAT, 0600);
  // Every rank sizes it the same: the first makes it, zero-filled.
  void* m = fd >= 0 && ftruncate(fd, sizeof(CommControl)) == 0
                ? mmap(nullptr, sizeof(CommControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (fd >= 0) close(fd);
  if (m == MAP_FAILED) {
    delete c;
    return {{ NAME }}_ERROR_PEER;
  }
  c->control = static_cast<CommControl*>(m);
  c->control->pid[rank].store(static_cast<int32_t>(getpid()));
  c->control->joined.fetch_add(1);
  std::string why;
  const {{ p }}_status_t st = c->wait_for(
      [c] {
        if (c->control->joined.load() >= c->nranks) return -1;
        for (int r = 0; r < c->nranks; ++r)
          if (c->control->pid[r].load() == 0) return r;
        return -1;
      },
      &why);
  if (st != {{ NAME }}_OK) {  // (not queued work: no error detail to carry it, so it is said here)
    std::fprintf(stderr, "[{{ NAME }}] comm_init of %s: %s\n", id->bytes, why.c_str());
    munmap(c->control, sizeof(CommControl));
    delete c;
    return st;
  }
  *comm = c;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_ccl_comm_destroy({{ p }}_comm_t comm) {
  if (check_comm(comm) != {{ NAME }}_OK) return {{ NAME }}_ERROR_INVALID_VALUE;
  wait_for_all_streams();  // queued collectives of this communicator have run
  // Every rank has read this rank's data (or left: a bounded wait), then the files go.
  std::string why;  // (a rank that has gone is no reason to keep this one's files)
  comm->wait_for([comm] { return comm->first_behind(comm->control->consumed, comm->issued); }, &why);
  {
    std::lock_guard<std::mutex> lock(comm->files_mu);
    for (const auto& f : comm->own_files) unlink(f.second.c_str());
  }
  if (comm->control->left.fetch_add(1) + 1 == comm->nranks) unlink(comm->name.c_str());
  munmap(comm->control, sizeof(CommControl));
  delete comm;
  return {{ NAME }}_OK;
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
  const uint32_t seq = ++comm->issued;
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(seq, send, bytes, bytes, true, -1, [&](const std::vector<const char*>& parts) {
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
  const uint32_t seq = ++comm->issued;
  const bool is_root = comm->rank == root;
  {{ NAME }}_SUBMIT(s, {
    // Every rank puts its data in; only the root waits for the others and reads.
    status_ = comm->exchange(seq, send, bytes, is_root ? bytes : 0, is_root, -1,
                             [&](const std::vector<const char*>& parts) {
                               if (!is_root || count == 0) return {{ NAME }}_OK;
                               return reduce_parts(dtype, op, parts, count, recv) ? {{ NAME }}_OK
                                                                                  : unsupported_dtype();
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
  const uint32_t seq = ++comm->issued;
  const bool is_root = comm->rank == root;
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(seq, is_root ? buf : nullptr, bytes, is_root ? 0 : bytes, false,
                             is_root ? -1 : root, [&](const std::vector<const char*>& parts) {
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
  const uint32_t seq = ++comm->issued;
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(seq, send, bytes, bytes, true, -1, [&](const std::vector<const char*>& parts) {
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
  const uint32_t seq = ++comm->issued;
  const int rank = comm->rank, nranks = comm->nranks;
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(seq, send, bytes * nranks, bytes * nranks, true, -1,
                             [&](std::vector<const char*> parts) {
                               if (count == 0) return {{ NAME }}_OK;
                               for (const char*& part : parts) part += rank * bytes;  // this rank's block
                               return reduce_parts(dtype, op, parts, count, recv) ? {{ NAME }}_OK
                                                                                  : unsupported_dtype();
                             });
  });
}

{{ p }}_status_t {{ p }}_ccl_barrier({{ p }}_stream_t s, {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_barrier");
  if (check_comm(comm) != {{ NAME }}_OK) return {{ NAME }}_ERROR_INVALID_VALUE;
  const uint32_t seq = ++comm->issued;
  {{ NAME }}_SUBMIT(s, {
    status_ = comm->exchange(seq, nullptr, 0, 0, true, -1,
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
  const std::string path = comm->message_file(comm->rank, peer, ++comm->sent[peer]);
  {{ NAME }}_SUBMIT(s, {
    if (!write_file(path, buf, bytes, true)) {
      set_failure_reason("cannot write " + path + ": " + std::strerror(errno));
      status_ = {{ NAME }}_ERROR_PEER;
    }
  });
}

{{ p }}_status_t {{ p }}_ccl_recv({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype, int peer,
                           {{ p }}_comm_t comm) {
  debug::Trace trace_("ccl_recv");
  trace_.attr("count", count).attr("peer", peer);
  if (check_comm(comm, peer) != {{ NAME }}_OK || peer == comm->rank || (count > 0 && !buf))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, buf);
  const size_t bytes = count * {{ p }}_dtype_size(dtype);
  const std::string path = comm->message_file(peer, comm->rank, ++comm->received[peer]);
  {{ NAME }}_SUBMIT(s, {
    struct stat st;
    status_ = comm->queued_wait([&] { return stat(path.c_str(), &st) == 0 ? -1 : peer; });
    if (status_ != {{ NAME }}_OK) return;
    if (static_cast<size_t>(st.st_size) != bytes) {
      set_failure_reason("rank " + std::to_string(peer) + " sent " + std::to_string(st.st_size) +
                         " bytes, this rank expects " + std::to_string(bytes));
      status_ = {{ NAME }}_ERROR_INVALID_VALUE;
    } else {
      Mapped message(path, bytes);
      if (message.ok() && bytes > 0) std::memcpy(buf, message.data(), bytes);
    }
    unlink(path.c_str());
  });
}

}  // extern "C"
