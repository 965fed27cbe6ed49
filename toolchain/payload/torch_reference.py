"""LeNet on MNIST on torch's CPU alone: the reference curve of an emulated target's verification,
trained natively (devkit's verify/cpu_reference.py says why). No adapter is installed here.

    python torch_reference.py --data data.npz --steps 100 --out reference.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

from torch_training import train
from training_verdict import load_data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    import torch

    cpu = train(torch, "cpu", load_data(args.data), args.steps, args.batch_size, args.seed)
    cpu["trained"] = {
        "where": f"torch {torch.__version__} CPU on {platform.machine()} (native)",
        "steps": args.steps,
        "batch_size": args.batch_size,
        "seed": args.seed,
    }
    with open(args.out, "w") as f:
        json.dump(cpu, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
