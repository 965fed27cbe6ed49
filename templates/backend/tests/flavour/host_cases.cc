// The host-backed device library's own cases (area flavour.host), beside the conformance suite
// every flavour runs (tests/conformance/): what this library promises beyond the C API -- the
// fault handler that names a host access, fork and signal handling, the bounded wait at exit,
// exceptions in queued work, collectives over files in /dev/shm. A flavour of the device
// library replaces this directory with its own cases (templates/sdks/<flavour>/tests/flavour/).
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives.h"

namespace host_flavour {

void throw_bad_alloc(void*) { throw std::bad_alloc(); }
void throw_runtime_error(void*) { throw std::runtime_error("scratch space exhausted"); }
void sleep_long(void*) { sleep(30); }

// `--exit-with-queued-work`: an op still running when main returns.
int exit_with_queued_work(char**) {
  {{ p }}_launch_host_func(nullptr, sleep_long, nullptr);
  return 0;
}
const conformance::Subcommand exit_subcommand("--exit-with-queued-work", 0, exit_with_queued_work);

// `--ccl-nospace-rank ID RANK NRANKS -`: rank 1 cannot write its data (EFBIG, as ENOSPC would):
// both ranks fail at once, naming the cause -- not the timeout, nor rank 1's exit (which waits
// until rank 0 has its answer).
int nospace_rank(char** args) {
  const int rank = std::atoi(args[1]), nranks = std::atoi(args[2]);
  const {{ p }}_ccl_id_t id = conformance::ccl_id(args[0]);
  {{ p }}_comm_t comm = nullptr;
  REQUIRE_OK({{ p }}_ccl_comm_init(&id, nranks, rank, &comm));
  Dev<float> x(std::vector<float>(4096, 1.f));  // (device memory first: it is a file too)
  if (rank == 1) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit small{1024, 1024};
    setrlimit(RLIMIT_FSIZE, &small);
  }
  const auto start = std::chrono::steady_clock::now();
  const conformance::CclResult r = conformance::ccl_outcome(0, [&] {
    return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), 4096, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
  });
  EXPECT(r.status == {{ NAME }}_ERROR_PEER);
  EXPECT(r.detail.find("File too large") != std::string::npos);
  if (rank == 0) EXPECT(r.detail.find("rank 1") != std::string::npos);
  EXPECT(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
  if (conformance::failed()) std::printf("  rank %d: status %d, detail: %s\n", rank, r.status, r.detail.c_str());
  if (rank == 0) conformance::release_peers();
  if (rank == 1) conformance::wait_for_peers();
  EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
  return conformance::failed() ? 1 : 0;
}
const conformance::Subcommand nospace_subcommand("--ccl-nospace-rank", 4, nospace_rank);

}  // namespace host_flavour

// A host read through a device pointer faults; the library's handler names the allocation and aborts.
CONFORMANCE_CASE("flavour.host", host_access_names_the_allocation) {
  if (conformance::host_visible_memory()) return;  // (the memory area's case covers that mode)
  Dev<float> x(16, 1.f);
  REQUIRE(x.ptr());
  const conformance::ChildResult child = conformance::in_child([&] {
    volatile float v = x.ptr()[3];
    (void)v;
    return 0;
  });
  EXPECT(WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGABRT);
  EXPECT(child.err.find("host access to device memory") != std::string::npos);
  EXPECT(child.err.find("byte 12 of the 64-byte allocation") != std::string::npos);
  if (conformance::failed()) std::printf("  child's stderr: %s\n", child.err.c_str());
}

// An exception thrown by queued work is that op's error, not std::terminate.
CONFORMANCE_CASE("flavour.host", exceptions_in_queued_work_are_errors_naming_the_op) {
  const bool inline_mode = conformance::synchronous_mode();
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  {{ p }}_status_t st = {{ p }}_launch_host_func(s, host_flavour::throw_bad_alloc, nullptr);
  if (!inline_mode) st = {{ p }}_stream_synchronize(s);
  EXPECT(st == {{ NAME }}_ERROR_OUT_OF_MEMORY);
  std::string detail = {{ p }}_error_detail();
  EXPECT(detail.find("host_func") == 0 && detail.find("std::bad_alloc") != std::string::npos);
  if (conformance::failed()) std::printf("  error detail: %s\n", detail.c_str());
  st = {{ p }}_launch_host_func(s, host_flavour::throw_runtime_error, nullptr);
  if (!inline_mode) st = {{ p }}_stream_synchronize(s);
  EXPECT(st == {{ NAME }}_ERROR_INVALID_VALUE);
  detail = {{ p }}_error_detail();
  EXPECT(detail.find("host_func") == 0 && detail.find("scratch space exhausted") != std::string::npos);
  if (conformance::failed()) std::printf("  error detail: %s\n", detail.c_str());
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// A child forked after the device was used shares its memory: the library refuses it in one line
// (device_count and get_device still answer; a free is left to the parent).
CONFORMANCE_CASE("flavour.host", a_forked_child_is_refused) {
  Dev<float> x(16, 1.f);
  const conformance::ChildResult child = conformance::in_child([&] {
    int count = 0, device = -1;
    void* p = nullptr;
    if ({{ p }}_device_count(&count) != {{ NAME }}_OK || {{ p }}_get_device(&device) != {{ NAME }}_OK) return 10;
    const {{ p }}_status_t filled = {{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 16, 5.0);
    const {{ p }}_status_t synced = {{ p }}_device_synchronize(0);
    const {{ p }}_status_t allocated = {{ p }}_malloc(0, &p, 64);
    std::fprintf(stderr, "%s\n", {{ p }}_error_detail());
    if ({{ p }}_free(0, x.ptr()) != {{ NAME }}_OK) return 11;
    return filled == {{ NAME }}_ERROR_UNSUPPORTED && synced == {{ NAME }}_ERROR_UNSUPPORTED &&
                   allocated == {{ NAME }}_ERROR_UNSUPPORTED
               ? 0
               : 12;
  });
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  EXPECT(child.err.find("malloc: the {{ NAME }} device cannot be used in a process forked after it was initialised") == 0);
  EXPECT(std::count(child.err.begin(), child.err.end(), '\n') == 1);
  EXPECT(x.host() == std::vector<float>(16, 1.f));  // the parent's memory is untouched
  if (conformance::failed()) std::printf("  child: status %d, stderr: %s\n", child.status, child.err.c_str());
}

// Signals the device did not cause go on to the previous handler (here the default action): a
// SIGSEGV sent by kill kills; a SIGBUS in device memory is named.
CONFORMANCE_CASE("flavour.host", signals_the_device_did_not_cause_are_passed_on) {
  // qemu-user (an emulated target's verify sets DEVKIT_EMULATED) handles a guest's fatal signal
  // in its own code, which can deadlock in a forked child (armhf, 2026-11-26): what happens there
  // is the emulator's, and this case is the native targets' to prove.
  if (conformance::emulated()) return;
  Dev<float> x(16, 1.f);  // the fault handler is installed
  const conformance::ChildResult killed = conformance::in_child([] {
    kill(getpid(), SIGSEGV);
    return 0;
  });
  EXPECT(WIFSIGNALED(killed.status) && WTERMSIG(killed.status) == SIGSEGV);
  if (conformance::failed()) std::printf("  SIGSEGV by kill: child status %d, stderr: %s\n", killed.status, killed.err.c_str());
  const conformance::ChildResult bus = conformance::in_child([&] {  // as the kernel sends it when device memory cannot be backed
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    info.si_signo = SIGBUS;
    info.si_code = BUS_ADRERR;
    info.si_addr = x.ptr() + 2;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGBUS, &info);
    return 0;
  });
  EXPECT(WIFSIGNALED(bus.status) && WTERMSIG(bus.status) == SIGABRT);
  EXPECT(bus.err.find("[{{ NAME }}] SIGBUS: device memory at 0x") == 0);
  if (conformance::failed()) std::printf("  SIGBUS: child status %d, stderr: %s\n", bus.status, bus.err.c_str());
}

// Work still queued at exit is waited for, within {{ NAME }}_EXIT_TIMEOUT_S: then the process ends
// naming the op instead of hanging.
CONFORMANCE_CASE("flavour.host", the_exit_wait_is_bounded) {
  if (conformance::synchronous_mode()) return;
  const auto start = std::chrono::steady_clock::now();
  const conformance::ChildResult child = conformance::in_child([] {
    setenv("{{ NAME }}_EXIT_TIMEOUT_S", "1", 1);
    execl(conformance::self(), conformance::self(), "--exit-with-queued-work", static_cast<char*>(nullptr));
    return 127;
  });
  EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 1);
  EXPECT(child.err.find("host_func") != std::string::npos &&
         child.err.find("{{ NAME }}_EXIT_TIMEOUT_S=1") != std::string::npos);
  if (conformance::failed()) std::printf("  child: status %d, stderr: %s\n", child.status, child.err.c_str());
}

// Collectives over files in /dev/shm: a rank that cannot write makes its peers fail at once.
CONFORMANCE_CASE("flavour.host", a_rank_out_of_space_fails_its_peers_at_once) {
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  EXPECT((conformance::run_ranks(2, "--ccl-nospace-rank", "-", &id) == std::vector<int>{0, 0}));
  EXPECT(conformance::leftover_files(id) == 0);
}
