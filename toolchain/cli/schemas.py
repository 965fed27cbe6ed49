"""Every `--json` output's type, by the name of its schema (toolchain/schemas/NAME.json: the command's
name with its group, "matrix-run"), and the schemas generated from them.

`python -m devkit.docs_gen` writes the shipped files from here; tests/unit/test_schemas.py holds each
shipped file to the generated one and each command that takes --json to an entry here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..matrix.outputs import EntrySummary
from ..util.schema import output_schema
from ..verify.outputs import (
    CheckAbiOutput,
    GoldenOutput,
    OpsOutput,
    PaddleKernelsOutput,
    TorchKernelsOutput,
    VerifyOutput,
)
from .outputs import (
    BuildMatrixOutput,
    BuildOutput,
    CiOutput,
    ConfigShowOutput,
    DoctorRow,
    ImageBootstrapOutput,
    ImageRow,
    MatrixRunOutput,
    NewBackendOutput,
    PruneOutput,
    PublishOutput,
)


@dataclass(frozen=True)
class JsonOutput:
    command: str  # as typed: "matrix run"
    type: Any  # what the command prints: a dataclass, a list of them, or (the forms it takes) a union
    description: str = ""

    @property
    def name(self) -> str:
        return self.command.replace(" ", "-")

    def schema(self) -> dict[str, Any]:
        return output_schema(f"devkit {self.command} --json", self.type, self.description)


JSON_OUTPUTS = {
    output.name: output
    for output in (
        JsonOutput("build", BuildOutput | BuildMatrixOutput, "one target's build, or with --all the matrix's"),
        JsonOutput("check-abi", CheckAbiOutput),
        JsonOutput(
            "check-kernels",
            PaddleKernelsOutput | TorchKernelsOutput,
            "Paddle's kernel signatures, or the torch adapter's checks",
        ),
        JsonOutput("ci", CiOutput),
        JsonOutput("config show", ConfigShowOutput, "the resolved [tool.devkit] (defaults filled in) and its matrix"),
        JsonOutput("doctor", list[DoctorRow], "one row per check"),
        JsonOutput("images bootstrap", ImageBootstrapOutput),
        JsonOutput("images build", dict[str, str], "image kind (builder-..., verify-...) -> tag"),
        JsonOutput("images list", list[ImageRow], "devkit's images"),
        JsonOutput("images prune", PruneOutput),
        JsonOutput("matrix list", list[EntrySummary], "the matrix entries"),
        JsonOutput("matrix run", MatrixRunOutput),
        JsonOutput("new-backend", NewBackendOutput),
        JsonOutput("publish", PublishOutput),
        JsonOutput(
            "test-ops",
            OpsOutput | GoldenOutput,
            "op cases (Paddle cases, golden data, torch OpInfos), or with --gen-golden what was recorded",
        ),
        JsonOutput("verify", VerifyOutput),
    )
}


def schema_text(name: str) -> str:
    """NAME.json as devkit ships it."""
    return json.dumps(JSON_OUTPUTS[name].schema(), indent=2) + "\n"


def write_schemas(schemas_dir: Path) -> list[Path]:
    """Write every schema that differs from its generated text into `schemas_dir`; returns those written."""
    written = []
    for name in JSON_OUTPUTS:
        path = schemas_dir / f"{name}.json"
        if not path.exists() or path.read_text() != schema_text(name):
            path.write_text(schema_text(name))
            written.append(path)
    return written
