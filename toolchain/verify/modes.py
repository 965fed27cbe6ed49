"""The reference device's modes: how many devices it has, whether its streams queue work,
whether the host can touch its memory. The device library reads them from the environment
(<NAME>_DEVICE_COUNT, <NAME>_SYNC, <NAME>_HOST_VISIBLE_MEMORY, <NAME>_STREAM_DELAY_US);
verify, test-ops and the model battery set them explicitly, whatever the user's shell
says, and every report records them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..util.errors import InputError

MODES_HELP = (
    "Change the reference device's modes for debugging, comma-separated: sync (streams run work "
    "inline), host-visible (the host may read device memory), devices=N (1-16), delay=US (each "
    "queued item waits US microseconds: missing synchronisations every time). Default: 2 devices, "
    "asynchronous streams, opaque memory."
)


@dataclass(frozen=True)
class DeviceModes:
    devices: int = 2  # code that assumes device 0 fails
    asynchronous: bool = True  # ops return before they run: a missing synchronisation reads stale data
    opaque_memory: bool = True  # a host access through a device pointer faults with a line naming it
    stream_delay_us: int = 0  # each queued item waits this long first (missing synchronisations every time)

    def env(self, device_type: str) -> dict[str, str]:
        prefix = device_type.upper()
        return {
            f"{prefix}_DEVICE_COUNT": str(self.devices),
            f"{prefix}_SYNC": "0" if self.asynchronous else "1",
            f"{prefix}_HOST_VISIBLE_MEMORY": "0" if self.opaque_memory else "1",
            f"{prefix}_STREAM_DELAY_US": str(self.stream_delay_us),
        }

    def describe(self) -> str:
        parts = [
            f"{self.devices} device{'s' if self.devices != 1 else ''}",
            "asynchronous streams" if self.asynchronous else "synchronous (inline) streams",
            "opaque device memory" if self.opaque_memory else "host-visible device memory",
        ]
        if self.stream_delay_us:
            parts.append(f"{self.stream_delay_us} us delay per queued item")
        return ", ".join(parts)

    @classmethod
    def parse(cls, text: str) -> DeviceModes:
        """`--modes sync,host-visible,devices=1,delay=500` over the checking defaults."""
        modes = CHECK_MODES
        fix = "use --modes with sync, host-visible, devices=N (1-16) or delay=US, comma-separated"
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, _, value = item.partition("=")
            if key in ("sync", "host-visible") and not value:
                modes = replace(modes, asynchronous=False) if key == "sync" else replace(modes, opaque_memory=False)
                continue
            if key in ("devices", "delay") and value.isdigit():
                number = int(value)
                if key == "devices" and 1 <= number <= 16:
                    modes = replace(modes, devices=number)
                    continue
                if key == "delay" and number <= 1_000_000:
                    modes = replace(modes, stream_delay_us=number)
                    continue
            raise InputError(f"--modes: {item!r} is not a device mode", fix)
        return modes

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "summary": self.describe()}


# What verification runs with: the modes that make an adapter's device bugs show.
CHECK_MODES = DeviceModes()
