"""tracecvt batch --engine dask on a local Dask cluster (2 worker processes): the same
outputs and the same index as the local engine."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tracecvt.batch import batch

from test_batch import copy_run, merged

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None, host="127.0.0.1") as c:
        yield c


def run(*args):
    return CliRunner().invoke(batch, [str(a) for a in args], catch_exceptions=False)


def index_rows(out):
    rows = json.loads((out / "index.json").read_text())["runs"]
    for r in rows:
        r.pop("seconds")
    return rows


def test_dask_engine_matches_local_engine(cluster, tmp_path):
    root = tmp_path / "archive"
    copy_run("tiny_add", root / "tiny_add")
    copy_run("matmul_add", root / "matmul_add")
    copy_run("ffn_medium", root / "medium")
    broken = copy_run("tiny_add", root / "broken")
    m = merged(broken)
    data = m.read_bytes()
    m.write_bytes(data[:5000] + b"}}}garbage" + data[5000:])

    local, dask = tmp_path / "local", tmp_path / "dask"
    r1 = run(root, "-o", local, "-j", "2", "--to", "perfetto,chrome")
    r2 = run(root, "-o", dask, "--engine", "dask", "--scheduler", cluster.scheduler_address,
             "--to", "perfetto,chrome")
    assert r1.exit_code == r2.exit_code == 2, r2.output
    assert "1 of 4 runs failed" in r2.output
    files = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(dask) for p in dask.rglob("*") if p.is_file())
    outputs = [f for f in files if f.suffix in (".pftrace", ".json") and f.name != "index.json"]
    assert len(outputs) == 6
    for f in outputs:
        assert (local / f).read_bytes() == (dask / f).read_bytes(), f
    assert index_rows(local) == index_rows(dask)
    assert json.loads((dask / "index.json").read_text())["engine"] == "dask"

    # resumable on the cluster too
    r3 = run(root, "-o", dask, "--engine", "dask", "--scheduler", cluster.scheduler_address,
             "--to", "perfetto,chrome")
    assert "0 converted, 3 skipped" in r3.output


def test_unreachable_scheduler_is_one_line_error(tmp_path):
    root = tmp_path / "archive"
    copy_run("tiny_add", root / "tiny_add")
    from tracecvt.batch import dask_engine
    from tracecvt.batch.job import make_spec
    from tracecvt.batch.plan import plan
    from tracecvt.batch.job import targets
    from tracecvt.errors import TracecvtError
    (planned,) = plan(root, tmp_path / "out", {"perfetto": targets()["perfetto"]})
    with pytest.raises(TracecvtError, match="cannot reach the Dask scheduler"):
        list(dask_engine.run_dask([make_spec(planned, {})], "tcp://127.0.0.1:9", timeout_s=1))
