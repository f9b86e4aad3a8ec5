#!/usr/bin/env python3
"""Write tests/golden/outputs.sha256 again, on purpose, and say which outputs changed.

    .venv/bin/python tests/golden/update.py [--check]

Run it only when a change to the outputs is a fix you name (say which outputs change and why
in the commit message).  --check writes nothing and exits 1 when something differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digests  # noqa: E402


def _by_key(lines):
    out = {}
    for line in lines:
        key, kind, value = line.split("\t", 2)
        out[(key, kind)] = value
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare only; write nothing")
    args = ap.parse_args()
    t = time.perf_counter()
    new = digests.all_lines()
    old = _by_key(digests.read_golden())
    cur = _by_key(new)
    changed = [k for k in cur if k in old and old[k] != cur[k]]
    added = [k for k in cur if k not in old]
    gone = [k for k in old if k not in cur]
    for title, keys in (("changed", changed), ("new", added), ("gone", gone)):
        if title == "new" and not old:
            continue  # a first golden file: every output is new
        for key, kind in keys:
            print(f"{title}\t{key}\t{kind}")
    print(f"{len(cur)} outputs: {len(changed)} changed, {len(added)} new, {len(gone)} gone "
          f"({time.perf_counter() - t:.1f} s)")
    if args.check:
        return 1 if changed or added or gone else 0
    digests.GOLDEN.write_text("\n".join(new) + "\n")
    print("wrote", digests.GOLDEN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
