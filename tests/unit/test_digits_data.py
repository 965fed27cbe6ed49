"""verify's offline fallback data (scikit-learn's digits upscaled to 28x28) without scikit-learn or SciPy."""

import hashlib
import sys

import pytest

from devkit.verify.datasets import load_digits_28x28

# sha256 over x_train, y_train, x_test, y_test as scikit-learn's load_digits and scipy.ndimage.zoom(order=1)
# made them (devkit 0.x before the data shipped in devkit): the training data did not change.
SCIPY_DIGITS_SHA256 = "11877ccfb22b41c6cfdf8aa42d4777ee4081eeb3cfcc127a5cbf2df28a246b5f"


def test_digits_load_without_scikit_learn_or_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("sklearn", "sklearn.datasets", "scipy", "scipy.ndimage"):
        monkeypatch.setitem(sys.modules, module, None)  # an import of it raises ImportError
    data = load_digits_28x28()
    assert data.x_train.shape == (1500, 1, 28, 28) and data.x_test.shape == (297, 1, 28, 28)
    digest = hashlib.sha256()
    for array in (data.x_train, data.y_train, data.x_test, data.y_test):
        digest.update(array.tobytes())
    assert digest.hexdigest() == SCIPY_DIGITS_SHA256
    assert "scikit-learn handwritten digits" in data.source
