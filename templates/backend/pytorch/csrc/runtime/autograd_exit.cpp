// torch's autograd engine runs a device's backward on a thread of its own (pt_autograd_<index>).
// That thread can still hold the last reference to a finished backward's task when the program
// ends, and the task's thread-local state holds Python objects: freeing them takes the GIL. A
// thread asking for the GIL once Python finalizes is ended by pthread_exit, whose unwinding
// stops at a noexcept destructor (~ThreadLocalState, in the core of one such abort):
// std::terminate ("terminate called without an active exception", exit status -6) after a run
// that succeeded. torch_{{ p }}/_autograd_exit.py calls this from an atexit handler, while Python
// still serves those threads: the engine's own shutdown, run earlier (its destructor's call is
// then a no-op). torch.ops calls it with the GIL released, so the threads can finish.
#include <torch/csrc/autograd/engine.h>
#include <torch/library.h>

namespace torch_{{ p }} {
namespace {

void stop_autograd_device_threads() { torch::autograd::Engine::get_default_engine().stop(); }

}  // namespace

TORCH_LIBRARY_FRAGMENT({{ p }}, m) {
  m.def("stop_autograd_device_threads() -> ()", &stop_autograd_device_threads);
}

}  // namespace torch_{{ p }}
