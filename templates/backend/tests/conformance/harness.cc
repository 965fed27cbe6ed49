// The conformance suite's runner: registration, expectations, the per-case lines on stdout and
// the JUnit XML report (--junit FILE). See conformance.h.
//
// Written here rather than taken from GoogleTest or Catch2: the suite is cross-compiled for
// every target (armhf, aarch64) with nothing but the target's compiler, and a test framework
// would have to be built for each sysroot first; what the suite needs of one (registration,
// expectations that name the library's error detail, an "unimplemented" outcome, JUnit) is
// this file.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "conformance.h"

namespace conformance {
namespace {

struct Case {
  std::string area, name;
  void (*body)();
};

struct SubcommandEntry {
  int arguments;
  int (*main)(char** args);
};

// Function-local statics: registrations run during static initialisation, in any order of files.
std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}
std::map<std::string, SubcommandEntry>& subcommands() {
  static std::map<std::string, SubcommandEntry> all;
  return all;
}

enum class Outcome { passed, failed, unimplemented };

struct Result {
  const Case* c;
  Outcome outcome;
  std::string detail;
  double seconds;
};

// The running case's first failure ("" while none) and whether an op was unimplemented.
std::string g_failure;
std::string g_self;

struct Unimplemented {
  std::string detail;
};

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Areas in the order they build on each other; op families and the flavour's own cases after.
int area_rank(const std::string& area) {
  static const char* const order[] = {"device", "memory", "stream", "event", "collectives"};
  for (int i = 0; i < 5; ++i)
    if (area == order[i]) return i;
  return area.rfind("ops.", 0) == 0 ? 5 : 6;
}

Result run_case(const Case& c) {
  g_failure.clear();
  Outcome outcome = Outcome::passed;
  std::string detail;
  const auto start = std::chrono::steady_clock::now();
  try {
    c.body();
  } catch (const Stop&) {
  } catch (const Unimplemented& u) {
    outcome = Outcome::unimplemented;
    detail = u.detail;
  } catch (const std::exception& e) {
    record_failure("(case)", 0, std::string("threw ") + e.what());
  } catch (...) {
    record_failure("(case)", 0, "threw an exception that is not a std::exception");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!g_failure.empty()) outcome = Outcome::failed, detail = g_failure;  // a failure before it counts
  return {&c, outcome, detail, seconds};
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no other control characters than tab and newline
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') out += ' ';
        else out += ch;
    }
  }
  return out;
}

// JUnit XML: one testsuite per area. Written to FILE.partial, then renamed: never half a report.
bool write_junit(const std::string& path, const std::vector<Result>& results) {
  std::map<std::string, std::vector<const Result*>> by_area;
  std::vector<std::string> areas;
  for (const Result& r : results) {
    if (!by_area.count(r.c->area)) areas.push_back(r.c->area);
    by_area[r.c->area].push_back(&r);
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{{ p }}_device\">\n";
  char figures[160];
  for (const std::string& area : areas) {
    int failures = 0, skipped = 0;
    double seconds = 0;
    for (const Result* r : by_area[area]) {
      failures += r->outcome == Outcome::failed;
      skipped += r->outcome == Outcome::unimplemented;
      seconds += r->seconds;
    }
    std::snprintf(figures, sizeof(figures), "tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\"",
                  by_area[area].size(), failures, skipped, seconds);
    xml += "  <testsuite name=\"" + xml_escaped(area) + "\" " + figures + ">\n";
    for (const Result* r : by_area[area]) {
      std::snprintf(figures, sizeof(figures), "time=\"%.3f\"", r->seconds);
      xml += "    <testcase classname=\"{{ p }}_device." + xml_escaped(area) + "\" name=\"" + xml_escaped(r->c->name) +
             "\" " + figures;
      if (r->outcome == Outcome::passed) {
        xml += "/>\n";
        continue;
      }
      const char* element = r->outcome == Outcome::failed ? "failure" : "skipped";
      const std::string message = r->outcome == Outcome::failed ? r->detail : "unimplemented: " + r->detail;
      xml += ">\n      <" + std::string(element) + " message=\"" + xml_escaped(message) + "\"/>\n    </testcase>\n";
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  const std::string partial = path + ".partial";
  const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool written = write(fd, xml.data(), xml.size()) == static_cast<ssize_t>(xml.size());
  return close(fd) == 0 && written && std::rename(partial.c_str(), path.c_str()) == 0;
}

int usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s [--list] [--filter TEXT] [--junit FILE]\n"
               "  runs the {{ NAME }} device library's conformance cases (those whose area.name contains TEXT)\n",
               self);
  return 2;
}

}  // namespace

Registration::Registration(const char* area, const char* name, void (*body)()) {
  cases().push_back({area, name, body});
}

Subcommand::Subcommand(const char* flag, int arguments, int (*main)(char** args)) {
  subcommands()[flag] = {arguments, main};
}

void record_failure(const char* file, int line, const std::string& what) {
  std::printf("  %s:%d: %s\n", file, line, what.c_str());
  if (g_failure.empty()) g_failure = std::string(file) + ":" + std::to_string(line) + ": " + what;
}

bool failed() { return !g_failure.empty(); }

{{ p }}_status_t checked({{ p }}_status_t status) {
  if (status == {{ NAME }}_ERROR_UNSUPPORTED) {
    const std::string detail = {{ p }}_error_detail();
    if (detail.find(" is not implemented") != std::string::npos) throw Unimplemented{detail};
  }
  return status;
}

std::string describe({{ p }}_status_t status) {
  std::string text = {{ p }}_status_string(status);
  const std::string detail = status == {{ NAME }}_OK ? "" : {{ p }}_error_detail();
  return detail.empty() ? text : text + " (" + detail + ")";
}

const char* self() { return g_self.c_str(); }
bool synchronous_mode() { return env_flag("{{ NAME }}_SYNC"); }
bool host_visible_memory() { return env_flag("{{ NAME }}_HOST_VISIBLE_MEMORY"); }
bool emulated() { return env_flag("DEVKIT_EMULATED"); }

void sleep_ms(void* ms) { usleep(static_cast<useconds_t>(reinterpret_cast<intptr_t>(ms)) * 1000); }

bool within(double seconds, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    usleep(1000);
  }
  return true;
}

namespace {

// One forked run of `body`: its exit status and stderr; a child still running after `seconds`
// is killed and `hung` set.
ChildResult run_child(const std::function<int()>& body, int seconds, bool* hung) {
  int err_pipe[2];
  ChildResult r;
  *hung = false;
  if (pipe(err_pipe) != 0) return r;
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    _exit(body());
  }
  close(err_pipe[1]);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  char buf[512];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{err_pipe[0], POLLIN, 0};
    const int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      kill(child, SIGKILL);
      *hung = true;
      break;
    }
    const ssize_t n = read(err_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;  // the child's end closed: it ended
    r.err.append(buf, static_cast<size_t>(n));
  }
  close(err_pipe[0]);
  waitpid(child, &r.status, 0);
  return r;
}

}  // namespace

ChildResult in_child(const std::function<int()>& body) {
  // A child that hangs is killed and named rather than stopping the suite. Natively a hang is
  // the library's (a lock inherited through fork): one run, 300 s. Under qemu-user the emulator
  // forks a threaded process itself and its child can deadlock in the emulator's own code, now
  // and then, under load (aarch64 in CI, 2026-11-27: a child that natively ends within a
  // second); so there a hung child is run again, at most three times, each retry said in the
  // case's output.
  const int attempts = emulated() ? 3 : 1, seconds = emulated() ? 60 : 300;
  ChildResult r;
  for (int attempt = 1;; ++attempt) {
    bool hung = false;
    r = run_child(body, seconds, &hung);
    if (!hung) return r;
    r.err += "[conformance] the child did not end within " + std::to_string(seconds) + " s: killed\n";
    if (attempt == attempts) return r;
    std::printf("  [conformance] a forked child hung under emulation (attempt %d of %d): run again\n", attempt,
                attempts);
  }
}

void expect_subcommand_passes(const char* flag) {
  const ChildResult child = in_child([flag] {
    execl(self(), self(), flag, static_cast<char*>(nullptr));
    return 127;
  });
  if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) return;
  record_failure(__FILE__, __LINE__, std::string("the subcommand ") + flag + " exits 0");
  std::printf("  child's status %d, stderr: %s\n", child.status, child.err.substr(0, 2000).c_str());
}

}  // namespace conformance

int main(int argc, char** argv) {
  using namespace conformance;
  g_self = argv[0];
  if (argc >= 2) {
    const auto sub = subcommands().find(argv[1]);
    if (sub != subcommands().end()) {
      if (argc != sub->second.arguments + 2) return usage(argv[0]);
      try {
        return sub->second.main(argv + 2);
      } catch (...) {  // a failed REQUIRE, an unimplemented op: already said
        return 1;
      }
    }
  }
  std::string filter, junit;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      list = true;
    } else if ((arg == "--filter" || arg == "--junit") && i + 1 < argc) {
      (arg == "--filter" ? filter : junit) = argv[++i];
    } else {
      return usage(argv[0]);
    }
  }
  std::vector<Case> selected;
  for (const Case& c : cases())
    if ((c.area + "." + c.name).find(filter) != std::string::npos) selected.push_back(c);
  std::stable_sort(selected.begin(), selected.end(),
                   [](const Case& a, const Case& b) {  // op families alphabetically, as listed in device/src
                     const int ra = area_rank(a.area), rb = area_rank(b.area);
                     return ra != rb ? ra < rb : ra == 5 && a.area < b.area;
                   });
  if (list) {
    for (const Case& c : selected) std::printf("%s.%s\n", c.area.c_str(), c.name.c_str());
    return 0;
  }
  if (selected.empty()) {
    std::fprintf(stderr, "no conformance case matches --filter %s\n", filter.c_str());
    return 2;
  }
  std::vector<Result> results;
  int counts[3] = {0, 0, 0};
  for (const Case& c : selected) {
    std::printf("RUN %s.%s\n", c.area.c_str(), c.name.c_str());
    std::fflush(stdout);  // a case that kills the process is then the last RUN line
    results.push_back(run_case(c));
    const Result& r = results.back();
    static const char* const verdicts[] = {"PASS", "FAIL", "UNIMPLEMENTED"};
    const int k = static_cast<int>(r.outcome);
    ++counts[k];
    std::printf("%s %s.%s%s%s\n", verdicts[k], c.area.c_str(), c.name.c_str(), r.detail.empty() ? "" : ": ",
                r.detail.c_str());
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed, %d unimplemented\n", counts[0], counts[1], counts[2]);
  if (!junit.empty() && !write_junit(junit, results)) {
    std::fprintf(stderr, "cannot write the JUnit report %s: %s\n", junit.c_str(), std::strerror(errno));
    return 1;
  }
  return counts[1] == 0 ? 0 : 1;
}
