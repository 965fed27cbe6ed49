// The {{ NAME }} device library's conformance suite: what every flavour of the device library
// (host-backed, OpenCL, a vendor's) must do through its C API, by area -- device, memory,
// stream, event, collectives and one area per op family (ops.<family>) -- plus the flavour's
// own cases (tests/flavour/, area flavour.<name>). No framework: it also runs on targets
// without a Paddle or PyTorch runtime (armhf), and under qemu.
//
// A case is a function registered with CONFORMANCE_CASE(area, name). It ends as
//   passed         every expectation held;
//   failed         one did not (the first one's file, line and the library's error detail are reported);
//   unimplemented  an op it calls returns {{ NAME }}_ERROR_UNSUPPORTED naming itself "not implemented"
//                  (the stubs devkit generates for the ops a flavour leaves out): reported by name,
//                  not a failure, and the adapters leave that op's kernels unregistered.
// The binary prints one line per case (RUN, then PASS / FAIL name: detail / UNIMPLEMENTED name:
// detail) and, with --junit FILE, writes JUnit XML, which devkit verify reads.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>

#include "{{ p }}_device.h"
#include "device_buffer.h"

namespace conformance {

// Registers a case (CONFORMANCE_CASE does this at static initialisation).
struct Registration {
  Registration(const char* area, const char* name, void (*body)());
};

// A subcommand of the suite's binary: cases that need more processes run the binary again
// with it (e.g. one process per collective rank). `main` gets the arguments after the flag.
struct Subcommand {
  Subcommand(const char* flag, int arguments, int (*main)(char** args));
};

// The running case: an expectation that does not hold fails it (the first one is reported).
void record_failure(const char* file, int line, const std::string& what);
// What a call returned, as the expectations see it: an op the flavour does not implement
// ends the case as unimplemented.
{{ p }}_status_t checked({{ p }}_status_t status);
// A status, and the library's error detail when it is not OK.
std::string describe({{ p }}_status_t status);
// Whether the running case (or a subcommand's process) has failed so far.
bool failed();
// Thrown to end the running case after a failed REQUIRE (the runner catches it).
struct Stop {};

// This binary's path (for subcommands), and the device's modes as the environment sets them.
const char* self();
bool synchronous_mode();     // {{ NAME }}_SYNC: streams run work inline
bool host_visible_memory();  // {{ NAME }}_HOST_VISIBLE_MEMORY: the host may read device memory
bool emulated();             // DEVKIT_EMULATED: under qemu-user (a foreign target's verify)

inline {{ p }}_shape_t shape(std::initializer_list<int64_t> dims) {
  {{ p }}_shape_t s;
  s.ndim = static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) s.dims[i++] = d;
  return s;
}

inline bool near(double a, double b, double tol = 1e-4) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

// A host function (launch_host_func) that sleeps for the milliseconds its argument carries
// (millis(n)): work that keeps a stream busy. The number travels in the pointer, not behind it: a
// case that ends early (an unimplemented call) leaves its host functions queued, and one that
// read the case's stack would then sleep for whatever was there (32 s on the OpenCL flavour).
void sleep_ms(void* ms);
inline void* millis(int ms) { return reinterpret_cast<void*>(static_cast<intptr_t>(ms)); }

// Polls until `done` or `seconds` passed: a hang is a failure, not a suite that never ends.
bool within(double seconds, const std::function<bool()>& done);

// Runs `body` in a forked child: its exit status (waitpid's) and what it wrote to stderr; a child
// still running after 300 s is killed (SIGKILL) and says so in `err`.
struct ChildResult {
  int status = 0;
  std::string err;
};
ChildResult in_child(const std::function<int()>& body);
// This binary's subcommand `flag` (one without arguments) run in a forked child: the running case
// fails unless it exits 0, and then shows the child's status and stderr.
void expect_subcommand_passes(const char* flag);

}  // namespace conformance

#define CONFORMANCE_CASE(area, name)                                                              \
  static void conformance_case_##name();                                                          \
  static const ::conformance::Registration conformance_registration_##name(area, #name,           \
                                                                           conformance_case_##name); \
  static void conformance_case_##name()

#define EXPECT(cond)                                                 \
  do {                                                               \
    if (!(cond)) ::conformance::record_failure(__FILE__, __LINE__, #cond); \
  } while (0)
#define REQUIRE(cond)                                                \
  do {                                                               \
    if (!(cond)) {                                                   \
      ::conformance::record_failure(__FILE__, __LINE__, #cond);      \
      throw ::conformance::Stop{};                                   \
    }                                                                \
  } while (0)
// A call that must return `status` (an unimplemented op ends the case as unimplemented).
#define EXPECT_STATUS(call, status)                                                                       \
  do {                                                                                                    \
    const {{ p }}_status_t conformance_got = ::conformance::checked(call);                                \
    if (conformance_got != (status))                                                                      \
      ::conformance::record_failure(__FILE__, __LINE__,                                                   \
                                    std::string(#call) + " returned " + ::conformance::describe(conformance_got)); \
  } while (0)
#define EXPECT_OK(call) EXPECT_STATUS(call, {{ NAME }}_OK)
#define REQUIRE_OK(call)                                                                                  \
  do {                                                                                                    \
    const {{ p }}_status_t conformance_got = ::conformance::checked(call);                                \
    if (conformance_got != {{ NAME }}_OK) {                                                               \
      ::conformance::record_failure(__FILE__, __LINE__,                                                   \
                                    std::string(#call) + " returned " + ::conformance::describe(conformance_got)); \
      throw ::conformance::Stop{};                                                                        \
    }                                                                                                     \
  } while (0)

namespace conformance {

// A stream of the case's own, destroyed with it.
class Stream {
 public:
  Stream() { REQUIRE_OK({{ p }}_stream_create(0, &s_)); }
  ~Stream() { {{ p }}_stream_destroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  {{ p }}_stream_t get() const { return s_; }

 private:
  {{ p }}_stream_t s_ = nullptr;
};

}  // namespace conformance
