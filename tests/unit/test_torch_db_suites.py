"""The module_db and optim_db suites' naming and forms (payload/torch/torch_modules.py,
torch_optims.py), without torch: the case names the expected-failures file keys on, and which
implementation the CPU reference runs for each form. (The suites themselves run against a built
adapter in tests/e2e/test_torch.py.)"""

from __future__ import annotations

from types import ModuleType, SimpleNamespace

import pytest
from conftest import payload_module


@pytest.fixture(scope="module")
def suites() -> tuple[ModuleType, ModuleType]:
    # (torch_common reads devkit's tolerances when it is imported, as in a verify environment)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DEVKIT_TOLERANCES", '{"op_rtol": 1e-4, "op_atol": 1e-5, "grad_rtol": 1e-3, "grad_atol": 1e-4}')
        return payload_module("torch", "torch_modules"), payload_module("torch", "torch_optims")


def test_a_module_whose_modes_differ_is_two_cases(suites) -> None:
    modules, _ = suites
    batch_norm = SimpleNamespace(name="nn.BatchNorm2d", train_and_eval_differ=True)
    linear = SimpleNamespace(name="nn.Linear", train_and_eval_differ=False)
    assert modules.modes(batch_norm) == [("nn.BatchNorm2d[train]", True), ("nn.BatchNorm2d[eval]", False)]
    assert modules.modes(linear) == [("nn.Linear", True)]


def test_each_form_sets_the_flags_the_optimizer_has(suites) -> None:
    _, optims = suites
    adam = SimpleNamespace(supported_impls=("foreach", "differentiable", "fused"), supports_fused_on=("cpu", "cuda"))
    lbfgs = SimpleNamespace(supported_impls=(), supports_fused_on=())
    assert optims.form_kwargs(adam, "", "stpu") == {"foreach": False, "fused": False}
    assert optims.form_kwargs(adam, "foreach", "stpu") == {"foreach": True, "fused": False}
    assert optims.form_kwargs(adam, "fused", "cpu") == {"foreach": False, "fused": True}
    # a device's fused form is compared with the CPU's for-loop where the CPU has no fused kernel
    adagrad = SimpleNamespace(supported_impls=("foreach", "fused"), supports_fused_on=("cuda",))
    assert optims.form_kwargs(adagrad, "fused", "cpu") == {"foreach": False, "fused": False}
    assert optims.form_kwargs(lbfgs, "", "cpu") == {}
