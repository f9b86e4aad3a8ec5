"""What every reader provides, and how runs are found under a path."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable, Protocol

from ..model import Trace


@dataclass
class ReadOptions:
    clock_mhz: Fraction | None = None          # override the source's tick/cycle rate
    progress: Callable[[str, int, int], None] | None = None   # (stage, done, total)
    all_metrics: bool = False                  # keep every metric a source has (NCU)

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress:
            self.progress(stage, done, total)


@dataclass
class Source:
    """One run found on disk, ready to be read by its reader."""

    format: str                 # reader format name ("pypto", ...)
    name: str                   # run name, used for default output names
    root: Path                  # run directory, or the file itself
    files: dict[str, Path]      # role -> path
    reader: "Reader"
    variant: str = ""           # reader-specific flavour, e.g. "merged" / "raw"

    def read(self, options: ReadOptions | None = None) -> Trace:
        return self.reader.read(self, options or ReadOptions())


class Reader(Protocol):
    formats: tuple[str, ...]    # names accepted by --from (first is the main one)
    title: str                  # one line for --help and `info`

    def find(self, directory: Path, filenames: list[str], force: bool) -> list[Source]:
        """Runs rooted in ``directory`` (whose files are ``filenames``).

        ``force`` is set when the user named this format with --from: claim whatever looks
        remotely right instead of requiring the usual evidence.
        """

    def find_file(self, path: Path, force: bool) -> Source | None:
        """A run made of the single file ``path``, if its content is this format."""

    def read(self, source: Source, options: ReadOptions) -> Trace:
        ...
