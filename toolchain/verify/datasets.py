"""Training data for `devkit verify --model mnist`, with no network access.

Order of preference: MNIST idx files in --data, MNIST in Paddle's dataset
cache, else the real handwritten digits that ship inside scikit-learn
(1797 8x8 images) upscaled to 28x28. The report names the source used.

The digits are scikit-learn's own file (sklearn/datasets/data/digits.csv.gz, BSD-3; the UCI
optical recognition of handwritten digits data, CC BY 4.0), shipped here in data/ so that devkit
installs without scikit-learn and SciPy (117 MB unpacked, about a third of compile.sh's pip time).
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..util.errors import InputError

MNIST_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
PADDLE_MNIST_CACHE = Path(os.path.expanduser("~/.cache/paddle/dataset/mnist"))
MAX_TRAIN, MAX_TEST = 20000, 2000


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray  # [N, 1, 28, 28] float32 in [0, 1]
    y_train: np.ndarray  # [N, 1] int64
    x_test: np.ndarray
    y_test: np.ndarray
    source: str

    def save(self, path: Path) -> None:
        np.savez(
            path,
            x_train=self.x_train,
            y_train=self.y_train,
            x_test=self.x_test,
            y_test=self.y_test,
            source=np.array(self.source),
        )


def _find(directory: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        if (directory / name).is_file():
            return directory / name
    return None


def _read_idx(path: Path) -> np.ndarray:
    """One MNIST idx file (magic, dimensions, uint8 data), checked against what the header says."""
    fix = "pass the directory of the original MNIST files (optionally .gz), or omit --data"
    try:
        if path.suffix == ".gz":
            with gzip.open(path) as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except (OSError, EOFError) as exc:
        raise InputError(f"{path} cannot be read ({exc})", fix) from None
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else -1
    if magic not in (2049, 2051):
        raise InputError(f"{path} is not an MNIST idx file (magic {magic})", fix)
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    if len(raw) < header or len(raw) != header + math.prod(dims):
        raise InputError(
            f"{path} is truncated: its header says {dims} values, it holds {max(len(raw) - header, 0)}", fix
        )
    if ndim == 3 and dims[1:] != [28, 28]:
        raise InputError(f"{path} holds {dims[1]}x{dims[2]} images, not 28x28", fix)
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_mnist(directory: Path) -> Dataset | None:
    paths = {key: _find(directory, stem) for key, stem in MNIST_FILES.items()}
    if not all(paths.values()):
        return None
    arrays = {key: _read_idx(path) for key, path in paths.items()}  # type: ignore[arg-type]
    for images_key, labels_key in (("x_train", "y_train"), ("x_test", "y_test")):
        if (
            arrays[images_key].ndim != 3
            or arrays[labels_key].ndim != 1
            or len(arrays[images_key]) != len(arrays[labels_key])
        ):
            raise InputError(
                f"{paths[images_key]} and {paths[labels_key]} do not pair up "
                f"({arrays[images_key].shape} images, {arrays[labels_key].shape} labels)",
                "pass the four original MNIST files, images and labels of the same split",
            )

    def images(a: np.ndarray, limit: int) -> np.ndarray:
        return (a[:limit].astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)

    def labels(a: np.ndarray, limit: int) -> np.ndarray:
        return a[:limit].astype(np.int64).reshape(-1, 1)

    return Dataset(
        images(arrays["x_train"], MAX_TRAIN),
        labels(arrays["y_train"], MAX_TRAIN),
        images(arrays["x_test"], MAX_TEST),
        labels(arrays["y_test"], MAX_TEST),
        source=f"MNIST idx files from {directory}",
    )


DIGITS_FILE = Path(__file__).parent / "data" / "digits.csv.gz"  # 1797 rows: 64 pixels (0-16), then the label


def linear_zoom_matrix(size_in: int, size_out: int) -> np.ndarray:
    """[size_out, size_in] weights of linear interpolation with the end points kept, as
    scipy.ndimage.zoom(order=1) resamples (the images it gave are matched bit for bit in float32)."""
    coords = np.arange(size_out) * (size_in - 1) / (size_out - 1)
    low = np.minimum(np.floor(coords).astype(np.int64), size_in - 2)
    weight = coords - low
    matrix = np.zeros((size_out, size_in))
    matrix[np.arange(size_out), low] = 1.0 - weight
    matrix[np.arange(size_out), low + 1] = weight
    return matrix


def load_digits_28x28(seed: int = 0) -> Dataset:
    rows = np.loadtxt(DIGITS_FILE, delimiter=",")
    zoom = linear_zoom_matrix(8, 28)
    pixels = rows[:, :-1].reshape(-1, 8, 8) / 16.0
    images = (zoom @ pixels @ zoom.T).astype(np.float32)
    images = np.clip(images, 0.0, 1.0).reshape(-1, 1, 28, 28)
    labels = rows[:, -1].astype(np.int64).reshape(-1, 1)
    order = np.random.RandomState(seed).permutation(len(images))
    train, test = order[:1500], order[1500:]
    return Dataset(
        images[train],
        labels[train],
        images[test],
        labels[test],
        source="scikit-learn handwritten digits (1797 8x8 images upscaled to 28x28; 1500 train / 297 held out)",
    )


def load_dataset(data_dir: Path | None) -> Dataset:
    if data_dir is not None:
        if not data_dir.is_dir():
            raise InputError(f"--data {data_dir} is not a directory", "pass the directory holding the MNIST idx files")
        found = load_mnist(data_dir)
        if found is None:
            raise InputError(
                f"--data {data_dir} does not contain the four MNIST idx files ({', '.join(MNIST_FILES.values())})",
                "point --data at the directory holding them (optionally .gz), or omit --data",
            )
        return found
    return load_mnist(PADDLE_MNIST_CACHE) or load_digits_28x28()
