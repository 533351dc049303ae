"""``refimpl.scipy``: the parts of ``jax.scipy`` refimpl provides."""

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    # ``refimpl.scipy.stats`` is imported on first use (it pulls in the
    # special functions, linalg and random), as ``jax.scipy.stats`` is an
    # attribute of ``jax.scipy``
    if name == "stats":
        return importlib.import_module("refimpl.scipy.stats")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
