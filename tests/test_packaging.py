"""The installed package: one top-level import name, ``tracecvt``, holding every package
below converter/ (the layout keeps the code there; setup.py maps the name)."""

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import tracecvt

REPO = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_tracecvt_only(tmp_path):
    """What ``pip install .`` installs: the wheel holds ``tracecvt/`` (every package below
    converter/) and no other top-level name."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(REPO)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("tracecvt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"tracecvt"}
    packages = {str(Path(n).parent) for n in names if n.endswith("/__init__.py")}
    folders = {"tracecvt/" + str(d.relative_to(REPO / "converter")) if d != REPO / "converter"
               else "tracecvt" for d in (REPO / "converter").rglob("*")
               if d.is_dir() and (d / "__init__.py").exists()} | {"tracecvt"}
    assert packages == folders


def test_every_converter_package_imports_as_tracecvt():
    folders = sorted(d for d in (REPO / "converter").rglob("*")
                     if d.is_dir() and (d / "__init__.py").exists())
    assert folders
    for d in folders:
        name = "tracecvt." + ".".join(d.relative_to(REPO / "converter").parts)
        module = importlib.import_module(name)
        assert Path(module.__file__).parent.name == d.name, name
    assert "converter" not in sys.modules
    assert tracecvt.__version__
