"""Where tracks go: a Host group and one NPU group per device, optionally under a rank group.

Chrome-trace processes and CSV-derived lanes share one registry of process groups, so a
stream lane made from ``op_summary`` is the same lane the JSON's ``Ascend Hardware`` thread
``Stream 46`` uses.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...model import CLOCK_SKEW, GROUP, SOURCE_IDLE, Trace
from ...slice_columns import SliceColumns, flow_ends
from .jsonshape import rank as clamp

# Processes that belong to a device when the file gives no label.
DEVICE_SIDE = {"Ascend Hardware", "HCCL", "Overlap Analysis", "AI Core Freq", "HBM", "LLC",
               "NPU MEM", "QoS", "Acc PMU", "Stars Soc Info", "Step Trace", "Task Scheduler",
               "AI Core Utilization", "DDR", "PCIe", "HCCS", "Sio", "Memory"}


class Layout:
    def __init__(self, trace: Trace, rank: int | None = None, order: int = 0,
                 description: str = ""):
        self.trace = trace
        self.root: int | None = None
        self.rank = rank
        if rank is not None:
            self.root = trace.add_track(f"Rank {rank}", None, GROUP, order=order,
                                        description=description or f"torch_npu rank {rank}")
        self._host: int | None = None
        self._devices: dict[int | None, int] = {}
        self._groups: dict[tuple[int, str], int] = {}
        self._lanes: dict[tuple[int, str], int] = {}
        self.default_device: int | None = None

    def host(self) -> int:
        if self._host is None:
            self._host = self.trace.add_track("Host", self.root, GROUP, order=0,
                                              description="host side: CPU processes and threads")
        return self._host

    def device(self, dev: int | None = None) -> int:
        if dev is None:
            dev = self.default_device
        g = self._devices.get(dev)
        if g is None:
            name = "NPU" if dev is None else f"NPU {dev}"
            g = self._devices[dev] = self.trace.add_track(
                name, self.root, GROUP, order=clamp(10 + (dev or 0)),
                description="device side: hardware streams, communication, counters")
        return g

    def parent_for(self, name: str, label: str | None) -> int:
        if label:
            text = label.strip()
            if text.upper().startswith("NPU"):
                m = re.search(r"\d+", text)
                return self.device(int(m.group()) if m else None)
            if text.upper() == "CPU":
                return self.host()
        return self.device() if name in DEVICE_SIDE else self.host()

    def group(self, parent: int, name: str, order: int | None = None,
              description: str = "") -> int:
        key = (parent, name)
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = self.trace.add_track(name, parent, GROUP, order=clamp(order),
                                                         description=description)
        return g

    def lane(self, parent: int, name: str, order: int | None = None, nesting: bool = False,
             description: str = "", derived: bool = False) -> int:
        key = (parent, name)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = self.trace.add_track(
                name, parent, order=clamp(order), nesting=nesting, description=description,
                derived=derived)
        return lane

    def place(self, track: int) -> tuple[str | None, int | None]:
        """Which side ``track`` lies under: ("host", None), ("device", its device number or
        None for the unnumbered NPU group), or (None, None) outside both."""
        groups = {g: dev for dev, g in self._devices.items()}
        tracks = self.trace.tracks
        t: int | None = track
        while t is not None:
            if t in groups:
                return "device", groups[t]
            if t == self._host:
                return "host", None
            t = tracks[t].parent
        return None, None

    def _leads(self, flows) -> dict[int | None, list[int]]:
        """Per device: [the largest lead of a task over its launch, the tasks that start
        before their launch, the host -> device flows], of the devices with any."""
        slices = self.trace.slices
        sides: dict[int, tuple] = {}
        per: dict[int | None, list[int]] = {}
        for f in flows:
            a, b = slices[f.src], slices[f.dst]
            for t in (a.track, b.track):
                if t not in sides:
                    sides[t] = self.place(t)
            if sides[a.track][0] != "host" or sides[b.track][0] != "device":
                continue
            lead = per.setdefault(sides[b.track][1], [0, 0, 0])
            lead[2] += 1
            if b.ts < a.ts:
                lead[0] = max(lead[0], a.ts - b.ts)
                lead[1] += 1
        return per

    def _leads_by_columns(self, flows, cols: SliceColumns
                          ) -> dict[int | None, list[int]] | None:
        """``_leads`` over the slices' columns ``cols`` and the flows', or None where an end
        does not fit."""
        ends = flow_ends(flows, len(cols.ts))
        if ends is None:
            return None
        src, dst = ends
        tracks, at = np.unique(np.concatenate((cols.track[src], cols.track[dst])),
                               return_inverse=True)
        places = list(map(self.place, tracks.tolist()))
        host = np.array([side == "host" for side, _ in places], dtype=bool)
        devices: dict[int | None, int] = {}         # a device -> its number here
        device = np.array([devices.setdefault(dev, len(devices)) if side == "device" else -1
                           for side, dev in places], dtype=np.int64)
        a, b = at[:len(src)], at[len(src):]
        launched = host[a] & (device[b] >= 0)
        dev = device[b][launched]
        lead = (cols.ts[src] - cols.ts[dst])[launched]
        early = lead > 0
        total = np.bincount(dev, minlength=len(devices))
        before = np.bincount(dev[early], minlength=len(devices))
        most = np.zeros(len(devices), dtype=np.int64)
        np.maximum.at(most, dev[early], lead[early])
        return {d: [int(most[k]), int(before[k]), int(total[k])]
                for d, k in devices.items() if total[k]}

    def declare_source_idle(self) -> None:
        """Declare each device's overlap-analysis ``Free`` lane as msprof's own idle time of
        that device's task lanes (``Ascend Hardware`` streams, ``HCCL`` planes):
        ``model.SOURCE_IDLE``, which the summary compares with tracecvt's idle time."""
        out = []
        for dev in self._devices.values():
            oa = self._groups.get((dev, "Overlap Analysis"))
            free = self._lanes.get((oa, "Free")) if oa is not None else None
            if free is None:
                continue
            owners = {g for name in ("Ascend Hardware", "HCCL")
                      if (g := self._groups.get((dev, name))) is not None}
            lanes = sorted(lane for (parent, _), lane in self._lanes.items() if parent in owners)
            if lanes:
                out.append({"lane": free, "lanes": lanes})
        if out:
            self.trace.meta.extra.setdefault(SOURCE_IDLE, []).extend(out)

    def measure_clock_skew(self, flows, cols: SliceColumns | None = None) -> None:
        """Per device: how far device tasks start before the host call that launched them
        (host -> device ``flows`` whose successor starts first).  A task cannot start before
        its launch, so host and device clocks differ by at least the largest such lead
        (``model.CLOCK_SKEW``, one entry per device; times are kept as recorded).  The text
        timeline's and the database's flows alike; ``cols``: the slices' columns
        (``slice_columns``), where the reader has them (a database's 850,000 flows: 0.4 s
        one at a time)."""
        per = self._leads_by_columns(flows, cols) if cols is not None else None
        if per is None:                 # (an end that is no slice's index)
            per = self._leads(flows)
        for dev, (ns, n, total) in sorted(per.items(), key=lambda kv: (kv[0] is None, kv[0])):
            if not n:
                continue
            entry: dict[str, Any] = {"device": dev}
            if self.rank is not None:
                entry["rank"] = self.rank
            entry.update({"clock_skew_us": ns / 1000, "tasks_before_launch": n,
                          "dependencies": total})
            self.trace.meta.extra.setdefault(CLOCK_SKEW, []).append(entry)
