// Conformance, area collectives: every collective across processes (each rank is a process of
// its own: this binary again, with --ccl-rank), ranks that fail or disagree, communicators of
// ranks that died.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "collectives.h"

namespace conformance {
namespace {

// Where a rank finds the peers' signal (high, clear of what the rank opens itself).
constexpr int kPeersReadFd = 200, kPeersWriteFd = 201;

// One run of the ranks, each this binary again, started with posix_spawn (nothing of ours runs
// between fork and exec in this threaded process); reaped in the order they end, as a launcher
// reaps them. Ranks still running after `seconds` are killed, each named, and `hung` is set.
std::vector<int> start_ranks(int nranks, const char* subcommand, const char* mode, const {{ p }}_ccl_id_t& id,
                             int seconds, bool* hung) {
  const std::string size = std::to_string(nranks);
  std::vector<pid_t> pids(nranks, -1);
  std::vector<int> statuses(nranks, 127);  // 127: a rank that could not be started
  std::fflush(stdout);
  std::string id_text(id.bytes);
  // The peers' signal: a pipe only the ranks hold (close-on-exec here, so that no other child of
  // this process keeps its writing end open), at fixed descriptors in each rank.
  int peers[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (pipe2(peers, O_CLOEXEC) == 0) {
    posix_spawn_file_actions_adddup2(&actions, peers[0], kPeersReadFd);
    posix_spawn_file_actions_adddup2(&actions, peers[1], kPeersWriteFd);
  }
  for (int r = 0; r < nranks; ++r) {
    const std::string rank = std::to_string(r);
    char* argv[] = {const_cast<char*>(self()), const_cast<char*>(subcommand), id_text.data(), const_cast<char*>(rank.c_str()),
                    const_cast<char*>(size.c_str()), const_cast<char*>(mode), nullptr};
    if (posix_spawn(&pids[r], self(), &actions, nullptr, argv, environ) != 0) pids[r] = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  for (const int fd : peers)
    if (fd >= 0) close(fd);
  std::vector<bool> ended(nranks);
  for (int r = 0; r < nranks; ++r) ended[r] = pids[r] == -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  *hung = false;
  while (std::find(ended.begin(), ended.end(), false) != ended.end()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // no child left
    if (pid > 0) {
      const auto it = std::find(pids.begin(), pids.end(), pid);
      if (it == pids.end()) continue;
      statuses[it - pids.begin()] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ended[it - pids.begin()] = true;
    } else if (std::chrono::steady_clock::now() < until) {
      usleep(10000);
    } else {
      *hung = true;
      for (int r = 0; r < nranks; ++r) {
        if (ended[r]) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        statuses[r] = 128 + SIGKILL;
        ended[r] = true;
        std::printf("  rank %d of %d (%s) did not end within %d s: killed\n", r, nranks, mode, seconds);
      }
    }
  }
  return statuses;
}

// Removes what ranks that were killed left of their communicator in /dev/shm.
void remove_leftovers(const {{ p }}_ccl_id_t& id) {
  std::error_code ignored;
  for (const std::string& path : leftovers(id)) std::filesystem::remove_all(path, ignored);
}

}  // namespace

// A rank that hangs is killed and named rather than stopping the suite. Under qemu-user a forked
// child can deadlock in the emulator's own code now and then (see in_child; aarch64 in CI,
// 2026-11-27: a rank of every_collective_across_processes never started, and the suite waited
// for it without end), so there the ranks run again with a new communicator, at most three times.
std::vector<int> run_ranks(int nranks, const char* subcommand, const char* mode, {{ p }}_ccl_id_t* id) {
  const int attempts = emulated() ? 3 : 1, seconds = emulated() ? 120 : 300;
  for (int attempt = 1;; ++attempt) {
    REQUIRE_OK({{ p }}_ccl_get_unique_id(id));  // (a library without collectives: the case is unimplemented)
    bool hung = false;
    const std::vector<int> statuses = start_ranks(nranks, subcommand, mode, *id, seconds, &hung);
    if (hung) remove_leftovers(*id);
    if (!hung || attempt == attempts) return statuses;
    std::printf("  [conformance] ranks hung under emulation (attempt %d of %d): run again\n", attempt, attempts);
  }
}

void release_peers() { close(kPeersWriteFd); }

void wait_for_peers() {
  close(kPeersWriteFd);  // (its own writing end: the end of the file comes when the releaser's closes)
  char byte;
  while (read(kPeersReadFd, &byte, 1) < 0 && errno == EINTR) {
  }
}

{{ p }}_ccl_id_t ccl_id(const char* text) {
  {{ p }}_ccl_id_t id;
  std::memset(&id, 0, sizeof(id));
  std::strncpy(id.bytes, text, sizeof(id.bytes) - 1);
  return id;
}

std::string comm_dir(const {{ p }}_ccl_id_t& id) {
  const std::string text(id.bytes);
  return "/dev/shm/" + text.substr(0, text.rfind('-'));
}

std::vector<std::string> leftovers(const {{ p }}_ccl_id_t& id) {
  const std::string dir = comm_dir(id).substr(std::strlen("/dev/shm/"));
  std::vector<std::string> found;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, dir.c_str(), dir.size()) == 0) found.push_back(std::string("/dev/shm/") + e->d_name);
    closedir(d);
  }
  return found;
}

int leftover_files(const {{ p }}_ccl_id_t& id) { return static_cast<int>(leftovers(id).size()); }

CclResult ccl_outcome(int device, const std::function<{{ p }}_status_t()>& call) {
  const {{ p }}_status_t at_call = call();
  const std::string detail_at_call = {{ p }}_error_detail();
  if (synchronous_mode() || at_call != {{ NAME }}_OK) return {at_call, detail_at_call};
  const {{ p }}_status_t at_sync = {{ p }}_device_synchronize(device);
  return {at_sync, {{ p }}_error_detail()};
}

}  // namespace conformance

namespace collectives_area {

using conformance::ccl_outcome;
using conformance::CclResult;

// The modes of one rank that go wrong on purpose (see the cases below); false: not such a mode.
bool failure_mode(const std::string& mode, int rank, int nranks, int device, {{ p }}_comm_t comm) {
  if (mode == "mismatch") {  // rank 0 all-reduces 2048 floats, rank 1 1024: both fail, naming both sides
    const size_t count = rank == 0 ? 2048 : 1024;
    Dev<float> x(std::vector<float>(count, 1.f), device);
    const CclResult r = ccl_outcome(device, [&] {
      return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), count, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
    });
    EXPECT(r.status == {{ NAME }}_ERROR_INVALID_VALUE);
    const std::string mine = "rank " + std::to_string(rank) + " all_reduce of " + std::to_string(count) + " float32";
    const std::string theirs = "rank " + std::to_string(1 - rank) + " all_reduce of " + std::to_string(3072 - count) +
                               " float32";
    EXPECT(r.detail.find(mine) != std::string::npos && r.detail.find(" but " + theirs) != std::string::npos);
    EXPECT((x.host() == std::vector<float>(count, 1.f)));  // not written
    if (conformance::failed()) std::printf("  rank %d: status %d, detail: %s\n", rank, r.status, r.detail.c_str());
  } else if (mode == "streams") {  // one communicator, two streams: the first call's stream starts later
    {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
    REQUIRE_OK({{ p }}_stream_create(device, &s1));
    REQUIRE_OK({{ p }}_stream_create(device, &s2));
    const int pause_ms = 100 * (rank + 1);
    Dev<float> a(std::vector<float>(64, 1.f + rank), device), b(std::vector<float>(64, 10.f * (rank + 1)), device);
    EXPECT_OK({{ p }}_launch_host_func(s1, conformance::sleep_ms, conformance::millis(pause_ms)));
    EXPECT_OK({{ p }}_ccl_all_reduce(s1, a.ptr(), a.ptr(), 64, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(s2, b.ptr(), b.ptr(), 64, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_stream_synchronize(s2));
    EXPECT_OK({{ p }}_stream_synchronize(s1));
    float want_a = 0.f, want_b = 0.f;
    for (int r = 0; r < nranks; ++r) want_a += 1.f + r, want_b += 10.f * (r + 1);
    EXPECT((a.host() == std::vector<float>(64, want_a)));
    EXPECT((b.host() == std::vector<float>(64, want_b)));
    EXPECT_OK({{ p }}_stream_destroy(s1));
    EXPECT_OK({{ p }}_stream_destroy(s2));
  } else {
    return false;
  }
  return true;
}

// Every collective against the values the ranks' inputs give.
void all_collectives(int rank, int nranks, int device, {{ p }}_comm_t comm) {
  const size_t n = 5;
  std::vector<float> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(rank + 1) + 0.5f * i;
  auto expected = [&](auto f) {
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) {
      float acc = 1.f + 0.5f * i;
      for (int r = 1; r < nranks; ++r) acc = f(acc, static_cast<float>(r + 1) + 0.5f * i);
      out[i] = acc;
    }
    return out;
  };
  {  // all-reduce, four reductions, one of them in place
    Dev<float> x(mine, device), sum(n, 0.f, device), mx(n, 0.f, device), prod(n, 0.f, device), mn(mine, device);
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), sum.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), mx.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_MAX, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), prod.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_PROD, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, mn.ptr(), mn.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_MIN, comm));
    EXPECT(sum.host() == expected([](float a, float b) { return a + b; }));
    EXPECT(mx.host() == expected([](float a, float b) { return std::max(a, b); }));
    EXPECT(prod.host() == expected([](float a, float b) { return a * b; }));
    EXPECT(mn.host() == expected([](float a, float b) { return std::min(a, b); }));
  }
  {  // int64 sum, broadcast from the last rank, reduce to rank 0
    Dev<int64_t> x(std::vector<int64_t>(3, int64_t{1} << (40 + rank)), device), y(3, 0, device);
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), y.ptr(), 3, {{ NAME }}_INT64, {{ NAME }}_CCL_SUM, comm));
    int64_t want = 0;
    for (int r = 0; r < nranks; ++r) want += int64_t{1} << (40 + r);
    EXPECT(y.host() == std::vector<int64_t>(3, want));
    Dev<int64_t> b(std::vector<int64_t>{rank, 10 + rank}, device);
    EXPECT_OK({{ p }}_ccl_broadcast(nullptr, b.ptr(), 2, {{ NAME }}_INT64, nranks - 1, comm));
    EXPECT((b.host() == std::vector<int64_t>{nranks - 1, 10 + nranks - 1}));
    Dev<float> x2(mine, device), r0(n, -1.f, device);
    EXPECT_OK({{ p }}_ccl_reduce(nullptr, x2.ptr(), r0.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, 0, comm));
    EXPECT(r0.host() == (rank == 0 ? expected([](float a, float b) { return a + b; }) : std::vector<float>(n, -1.f)));
  }
  {  // all-gather and reduce-scatter
    Dev<int32_t> x(std::vector<int32_t>{rank, -rank}, device), all(2 * nranks, 0, device);
    EXPECT_OK({{ p }}_ccl_all_gather(nullptr, x.ptr(), all.ptr(), 2, {{ NAME }}_INT32, comm));
    std::vector<int32_t> want;
    for (int r = 0; r < nranks; ++r) want.insert(want.end(), {r, -r});
    EXPECT(all.host() == want);
    std::vector<int32_t> blocks(3 * nranks);
    for (int i = 0; i < 3 * nranks; ++i) blocks[i] = i * (rank + 1);
    Dev<int32_t> sb(blocks, device), mine_block(3, 0, device);
    EXPECT_OK({{ p }}_ccl_reduce_scatter(nullptr, sb.ptr(), mine_block.ptr(), 3, {{ NAME }}_INT32, {{ NAME }}_CCL_SUM,
                                      comm));
    const int32_t ranks_sum = nranks * (nranks + 1) / 2;
    EXPECT((mine_block.host() ==
            std::vector<int32_t>{3 * rank * ranks_sum, (3 * rank + 1) * ranks_sum, (3 * rank + 2) * ranks_sum}));
  }
  if (nranks > 1) {  // a ring of send/recv (a send does not wait for its recv), twice, then a barrier
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    Dev<float> out(std::vector<float>{static_cast<float>(rank), 7.f}, device), in(2, 0.f, device), in2(2, 0.f, device);
    EXPECT_OK({{ p }}_ccl_send(nullptr, out.ptr(), 2, {{ NAME }}_FLOAT32, next, comm));
    EXPECT_OK({{ p }}_ccl_send(nullptr, out.ptr(), 1, {{ NAME }}_FLOAT32, next, comm));
    EXPECT_OK({{ p }}_ccl_recv(nullptr, in.ptr(), 2, {{ NAME }}_FLOAT32, prev, comm));
    EXPECT_OK({{ p }}_ccl_recv(nullptr, in2.ptr(), 1, {{ NAME }}_FLOAT32, prev, comm));
    EXPECT((in.host() == std::vector<float>{static_cast<float>(prev), 7.f}));
    EXPECT((in2.host() == std::vector<float>{static_cast<float>(prev), 0.f}));
    EXPECT_OK({{ p }}_ccl_barrier(nullptr, comm));
    EXPECT_STATUS({{ p }}_ccl_send(nullptr, out.ptr(), 2, {{ NAME }}_FLOAT32, rank, comm), {{ NAME }}_ERROR_INVALID_VALUE);
  }
  EXPECT_OK({{ p }}_device_synchronize(device));
}

// One rank's part: `--ccl-rank ID RANK NRANKS MODE`. "all": every collective. "exit": rank 1
// joins and exits; rank 0's all-reduce must then fail naming it, well within the timeout
// ("exit-no-destroy": and rank 0 then exits without comm_destroy; "stalled": rank 1 never comes
// and ends without a trace once rank 0 has failed; "late": rank 1 comes after rank 0's timeout).
// "keep": "all" without comm_destroy. "crash": every rank exits without comm_destroy (what a
// killed job leaves). "duplicate": both processes claim rank 0 of 2; "nranks": rank 1 says there
// are 3 ranks. "gated" (tests/e2e/test_collectives.py): "all" once stdin has a line.
int rank_main(char** args) {
  const int rank = std::atoi(args[1]), nranks = std::atoi(args[2]);
  const std::string mode = args[3];
  const {{ p }}_ccl_id_t id = conformance::ccl_id(args[0]);
  int devices = 1;
  {{ p }}_device_count(&devices);
  const int device = rank % devices;
  EXPECT_OK({{ p }}_set_device(device));
  if (mode == "duplicate" || mode == "nranks") {  // every process's comm_init fails at once, saying why
    const int given_rank = mode == "duplicate" ? 0 : rank;
    const int given_nranks = mode == "duplicate" ? 2 : (rank == 1 ? 3 : 2);
    {{ p }}_comm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const {{ p }}_status_t st = {{ p }}_ccl_comm_init(&id, given_nranks, given_rank, &comm);
    const std::string detail = {{ p }}_error_detail();
    EXPECT(st == {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    EXPECT(detail.find(mode == "duplicate" ? "rank 0 of 2 was given to two processes" : "nranks") != std::string::npos);
    if (conformance::failed()) std::printf("  process %d: status %d, detail: %s\n", rank, st, detail.c_str());
    if (st == {{ NAME }}_OK) {{ p }}_ccl_comm_destroy(comm);
    return conformance::failed() ? 1 : 0;
  }
  {{ p }}_comm_t comm = nullptr;
  REQUIRE_OK({{ p }}_ccl_comm_init(&id, nranks, rank, &comm));
  if (mode == "crash") _exit(4);
  if (mode == "gated") {
    std::printf("joined\n");
    std::fflush(stdout);
    char line[8];
    if (!std::fgets(line, sizeof(line), stdin)) return 1;
  }
  if (mode == "stalled" && rank == 1) {  // joined, then silent until killed: gone without a trace
    for (int i = 0; i < 1000; ++i) {  // (the directory goes when rank 0's wait fails: then "killed")
      if (access(conformance::comm_dir(id).c_str(), F_OK) != 0) _exit(5);
      usleep(10 * 1000);
    }
    _exit(6);
  }
  if (mode == "late" && rank == 1) {  // joined, then busy until rank 0 has timed out
    conformance::wait_for_peers();
    EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
    return conformance::failed() ? 1 : 0;
  }
  if (mode == "exit" || mode == "exit-no-destroy" || mode == "late" || mode == "stalled") {
    if (rank == 1) _exit(3);  // joined, then gone: no collective, no destroy
    Dev<float> x(std::vector<float>(8, 1.f), device);
    // Queued, the error comes at the synchronisation; inline ({{ NAME }}_SYNC=1), from the call.
    const CclResult r = ccl_outcome(device, [&] {
      return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), 8, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
    });
    EXPECT(r.status == {{ NAME }}_ERROR_PEER);
    if (mode != "late" && mode != "stalled") {
      EXPECT(r.detail.find("rank 0 of 2 waited for rank 1 (") != std::string::npos);
      EXPECT(r.detail.find("which has exited") != std::string::npos);
    } else {
      EXPECT(r.detail.find("rank 0 of 2 waited 1 s for rank 1 ({{ NAME }}_CCL_TIMEOUT_S=1)") != std::string::npos);
    }
    if (conformance::failed()) std::printf("  error detail: %s\n", r.detail.c_str());
    conformance::release_peers();  // ("late": rank 1 comes now)
    std::fflush(stdout);
    if (mode == "exit-no-destroy" || mode == "stalled") _exit(conformance::failed() ? 1 : 0);  // as a launcher's worker ends
    EXPECT_OK({{ p }}_ccl_comm_destroy(comm));  // the last rank alive: the communicator's files go
    return conformance::failed() ? 1 : 0;
  }
  if (!failure_mode(mode, rank, nranks, device, comm)) all_collectives(rank, nranks, device, comm);
  if (mode == "keep") {  // exits holding the communicator, as Paddle and torch do
    if (conformance::failed()) std::printf("  rank %d: %s\n", rank, {{ p }}_error_detail());
    std::fflush(stdout);
    std::exit(conformance::failed() ? 1 : 0);
  }
  EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
  if (conformance::failed()) std::printf("  rank %d: %s\n", rank, {{ p }}_error_detail());
  return conformance::failed() ? 1 : 0;
}

int unique_id_main(char**) {  // (for tests/e2e/test_collectives.py)
  {{ p }}_ccl_id_t id;
  if ({{ p }}_ccl_get_unique_id(&id) != {{ NAME }}_OK) return 1;
  std::printf("%s\n", id.bytes);
  return 0;
}

const conformance::Subcommand rank_subcommand("--ccl-rank", 4, rank_main);
const conformance::Subcommand unique_id_subcommand("--ccl-unique-id", 0, unique_id_main);

std::vector<int> ranks(int nranks, const char* mode, {{ p }}_ccl_id_t* id) {
  return conformance::run_ranks(nranks, "--ccl-rank", mode, id);
}

}  // namespace collectives_area

CONFORMANCE_CASE("collectives", every_collective_across_processes) {
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);  // the ranks' (a failure here must not take 300 s)
  {{ p }}_ccl_id_t id;
  EXPECT((collectives_area::ranks(3, "all", &id) == std::vector<int>{0, 0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
  // Ranks that exit holding the communicator: the last one out removes it at exit.
  EXPECT((collectives_area::ranks(2, "keep", &id) == std::vector<int>{0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
  {{ p }}_ccl_id_t bad;
  std::memset(&bad, 0, sizeof(bad));
  std::strcpy(bad.bytes, "../escape");
  {{ p }}_comm_t comm = nullptr;
  EXPECT_STATUS({{ p }}_ccl_comm_init(&bad, 2, 0, &comm), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_ccl_comm_init(&id, 2, 2, &comm), {{ NAME }}_ERROR_INVALID_VALUE);
}

// A rank that exits makes the other's collective fail naming it (no timeout wait); the rank
// left alive removes the communicator's files when it destroys it, or when it exits at once
// after the error (a worker's os._exit). A rank alive but absent: the timeout. A rank that
// stays silent and is then killed: rank 0's failed wait removes the communicator.
CONFORMANCE_CASE("collectives", a_rank_that_is_gone_is_named) {
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  const auto start = std::chrono::steady_clock::now();
  EXPECT((collectives_area::ranks(2, "exit", &id) == std::vector<int>{0, 3}));
  EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  EXPECT(conformance::leftover_files(id) == 0);
  EXPECT((collectives_area::ranks(2, "exit-no-destroy", &id) == std::vector<int>{0, 3}));
  EXPECT(conformance::leftover_files(id) == 0);
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "1", 1);
  EXPECT((collectives_area::ranks(2, "late", &id) == std::vector<int>{0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
  EXPECT((collectives_area::ranks(2, "stalled", &id) == std::vector<int>{0, 5}));
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  EXPECT(conformance::leftover_files(id) == 0);
}

// Ranks that disagree on a collective's size fail together, each naming both sides (no sum over
// misread memory); one communicator used from two streams keeps call order.
CONFORMANCE_CASE("collectives", fail_together_and_keep_order) {
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  for (const char* mode : {"mismatch", "streams"}) {
    const std::vector<int> statuses = collectives_area::ranks(2, mode, &id);
    EXPECT((statuses == std::vector<int>{0, 0}));
    EXPECT(conformance::leftover_files(id) == 0);
    if (conformance::failed()) std::printf("  mode %s: exit statuses %d %d\n", mode, statuses[0], statuses[1]);
  }
}

// comm_init refuses, in every process and at once, a rank given twice and ranks that disagree on
// nranks; a bad {{ NAME }}_CCL_TIMEOUT_S is warned about once and the default used.
CONFORMANCE_CASE("collectives", communicator_setup_is_checked) {
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  EXPECT((collectives_area::ranks(2, "duplicate", &id) == std::vector<int>{0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
  EXPECT((collectives_area::ranks(2, "nranks", &id) == std::vector<int>{0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
  REQUIRE_OK({{ p }}_ccl_get_unique_id(&id));
  const conformance::ChildResult child = conformance::in_child([&id] {
    setenv("{{ NAME }}_CCL_TIMEOUT_S", "soon", 1);
    execl(conformance::self(), conformance::self(), "--ccl-rank", id.bytes, "0", "1", "all",
          static_cast<char*>(nullptr));
    return 127;
  });
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  EXPECT(child.err.find("{{ NAME }}_CCL_TIMEOUT_S=soon") != std::string::npos &&
         child.err.find("using 300") != std::string::npos);
  EXPECT(conformance::leftover_files(id) == 0);
  if (conformance::failed()) std::printf("  child's stderr: %s\n", child.err.c_str());
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
}

// Ranks killed before they destroy their communicator leave its files; the next unique id made on
// the machine removes them (every rank is dead).
CONFORMANCE_CASE("collectives", dead_communicators_are_swept) {
  {{ p }}_ccl_id_t id, next;
  EXPECT((collectives_area::ranks(2, "crash", &id) == std::vector<int>{4, 4}));
  EXPECT((collectives_area::ranks(1, "all", &next) == std::vector<int>{0}));
  EXPECT(conformance::leftover_files(id) == 0);
  EXPECT(conformance::leftover_files(next) == 0);
}
