"""LeNet on MNIST on the framework's CPU alone: the reference curve of an emulated target's
verification, trained natively (devkit's verify/cpu_reference.py says why). No plugin is
installed here.

    python cpu_reference.py --framework torch --data data.npz --steps 100 --out reference.json
"""

from __future__ import annotations

import argparse
import json
import sys

from records import RunSettings
from training_verdict import load_data, trained_natively


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", choices=("paddle", "torch"), required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    run: RunSettings
    data, run = load_data(args.data), {"steps": args.steps, "batch_size": args.batch_size, "seed": args.seed}
    if args.framework == "torch":
        import torch
        from torch_training import train as train_torch

        cpu = train_torch(torch, "cpu", data, args.steps, args.batch_size, args.seed)
        runtime = f"torch {torch.__version__}"
    else:
        from check_common import paddle
        from mnist import train as train_paddle

        paddle.seed(args.seed)  # as plugin_checks.py does before its checks
        cpu = train_paddle("cpu", data, args.steps, args.batch_size, args.seed)
        runtime = f"paddle {paddle.__version__}"
    with open(args.out, "w") as f:
        json.dump(trained_natively(cpu, runtime, run), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
