"""What every reader provides, and how runs are found under a path."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Protocol

from ..model import RunMeta, Trace


@dataclass
class ReadOptions:
    clock_mhz: Fraction | None = None          # override the source's tick/cycle rate
    progress: Callable[[str, int, int], None] | None = None   # (stage, done, total)
    all_metrics: bool = False                  # keep every metric a source has (NCU)
    workers: int = 1                           # processes a reader may use (large inputs)

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
    archive: Path | None = None                 # the .zip/.tar the run is read from, if any
    max_entry: int = 0                          # that archive's per-entry size cap
    refused: list[str] = field(default_factory=list)   # archive entries refused, one line each
    # Read from a file that stands for another (simpler's converter output draws the records):
    # a walk that also finds the run it stands for (its reader's ``companion_of``) lists it
    # among that run's files not used instead of reading it as a run of its own.
    companion: bool = False
    # Files of the run that it does not read, with the reason (path -> reason): `info`'s
    # "not used" (files under a role of kind "ignored").
    not_used: dict[str, str] = field(default_factory=dict)

    def add_not_used(self, path: Path, reason: str) -> None:
        """List ``path`` among the run's files not used, saying why."""
        n = sum(1 for role in self.files if role.split("#", 1)[0] == "ignored")
        self.files[f"ignored#{n + 1}" if n else "ignored"] = path
        self.not_used[str(path)] = reason

    def paths(self) -> list[Path]:
        """Every path the run is read from (its root, its files, the archive holding it):
        what no output may overwrite."""
        return [Path(self.root), *map(Path, self.files.values()),
                *([Path(self.archive)] if self.archive is not None else [])]

    def read(self, options: ReadOptions | None = None) -> Trace:
        if self.archive is not None:            # e.g. in a batch worker process
            from ..archive import mount
            mount(self.archive, self.max_entry)
        trace = self.reader.read(self, options or ReadOptions())
        apply_declarations(self.reader, trace.meta)     # what it declares to the analyses
        for line in self.refused:
            trace.warn(f"{self.archive}: refused archive entry {line}")
        return trace


def apply_declarations(reader: object, meta: RunMeta) -> None:
    """Add to ``meta.extra`` what ``reader`` declares to the analyses
    (``Reader.declarations``: a PyPTO run's task graph and label args, a serialized or
    per-block run's reason for having no bubbles), keeping any key already there."""
    declared = getattr(reader, "declarations", None)
    if declared is None or type(meta.extra) is not dict:
        return
    missing = {k: v for k, v in declared(meta).items() if k not in meta.extra}
    if missing:
        meta.extra = {**meta.extra, **missing}


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

    def companion_of(self, source: Source, runs: list[Source]) -> tuple[Source, str] | None:
        """For a companion ``source`` (``Source.companion``): the run among ``runs`` (every
        run a walk found) that it stands for, and why it is not read (a line for `info`), or
        None: it is then a run of its own.  Optional (without it: a run of its own)."""
        ...

    def declarations(self, meta: RunMeta) -> dict[str, Any]:
        """The ``meta.extra`` declarations to the analyses (model.TASK_GRAPH, LABEL_ARGS,
        NO_BUBBLES, RESOURCES) that this reader makes for the run ``meta`` describes.
        ``Source.read`` adds those the read run lacks, and a model file written by an older
        tracecvt gets them when loaded.  Optional."""
        ...
