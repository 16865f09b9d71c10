"""Dashboard test fixtures (defined in helper modules with unique names so test modules can import them)."""

from ui_browser_helpers import browser_env, page  # noqa: F401 - pytest fixtures
from ui_helpers import server, store_env  # noqa: F401 - pytest fixtures
