"""LeNet on MNIST on torch's CPU alone: the reference curve of an emulated target's verification,
trained natively (devkit's verify/cpu_reference.py says why). No plugin is installed here.

    python torch_cpu_reference.py --data data.npz --steps 100 --out reference.json
"""

from __future__ import annotations

import torch
from process_exit import exit_without_final_collection
from records import RunSettings, TrainingRun
from torch_training import train
from training_verdict import Dataset, cpu_reference_main


def train_on_cpu(data: Dataset | None, run: RunSettings) -> tuple[TrainingRun, str]:
    return train(torch, "cpu", data, run["steps"], run["batch_size"], run["seed"]), f"torch {torch.__version__}"


if __name__ == "__main__":
    exit_without_final_collection(cpu_reference_main(train_on_cpu, __doc__ or ""))
