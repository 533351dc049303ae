"""Result dtypes that depend on x64, as JAX 0.10.2: indices in the default int
read at call time (int64 under x64: nonzero, argmax, argsort, unique's
index/inverse/counts, bincount, indices, tril_indices), the few that stay int32
(searchsorted, argpartition), bool computing in int32 in numeric functions, and
narrow integers promoting to float32 in inexact ones (sin, var) also under x64.
Each runs eagerly and under jit, with x64 on (and a few with it off)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case

_X = np.array([[3.0, 0.0, 1.0], [2.0, 5.0, 0.0]], np.float32)
_XI = np.array([3, 0, 1, 2, 5, 0, 3], np.int32)
_S = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
_B = np.array([True, False, True])

ROWS: list[tuple[str, Any]] = [
    ("nonzero", lambda np_: np_.nonzero(_X, size=4)),
    ("argwhere", lambda np_: np_.argwhere(_X, size=4)),
    ("argmax", lambda np_: (np_.argmax(_X), np_.argmin(_X, axis=0), np_.nanargmax(_X, axis=1))),
    ("argsort", lambda np_: (np_.argsort(_X), np_.lexsort((_XI, -_XI)))),
    ("unique", lambda np_: np_.unique(_XI, True, True, True, size=5)),
    ("bincount", lambda np_: np_.bincount(_XI, length=7)),
    ("indices", lambda np_: (np_.indices((2, 3)), np_.tril_indices(3), np_.triu_indices(3, 1, 4))),
    ("searchsorted_int32", lambda np_: (np_.searchsorted(_S, _X), np_.digitize(_X, _S))),
    ("argpartition_int32", lambda np_: np_.argpartition(_XI, 2)),
    ("bool_numeric_int32", lambda np_: (np_.floor_divide(_B, True), np_.power(_B, _B))),
    ("int32_inexact_float32", lambda np_: (np_.sin(_XI), np_.var(_XI), np_.mean(_XI))),
    ("angle_default_float", lambda np_: (np_.angle(_XI), np_.angle(np.float32(-1.0)))),
]


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        for jitted in (False, True):
            mode = "jit" if jitted else "eager"

            def script(ns: Any, fn: Any = fn, jitted: bool = jitted) -> Any:
                program = lambda: fn(ns.np_)  # noqa: E731
                return ns.jit(program)() if jitted else program()

            yield script_case(
                f"x64.dtype.paths/{name}/{mode}", script, tags=["x64", "dtype"], x64=True
            )
            if name in ("argmax", "unique", "int32_inexact_float32"):
                yield script_case(f"x64.dtype.paths/{name}/{mode}/x32", script, tags=["dtype"])
