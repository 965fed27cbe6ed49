"""The "{{ p }}ccl" backend of torch.distributed: collectives of the {{ NAME }} device library.

Registered for the "{{ device_type }}" device at import, so `init_process_group()` on a machine
whose accelerator is {{ device_type }} picks it, as does `init_process_group(backend="{{ p }}ccl")`;
DistributedDataParallel uses it for {{ device_type }} modules.

Each collective is queued on the current stream of its tensors' device and returns before the
data has moved, as NCCL's do; `Work.wait()` (what a collective without async_op calls) waits
for the device, so an error of a peer (a rank that died, or did not come within
{{ NAME }}_CCL_TIMEOUT_S seconds) is raised there, naming the op and the rank. CPU tensors are
staged through the current device. Not implemented (a NotImplementedError naming the op):
reduce, gather, scatter, all_to_all, recv from any source; reduce ops other than SUM, PRODUCT,
MIN, MAX, AVG (AVG on floating-point tensors only).
"""

from __future__ import annotations

import weakref
from datetime import timedelta

import torch
import torch.distributed as dist

BACKEND = "{{ p }}ccl"
DEVICE_TYPE = "{{ device_type }}"
_ops = torch.ops.{{ p }}
_REDUCE_OPS = {  # the device library's {{ p }}_ccl_op_t
    dist.ReduceOp.SUM: 0,
    dist.ReduceOp.PRODUCT: 1,
    dist.ReduceOp.MAX: 2,
    dist.ReduceOp.MIN: 3,
}


class _Work(dist.Work):
    """A queued collective: its result (for futures) and the device it runs on."""

    def __init__(self, result: list[torch.Tensor], device: int) -> None:
        super().__init__()
        self._result = result
        self._device = device

    def wait(self, timeout: timedelta | None = None) -> bool:
        _ops.synchronize(self._device)  # raises the collective's error, if it had one
        return True

    def get_future(self) -> torch.futures.Future:
        # Complete at once: what consumes the value (DDP's bucket copies) is queued after the
        # collective on the same stream.
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(self._result)
        return future


class _Staged:
    """A tensor as the device library needs it (contiguous, on the device) and, when that took
    a copy, the write back into the caller's tensor."""

    def __init__(self, tensor: torch.Tensor, device: int) -> None:
        self.original = tensor
        if tensor.device.type == DEVICE_TYPE:
            self.tensor = tensor.contiguous()
        else:
            self.tensor = tensor.to(torch.device(DEVICE_TYPE, device)).contiguous()

    def write_back(self) -> None:
        if self.tensor is not self.original:
            self.original.copy_(self.tensor)


def _device_of(tensors: list[torch.Tensor]) -> int:
    for t in tensors:
        if t.device.type == DEVICE_TYPE:
            return t.device.index if t.device.index is not None else torch.{{ p }}.current_device()
    return torch.{{ p }}.current_device()


def _one(tensors: list[torch.Tensor], op: str) -> torch.Tensor:
    if len(tensors) != 1:
        raise ValueError(f"{BACKEND} {op}: one tensor per process, got {len(tensors)}")
    return tensors[0]


def _reduce_op(op, what: str, dtype: torch.dtype) -> tuple[int, bool]:
    """The device library's op for a torch ReduceOp, and whether to divide by the size (AVG)."""
    if op == dist.ReduceOp.AVG:
        if not dtype.is_floating_point:
            raise ValueError(f"{BACKEND} {what}: AVG needs a floating-point tensor, got {dtype}")
        return 0, True
    for torch_op, code in _REDUCE_OPS.items():
        if op == torch_op:
            return code, False
    raise NotImplementedError(f"{BACKEND} {what}: reduce op {op} is not supported (SUM, PRODUCT, MIN, MAX, AVG)")


class ProcessGroup{{ NAME }}(dist.ProcessGroup):
    """One communicator of the device library for the ranks of a group."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        # Rank 0 makes the unique id; the group's store (a prefix store of its own per group)
        # hands it to the others, who wait for it up to the store's timeout.
        if rank == 0:
            store.set("unique_id", _ops.ccl_unique_id())
        unique_id = store.get("unique_id").decode()
        self._comm = _ops.ccl_comm_init(unique_id, size, rank)
        self._closer = weakref.finalize(self, _ops.ccl_comm_destroy, self._comm)

    def getBackendName(self) -> str:  # noqa: N802 - the C++ name torch looks up
        return BACKEND

    def _done(self, result: list[torch.Tensor], staged: list[_Staged], device: int) -> _Work:
        for s in staged:
            s.write_back()
        return _Work(result, device)

    # ---- collectives ----------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        tensor = _one(tensors, "allreduce")
        code, average = _reduce_op(opts.reduceOp if opts else dist.ReduceOp.SUM, "allreduce", tensor.dtype)
        device = _device_of(tensors)
        s = _Staged(tensor, device)
        _ops.ccl_all_reduce(s.tensor, code, self._comm)
        if average:
            s.tensor.div_(self.size())
        return self._done(tensors, [s], device)

    def allreduce_coalesced(self, tensors, opts=None):
        op = opts.reduceOp if opts else dist.ReduceOp.SUM
        for tensor in tensors:
            options = dist.AllreduceOptions()
            options.reduceOp = op
            self.allreduce([tensor], options)
        return _Work(tensors, _device_of(tensors))

    def broadcast(self, tensors, opts=None):
        tensor = _one(tensors, "broadcast")
        device = _device_of(tensors)
        s = _Staged(tensor, device)
        _ops.ccl_broadcast(s.tensor, opts.rootRank if opts else 0, self._comm)
        return self._done(tensors, [s], device)

    def _allgather_base(self, output, input, opts=None):  # all_gather_into_tensor
        device = _device_of([output, input])
        out, inp = _Staged(output, device), _Staged(input, device)
        _ops.ccl_all_gather(out.tensor, inp.tensor, self._comm)
        return self._done([output], [out], device)

    def allgather(self, output_tensors, input_tensors, opts=None):
        outputs, tensor = output_tensors[0], _one(input_tensors, "allgather")
        if len(outputs) != self.size():
            raise ValueError(f"{BACKEND} allgather: {self.size()} output tensors needed, got {len(outputs)}")
        device = _device_of([tensor])
        inp = _Staged(tensor, device)
        flat = torch.empty((self.size(), tensor.numel()), dtype=tensor.dtype, device=inp.tensor.device)
        _ops.ccl_all_gather(flat, inp.tensor, self._comm)
        for r, out in enumerate(outputs):
            out.copy_(flat[r].view_as(out))
        return _Work(output_tensors, device)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for output, input in zip(outputs, inputs):
            self._allgather_base(output, input, opts)
        return _Work(outputs, _device_of(outputs))

    def _reduce_scatter_base(self, output, input, opts=None):  # reduce_scatter_tensor
        code, average = _reduce_op(opts.reduceOp if opts else dist.ReduceOp.SUM, "reduce_scatter", output.dtype)
        device = _device_of([output, input])
        out, inp = _Staged(output, device), _Staged(input, device)
        _ops.ccl_reduce_scatter(out.tensor, inp.tensor, code, self._comm)
        if average:
            out.tensor.div_(self.size())
        return self._done([output], [out], device)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        output, inputs = _one(output_tensors, "reduce_scatter"), input_tensors[0]
        if len(inputs) != self.size():
            raise ValueError(f"{BACKEND} reduce_scatter: {self.size()} input tensors needed, got {len(inputs)}")
        device = _device_of([output, *inputs])
        flat = torch.cat([_Staged(t, device).tensor.reshape(-1) for t in inputs])
        return self._reduce_scatter_base(output, flat, opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        for output, input in zip(outputs, inputs):
            self._reduce_scatter_base(output, input, opts)
        return _Work(outputs, _device_of(outputs))

    # torch releases after 2.10 call these by their new names
    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def barrier(self, opts=None):
        ids = list(getattr(opts, "device_ids", None) or [])
        device = ids[0] if ids else torch.{{ p }}.current_device()
        _ops.ccl_barrier(device, self._comm)
        return _Work([], device)

    # ---- point to point (messages match in order per pair of ranks; tags are not used) ----
    def send(self, tensors, dst_rank, tag=0):
        tensor = _one(tensors, "send")
        device = _device_of(tensors)
        _ops.ccl_send(_Staged(tensor, device).tensor, dst_rank, self._comm)
        return _Work(tensors, device)

    def recv(self, tensors, src_rank, tag=0):
        tensor = _one(tensors, "recv")
        device = _device_of(tensors)
        s = _Staged(tensor, device)
        _ops.ccl_recv(s.tensor, src_rank, self._comm)
        return self._done(tensors, [s], device)

    def shutdown(self) -> None:
        self._closer()


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> ProcessGroup{{ NAME }}:
    return ProcessGroup{{ NAME }}(store, rank, size, timeout)


def register() -> None:
    """Makes "{{ p }}ccl" a torch.distributed backend, the default one for {{ device_type }}."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, devices=[DEVICE_TYPE])
