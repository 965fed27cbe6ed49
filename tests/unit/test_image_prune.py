"""`devkit images prune` removes the images today's Dockerfiles no longer make, and keeps the bases
and the layers (an SDK's runtime, the compiler for `verify --compile`) made on a verify image that
is kept: pruning them made every later `verify --compile` and SDK verify build its layer again.
The engine is a stub: what is tested is which tags prune chooses, not Docker."""

from __future__ import annotations

from devkit.project.recipes import find_recipe
from devkit.run.engine import ImageInfo
from devkit.run.images import LABEL, LAYER_BASE_LABEL, base_tag, prune_images, verify_spec


class StubEngine:
    def __init__(self, images: dict[str, dict[str, str]]) -> None:
        self.images = images  # tag -> labels
        self.removed: list[str] = []

    def image(self, tag: str) -> ImageInfo | None:
        labels = self.images.get(tag)
        return ImageInfo(tag, f"sha256:{tag}", "linux/amd64", 1.0, labels) if labels is not None else None

    def images_with_label(self, label: str) -> list[ImageInfo]:
        return [info for tag in self.images if label in self.images[tag] and (info := self.image(tag))]

    def remove_image(self, tag: str) -> None:
        self.removed.append(tag)


def test_prune_keeps_bases_current_images_and_their_layers() -> None:
    x86 = find_recipe("x86_64")
    base = base_tag(x86, verify_spec(x86).suite)
    engine = StubEngine({base: {LABEL: "base"}})
    current = verify_spec(x86).tag(engine)  # type: ignore[arg-type]
    engine.images |= {
        current: {LABEL: "verify-x86_64"},
        "devkit-verify-x86_64:0ld0ld0ld0ld": {LABEL: "verify-x86_64"},
        "devkit-verify-x86_64-compiler:aaaaaaaaaaaa": {LABEL: "verify-x86_64-compiler", LAYER_BASE_LABEL: current},
        "devkit-verify-x86_64-sdk:bbbbbbbbbbbb": {LABEL: "verify-x86_64-sdk", LAYER_BASE_LABEL: current},
        "devkit-verify-x86_64-sdk:cccccccccccc": {
            LABEL: "verify-x86_64-sdk",
            LAYER_BASE_LABEL: "devkit-verify-x86_64:0ld0ld0ld0ld",
        },
        "devkit-verify-x86_64-sdk:dddddddddddd": {LABEL: "verify-x86_64-sdk"},  # made before layers were labelled
    }
    removed = prune_images(engine)  # type: ignore[arg-type]
    assert sorted(removed) == [
        "devkit-verify-x86_64-sdk:cccccccccccc",  # a layer of a verify image prune removes
        "devkit-verify-x86_64-sdk:dddddddddddd",
        "devkit-verify-x86_64:0ld0ld0ld0ld",
    ]
    assert removed == engine.removed
