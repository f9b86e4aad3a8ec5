"""``python -m tracecvt.validate TRACE``."""

from . import validate

validate()  # pragma: no cover
