"""Drives headless Chromium (Playwright, from the perfetto-ui tool's venv) to a Perfetto UI
deep link and prints one JSON line: whether the UI loaded the trace, its slice and track
counts from the UI's own engine, and the names of its timeline's tracks.

    $PFUI_HOME/venv/bin/python tests/ui_driver.py LINK [--timeout S]

Only 127.0.0.1 origins named in LINK (the UI's and the trace's) are reached: every other
request (Perfetto's probe of a native trace_processor on :9001, analytics) is aborted.
Used by tests/test_open.py; run under a python that has playwright."""

from __future__ import annotations

import json
import sys
import time
import urllib.parse

from playwright.sync_api import sync_playwright

STATE = """() => {
  const a = window.app;
  return {hasTrace: !!(a && a.trace), loading: a ? !!a.isLoadingTrace : null,
          tracks: document.querySelectorAll('.pf-track').length,
          dialogs: [...document.querySelectorAll('.pf-modal-dialog')].map(
              m => m.innerText.slice(0, 300))};
}"""

COUNT = """async (sql) => {
  const r = await window.app.trace.engine.query(sql);
  const it = r.iter({});
  return Number(it.get(r.columns()[0]));
}"""

# The names of the timeline's track tree, in display order (the UI's workspace).
ROWS = """() => window.app.trace.workspace.flatTracksOrdered.map(n => n.name)"""


def origin(url: str) -> str:
    p = urllib.parse.urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


def main() -> int:
    link = sys.argv[1]
    timeout = float(sys.argv[sys.argv.index("--timeout") + 1]) if "--timeout" in sys.argv \
        else 90.0
    trace_url = urllib.parse.urlsplit(link).fragment.split("url=", 1)[1]
    allowed = {origin(link), origin(trace_url)}
    out = {"loaded": False, "slices": None, "tracks": None, "track_rows": [], "dialogs": [],
           "blocked": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        ctx = browser.new_context(service_workers="block")

        def route(r):
            if origin(r.request.url) in allowed:
                r.continue_()
            else:
                out["blocked"].append(r.request.url[:120])
                r.abort()
        ctx.route("**/*", route)
        page = ctx.new_page()
        page.goto(link, wait_until="domcontentloaded", timeout=60000)
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                st = page.evaluate(STATE)
            except Exception:
                st = {}
            out["dialogs"] = st.get("dialogs") or []
            if st.get("hasTrace") and st.get("loading") is False and st.get("tracks"):
                out["loaded"] = True
                break
            time.sleep(0.25)
        if out["loaded"]:
            out["slices"] = page.evaluate(COUNT, "select count(*) from slice")
            out["tracks"] = page.evaluate(COUNT, "select count(*) from track")
            out["track_rows"] = page.evaluate(ROWS)
        browser.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
