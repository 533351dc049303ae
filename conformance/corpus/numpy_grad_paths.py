"""Derivatives of jax.numpy functions as JAX's tests/lax_numpy_test.py
(NumpyGradTests) checks them, judged by JAX 0.10.2 (``AGREE``, recorded).

``np.grad.paths/*``: ``sinc``'s derivatives at 0 up to the fourth order
(the Maclaurin series of sin(y)/y), mixing ``jvp`` and ``grad``, of a
Python scalar (weakly typed, as JAX); ``logaddexp``/``logaddexp2``'s
gradient of Python scalars (weak) and at an infinite argument;
``arcsinh``'s second derivative at 0 (-0.0, by JAX's rule), ``arcsinh(-0.0)``
and ``arccosh``'s second derivative at 1 (-inf).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.case import Case, script_case


def _jvp(ns: Any, f: Any) -> Any:
    return lambda x: ns.api.jvp(f, (x,), (1.0,))[1]


ROWS: list[tuple[str, Any]] = [
    ("sinc/value_weak", lambda ns: ns.np_.sinc(0.0)),
    ("sinc/grad_at_0", lambda ns: ns.api.grad(ns.np_.sinc)(0.0)),
    ("sinc/grad_grad_at_0", lambda ns: ns.api.grad(ns.api.grad(ns.np_.sinc))(0.0)),
    ("sinc/jvp_grad_at_0", lambda ns: _jvp(ns, ns.api.grad(ns.np_.sinc))(0.0)),
    ("sinc/third_at_0", lambda ns: ns.api.grad(_jvp(ns, ns.api.grad(ns.np_.sinc)))(0.0)),
    ("sinc/fourth_at_0", lambda ns: _jvp(ns, _jvp(ns, ns.api.grad(ns.api.grad(ns.np_.sinc))))(0.0)),
    ("logaddexp/grad_weak", lambda ns: ns.api.grad(ns.np_.logaddexp, (0, 1))(0.3, 0.2)),
    ("logaddexp/grad_inf", lambda ns: ns.api.grad(ns.np_.logaddexp, (0, 1))(float("inf"), 0.2)),
    ("logaddexp2/grad_weak", lambda ns: ns.api.grad(ns.np_.logaddexp2, (0, 1))(0.3, 0.2)),
    # JAX's asinh/acosh jvp rules: the signs of zeros and infinities of higher derivatives
    ("arcsinh/grad_grad_at_0_is_minus_0", lambda ns: ns.api.grad(ns.api.grad(ns.np_.arcsinh))(0.0)),
    ("arcsinh/of_minus_0", lambda ns: ns.np_.arcsinh(ns.np_.float32(-0.0))),
    ("arccosh/grad_grad_at_1", lambda ns: ns.api.grad(ns.api.grad(ns.np_.arccosh))(1.0)),
]


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        yield script_case(f"np.grad.paths/{name}", fn)
