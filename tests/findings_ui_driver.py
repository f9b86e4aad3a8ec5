"""Clicks a finding's link in a tracecvt HTML report and reports what the Perfetto UI then
shows: whether the trace loaded, the visible window (trace ns), the selected slice, the
notes, the pinned tracks; saves a screenshot.  Prints one JSON line.

    $PFUI_HOME/venv/bin/python tests/findings_ui_driver.py REPORT_URL N SHOT.png [--timeout S]

Runs under a python that has playwright (the perfetto-ui tool's venv).  For the v58 UI
(no WebAssembly engine) the caller runs trace_processor_shell --httpd on 127.0.0.1:9001;
the tool's websocket shim (perfetto_ui.JS_WS_ARRAYBUFFER_SHIM) is used as it is.  Only
127.0.0.1 is reached: every other request is aborted."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1].parent / "shared" / "tools"
                       / "perfetto-ui"))
from perfetto_ui import JS_CSP_ANY_PORT_FLAG, JS_STATE, JS_WS_ARRAYBUFFER_SHIM  # noqa: E402

# What the UI shows once the deep link is applied: the window, the selection, the notes,
# the pins.
JS_VIEW = r"""async () => {
  const tr = window.app && window.app.trace;
  if (!tr) return null;
  const w = tr.timeline.visibleWindow;
  const t = h => Number(h.integral) + h.fractional;
  const sel = tr.selection.selection;
  let slice = null;
  if (sel && sel.kind === 'track_event') {
    const r = await tr.engine.query(
        `select s.name, s.ts, s.dur, t.name as track from slice s
         join track t on t.id = s.track_id where s.id = ${sel.eventId}`);
    const it = r.iter({});
    if (it.valid()) slice = {name: it.get('name'), ts: Number(it.get('ts')),
                             dur: Number(it.get('dur')), track: it.get('track')};
  }
  const ws = tr.currentWorkspace || tr.workspace;
  const notes = Array.from(tr.notes.notes.values()).map(
      n => ({ts: Number(n.timestamp), text: n.text}));
  return {window: [t(w.start), t(w.end)], selection: sel ? sel.kind : null, slice, notes,
          pinned: ws.pinnedTracks.map(n => n.name)};
}"""


def _open(ctx, link, out, timeout):
    """Click the link; wait until the UI has loaded the trace and applied the deep link
    (lanes pinned, notes added, the window still): (page, what it shows) or None."""
    with ctx.expect_page(timeout=30000) as opened:
        link.click()                              # the report's own link, as a person clicks
    page = opened.value
    page.on("pageerror", lambda e: out["errors"].append(str(e)[:300]))
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            st = page.evaluate(JS_STATE)
        except Exception:
            st = {}
        modals = st.get("modals") or []
        if any(re.search(r"native acceleration|version mismatch|trace processor",
                         m.get("title", ""), re.I) for m in modals):
            btn = page.locator(".pf-modal-dialog button",
                               has_text=re.compile("YES, use loaded trace|mismatched "
                                                   "version regardless", re.I))
            if btn.count():
                btn.first.click()
                time.sleep(0.5)
                continue
        if st.get("hasTrace") and st.get("loading") is False and st.get("tracks"):
            try:
                view = page.evaluate(JS_VIEW)
            except Exception:
                view = None
            # the deep link is applied once loaded: an animated zoom (300 ms), then the
            # startup commands; wait until the window stops moving
            if view and view["notes"] and view["pinned"]:
                time.sleep(1.0)
                again = page.evaluate(JS_VIEW)
                if again["window"] == view["window"]:
                    return page, again
        time.sleep(0.25)
    return page, None


def main() -> int:
    url, n, shot = sys.argv[1], sys.argv[2], sys.argv[3]
    timeout = float(sys.argv[sys.argv.index("--timeout") + 1]) if "--timeout" in sys.argv \
        else 120.0
    out = {"href": None, "loaded": False, "view": None, "blocked": [], "errors": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("PFUI_CHROMIUM")
                                    or "/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        ctx = browser.new_context(viewport={"width": 1600, "height": 1000},
                                  service_workers="block")
        ctx.add_init_script(script=JS_WS_ARRAYBUFFER_SHIM)
        # an engine on a port other than 9001 (the link's rpc_port): the UI's flag for it
        ctx.add_init_script(script=JS_CSP_ANY_PORT_FLAG)

        def route(r):
            if re.match(r"(https?|wss?)://(127\.0\.0\.1|localhost)(:\d+)?/", r.request.url):
                r.continue_()
            else:
                out["blocked"].append(r.request.url[:160])
                r.abort()
        ctx.route("**/*", route)
        report = ctx.new_page()
        report.goto(url, wait_until="load", timeout=60000)
        link = report.locator(f'a.pf-open[data-finding="{n}"]').first
        out["href"] = link.get_attribute("href")
        page, view = _open(ctx, link, out, timeout)
        out["loaded"] = view is not None
        out["view"] = view
        out["modals"] = [m.get("title") for m in (page.evaluate(JS_STATE) or {}).get("modals")
                         or []]
        page.screenshot(path=shot)
        out["screenshot"] = shot
        browser.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
