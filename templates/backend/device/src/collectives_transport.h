// {{ NAME }} device library, collectives between ranks (one process per rank): the shared-memory
// transport's private interface. collectives_transport.cc is the transport, collectives.cc the C API.
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
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

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

constexpr long kStallSeconds = 3;  // a heartbeat this old, in another pid namespace: the rank is gone

inline bool seq_reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

// The transport's helpers (collectives_transport.cc) the communicator below uses.
long timeout_seconds();  // {{ NAME }}_CCL_TIMEOUT_S, or its default
// False once the process has exited, also while it waits to be reaped (a zombie).
bool pid_alive(int32_t pid);
// Whether the rank's pid means anything here: it joined from this pid namespace.
bool same_namespace(const RankSlot& s);
// For the last one out: the rank is gone (exited, or silent for `stale` seconds; >= on whole
// seconds, so that a wait that has seen no beat for `stale` seconds agrees).
bool rank_gone(const RankSlot& s, long stale);
void stop_beating(RankSlot* s);
// Records the first cause of the communicator's failure for every rank to see.
void publish_failure(CommControl* c, const std::string& text);
bool failure_of(const CommControl* c, std::string* why);
// A file or directory opened without following links, owned by this user with no access for
// others, of `type` (and, for files, `size` bytes, when not 0): "" or what is wrong with it.
std::string check_private(int fd, const std::string& path, mode_t type, off_t size);
// Removes every entry of the directory open at `dir_fd`, then the directory `path`.
void remove_directory(int dir_fd, const std::string& path);
// Writes `bytes` at `data` to a new file `name` in the directory `dir_fd` (0600, O_EXCL):
// "" or why not (the partial file is removed).
std::string write_new_file(int dir_fd, const std::string& name, const void* data, size_t bytes);
// "all_reduce of 8 float32 (sum)", "broadcast of 2 int64 from rank 1", "barrier".
std::string describe(const Header& h);
bool same_call(const Header& a, const Header& b);

// A peer's data file mapped read-only, after its owner, mode and size are checked.
class Mapped {
 public:
  Mapped(int dir_fd, const std::string& dir, const std::string& name, size_t bytes);
  ~Mapped();
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const char* data() const { return static_cast<const char*>(data_); }
  const std::string& error() const { return error_; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
  std::string error_;
};

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT (the communicator is the C API's struct, outside the namespace)

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

namespace {{ p }} {

inline {{ p }}_status_t check_comm({{ p }}_comm_t comm, int root = 0) {
  return comm && comm->control && root >= 0 && root < comm->nranks ? {{ NAME }}_OK : {{ NAME }}_ERROR_INVALID_VALUE;
}

// The bodies of ccl_get_unique_id, _comm_init and _comm_destroy. The C API runs each through
// guard_call: an exception they throw (no memory for the communicator, a string) is the call's
// error status, not one that crosses extern "C".
{{ p }}_status_t ccl_get_unique_id_unguarded({{ p }}_ccl_id_t* id);
{{ p }}_status_t ccl_comm_init_unguarded(const {{ p }}_ccl_id_t* id, int nranks, int rank, {{ p }}_comm_t* comm);
{{ p }}_status_t ccl_comm_destroy_unguarded({{ p }}_comm_t comm);

// send's queued work: message `name` (message_file) of `count` `dtype` at `buf` (`bytes`) for
// `peer`, published whole, so that a send never waits.
{{ p }}_status_t post_message({{ p }}_comm_t comm, int peer, const std::string& name, size_t count,
                             {{ p }}_dtype_t dtype, const void* buf, size_t bytes);
// recv's queued work: waits for message `name` from `peer`, checks that it holds `count` `dtype`
// and reads it into `buf` (`bytes`).
{{ p }}_status_t take_message({{ p }}_comm_t comm, int peer, const std::string& name, size_t count,
                             {{ p }}_dtype_t dtype, void* buf, size_t bytes);

}  // namespace {{ p }}
