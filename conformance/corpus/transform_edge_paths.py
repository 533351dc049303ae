"""Branches of the transformations (``refimpl/transforms/``) and of the AD
helpers the other families leave untaken (found with
``tools/conformance_coverage.py``), as programs through the public API
judged against JAX (recorded):

* ``transform.edges/conversion/*``: Python conversions of a value being
  differentiated outside ``jit`` (``jvp``/``grad``): ``bool()``, ``int()``,
  indexing and ``item()`` use the known primal; ``float()``, ``complex()`` and
  ``tolist()`` raise ``ConcretizationTypeError`` even so, as JAX 0.10.2
  (refimpl computed with the primal: found by this family).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ("transforms",)

# name -> f(x); differentiated at x = 2.0 (a Python float) and x = float32(2)
CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "bool": lambda x: x * 3 if x else x,
    "int": lambda x: x * int(x),
    "index": lambda x: x * [1.0, 2.0, 3.0][int(x)],
    "item": lambda x: x * x.item(),
    "float": lambda x: x * float(x),
    "complex": lambda x: x * complex(x).real,
    "tolist": lambda x: x * x.tolist(),
}


def _conversion(name: str, how: str) -> Any:
    f = CONVERSIONS[name]

    def script(ns: Any) -> Any:
        api = ns.api
        x = 2.0 if how == "python" else ns.asarray(np.float32(2.0))
        if how == "grad":
            return ns.capture(api.grad(f), x)
        return ns.capture(lambda: api.jvp(f, (x,), (1.0 if how == "python" else x,)))

    return script


def cases() -> Iterator[Case]:
    for name in CONVERSIONS:
        for how in ("python", "array", "grad"):
            yield script_case(f"transform.edges/conversion/{name}/{how}",
                              _conversion(name, how), expect=AGREE, tags=TAGS)  # fmt: skip
