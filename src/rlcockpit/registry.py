"""One registry pattern for everything chosen by name.

Advantage estimators, policy losses, KL estimators, rewards, detectors, sinks and alert
channels are all looked up by the name a user writes in a config.  Each family owns one
:class:`Registry`; users add their own entries from their code with the same decorator
rlcockpit uses internally::

    from rlcockpit.algos import ADV_ESTIMATORS

    @ADV_ESTIMATORS.register("my_estimator")
    def my_estimator(token_level_rewards, response_mask, **kw): ...

An unknown name fails with an error that lists the registered names and the closest one.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


# The top-level wiring that registers rlcockpit's default parts (the health observer, the alerts hook,
# providers). It is imported by name on the first lookup that misses, not at ``import rlcockpit``: the package
# root and the ground floor stay light, and whichever entry point runs first (``rlcockpit.init``, the CLI, a
# direct ``rlcockpit.tracking.run.init``) finds the defaults registered all the same.
WIRING_MODULE = "rlcockpit.defaults"
_wired = False


def load_wiring() -> None:
    """Import :data:`WIRING_MODULE` once (a plain import: a broken wiring module fails loudly)."""
    global _wired
    if not _wired:
        _wired = True
        importlib.import_module(WIRING_MODULE)


class Registry(Generic[T]):
    """A named family of interchangeable components (``kind`` is used in error messages).

    ``wired=True``: entries registered by the top-level wiring (see :func:`load_wiring`) are loaded on the
    first lookup of a name that is not there yet."""

    def __init__(self, kind: str, *, wired: bool = False) -> None:
        self.kind = kind
        self.wired = wired
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def _wire(self) -> None:
        if self.wired and not _wired:
            load_wiring()

    def register(self, name: str, *aliases: str, override: bool = False) -> Callable[[T], T]:
        """Decorator registering ``obj`` under ``name`` (and optional alias names)."""

        def deco(obj: T) -> T:
            self.add(name, obj, *aliases, override=override)
            return obj

        return deco

    def add(self, name: str, obj: T, *aliases: str, override: bool = False) -> None:
        for n in (name, *aliases):
            if not override and (n in self._items or n in self._aliases):
                raise ValueError(f"{self.kind} {n!r} is already registered")
        self._items[name] = obj
        for a in aliases:
            self._aliases[a] = name

    def unregister(self, name: str) -> T:
        """Remove ``name`` and its aliases (e.g. a test's temporary entry); returns the entry."""
        canonical = self.canonical(name)
        for alias in [a for a, target in self._aliases.items() if target == canonical]:
            del self._aliases[alias]
        return self._items.pop(canonical)

    def canonical(self, name: str) -> str:
        """The registered name ``name`` refers to (resolving aliases); raises ``KeyError``."""
        if name not in self._items and name not in self._aliases:
            self._wire()
        if name in self._items:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise KeyError(self._unknown_message(name))

    def get(self, name: str) -> T:
        """The entry registered as ``name``; an unknown name raises ``KeyError`` with a hint."""
        return self._items[self.canonical(name)]

    def _unknown_message(self, name: str) -> str:
        known = sorted(self._items) + sorted(self._aliases)
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.5)
        # suggest the registered name an alias stands for: an alias is no value of the framework it mirrors
        hint = f" Did you mean {self._aliases.get(close[0], close[0])!r}?" if close else ""
        return f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(sorted(self._items))}"

    def names(self) -> list[str]:
        self._wire()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if name not in self._items and name not in self._aliases:
            self._wire()
        return name in self._items or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        self._wire()
        return iter(sorted(self._items))

    def __len__(self) -> int:
        self._wire()
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._wire()
        return sorted(self._items.items())


# Things a lower layer needs to know that only a higher one does, handed down without an upward import:
# registered by the top-level wiring (``rlcockpit.defaults``), read below. ``"trainer_keys"``: a callable
# returning every key rlcockpit's trainer config accepts (health's advice keeps only those for our runs).
PROVIDERS: Registry[Callable[[], object]] = Registry("provider", wired=True)
