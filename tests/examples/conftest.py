"""The embedded families and data backends, registered once (isolation: tests/conftest.py)."""

import inspector.examples  # noqa: F401
