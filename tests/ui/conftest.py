"""Dashboard test fixtures (defined in ``ui_helpers`` so test modules can import its helpers by a unique name)."""

from ui_helpers import server, store_env  # noqa: F401 - pytest fixtures
