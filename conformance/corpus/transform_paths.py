"""Small paths of the program rewrites (found with
``tools/conformance_coverage.py``), against JAX (recorded): the unroll pass
over a scan whose body holds a cond (the branches, a tuple of programs, are
rewritten too) and over nested scans; dead-code elimination of a
checkpointed function returning a literal next to a computed value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

_R = np.random.default_rng(3641)
XS = _R.standard_normal((5, 3)).astype(np.float32)


def _scan_with_cond(unroll: Any) -> Any:
    def script(ns: Any) -> Any:
        L = ns.lax_

        def body(c: Any, x: Any) -> Any:
            c = L.cond(x.sum() > 0, lambda v: v + x, lambda v: v * 0.5 - x, c)
            c = L.switch(L.convert_element_type(x[0] > 0, np.int32), [lambda v: v, lambda v: -v],
                         c)  # fmt: skip
            return c, c.sum()

        f = ns.jit(lambda xs: L.scan(body, np.zeros(3, np.float32), xs, unroll=unroll))
        g = ns.jit(lambda xs: L.scan(body, np.zeros(3, np.float32), xs, unroll=unroll,
                                     reverse=True))  # fmt: skip
        return f(ns.asarray(XS)), g(ns.asarray(XS))

    return script


def _nested_scans(ns: Any) -> Any:
    L = ns.lax_

    def inner(c: Any, x: Any) -> Any:
        return c * 0.5 + x, c

    def outer(c: Any, xs: Any) -> Any:
        c2, ys = L.scan(inner, c, xs, unroll=2)
        return c2, ys.sum(0)

    return ns.jit(lambda xss: L.scan(outer, np.zeros((), np.float32), xss, unroll=3))(
        ns.asarray(XS.reshape(5, 3, 1)[..., 0])
    )


def _checkpoint_literal(ns: Any) -> Any:
    api = ns.api
    f = api.checkpoint(lambda x: (ns.np_.sin(x) * x, 2.0))
    return api.grad(lambda x: f(x)[0].sum() + f(x)[1])(ns.asarray(XS[0]))


def cases() -> Iterator[Case]:
    for unroll in (2, True):
        yield script_case(f"transform.paths/scan_cond_unroll={unroll}", _scan_with_cond(unroll),
                          expect=AGREE)  # fmt: skip
    yield script_case("transform.paths/nested_scans_unrolled", _nested_scans, expect=AGREE)
    yield script_case("transform.paths/checkpoint_literal_output", _checkpoint_literal,
                      expect=AGREE)  # fmt: skip
