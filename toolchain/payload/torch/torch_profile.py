"""verify --profile's child for PyTorch (device_trace.py runs it with the op dump on): one LeNet
training step under torch.profiler with the device's activities, its Chrome trace exported, the
names of the device kernels the profiler saw printed as a JSON list.

    python torch_profile.py --device stpu --trace device-trace.json
"""

from __future__ import annotations

import json

import torch
from device_trace import BEGIN, END, child_arguments, mark
from process_exit import exit_without_final_collection
from torch_training import lenet


def main() -> int:
    args = child_arguments(__doc__)

    torch.manual_seed(0)
    model = lenet(torch).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.rand(64, 1, 28, 28, generator=torch.Generator().manual_seed(1)).to(args.device)
    labels = torch.randint(0, 10, (64,), generator=torch.Generator().manual_seed(2)).to(args.device)

    def step() -> None:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        torch.accelerator.synchronize()

    step()  # warm-up: first-use work stays out of the profiled step
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    mark(BEGIN)
    with torch.profiler.profile(activities=activities) as prof:
        step()
    mark(END)
    prof.export_chrome_trace(args.trace)
    device = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    kernels = [name for name in device if not name.startswith(("memcpy", "memset"))]  # (copies: not in the dump)
    print(json.dumps(kernels))
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
