"""A step's log, appended to as the step's output arrives.

When the disk under the log fills up (the project's disk, where a build's objects go too), the log
stops and the step runs on: its runner keeps the output's last lines in memory, so the error names
the step and the full disk instead of an OSError raised by a log write in the middle of a compile."""

from __future__ import annotations

import errno
from pathlib import Path
from types import TracebackType
from typing import TextIO

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class StepLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.full: OSError | None = None  # the write the disk refused; nothing is written after it
        self._file: TextIO | None = None
        try:
            self._file = path.open("a")
        except OSError as error:
            self._refused(error)

    def write(self, text: str) -> None:
        if self._file is not None and self.full is None:
            try:
                self._file.write(text)
            except OSError as error:
                self._refused(error)

    def flush(self) -> None:
        if self._file is not None and self.full is None:
            try:
                self._file.flush()
            except OSError as error:
                self._refused(error)

    def close(self) -> None:
        if self._file is None:
            return
        try:
            self._file.close()  # (flushes what the buffer holds: the disk may refuse it here)
        except OSError as error:
            self._refused(error)
        finally:
            self._file = None

    def _refused(self, error: OSError) -> None:
        if error.errno not in DISK_FULL:
            raise error
        self.full = self.full or error

    def __enter__(self) -> StepLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
