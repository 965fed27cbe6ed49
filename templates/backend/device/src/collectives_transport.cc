// {{ NAME }} device library, collectives: the shared-memory transport -- a private directory in
// /dev/shm per communicator, its control block mapped by every rank, a file per rank's data and
// per message (collectives_transport.h says how and why). The C API is collectives.cc.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collectives_transport.h"
#include "debug.h"

namespace {{ p }} {
namespace {

constexpr char kPrefix[] = "{{ p }}ccl-";
constexpr size_t kNameChars = 12;  // random letters and digits of the directory's name (71 bits)
constexpr char kShm[] = "/dev/shm";
// The sweep removes a communicator only on evidence that it is dead. A heartbeat silent this long
// (six hours, far beyond any wait), in a directory nothing wrote to for as long, is its only
// evidence for a rank in another pid namespace: a process stopped there (SIGSTOP, docker pause,
// a debugger, Ctrl-Z) is silent too, and resumed it goes on.
constexpr long kSilentSeconds = 6 * 3600;
constexpr long kUnjoinedSeconds = 600;  // an id no rank joined this long after its maker exited

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

// The header of a send/recv message, in front of its data.
struct MessageHeader {
  uint64_t count;
  int32_t dtype;
  int32_t unused;
};

}  // namespace

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

bool same_namespace(const RankSlot& s) { return s.pid_ns.load() != 0 && s.pid_ns.load() == pid_namespace(); }

bool rank_gone(const RankSlot& s, long stale) {
  if (s.left.load()) return true;
  if (same_namespace(s)) return !pid_alive(s.pid.load());
  return static_cast<int32_t>(realtime_seconds() - s.heartbeat_at.load()) >= stale;
}

void stop_beating(RankSlot* s) {
  Heartbeats& h = heartbeats();
  std::lock_guard<std::mutex> lock(h.mu);
  h.slots.erase(std::remove(h.slots.begin(), h.slots.end(), s), h.slots.end());
}

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

Mapped::Mapped(int dir_fd, const std::string& dir, const std::string& name, size_t bytes) : bytes_(bytes) {
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
Mapped::~Mapped() {
  if (data_) munmap(data_, bytes_);
}

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

namespace {

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

}  // namespace

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

{{ p }}_status_t post_message({{ p }}_comm_t comm, int peer, const std::string& name, size_t count,
                             {{ p }}_dtype_t dtype, const void* buf, size_t bytes) {
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
    return {{ NAME }}_ERROR_PEER;
  }
  return {{ NAME }}_OK;
}

{{ p }}_status_t take_message({{ p }}_comm_t comm, int peer, const std::string& name, size_t count,
                             {{ p }}_dtype_t dtype, void* buf, size_t bytes) {
  int fd = -1;
  {{ p }}_status_t st = comm->queued_wait([&] {
    fd = openat(comm->dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    return fd >= 0 ? -1 : peer;
  });
  if (st != {{ NAME }}_OK) return st;
  const std::string path = comm->dir + "/" + name;
  std::string err = check_private(fd, path, S_IFREG, 0);
  MessageHeader header{};
  if (err.empty() && pread(fd, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header)))
    err = path + " is shorter than its header";
  if (err.empty() && (header.count != count || header.dtype != static_cast<int32_t>(dtype))) {
    set_failure_reason("rank " + std::to_string(peer) + " sent " + std::to_string(header.count) + " " +
                       core::dtype_name(header.dtype) + " but rank " + std::to_string(comm->rank) + " expects " +
                       std::to_string(count) + " " + core::dtype_name(dtype));
    st = {{ NAME }}_ERROR_INVALID_VALUE;
  } else if (err.empty() && bytes > 0 &&
             pread(fd, buf, bytes, sizeof(header)) != static_cast<ssize_t>(bytes)) {
    err = path + " is shorter than its header says";
  }
  if (!err.empty()) {
    set_failure_reason(err);
    st = {{ NAME }}_ERROR_PEER;
  }
  close(fd);
  unlinkat(comm->dir_fd, name.c_str(), 0);
  return st;
}

}  // namespace {{ p }}
