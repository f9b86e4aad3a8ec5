"""The code lives in converter/ (the product layout) and installs as the one top-level package
``tracecvt``: every package below converter/ is found here, so a new reader package needs no
line of its own.  Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(package_dir={"tracecvt": "converter"},
      packages=["tracecvt"] + [f"tracecvt.{name}" for name in find_packages("converter")])
