"""sha256 of every output of every sample run: the byte-identity guard of issue 26.

Every run of every sample folder (../shared/samples/*, ../shared/field-samples/*, the
checkout's samples/) is read once, in this process, and written as .pftrace, Chrome JSON
and md/json/html summaries.  The digests are the same in every checkout: each folder is read
and written through relative paths from a temporary folder that links ``shared`` to the shared
data and ``checkout`` to the checkout (an absolute path in a .pftrace, e.g. a source file in
its trace attributes, would change its bytes and its length prefixes with the place).  A run
that fails to read or write records its error (type and message, where-things-live strings
replaced by fixed names) in place of the digests.

``tests/golden/outputs.sha256`` holds the expected lines; ``tests/test_outputs_identical.py``
compares them, ``tests/golden/update.py`` writes them again on purpose.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_LINK = REPO.parent / "shared"
SHARED = SHARED_LINK.resolve()
GOLDEN = Path(__file__).resolve().parent / "outputs.sha256"

FAMILIES = [("samples", f) for f in ("pypto", "simpler", "msprof", "ncu")] + \
           [("field-samples", f) for f in ("pypto", "msprof", "ncu")]
# ffn_large (5,632 tasks) takes longer than every other sample together; the smaller PyPTO
# runs cover the same reader and writer code.
SKIP = {"ffn_large"}
OUTPUTS = ("pftrace", "chrome", "sum.md", "sum.json", "sum.html")


def sample_folders() -> list[tuple[str, Path]]:
    """(label, folder) of every sample input, in a fixed order; label says where it lives
    relative to the shared data or the checkout."""
    out = []
    places = [(f"shared/{top}/{fam}", SHARED / top / fam) for top, fam in FAMILIES]
    places += [(f"samples/{p.name}", p) for p in sorted((REPO / "samples").iterdir()) if p.is_dir()]
    for label, place in places:
        if not place.is_dir():
            continue
        for sub in sorted(place.iterdir()):
            if sub.name in SKIP or not (sub.is_dir() or sub.suffix in (".csv", ".json")):
                continue
            out.append((f"{label}/{sub.name}", sub))
    return out


def _placeholders(tmp: Path) -> list[tuple[bytes, bytes]]:
    """Where-things-live strings and the fixed names they become, longest first."""
    pairs = {str(tmp): "<out>", str(tmp.resolve()): "<out>",
             str(SHARED): "<shared>", str(SHARED_LINK): "<shared>", str(REPO): "<checkout>"}
    return sorted(((k.encode(), v.encode()) for k, v in pairs.items()),
                  key=lambda kv: -len(kv[0]))


def _relative(folder: Path) -> Path:
    """``folder`` as seen from the temporary folder (``shared/…`` or ``checkout/…``)."""
    try:
        return Path("shared") / folder.relative_to(SHARED)
    except ValueError:
        return Path("checkout") / folder.relative_to(REPO)


def digest_folder(label: str, folder: Path) -> list[str]:
    """The golden lines of one sample folder: ``label::run<TAB>output<TAB>sha256`` for every
    run and output, or ``label[::run]<TAB>ERROR<TAB>type: message``."""
    import tracecvt
    lines = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="tracecvt-golden-") as tmp:
        tmp = Path(tmp)
        (tmp / "shared").symlink_to(SHARED, target_is_directory=True)
        (tmp / "checkout").symlink_to(REPO, target_is_directory=True)
        places = _placeholders(tmp)
        os.chdir(tmp)
        try:
            try:
                runs = tracecvt.read(_relative(folder))
            except Exception as e:  # an error is an outcome too: it must stay the same
                msg = _clean(f"{type(e).__name__}: {e}", places)
                return [f"{label}\tERROR\t{msg}"]
            for i, run in enumerate(runs):
                key = f"{label}::{run.name}"
                d = Path("out") / str(i)
                d.mkdir(parents=True)
                try:
                    outs = {"pftrace": run.to_perfetto(d / "t.pftrace", force=True),
                            "chrome": run.to_chrome(d / "t.json", force=True)}
                    for fmt in ("md", "json", "html"):
                        outs["sum." + fmt] = run.write_summary(d / f"s.{fmt}", fmt=fmt,
                                                               force=True)
                except Exception as e:
                    lines.append(f"{key}\tERROR\t{_clean(f'{type(e).__name__}: {e}', places)}")
                    continue
                for name in OUTPUTS:
                    data = Path(outs[name]).read_bytes()
                    lines.append(f"{key}\t{name}\t{hashlib.sha256(data).hexdigest()}")
        finally:
            os.chdir(here)
    return lines


def _clean(msg: str, places) -> str:
    b = msg.encode()
    for old, new in places:
        b = b.replace(old, new)
    return b.decode().replace("\n", " ").replace("\t", " ")[:300]


def all_lines() -> list[str]:
    lines = []
    for label, folder in sample_folders():
        lines += digest_folder(label, folder)
    return lines


def read_golden() -> list[str]:
    return GOLDEN.read_text().splitlines() if GOLDEN.exists() else []
