"""Lanes of plain slices written a column at a time (``writers.perfetto.plain_lanes``) give
the bytes ``write_slices``' loop gives: on lanes made of the pathologies the column way
must tell apart, on every sample of every family and on mutated samples, in one process
and in two (the forked one recording each BEGIN's place, and building again those whose
args the analyses replaced)."""

from __future__ import annotations

import io

import pytest

from tracecvt.analyses import add_derived
from tracecvt.arg_rows import ArgTable
from tracecvt.model import GROUP, LANE, Flow, RunMeta, Trace
from tracecvt.readers import ReadOptions, find_runs
from tracecvt.writers import perfetto
from tracecvt.writers.perfetto import events, plain_lanes
from fuzzing import FAMILIES, family, on_mutated, read_model

NEVER = 1 << 62


def _written(trace: Trace, workers: int = 1, enrich=None) -> bytes:
    buf = io.BytesIO()
    perfetto.write_perfetto(trace, buf, None, workers=workers, enrich=enrich)
    return buf.getvalue()


def _counted(monkeypatch) -> list[tuple[int, bool]]:
    """Every lane offered to the column way, (its slices, taken?)."""
    seen: list[tuple[int, bool]] = []
    real = plain_lanes.plain_lane

    def offer(w, track, ids, *rest):
        made = real(w, track, ids, *rest)
        seen.append((len(ids), made is not None))
        return made
    monkeypatch.setattr(events, "plain_lane", offer)
    return seen


def _both_ways(monkeypatch, make, workers: int = 1, enrich=None) -> tuple[bytes, bytes]:
    """(the bytes with every lane offered to the column way, those of the loop alone), each
    from a fresh ``make()``."""
    monkeypatch.setattr(events, "PLAIN_FROM", 1)
    columns = _written(make(), workers, enrich)
    monkeypatch.setattr(events, "PLAIN_FROM", NEVER)
    loop = _written(make(), workers, enrich)
    return columns, loop


def _pathologies() -> Trace:
    """Lanes that hold every case the column way distinguishes."""
    t = Trace(RunMeta("plain lanes", "test"))
    proc = t.add_track("proc", None, GROUP)
    table = ArgTable(("a", "b", "c"))
    shared = [{"call": f"op {k}", "inputs": [{"dtype": "FP16", "shape": [k, 2]}]}
              for k in range(3)]
    long_text = "x" * 300                       # a body past 127 bytes: two-byte lengths
    lanes = [t.add_track(f"lane {k}", proc, LANE, k, nesting=k in (4, 11, 12))
             for k in range(14)]
    # rows whose strings come new late in the lane (inline first, then interned), whose
    # strings were met on another lane (cached, not defined on this one), with None and
    # nested values: the rows that cannot wait for the rest (``row_args.later``)
    texts = ArgTable(("n", "s", "t", "nested", "shape"))
    shapes = [[4, 8], {"k": 2}, (3,)]       # a list, a dict, a tuple held by many rows,
    #                                          and strings among them
    # runs only, one of them of numbers and None: the second lane defines their entries
    # (the optional run's at its first row with a value)
    numbers = ArgTable(("x", "y", "maybe"))
    # a new dict in every row (a PMU task's pipe ratios), a second nested column (a list
    # new every 3 rows, held by the next two), a string new every 20 rows: most rows
    # encoded in their place (a nested value's first use defines its text's entry)
    ratios = ArgTable(("id", "pipes", "op", "dims"))
    dims: list = []
    ts = 1_000
    for r in range(120):
        ts += 7 + r % 5
        dur = 0 if r % 17 == 0 else 3 + r % 4   # zero-length slices: ends that repeat
        # lane 0: bubbles, a few names (the first of each defines it), one name once
        t.add_slice(lanes[0], ts, dur, "once" if r == 60 else ("idle", "wait")[r % 2],
                    "bubble" if r % 9 else "")
        # lane 1: shared args (the same dicts again and again) and no category
        t.add_slice(lanes[1], ts, dur, f"task {r % 4}", "", None, shared[r % 3])
        # lane 2: own args, dicts and rows of a table, some slices without any
        args = ({"n": r, "s": f"text {r % 5}", "f": r / 3} if r % 3 == 0 else
                table.add((r, f"row {r % 4}", r * 0.5)) if r % 3 == 1 else None)
        t.add_slice(lanes[2], ts, dur, f"op {r % 7}", "kernel", args, shared[r % 2])
        # lane 3: long args
        t.add_slice(lanes[3], ts, dur, "long", "kernel", {"text": long_text, "r": r})
        # lane 4: nested (calls), slices that overlap their next
        t.add_slice(lanes[4], ts, dur + 10, "outer", "call")
        t.add_slice(lanes[4], ts + 1, 1, "inner", "call")
        # lane 11: a slice that overlaps another without holding it (its END waits for
        # the one it holds), children at their parent's start and end (ends that repeat:
        # the first END written there takes what rides on it), zero-length children
        t.add_slice(lanes[11], ts, 6, "a", "call", {"r": r})
        t.add_slice(lanes[11], ts, 2, "a child", "call")
        t.add_slice(lanes[11], ts + 3, 9 if r % 4 else 3, "b", "call")
        t.add_slice(lanes[11], ts + 4, 0, "b child", "call", {"r": r})
        t.add_slice(lanes[11], ts + 6 if r % 4 else ts + 5, 1, "c", "call")
        # lane 12: one slice open over the whole lane (no place to cut it in parts but
        # its start), three deep inside; the last ends with it (the innermost END first)
        t.add_slice(lanes[12], ts, 5, "d", "call")
        t.add_slice(lanes[12], ts + 1, 3, "e", "call", {"r": r % 3})
        t.add_slice(lanes[12], ts + 2, 1 + r % 2, "f", "call")
        # lane 5: flows from lane 2's slices to these
        t.add_slice(lanes[5], ts + 1, dur, "dst", "flow")
        # lane 6: a slice per name, each used once (inline names)
        t.add_slice(lanes[6], ts, dur, f"unique {r}", "u", {"k": r})
        # lanes 7 and 8: rows of one table, strings new every 20 rows
        for lane in lanes[7:9]:
            t.add_slice(lane, ts, dur, "row", "kernel", texts.add((
                r, f"late {r // 20}" if r % 7 else None, f"t {(r + lane) % 3}",
                [r] if r % 50 == 49 else None,
                shapes[r // 40] if r % 5 else f"s {r // 30}" if r % 10 == 5 else None)))
        for lane in lanes[9:11]:
            t.add_slice(lane, ts, dur, "numbers", "", numbers.add((
                r * 1000, r / 7,
                r if r % 3 == 0 and (lane == lanes[9] or r > 70) else None)))
        if r % 3 == 0:
            dims = [r, r + 1]
        t.add_slice(lanes[13], ts, dur, "kernel", "kernel", ratios.add((
            r, {"aic": {"cube": r / 9, "mte2": 0.5}, "aiv": {"vec": r / 11}},
            f"op {r // 20}" if r % 4 else None, dims if r % 6 < 5 else None)))
    t.add_slice(lanes[12], 1_000, ts + 5 - 1_000, "whole", "call")
    return t


def _new_args(trace: Trace) -> None:
    """As the analyses do: new args for some slices (of the nested lanes), which the
    forked process writes again (``begin_again``) from the place it recorded."""
    nested = {k for k, track in enumerate(trace.tracks) if track.name in ("lane 11", "lane 12")}
    for i, s in enumerate(trace.slices):
        if s.track in nested and i % 5 == 0:
            s.args = {"new": i, "text": f"n {i % 3}"}


def _with_riders_and_flows(trace: Trace) -> Trace:
    """``trace`` with a counter whose samples ride on slices' BEGINs and ENDs, and flows
    (to a slice's BEGIN; one ending where its source ends: on the destination's END)."""
    slices = trace.slices
    by_track = trace.slices_by_track()
    lanes = sorted(by_track)
    c = trace.add_counter("busy", trace.tracks[lanes[0]].parent)
    times = sorted({s.ts for s in slices[:200]} | {s.ts + s.dur for s in slices[:200]})
    for k, when in enumerate(times):
        c.add(when, k % 5 + 1)
    # and on the nested lanes: at most of their ends, and the last lane's last
    nested = [slices[i] for n in lanes[-2:] for i in by_track[n]]
    c = trace.add_counter("open", trace.tracks[lanes[0]].parent)
    last = max(slices[i].ts + slices[i].dur for i in by_track[lanes[-1]])
    for k, when in enumerate(sorted({s.ts + s.dur for s in nested})):
        if k % 3 or when == last:
            c.add(when, k % 7 + 1)
    src, dst = by_track[lanes[2]], by_track[lanes[5]]
    for k in range(0, len(dst) - 1, 9):
        trace.flows.append(Flow(src[k], dst[k]))
    return trace


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("part", [None, 7])
@pytest.mark.parametrize("enrich", [None, _new_args])
def test_pathology_lanes_write_the_loops_bytes(monkeypatch, workers, part, enrich):
    """(``part``: lanes made 7 slices at a time and cut in pieces of about 200 bytes, as a
    long lane is made in parts and pieces; ``enrich``: args replaced while the forked
    process writes.)"""
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    if part:
        monkeypatch.setattr(plain_lanes, "_PART", part)
        monkeypatch.setattr(plain_lanes, "_STEP_BYTES", 200)
    seen = _counted(monkeypatch)
    columns, loop = _both_ways(monkeypatch, lambda: _with_riders_and_flows(_pathologies()),
                               workers, enrich)
    assert columns == loop
    if workers == 1:
        assert len(seen) >= 13 and all(ok for _, ok in seen), seen


def test_a_slice_open_over_most_of_a_lane_leaves_it_to_the_loop(monkeypatch):
    """A nested lane is made in parts cut where no slice is open: where more slices than
    ``_OPEN_MAX`` come between two such places, the loop writes it (a part would hold
    them all); the bytes are the same."""
    monkeypatch.setattr(plain_lanes, "_OPEN_MAX", 50)
    seen = _counted(monkeypatch)
    columns, loop = _both_ways(monkeypatch, lambda: _with_riders_and_flows(_pathologies()))
    assert columns == loop
    refused = [n for n, ok in seen if not ok]
    # lane 4 (each "outer" overlaps the next: long stretches with a slice open) and lane
    # 12 ("whole" open over its 361 slices)
    assert refused == [240, 361], seen


def test_a_flow_ending_on_an_end_leaves_its_lane_to_the_loop(monkeypatch):
    """A flow whose destination starts at the ns its source starts ends on the
    destination's END (``flows_of``): that lane is not plain; the others still are."""
    def make():
        t = Trace(RunMeta("end flow", "test"))
        proc = t.add_track("proc", None, GROUP)
        src, dst = (t.add_track(n, proc, LANE, k, nesting=False)
                    for k, n in enumerate(("src", "dst")))
        for r in range(40):
            t.add_slice(src, 1000 + 10 * r, 5, "a", "k")
            t.add_slice(dst, 1000 + 10 * r + (0 if r == 20 else 2), 4, "b", "k")
        t.flows.append(Flow(40, 41))            # src's 21st slice -> dst's, one start
        return t
    monkeypatch.setattr(events, "PLAIN_FROM", 1)
    seen = _counted(monkeypatch)
    columns, loop = _both_ways(monkeypatch, make)
    assert columns == loop
    assert seen[:2] == [(40, True), (40, False)], seen


def _families() -> list[str]:
    return [f.name for f in FAMILIES]


@pytest.mark.parametrize("name", _families())
def test_every_sample_writes_the_loops_bytes(monkeypatch, name):
    """One process and two, with the derived tracks added while the forked process writes
    (the thresholds at 0: every sample forks)."""
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    seen = _counted(monkeypatch)
    fam = family(name)
    runs = [src for seed in fam.seeds() for src in find_runs(seed.root, fam.fmt)]
    assert runs, f"no {name} sample runs"
    for src in runs:
        for workers in (1, 2):
            columns, loop = _both_ways(monkeypatch, lambda: src.read(ReadOptions()),
                                       workers, add_derived)
            assert columns == loop, (src.name, workers)
    assert any(ok for _, ok in seen), f"no lane of {name} was written a column at a time"


@pytest.mark.parametrize("name", ["msprof-db", "simpler", "pypto-merged"])
def test_mutated_samples_write_the_loops_bytes(monkeypatch, tmp_path_factory, name):
    monkeypatch.setattr(perfetto, "PARALLEL_MIN_COST", 0)
    monkeypatch.setattr(perfetto, "OVERLAP_MIN_COST", 0)
    fam = family(name)

    def check(root, _):
        def make():
            return read_model(root, fam.fmt)[0]
        if make() is None:
            return
        for workers in (1, 2):
            columns, loop = _both_ways(monkeypatch, make, workers, add_derived)
            assert columns == loop

    on_mutated(fam.seeds(), tmp_path_factory.mktemp(f"plain-{name}"), check, share=8)
