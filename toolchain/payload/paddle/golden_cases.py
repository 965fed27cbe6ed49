"""`devkit test-ops --gen-golden DIR`: Paddle CPU inputs and outputs for the device library's own
golden checker (tests/golden_*), one file set per case, recorded on this machine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import check_common as common
import op_helpers
from check_common import F, paddle
from op_helpers import Inputs
from op_records import GoldenSummary


class GoldenCase(TypedDict):
    id: str
    op: str
    attrs: dict[str, str | float]
    inputs: Inputs
    fn: Callable[..., Any]


def golden_cases() -> list[GoldenCase]:
    """Cases the device library's golden checker understands: op, attributes, inputs, Paddle op."""
    u = op_helpers.uniform(op_helpers.rng(11))

    cases: list[GoldenCase] = []
    for name, fn in (
        ("add", paddle.add),
        ("subtract", paddle.subtract),
        ("multiply", paddle.multiply),
        ("divide", paddle.divide),
        ("maximum", paddle.maximum),
        ("minimum", paddle.minimum),
    ):
        cases.append(
            {
                "id": f"{name}_broadcast",
                "op": "binary",
                "attrs": {"kind": name},
                "inputs": {"x": u(2, 3, 4), "y": u(3, 1, lo=0.5, hi=2.0)},
                "fn": fn,
            }
        )
    cases.append(
        {"id": "add_0d", "op": "binary", "attrs": {"kind": "add"}, "inputs": {"x": u(), "y": u(5)}, "fn": paddle.add}
    )
    for name, fn in (
        ("relu", F.relu),
        ("sigmoid", F.sigmoid),
        ("tanh", paddle.tanh),
        ("exp", paddle.exp),
        ("abs", paddle.abs),
    ):
        cases.append({"id": name, "op": "unary", "attrs": {"kind": name}, "inputs": {"x": u(4, 6)}, "fn": fn})
    cases.append(
        {
            "id": "sqrt",
            "op": "unary",
            "attrs": {"kind": "sqrt"},
            "inputs": {"x": u(4, 6, lo=0.1, hi=3)},
            "fn": paddle.sqrt,
        }
    )
    cases.append(
        {
            "id": "matmul",
            "op": "gemm",
            "attrs": {"trans_b": 0},
            "inputs": {"x": u(7, 33), "y": u(33, 5)},
            "fn": paddle.matmul,
        }
    )
    cases.append(
        {
            "id": "matmul_transpose_y",
            "op": "gemm",
            "attrs": {"trans_b": 1},
            "inputs": {"x": u(6, 20), "y": u(9, 20)},
            "fn": lambda x, y: paddle.matmul(x, y, transpose_y=True),
        }
    )
    for cid, stride, pad, dil, groups, xs, ws in (
        ("conv2d_pad1", 1, 1, 1, 1, (2, 3, 9, 9), (4, 3, 3, 3)),
        ("conv2d_stride2_groups2", 2, 0, 1, 2, (1, 4, 11, 11), (6, 2, 3, 3)),
        ("conv2d_dilation2", 1, 2, 2, 1, (1, 2, 8, 8), (3, 2, 3, 3)),
    ):
        cases.append(
            {
                "id": cid,
                "op": "conv2d",
                "attrs": {"stride": stride, "pad": pad, "dilation": dil, "groups": groups},
                "inputs": {"x": u(*xs), "w": u(*ws)},
                "fn": lambda x, w, s=stride, p=pad, d=dil, g=groups: F.conv2d(
                    x, w, stride=s, padding=p, dilation=d, groups=g
                ),
            }
        )
    cases.append(
        {
            "id": "max_pool2d",
            "op": "pool2d",
            "attrs": {"max": 1, "kernel": 2, "stride": 2, "pad": 0},
            "inputs": {"x": u(2, 3, 8, 8)},
            "fn": lambda x: F.max_pool2d(x, 2, 2),
        }
    )
    cases.append(
        {
            "id": "avg_pool2d_pad1",
            "op": "pool2d",
            "attrs": {"max": 0, "kernel": 3, "stride": 1, "pad": 1},
            "inputs": {"x": u(1, 2, 6, 6)},
            "fn": lambda x: F.avg_pool2d(x, 3, 1, padding=1),
        }
    )
    cases.append(
        {
            "id": "softmax",
            "op": "softmax",
            "attrs": {},
            "inputs": {"x": u(5, 10)},
            "fn": lambda x: F.softmax(x, axis=-1),
        }
    )
    for cid, kind, axes, fn in (
        ("sum_axis1", "sum", [1], lambda x: paddle.sum(x, axis=1)),
        ("mean_all", "mean", [0, 1, 2], lambda x: paddle.mean(x)),
        ("max_axes_0_2", "max", [0, 2], lambda x: paddle.max(x, axis=[0, 2])),
    ):
        cases.append(
            {
                "id": cid,
                "op": "reduce",
                "attrs": {"kind": kind, "axes": ",".join(map(str, axes))},
                "inputs": {"x": u(3, 4, 5)},
                "fn": fn,
            }
        )
    cases.append(
        {
            "id": "transpose",
            "op": "transpose",
            "attrs": {"perm": "2,0,1"},
            "inputs": {"x": u(2, 3, 4)},
            "fn": lambda x: paddle.transpose(x, [2, 0, 1]),
        }
    )
    cases.append(
        {
            "id": "scale",
            "op": "scale",
            "attrs": {"scale": 2.5, "bias": -1.0},
            "inputs": {"x": u(3, 7)},
            "fn": lambda x: paddle.scale(x, 2.5, -1.0),
        }
    )
    return cases


def gen_golden(out_dir: Path) -> GoldenSummary:
    """Inputs and Paddle CPU outputs as raw little-endian float32, plus a line-based
    manifest the C++ checker parses: `id op key=value ... x=file:d0,d1 ... expected=file:d0,..`."""
    paddle.set_device("cpu")
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# golden data: Paddle {paddle.__version__} on CPU; float32 little-endian; rtol/atol per line"]
    for case in golden_cases():
        outputs = case["fn"](**{k: paddle.to_tensor(v) for k, v in case["inputs"].items()}).numpy()
        fields = [case["id"], case["op"]] + [f"{k}={v}" for k, v in case["attrs"].items()]
        for key, arr in [*case["inputs"].items(), ("expected", outputs)]:
            path = out_dir / f"{case['id']}.{key}.bin"
            arr.astype("<f4").tofile(path)
            fields.append(f"{key}={path.name}:{','.join(map(str, arr.shape)) or '-'}")
        fields += [f"rtol={common.FORWARD_TOL['rtol']}", f"atol={common.FORWARD_TOL['atol']}"]
        lines.append(" ".join(fields))
    (out_dir / "manifest.txt").write_text("\n".join(lines) + "\n")
    return {"golden_dir": str(out_dir), "cases": len(lines) - 1, "paddle_version": paddle.__version__}
