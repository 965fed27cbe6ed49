// {{ NAME }} device library: collectives between ranks, one process per rank.
//
// The host-backed device exchanges data through files in a private directory in /dev/shm
// (mode 0700, a random name from getrandom), one per communicator, made by get_unique_id; the
// unique id carries its name and a secret kept in its control block. Every file in it is made
// with O_EXCL and opened with O_NOFOLLOW; the directory's and the control block's owner and
// mode are checked before use. Nothing there is another local user's to predict, plant or read.
//
// The control block (a file mapped by every rank) holds each rank's slot: its pid, a heartbeat,
// how many collectives it has put its data in for (`arrived`) and finished reading
// (`consumed`), and a header per collective (kind, count, dtype, op, root, sequence) that every
// rank compares with its own before it reads any peer's data. A rank that cannot go on (its
// write failed, its peers disagree with it at init) publishes why there, and its peers fail at
// once with that cause. Collectives of one communicator run in the order they were called,
// whatever streams they are queued on. Each collective's data is one file per rank, removed
// once every rank has read it; a message of send/recv is a file of its own, published by a
// link, so a send never waits. The last rank to leave removes the directory; get_unique_id
// removes the directories of communicators whose ranks are all dead (a killed job's), on
// evidence only: a pid gone in this pid namespace, or hours of silence (see kSilentSeconds).
// Waits are bounded: a rank that exits (its pid, when it is in this pid namespace; else its
// heartbeat stops), or does not come within {{ NAME }}_CCL_TIMEOUT_S, fails the waiting op with
// {{ NAME }}_ERROR_PEER and a reason naming the rank.
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
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {

constexpr int kMaxRanks = 64;
constexpr int kHeaderSlots = 4;  // a rank is at most one collective ahead of any other
constexpr uint32_t kMagic = 0x4c43434b;  // "KCCL"

enum class Kind : int32_t { kAllReduce = 1, kReduce, kBroadcast, kAllGather, kReduceScatter, kBarrier };

// What a rank puts in for one collective: compared across the ranks before any data is read.
struct Header {
  uint32_t seq;
  Kind kind;
  int32_t dtype;
  int32_t op;    // -1: not a reduction
  int32_t root;  // -1: no root
  uint64_t count;
  uint64_t bytes;  // of the rank's data file (0: none)
};

// Shared by the ranks (a file mapped by each): address-free, so lock-free 32-bit atomics only,
// counters compared by difference. Headers and texts are plain data published by the release
// store of the atomic that follows them.
struct RankSlot {
  std::atomic<int32_t> claimed;       // 1 once a process has joined as this rank
  std::atomic<int32_t> pid;           // in the pid namespace `pid_ns`
  std::atomic<uint32_t> pid_ns;       // inode of its /proc/self/ns/pid (0: unknown)
  std::atomic<uint32_t> heartbeat;    // ticks of its heartbeat thread
  std::atomic<uint32_t> heartbeat_at; // CLOCK_REALTIME seconds of the last tick (for the sweep)
  std::atomic<int32_t> left;          // 1 once it has destroyed the communicator
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> consumed;
  Header headers[kHeaderSlots];
};

struct CommControl {
  uint32_t magic;
  uint32_t size;
  char secret[32];
  int32_t creator_pid;
  uint32_t creator_ns;
  uint32_t created_at;                 // CLOCK_REALTIME seconds
  std::atomic<int32_t> nranks;         // 0 until the first rank joins
  std::atomic<int32_t> nranks_rank;    // the rank that set it
  std::atomic<int32_t> failure;        // 0 none, 1 being written, 2 published (the first cause wins)
  char failure_text[320];
  RankSlot ranks[kMaxRanks];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the control block is shared between processes");

namespace {

constexpr char kPrefix[] = "{{ p }}ccl-";
constexpr size_t kNameChars = 12;  // random letters and digits of the directory's name (71 bits)
constexpr char kShm[] = "/dev/shm";
constexpr long kStallSeconds = 3;  // a heartbeat this old, in another pid namespace: the rank is gone
// The sweep removes a communicator only on evidence that it is dead. A heartbeat silent this long
// (six hours, far beyond any wait), in a directory nothing wrote to for as long, is its only
// evidence for a rank in another pid namespace: a process stopped there (SIGSTOP, docker pause,
// a debugger, Ctrl-Z) is silent too, and resumed it goes on.
constexpr long kSilentSeconds = 6 * 3600;
constexpr long kUnjoinedSeconds = 600;  // an id no rank joined this long after its maker exited

bool seq_reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

long timeout_seconds() {
  static const long s = [] {
    const char* v = std::getenv("{{ NAME }}_CCL_TIMEOUT_S");
    if (!v || !*v) return 300L;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n <= 0) {
      std::fprintf(stderr, "[{{ NAME }}] {{ NAME }}_CCL_TIMEOUT_S=%s is not a number of seconds above 0; using 300\n", v);
      return 300L;
    }
    return n;
  }();
  return s;
}

uint32_t realtime_seconds() { return static_cast<uint32_t>(std::time(nullptr)); }

uint32_t pid_namespace() {
  static const uint32_t ns = [] {
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint32_t>(st.st_ino) : 0u;
  }();
  return ns;
}

// `n` random letters and digits from the kernel's generator (getrandom, else /dev/urandom).
bool random_text(size_t n, std::string* out) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  out->clear();
  unsigned char buf[64];
  while (out->size() < n) {
    ssize_t got = syscall(SYS_getrandom, buf, sizeof(buf), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {  // (no getrandom: an old kernel)
      const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      got = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
      if (fd >= 0) close(fd);
      if (got <= 0) return false;
    }
    for (ssize_t i = 0; i < got && out->size() < n; ++i)
      if (buf[i] < 248) out->push_back(kChars[buf[i] % 62]);  // (248 = 4 x 62: no bias)
  }
  return true;
}

bool all_alnum(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// False once the process has exited, also while it waits to be reaped (a zombie).
bool pid_alive(int32_t pid) {
  if (pid <= 0) return true;  // not known yet
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64], stat[256] = {0};
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  const ssize_t n = read(fd, stat, sizeof(stat) - 1);
  close(fd);
  const char* end = n > 0 ? std::strrchr(stat, ')') : nullptr;  // "pid (comm) S ..."
  return !(end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X'));
}

// Whether the rank's pid means anything here: it joined from this pid namespace.
bool same_namespace(const RankSlot& s) { return s.pid_ns.load() != 0 && s.pid_ns.load() == pid_namespace(); }

// For the last one out: the rank is gone (exited, or silent for `stale` seconds; >= on whole
// seconds, so that a wait that has seen no beat for `stale` seconds agrees).
bool rank_gone(const RankSlot& s, long stale) {
  if (s.left.load()) return true;
  if (same_namespace(s)) return !pid_alive(s.pid.load());
  return static_cast<int32_t>(realtime_seconds() - s.heartbeat_at.load()) >= stale;
}

// For the sweep, evidence that the rank will never go on: it left; its pid is gone, when it
// joined from this pid namespace (its pid means something here); in another, its heartbeat and
// its communicator's directory (`dir_age` seconds since written) silent for kSilentSeconds.
bool rank_dead(const RankSlot& s, long dir_age) {
  if (s.left.load()) return true;
  if (same_namespace(s)) return !pid_alive(s.pid.load());
  return rank_gone(s, kSilentSeconds) && dir_age >= kSilentSeconds;
}

// The heartbeats of this process's ranks: one thread ticks them all every 100 ms.
struct Heartbeats {
  std::mutex mu;
  std::vector<RankSlot*> slots;
  bool started = false;
};
Heartbeats& heartbeats() {
  static Heartbeats* h = new Heartbeats();  // leaked: the thread may tick while the process exits
  return *h;
}
void beat(RankSlot* s) {
  s->heartbeat.fetch_add(1);
  s->heartbeat_at.store(realtime_seconds());
}
// "" or why the slot cannot beat (no thread to be had: std::system_error; no memory).
std::string start_beating(RankSlot* s) {
  Heartbeats& h = heartbeats();
  std::lock_guard<std::mutex> lock(h.mu);
  beat(s);
  try {
    h.slots.push_back(s);
    if (!h.started) {
      std::thread([&h] {
        for (;;) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          std::lock_guard<std::mutex> lock(h.mu);
          for (RankSlot* slot : h.slots) beat(slot);
        }
      }).detach();
      h.started = true;
    }
  } catch (...) {
    h.slots.erase(std::remove(h.slots.begin(), h.slots.end(), s), h.slots.end());
    std::string why;
    exception_status(&why);
    return "cannot start the heartbeat thread: " + why;
  }
  return "";
}
void stop_beating(RankSlot* s) {
  Heartbeats& h = heartbeats();
  std::lock_guard<std::mutex> lock(h.mu);
  h.slots.erase(std::remove(h.slots.begin(), h.slots.end(), s), h.slots.end());
}

// Records the first cause of the communicator's failure for every rank to see.
void publish_failure(CommControl* c, const std::string& text) {
  int32_t none = 0;
  if (!c->failure.compare_exchange_strong(none, 1)) return;
  std::snprintf(c->failure_text, sizeof(c->failure_text), "%s", text.c_str());
  c->failure.store(2, std::memory_order_release);
}
bool failure_of(const CommControl* c, std::string* why) {
  if (c->failure.load(std::memory_order_acquire) != 2) return false;
  *why = std::string(c->failure_text, strnlen(c->failure_text, sizeof(c->failure_text)));
  return true;
}

// A file or directory opened without following links, owned by this user with no access for
// others, of `type` (and, for files, `size` bytes, when not 0): "" or what is wrong with it.
std::string check_private(int fd, const std::string& path, mode_t type, off_t size) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "cannot stat " + path + ": " + std::strerror(errno);
  if ((st.st_mode & S_IFMT) != type) return path + " is not a " + (type == S_IFDIR ? "directory" : "regular file");
  if (st.st_uid != geteuid())
    return path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
           std::to_string(geteuid()) + "): refusing to use it";
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return path + " has mode " + mode + ", open to other users: refusing to use it";
  }
  if (size != 0 && st.st_size != size)
    return path + " has " + std::to_string(st.st_size) + " bytes, not " + std::to_string(size);
  return "";
}

// Removes every entry of the directory open at `dir_fd`, then the directory `path`.
void remove_directory(int dir_fd, const std::string& path) {
  const int fd = dup(dir_fd);
  if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) unlinkat(dir_fd, e->d_name, 0);
    closedir(d);
  } else if (fd >= 0) {
    close(fd);
  }
  rmdir(path.c_str());
}

// Writes `bytes` at `data` to a new file `name` in the directory `dir_fd` (0600, O_EXCL):
// "" or why not (the partial file is removed).
std::string write_new_file(int dir_fd, const std::string& name, const void* data, size_t bytes) {
  const int fd = openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  int err = 0;
  while (done < bytes) {
    const ssize_t n = write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done == bytes) return "";
  unlinkat(dir_fd, name.c_str(), 0);
  return std::strerror(err);
}

// A peer's data file mapped read-only, after its owner, mode and size are checked.
class Mapped {
 public:
  Mapped(int dir_fd, const std::string& dir, const std::string& name, size_t bytes) : bytes_(bytes) {
    const std::string path = dir + "/" + name;
    const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      error_ = "cannot open " + path + ": " + std::strerror(errno);
      return;
    }
    error_ = check_private(fd, path, S_IFREG, 0);
    struct stat st{};
    if (error_.empty() && (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes))
      error_ = path + " has " + std::to_string(st.st_size) + " bytes, its header says " + std::to_string(bytes);
    if (error_.empty() && bytes > 0) {
      void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) error_ = "cannot map " + path + ": " + std::strerror(errno);
      else data_ = m;
    }
    close(fd);
  }
  ~Mapped() {
    if (data_) munmap(data_, bytes_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const char* data() const { return static_cast<const char*>(data_); }
  const std::string& error() const { return error_; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
  std::string error_;
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

// "all_reduce of 8 float32 (sum)", "broadcast of 2 int64 from rank 1", "barrier".
std::string describe(const Header& h) {
  static const char* const kKinds[] = {"?", "all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter",
                                       "barrier"};
  static const char* const kOps[] = {"sum", "prod", "max", "min"};
  const int kind = static_cast<int>(h.kind);
  std::string s = kKinds[kind >= 1 && kind <= 6 ? kind : 0];
  if (h.kind == Kind::kBarrier) return s;
  s += " of " + std::to_string(h.count) + " " + core::dtype_name(h.dtype);
  if (h.op >= 0) s += std::string(" (") + (h.op <= 3 ? kOps[h.op] : "?") + ")";
  if (h.root >= 0) s += (h.kind == Kind::kBroadcast ? " from rank " : " to rank ") + std::to_string(h.root);
  return s;
}

bool same_call(const Header& a, const Header& b) {
  return a.kind == b.kind && a.count == b.count && a.dtype == b.dtype && a.op == b.op && a.root == b.root;
}

// The header of a send/recv message, in front of its data.
struct MessageHeader {
  uint64_t count;
  int32_t dtype;
  int32_t unused;
};

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

struct {{ p }}_comm_st {
  std::string dir;  // /dev/shm/<p>ccl-<name>
  int dir_fd = -1;
  int rank = 0;
  int nranks = 1;
  CommControl* control = nullptr;
  bool joined = false;  // this process holds slot(rank)
  std::mutex issue_mu;  // sequence numbers and message counts are taken in call order
  uint32_t issued = 0;
  std::vector<uint32_t> sent, received;  // messages to / from each peer
  std::atomic<uint32_t> done{0};         // the last collective run here: the next waits for it
  std::mutex files_mu;
  std::deque<std::pair<uint32_t, std::string>> own_files;  // this rank's data, until all have read it

  RankSlot& slot(int r) const { return control->ranks[r]; }
  static std::string data_file(uint32_t seq, int r) { return "c" + std::to_string(seq) + ".r" + std::to_string(r); }
  static std::string message_file(int from, int to, uint32_t n) {
    return "m" + std::to_string(from) + "-" + std::to_string(to) + "." + std::to_string(n);
  }

  // Polls `pending` (the first rank still awaited, -1 when none) until no rank is awaited. A
  // failure a rank published, a rank that exited (its pid in this pid namespace; its heartbeat
  // stopped for kStallSeconds in another), one that destroyed the communicator, or the timeout
  // ends the wait with {{ NAME }}_ERROR_PEER and `why`.
  template <typename Pending>
  {{ p }}_status_t wait_for(Pending pending, std::string* why) {
    const auto start = std::chrono::steady_clock::now();
    const auto limit = std::chrono::seconds(timeout_seconds());
    int watched = -1;  // the awaited rank whose heartbeat is being watched
    uint32_t beat = 0;
    auto beat_since = start;
    long sleep_us = 10;
    for (unsigned i = 0;; ++i) {
      // (what was awaited has come: a failure published since is the next call's to see)
      const int missing = pending();
      if (missing < 0) return {{ NAME }}_OK;
      if (failure_of(control, why)) return {{ NAME }}_ERROR_PEER;
      if (i % 64 == 63) {
        const auto now = std::chrono::steady_clock::now();
        const RankSlot& s = slot(missing);
        char reason[240] = {0};
        if (s.claimed.load() && s.left.load()) {
          std::snprintf(reason, sizeof(reason), "rank %d of %d waited for rank %d, which has destroyed the communicator",
                        rank, nranks, missing);
        } else if (s.claimed.load() && same_namespace(s)) {
          if (!pid_alive(s.pid.load()))
            std::snprintf(reason, sizeof(reason), "rank %d of %d waited for rank %d (pid %d), which has exited", rank,
                          nranks, missing, static_cast<int>(s.pid.load()));
        } else if (s.claimed.load()) {  // another pid namespace: its pid means nothing here
          if (missing != watched || s.heartbeat.load() != beat) {
            watched = missing;
            beat = s.heartbeat.load();
            beat_since = now;
          } else if (now - beat_since > std::chrono::seconds(std::min(kStallSeconds, timeout_seconds()))) {
            std::snprintf(reason, sizeof(reason),
                          "rank %d of %d waited for rank %d (in another pid namespace), which has exited or stopped: "
                          "no heartbeat for %ld s",
                          rank, nranks, missing, std::min(kStallSeconds, timeout_seconds()));
          }
        }
        if (!reason[0] && now - start > limit)
          std::snprintf(reason, sizeof(reason), "rank %d of %d waited %ld s for rank %d ({{ NAME }}_CCL_TIMEOUT_S=%ld)",
                        rank, nranks, timeout_seconds(), missing, timeout_seconds());
        if (reason[0]) {
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

  // wait_for from queued work: the reason goes to the op's error detail, and the communicator
  // is over for this rank (see abandon).
  template <typename Pending>
  {{ p }}_status_t queued_wait(Pending pending) {
    std::string why;
    const {{ p }}_status_t st = wait_for(pending, &why);
    if (st != {{ NAME }}_OK) {
      set_failure_reason(why);
      abandon(why);
    }
    return st;
  }

  // After a collective failed for a peer, no later one can succeed (every wait sees the published
  // failure first): the cause is published, this rank leaves, and the directory goes now, so that
  // nothing is left when the survivors exit without destroying the communicator (os._exit, a
  // crash) or when the peer waited for is stopped and killed later. (Ranks still at work get the
  // published cause; the control block stays mapped in each of them.)
  void abandon(const std::string& why) {
    publish_failure(control, why);
    leave_slot();
    remove_directory(dir_fd, dir);
  }

  // The first rank whose counter (`arrived` or `consumed`) has not reached `seq` (-1: all have).
  int first_behind(std::atomic<uint32_t> RankSlot::*counter, uint32_t seq) const {
    for (int r = 0; r < nranks; ++r)
      if (!seq_reached((slot(r).*counter).load(std::memory_order_acquire), seq)) return r;
    return -1;
  }

  // Removes this rank's data files every rank has read.
  void remove_read_files() {
    uint32_t all_read = slot(0).consumed.load(std::memory_order_acquire);
    for (int r = 1; r < nranks; ++r) {
      const uint32_t c = slot(r).consumed.load(std::memory_order_acquire);
      if (!seq_reached(c, all_read)) all_read = c;
    }
    std::lock_guard<std::mutex> lock(files_mu);
    while (!own_files.empty() && seq_reached(all_read, own_files.front().first)) {
      unlinkat(dir_fd, own_files.front().second.c_str(), 0);
      own_files.pop_front();
    }
  }

  // Waits until collective `seq` is next on this rank: the one issued before it has run (it may
  // be queued on another stream). Bounded by the timeout.
  {{ p }}_status_t take_turn(uint32_t seq) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds());
    while (done.load(std::memory_order_acquire) != seq - 1) {
      if (std::chrono::steady_clock::now() > until) {
        set_failure_reason("rank " + std::to_string(rank) + "'s collective #" + std::to_string(seq) + " waited " +
                           std::to_string(timeout_seconds()) +
                           " s for the one called before it on this communicator, queued on a stream that has not "
                           "run it ({{ NAME }}_CCL_TIMEOUT_S=" + std::to_string(timeout_seconds()) + ")");
        return {{ NAME }}_ERROR_PEER;
      }
      usleep(200);
    }
    return {{ NAME }}_OK;
  }

  // Collective `seq` on this rank, described by `mine`: puts in its data (`mine.bytes` at
  // `data`), waits for every rank, compares their headers with `mine`, maps the data of the
  // ranks `reads(r)` names, runs `use` on them (parts[r], null for ranks not read) and marks the
  // collective read by this rank.
  template <typename Reads, typename Use>
  {{ p }}_status_t exchange(Header mine, const void* data, Reads reads, Use use) {
    const uint32_t seq = mine.seq;
    {{ p }}_status_t st = take_turn(seq);
    if (st == {{ NAME }}_OK) st = run_turn(mine, data, reads, use);
    done.store(seq, std::memory_order_release);
    return st;
  }

  template <typename Reads, typename Use>
  {{ p }}_status_t run_turn(const Header& mine, const void* data, Reads reads, Use use) {
    const uint32_t seq = mine.seq;
    remove_read_files();
    slot(rank).headers[seq % kHeaderSlots] = mine;
    if (mine.bytes > 0) {
      const std::string name = data_file(seq, rank);
      const std::string err = write_new_file(dir_fd, name, data, mine.bytes);
      if (!err.empty()) {
        std::string why;  // (a failure published before has removed the directory: that is the cause)
        if (!failure_of(control, &why))
          why = "rank " + std::to_string(rank) + " could not write its data for " + describe(mine) + " to " + dir +
                "/" + name + ": " + err;
        publish_failure(control, why);
        set_failure_reason(why);
        slot(rank).consumed.store(seq, std::memory_order_release);
        return {{ NAME }}_ERROR_PEER;
      }
      std::lock_guard<std::mutex> lock(files_mu);
      own_files.emplace_back(seq, name);
    }
    slot(rank).arrived.store(seq, std::memory_order_release);
    {{ p }}_status_t st = queued_wait([&] { return first_behind(&RankSlot::arrived, seq); });
    for (int r = 0; r < nranks && st == {{ NAME }}_OK; ++r) {
      const Header& theirs = slot(r).headers[seq % kHeaderSlots];
      if (theirs.seq != seq || !same_call(mine, theirs)) {
        set_failure_reason("rank " + std::to_string(rank) + " " + describe(mine) + " but rank " + std::to_string(r) +
                           " " + (theirs.seq == seq ? describe(theirs) : "another collective") +
                           ": every rank must call the same collectives in the same order");
        st = {{ NAME }}_ERROR_INVALID_VALUE;
      }
    }
    if (st == {{ NAME }}_OK) {
      std::vector<std::unique_ptr<Mapped>> maps(nranks);
      std::vector<const char*> parts(nranks, nullptr);
      for (int r = 0; r < nranks && st == {{ NAME }}_OK; ++r) {
        const uint64_t bytes = slot(r).headers[seq % kHeaderSlots].bytes;
        if (!reads(r) || bytes == 0) continue;
        maps[r] = std::make_unique<Mapped>(dir_fd, dir, data_file(seq, r), bytes);
        parts[r] = maps[r]->data();
        if (!maps[r]->error().empty()) {
          set_failure_reason("rank " + std::to_string(r) + "'s data: " + maps[r]->error());
          st = {{ NAME }}_ERROR_PEER;
        }
      }
      if (st == {{ NAME }}_OK) st = use(parts);
    }
    slot(rank).consumed.store(seq, std::memory_order_release);
    return st;
  }

  // Every rank has destroyed the communicator or is gone (this one included).
  bool all_gone() const {
    for (int r = 0; r < nranks; ++r)
      if (slot(r).claimed.load() && !rank_gone(slot(r), kStallSeconds)) return false;
    return true;
  }

  // Marks this rank gone from the communicator: the last one out removes its directory.
  void leave_slot() {
    if (!control) return;
    if (joined) {
      stop_beating(&slot(rank));
      slot(rank).left.store(1);
    }
    if (all_gone()) remove_directory(dir_fd, dir);
  }

  // Leaves the communicator and lets go of its mapping and directory.
  void leave() {
    leave_slot();
    if (control) munmap(control, sizeof(CommControl));
    if (dir_fd >= 0) close(dir_fd);
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

// A header for the next collective of `comm`, its sequence number taken in call order.
Header next_header({{ p }}_comm_t comm, Kind kind, size_t count, {{ p }}_dtype_t dtype, int op, int root,
                   uint64_t bytes) {
  std::lock_guard<std::mutex> lock(comm->issue_mu);
  return Header{++comm->issued, kind, static_cast<int32_t>(dtype), op, root, count, bytes};
}

bool everyone(int) { return true; }

// Whether the communicator whose control block is `c` (in a directory written `dir_age` seconds
// ago) is dead: every rank that joined is (rank_dead); none having joined, it is kUnjoinedSeconds
// old and its maker (in this pid namespace) has exited, or kSilentSeconds old (an id may be made
// by a process other than the ranks, and handed to them through a store).
bool communicator_dead(const CommControl& c, long dir_age) {
  bool joined = false;
  for (const RankSlot& s : c.ranks) {
    if (!s.claimed.load()) continue;
    joined = true;
    if (!rank_dead(s, dir_age)) return false;
  }
  if (joined) return true;
  const int32_t age = static_cast<int32_t>(realtime_seconds() - c.created_at);
  const bool maker_gone = c.creator_ns != 0 && c.creator_ns == pid_namespace() && !pid_alive(c.creator_pid);
  return (maker_gone && age > kUnjoinedSeconds) || age > kSilentSeconds;
}

// Removes the directories of this user's dead communicators (a killed job leaves them).
void sweep_dead_communicators() {
  DIR* shm = opendir(kShm);
  if (!shm) return;
  while (dirent* e = readdir(shm)) {
    const std::string name = e->d_name;
    if (name.size() != sizeof(kPrefix) - 1 + kNameChars || name.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0 ||
        !all_alnum(name.substr(sizeof(kPrefix) - 1)))
      continue;
    const std::string path = std::string(kShm) + "/" + name;
    const int fd = openat(dirfd(shm), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    bool dead = false;
    struct stat st;
    if (check_private(fd, path, S_IFDIR, 0).empty() && fstat(fd, &st) == 0) {
      const long dir_age = static_cast<long>(std::time(nullptr) - st.st_mtime);
      const int cfd = openat(fd, "control", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (cfd < 0) {  // its maker died (or stopped) before writing it
        dead = errno == ENOENT && dir_age > kSilentSeconds;
      } else {
        void* m = check_private(cfd, path + "/control", S_IFREG, sizeof(CommControl)).empty()
                      ? mmap(nullptr, sizeof(CommControl), PROT_READ, MAP_SHARED, cfd, 0)
                      : MAP_FAILED;
        if (m != MAP_FAILED) {
          dead = static_cast<const CommControl*>(m)->magic == kMagic &&
                 communicator_dead(*static_cast<CommControl*>(m), dir_age);
          munmap(m, sizeof(CommControl));
        }
        close(cfd);
      }
    }
    if (dead) remove_directory(fd, path);
    close(fd);
  }
  closedir(shm);
}

// comm_init's part after the checks: joins `c` to the control block.
{{ p }}_status_t join({{ p }}_comm_t c, std::string* why) {
  CommControl* ctl = c->control;
  RankSlot& mine = c->slot(c->rank);
  const std::string me = "rank " + std::to_string(c->rank) + " of " + std::to_string(c->nranks);
  int32_t unset = 0;
  if (!ctl->nranks.compare_exchange_strong(unset, c->nranks)) {
    if (unset != c->nranks) {
      *why = me + " was given nranks " + std::to_string(c->nranks) + ", but rank " +
             std::to_string(ctl->nranks_rank.load()) + " joined with nranks " + std::to_string(unset) +
             ": every rank must pass the same nranks";
      publish_failure(ctl, *why);
      return {{ NAME }}_ERROR_INVALID_VALUE;
    }
  } else {
    ctl->nranks_rank.store(c->rank);
  }
  int32_t free_slot = 0;
  if (!mine.claimed.compare_exchange_strong(free_slot, 1)) {
    *why = me + " was given to two processes (pid " + std::to_string(mine.pid.load()) + " and pid " +
           std::to_string(getpid()) + "): every process must pass a rank of its own";
    publish_failure(ctl, *why);
    return {{ NAME }}_ERROR_INVALID_VALUE;
  }
  c->joined = true;
  mine.pid.store(static_cast<int32_t>(getpid()));
  mine.pid_ns.store(pid_namespace());
  *why = start_beating(&mine);
  if (!why->empty()) {
    *why = me + ": " + *why;
    publish_failure(ctl, *why);
    return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  }
  const {{ p }}_status_t st = c->wait_for(
      [c] {
        for (int r = 0; r < c->nranks; ++r)
          if (!c->slot(r).claimed.load()) return r;
        return -1;
      },
      why);
  // (a failure published by another process's init is this one's too: it is an init error)
  if (st != {{ NAME }}_OK && ctl->failure.load() == 2 && why->find(" was given ") != std::string::npos)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  return st;
}

{{ p }}_status_t init_failed({{ p }}_comm_t c, const char* id, {{ p }}_status_t st, const std::string& why) {
  // (also said on stderr: Paddle reports a failed init by its error code only)
  std::fprintf(stderr, "[{{ NAME }}] comm_init of %s: %s\n", id, why.c_str());
  if (c->control) publish_failure(c->control, why);
  c->leave();
  delete c;
  return fail_call("ccl_comm_init", st, why);
}

// Communicators not yet destroyed. A process that exits without destroying one (Paddle and torch
// keep theirs until exit) leaves it at exit, after the queued work, so that the last rank out
// removes the directory.
struct LiveComms {
  std::mutex mu;
  std::vector<{{ p }}_comm_t> comms;
};
LiveComms& live_comms() {
  static LiveComms* live = new LiveComms();  // leaked: used from an exit handler
  return *live;
}
void leave_at_exit() {
  if (forked_child()) return;  // the parent's communicators
  wait_at_exit();
  LiveComms& live = live_comms();
  std::lock_guard<std::mutex> lock(live.mu);
  for ({{ p }}_comm_t c : live.comms) c->leave_slot();
}
void add_live({{ p }}_comm_t c) {
  LiveComms& live = live_comms();
  std::lock_guard<std::mutex> lock(live.mu);
  if (live.comms.empty()) {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(leave_at_exit); });
  }
  live.comms.push_back(c);
}
void remove_live({{ p }}_comm_t c) {
  LiveComms& live = live_comms();
  std::lock_guard<std::mutex> lock(live.mu);
  live.comms.erase(std::remove(live.comms.begin(), live.comms.end(), c), live.comms.end());
}

// The bodies of ccl_get_unique_id, _comm_init and _comm_destroy, each run by guard_call: an
// exception they throw (no memory for the communicator, a string) is the call's error status,
// not one that crosses extern "C".
{{ p }}_status_t ccl_get_unique_id_unguarded({{ p }}_ccl_id_t* id) {
  if (!id) return {{ NAME }}_ERROR_INVALID_VALUE;
  sweep_dead_communicators();
  const size_t secret_chars = std::min<size_t>(24, sizeof(id->bytes) - 1 - (sizeof(kPrefix) - 1 + kNameChars + 1));
  std::string name, secret, err;
  int dfd = -1;
  for (int attempt = 0; attempt < 8 && dfd < 0; ++attempt) {
    if (!random_text(kNameChars, &name) || !random_text(secret_chars, &secret))
      return fail_call("ccl_get_unique_id", {{ NAME }}_ERROR_UNSUPPORTED, "no random numbers from the kernel");
    name = kPrefix + name;
    const std::string path = std::string(kShm) + "/" + name;
    if (mkdir(path.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;
      return fail_call("ccl_get_unique_id", {{ NAME }}_ERROR_PEER,
                       "cannot make a directory in " + std::string(kShm) + ": " + std::strerror(errno));
    }
    dfd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 || fchmod(dfd, 0700) != 0 || !(err = check_private(dfd, path, S_IFDIR, 0)).empty())
      return fail_call("ccl_get_unique_id", {{ NAME }}_ERROR_PEER,
                       err.empty() ? "cannot open " + path + ": " + std::strerror(errno) : err);
  }
  if (dfd < 0) return fail_call("ccl_get_unique_id", {{ NAME }}_ERROR_PEER, "no free name in /dev/shm");
  const std::string path = std::string(kShm) + "/" + name;
  const int cfd = openat(dfd, "control", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  // (the pages reserved now: a full /dev/shm is an error here, not a SIGBUS on first use)
  const int alloc = cfd >= 0 ? posix_fallocate(cfd, 0, sizeof(CommControl)) : errno;
  void* m = alloc == 0 ? mmap(nullptr, sizeof(CommControl), PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0) : MAP_FAILED;
  if (cfd >= 0) close(cfd);
  if (m == MAP_FAILED) {
    const std::string why = "cannot make " + path + "/control: " + std::strerror(alloc ? alloc : errno);
    remove_directory(dfd, path);
    close(dfd);
    return fail_call("ccl_get_unique_id", {{ NAME }}_ERROR_PEER, why);
  }
  close(dfd);
  auto* ctl = static_cast<CommControl*>(m);
  ctl->size = sizeof(CommControl);
  std::snprintf(ctl->secret, sizeof(ctl->secret), "%s", secret.c_str());
  ctl->creator_pid = static_cast<int32_t>(getpid());
  ctl->creator_ns = pid_namespace();
  ctl->created_at = realtime_seconds();
  std::atomic_thread_fence(std::memory_order_release);
  ctl->magic = kMagic;
  munmap(m, sizeof(CommControl));
  std::memset(id->bytes, 0, sizeof(id->bytes));
  std::snprintf(id->bytes, sizeof(id->bytes), "%s-%s", name.c_str(), secret.c_str());
  return {{ NAME }}_OK;
}

{{ p }}_status_t ccl_comm_init_unguarded(const {{ p }}_ccl_id_t* id, int nranks, int rank, {{ p }}_comm_t* comm) {
  if (!id || !comm || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks ||
      std::memchr(id->bytes, '\0', sizeof(id->bytes)) == nullptr)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NOT_IN_FORKED_CHILD("ccl_comm_init");
  const std::string text(id->bytes);
  const size_t dash = text.rfind('-');
  const size_t name_end = sizeof(kPrefix) - 1 + kNameChars;
  if (text.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0 || dash != name_end ||
      !all_alnum(text.substr(sizeof(kPrefix) - 1, kNameChars)) || !all_alnum(text.substr(dash + 1)))
    return fail_call("ccl_comm_init", {{ NAME }}_ERROR_INVALID_VALUE,
                     "'" + text + "' is not a unique id of this library (make one with ccl_get_unique_id)");
  auto* c = new {{ p }}_comm_st();
  c->dir = std::string(kShm) + "/" + text.substr(0, dash);
  c->rank = rank;
  c->nranks = nranks;
  c->sent.assign(nranks, 0);
  c->received.assign(nranks, 0);
  c->dir_fd = open(c->dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (c->dir_fd < 0) {
    const int err = errno;
    struct stat link_info;  // O_NOFOLLOW | O_DIRECTORY on a link fails with ENOTDIR: say what it is
    const bool link = lstat(c->dir.c_str(), &link_info) == 0 && S_ISLNK(link_info.st_mode);
    return init_failed(c, id->bytes, {{ NAME }}_ERROR_INVALID_VALUE,
                       "cannot open the communicator's directory " + c->dir + ": " +
                           (link ? std::string("it is a symbolic link, and symbolic links are not followed")
                                 : std::strerror(err)) +
                           (err == ENOENT ? " (its id is from another machine, or its ranks have all left)" : ""));
  }
  std::string why = check_private(c->dir_fd, c->dir, S_IFDIR, 0);
  const int cfd = why.empty() ? openat(c->dir_fd, "control", O_RDWR | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (why.empty() && cfd < 0) why = "cannot open " + c->dir + "/control: " + std::strerror(errno);
  if (why.empty()) why = check_private(cfd, c->dir + "/control", S_IFREG, sizeof(CommControl));
  void* m = why.empty() ? mmap(nullptr, sizeof(CommControl), PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0) : MAP_FAILED;
  if (cfd >= 0) close(cfd);
  if (why.empty() && m == MAP_FAILED) why = "cannot map " + c->dir + "/control: " + std::strerror(errno);
  if (!why.empty()) return init_failed(c, id->bytes, {{ NAME }}_ERROR_INVALID_VALUE, why);
  auto* ctl = static_cast<CommControl*>(m);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (ctl->magic != kMagic || text.compare(dash + 1, std::string::npos, ctl->secret) != 0) {
    munmap(m, sizeof(CommControl));
    return init_failed(c, id->bytes, {{ NAME }}_ERROR_INVALID_VALUE,
                       "the unique id's secret does not match " + c->dir + "/control: not the id it was made with");
  }
  c->control = ctl;
  const {{ p }}_status_t st = join(c, &why);
  if (st != {{ NAME }}_OK) return init_failed(c, id->bytes, st, why);
  add_live(c);
  *comm = c;
  return {{ NAME }}_OK;
}

{{ p }}_status_t ccl_comm_destroy_unguarded({{ p }}_comm_t comm) {
  if (check_comm(comm) != {{ NAME }}_OK) return {{ NAME }}_ERROR_INVALID_VALUE;
  wait_for_all_streams();  // queued collectives of this communicator have run
  // Every rank has read this rank's data (or left, or failed: a bounded wait), then the files go.
  std::string why;  // (a rank that has gone is no reason to keep this one's files)
  uint32_t issued = 0;  // (read under the lock: another thread may still be issuing)
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    issued = comm->issued;
  }
  comm->wait_for(
      [comm, issued] {
        for (int r = 0; r < comm->nranks; ++r)
          if (!comm->slot(r).left.load() && !seq_reached(comm->slot(r).consumed.load(), issued)) return r;
        return -1;
      },
      &why);
  {
    std::lock_guard<std::mutex> lock(comm->files_mu);
    for (const auto& f : comm->own_files) unlinkat(comm->dir_fd, f.second.c_str(), 0);
  }
  remove_live(comm);
  comm->leave();
  delete comm;
  return {{ NAME }}_OK;
}

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
  {{ NAME }}_SUBMIT(s, {
    // The header and data under a temporary name, then linked to the name the recv waits for.
    std::vector<char> message(sizeof(MessageHeader) + bytes);
    const MessageHeader header{count, static_cast<int32_t>(dtype), 0};
    std::memcpy(message.data(), &header, sizeof(header));
    if (bytes > 0) std::memcpy(message.data() + sizeof(header), buf, bytes);
    const std::string part = name + ".part";
    std::string err = write_new_file(comm->dir_fd, part, message.data(), message.size());
    if (err.empty() && linkat(comm->dir_fd, part.c_str(), comm->dir_fd, name.c_str(), 0) != 0) err = std::strerror(errno);
    unlinkat(comm->dir_fd, part.c_str(), 0);
    if (!err.empty()) {
      std::string why;  // (as in run_turn: a published failure first)
      if (!failure_of(comm->control, &why))
        why = "rank " + std::to_string(comm->rank) + " could not write its message to rank " + std::to_string(peer) +
              " (" + comm->dir + "/" + name + "): " + err;
      publish_failure(comm->control, why);
      set_failure_reason(why);
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
  std::string name;
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    name = comm->message_file(peer, comm->rank, ++comm->received[peer]);
  }
  {{ NAME }}_SUBMIT(s, {
    int fd = -1;
    status_ = comm->queued_wait([&] {
      fd = openat(comm->dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      return fd >= 0 ? -1 : peer;
    });
    if (status_ != {{ NAME }}_OK) return;
    const std::string path = comm->dir + "/" + name;
    std::string err = check_private(fd, path, S_IFREG, 0);
    MessageHeader header{};
    if (err.empty() && pread(fd, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header)))
      err = path + " is shorter than its header";
    if (err.empty() && (header.count != count || header.dtype != static_cast<int32_t>(dtype))) {
      set_failure_reason("rank " + std::to_string(peer) + " sent " + std::to_string(header.count) + " " +
                         core::dtype_name(header.dtype) + " but rank " + std::to_string(comm->rank) + " expects " +
                         std::to_string(count) + " " + core::dtype_name(dtype));
      status_ = {{ NAME }}_ERROR_INVALID_VALUE;
    } else if (err.empty() && bytes > 0 &&
               pread(fd, buf, bytes, sizeof(header)) != static_cast<ssize_t>(bytes)) {
      err = path + " is shorter than its header says";
    }
    if (!err.empty()) {
      set_failure_reason(err);
      status_ = {{ NAME }}_ERROR_PEER;
    }
    close(fd);
    unlinkat(comm->dir_fd, name.c_str(), 0);
  });
}

}  // extern "C"
