// What the collective cases share with a flavour's own (tests/flavour/): ranks as processes of
// this binary, and the outcome of a collective call wherever its error is reported.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "conformance.h"

namespace conformance {

// Starts `nranks` processes of this binary (`subcommand ID RANK NRANKS MODE`) on a new unique
// id; their exit statuses (128 + signal for a killed one).
std::vector<int> run_ranks(int nranks, const char* subcommand, const char* mode, {{ p }}_ccl_id_t* id);

// One run's ranks share a signal (a pipe run_ranks hands each rank): release_peers() lets every
// rank blocked in wait_for_peers() go on, as does the releasing rank's exit (a rank that dies does
// not leave the others waiting). A case waits for an event this way, not for a time long enough.
void release_peers();
void wait_for_peers();

// The unique id a rank process was given as text (its subcommand's first argument).
{{ p }}_ccl_id_t ccl_id(const char* text);

// The directory in /dev/shm a unique id names ("<p>ccl-<name>-<secret>").
std::string comm_dir(const {{ p }}_ccl_id_t& id);

// The entries of /dev/shm the communicator of `id` left, as paths, and their count (for a library
// that keeps none there: 0).
std::vector<std::string> leftovers(const {{ p }}_ccl_id_t& id);
int leftover_files(const {{ p }}_ccl_id_t& id);

// The status of the collective `call` makes, at the call (inline) or at the synchronisation
// (queued), and the error detail that goes with it.
struct CclResult {
  {{ p }}_status_t status;
  std::string detail;
};
CclResult ccl_outcome(int device, const std::function<{{ p }}_status_t()>& call);

}  // namespace conformance
