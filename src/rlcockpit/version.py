"""rlcockpit's version, in a module of its own: reading it loads nothing else (the package root is lazy)."""

__version__ = "0.1.0"
