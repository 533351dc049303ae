"""Loops as JAX's own control-flow tests run them (issue 29):
``control.parity_paths/*``: a ``scan`` carry shifted along a tuple whose
last component is strong (retyping one component retypes the next: JAX
accepts it), a ``scan`` whose body runs a ``fori_loop`` that closes over the
weak carry (the retyped body keeps the inner loop's operand types), and
reverse mode through a ``fori_loop`` with traced bounds whose differentiated
carry the body returns unchanged (forwarded outside the loop, as JAX), plain,
under ``jit`` and inside ``cond``; ``associative_scan`` of a vmapped
``solve`` (no combine of empty slices) and the derivative of
``cumlogsumexp`` at a -inf input (weight 0, as JAX's logaddexp jvp, which
replaces only +inf); loops and conditionals under ``disable_jit()``, run in
Python as JAX does; a scan body returning a list (the scan returns one);
a ``vmap`` of ``cond`` with a batched predicate whose branches return a
strong and a weak value (strong, as JAX's select of the branches' outputs);
the gradient of such a cond through a branch a member does not take (sqrt
at 0: no NaN, as JAX); the strong cotangent of a weak scan init through a
``checkpoint`` (its transpose keeps the scan's type), and a strong
cotangent of a weak checkpoint output pulled back eagerly (strong, as JAX's
remat evaluates its transposed program on the values given); ``cond`` in
JAX's older form with an operand per branch; ``vmap`` with ``out_axes=None``
of an operand a ``cond``, ``while_loop`` or ``scan`` returns unchanged
(forwarded, unbatched, as JAX's); ``custom_linear_solve`` of a weak ``b``
(weak, as JAX's result typed as ``b``; eagerly the solver's own type, a
strong cotangent giving a strong one);
a ``scan`` ``length`` of 2.5 (``int(length)`` steps, as JAX); a Python
int ``switch`` index or ``cond`` predicate beyond int32 (wrapped to int32,
``pred != 0``, as JAX); ``cumlogsumexp`` of complex numbers (JAX's
complex logaddexp folded from the init -inf); ``vmap`` of a scan or while
whose carry a cond on a batched predicate makes strong (runs, as JAX);
one scan body and one cond branch reading ``axis_size('i')`` under vmaps
of two sizes (each call its own size: the trace cache keys the axes bound,
as JAX's). Every case is ``AGREE``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax
from conformance.namespace import Unsupported


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap") or not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no vmap/grad")
    return module


def _shifted(L: Any, v: Any) -> Any:
    """The carry shifts left each step; a weak constant enters at the end."""
    return L.scan(lambda c, _: ((c[1], c[2], c[3], 0.0), None), (0.0, 1.0, 2.0, v),
                  np.zeros(2, np.float32))[0]  # fmt: skip


def _scan_of_fori(L: Any, x: Any) -> Any:
    """The fori_loop closes over the weak scan carry and returns it strong."""
    return L.scan(lambda c, xi: (L.fori_loop(xi, xi + 2.0, lambda i, c1: c1 * c, xi), None),
                  x, np.ones(2, np.float32))[0]  # fmt: skip


def _solve_scan(ns: Any, L: Any) -> Any:
    """associative_scan of a vmapped solve: its two-element steps leave no pair."""
    api = _api(ns)
    sl = importlib.import_module(api.__name__ + ".scipy.linalg")

    def fn(a: Any, b: Any) -> Any:
        (m1, v1), (m2, v2) = a, b
        return m1 + m2, sl.solve(m1, v2) + sl.solve(m2, v1)

    ms = np.repeat(np.eye(2, dtype=np.float32)[None], 6, axis=0)
    return L.associative_scan(api.vmap(fn), (ms, np.ones((6, 2), np.float32)))


def _without_jit(ns: Any, run: Any) -> Any:
    """``run()`` under the namespace's ``disable_jit()``."""
    with _api(ns).disable_jit():
        return run()


def _fori_identity(L: Any, x: Any) -> Any:
    return L.fori_loop(x, x + 2.0, lambda i, c: c, x)


def _axis_sizes(ns: Any, L: Any, loop: str) -> Any:
    """The same body under vmaps of sizes 2, 3 and 2 (JAX's
    test_caches_depend_on_axis_env)."""
    api = _api(ns)
    step = lambda c, *_: c + L.axis_size("i")  # noqa: E731
    run = {
        "scan": lambda: L.scan(lambda c, _: (step(c), None), 0, None, length=1)[0],
        "cond": lambda: L.cond(True, step, step, 0),
    }[loop]
    return [api.vmap(run, axis_name="i", axis_size=n, out_axes=None)() for n in (2, 3, 2)]


ROWS: list[tuple[str, Any]] = [
    ("scan_carry_shifted_weak_types",
     lambda ns, L: _shifted(L, np.float32(3.0))),
    ("scan_carry_shifted_weak_types_vmap",
     lambda ns, L: _api(ns).vmap(lambda v: _shifted(L, v))(np.array([3.0, 4.0], np.float32))),
    ("scan_carry_retyped_around_fori",
     lambda ns, L: _scan_of_fori(L, 1.0)),
    ("grad_fori_traced_bounds_forwarded_carry",
     lambda ns, L: _api(ns).grad(lambda x: _fori_identity(L, x))(1.0)),
    ("grad_fori_traced_bounds_forwarded_carry_jit",
     lambda ns, L: _api(ns).grad(lambda x: ns.jit(lambda v: _fori_identity(L, v))(x))(1.0)),
    ("grad_fori_traced_bounds_forwarded_carry_in_cond",
     lambda ns, L: _api(ns).grad(
         lambda x: L.cond(True, lambda v: _fori_identity(L, v), lambda v: v, x))(1.0)),
    ("associative_scan_vmapped_solve",
     lambda ns, L: _solve_scan(ns, L)),
    ("cumlogsumexp_grad_minus_inf",
     lambda ns, L: _api(ns).grad(lambda v: L.cumlogsumexp(v, axis=0).sum())(
         np.array([-np.inf, 0.0, -np.inf, 1.0], np.float32))),
    ("disable_jit_fori_python_loop",
     lambda ns, L: _without_jit(ns, lambda: L.fori_loop(0, 3, lambda i, c: c + i, 1.0))),
    ("disable_jit_scan_zero_length",
     lambda ns, L: _without_jit(ns, lambda: L.scan(lambda c, x: (c + x, x), 0.0,
                                                   np.zeros(0, np.float32)))),
    ("disable_jit_scan_reverse",
     lambda ns, L: _without_jit(ns, lambda: L.scan(lambda c, x: (c + x, (c, 2.0)), 0.0,
                                                   np.arange(3, dtype=np.float32), reverse=True))),
    ("disable_jit_cond_branches_of_other_types",
     lambda ns, L: _without_jit(ns, lambda: L.cond(True, lambda x: (x, 1), lambda x: (x, 2.0),
                                                   3.0))),
    ("disable_jit_switch_clamped_index",
     lambda ns, L: _without_jit(ns, lambda: L.switch(5, [lambda x: x + 1, lambda x: x * 1.0],
                                                     1))),
    ("disable_jit_while_python_loop",
     lambda ns, L: _without_jit(ns, lambda: L.while_loop(lambda c: c[0] < 3,
                                                         lambda c: (c[0] + 1, c[1] * 2.0),
                                                         (0, 1)))),
    ("scan_body_returning_a_list",
     lambda ns, L: L.scan(lambda c, x: [c + x, x * 2], 0, np.arange(3, dtype=np.int32))),
    ("cond_vmap_batched_predicate_strong_and_weak_branches",
     lambda ns, L: _api(ns).vmap(lambda p, v: L.cond(p, lambda x: x, lambda x: 2.0, v))(
         np.array([True, False]), np.array([3.0, 4.0], np.float32))),
    ("cond_vmap_grad_through_a_branch_not_taken",
     lambda ns, L: _api(ns).grad(lambda v: _api(ns).vmap(
         lambda x: L.cond(x > 0.0, ns.np_.sqrt, lambda y: y * 0.0, x))(v).sum())(
         np.array([0.0, 1.0, 4.0], np.float32))),
    ("cond_vmap_grad_closed_over_guard",
     lambda ns, L: _api(ns).grad(lambda v: _api(ns).vmap(
         lambda x: L.cond(x < 1e-3, lambda _: 1e-3, lambda _: ns.np_.sqrt(x), ()))(v).sum())(
         np.array([0.0, 0.0, 9.0], np.float32))),
    ("grad_scan_weak_init_promoted_carry",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(lambda c, x: (c * x, None), c,
                                                  np.arange(1.0, 4.0, dtype=np.float32))[0])(1.0)),
    ("grad_scan_weak_init_weak_value_reaches_cotangent",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(lambda c, x: ((c * 2.0) * x, None), c,
                                                  np.arange(1.0, 4.0, dtype=np.float32))[0])(1.0)),
    ("grad_scan_weak_init_carry_as_y",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(lambda c, x: (c * x, c), c,
                                                  np.arange(1.0, 4.0, dtype=np.float32))[1].sum())(
         1.0)),
    ("grad_fori_weak_init_jit",
     lambda ns, L: ns.jit(_api(ns).grad(
         lambda c: L.fori_loop(0, 3, lambda i, c: c * np.float32(2.5), c)))(1.0)),
    ("grad_scan_weak_init_inner_scan",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(
         lambda c, x: (L.scan(lambda d, y: (d * y, None), c, np.ones(2, np.float32) * x)[0], None),
         c, np.arange(1.0, 4.0, dtype=np.float32))[0])(1.0)),
    # the weak value reaches only an unused y: JAX's cotangent is strong
    ("grad_scan_weak_init_weak_value_only_in_an_unused_y",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(lambda c, x: (c * x, 2 * c), c,
                                                  np.arange(1.0, 4.0, dtype=np.float32))[0])(1.0)),
    # the last use decides (JAX's cotangent sum keeps its first term's type)
    ("grad_scan_weak_init_last_use_promotes",
     lambda ns, L: _api(ns).grad(lambda c: L.scan(lambda c, x: (ns.np_.sin(c) * x + c * x, None),
                                                  c, np.arange(1.0, 4.0, dtype=np.float32))[0])(
         1.0)),
    ("vjp_scan_weak_carry_strong_cotangent",
     lambda ns, L: _api(ns).vjp(lambda c: L.scan(lambda c, x: (c * 2.0, None), c, None,
                                                 length=3)[0], 1.0)[1](np.float32(1.0))),
    ("vjp_scan_weak_init_carry_as_y_carry_alone",
     lambda ns, L: _api(ns).vjp(lambda c: L.scan(lambda c, x: (c * x, c), c,
                                                 np.arange(1.0, 4.0, dtype=np.float32))[0],
                                1.0)[1](np.float32(1.0))),
    ("vjp_scan_weak_init_carry_as_y_strong_ys_cotangent",
     lambda ns, L: _api(ns).vjp(lambda c: L.scan(lambda c, x: (ns.np_.sin(c) * x, c), c,
                                                 np.arange(1.0, 4.0, dtype=np.float32)),
                                1.0)[1]((np.float32(1.0), np.ones(3, np.float32)))),
    ("grad_checkpoint_scan_weak_init_promoted_carry",
     lambda ns, L: _api(ns).grad(_api(ns).checkpoint(
         lambda c: L.scan(lambda c, x: (c * x, None), c,
                          np.arange(1.0, 4.0, dtype=np.float32))[0]))(1.0)),
    ("vjp_checkpoint_weak_primal_strong_cotangent",
     lambda ns, L: _api(ns).vjp(_api(ns).checkpoint(lambda c: c * 2.0), 1.0)[1](np.float32(1.0))),
    ("vjp_checkpoint_scan_strong_cotangents",
     lambda ns, L: _api(ns).vjp(_api(ns).checkpoint(
         lambda c: L.scan(lambda d, x: (d * 2.0, d * x), c, np.arange(3.0, dtype=np.float32))),
         1.0)[1]((np.float32(1.0), np.ones(3, np.float32)))),
    ("cond_operand_per_branch",
     lambda ns, L: L.cond(np.int32(4) < 3, np.array([1, 2]), lambda y: y,
                          np.array([3, 4]), lambda z: L.neg(z))),
    ("vmap_cond_operand_per_branch_batched_pred",
     lambda ns, L: _api(ns).vmap(lambda x, y: L.cond(x < 3, y, lambda y: y, 5, lambda z: L.neg(z)))(
         np.array([2, 4]), np.array([1, 2]))),
    ("grad_cond_operand_per_branch",
     lambda ns, L: _api(ns).grad(
         lambda x: L.cond(x < 3, None, lambda _: 2.0, x, lambda x: 2.0 * x))(3.14)),
    ("vmap_cond_forwarded_operand_out_axes_none",
     lambda ns, L: _api(ns).vmap(
         lambda x, y: L.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y),
         in_axes=(0, None), out_axes=(0, None))(np.arange(3, dtype=np.int32), np.float32(3.0))),
    ("vmap_while_readonly_carry_out_axes_none",
     lambda ns, L: _api(ns).vmap(
         lambda w, x, n: L.while_loop(lambda v: v[0] < n, lambda v: (v[0] + 1, v[1] @ v[2], v[2]),
                                      (0, x, w))[2],
         in_axes=(None, 0, 0), out_axes=None)(
         np.ones((2, 2), np.float32), np.ones((4, 2), np.float32), np.arange(4, dtype=np.int32))),
    ("vmap_scan_readonly_carry_in_cond_out_axes_none",
     lambda ns, L: _api(ns).vmap(
         lambda x, y: L.cond(x < 0, lambda _, y: _scan_readonly(L, y),
                             lambda _, y: _scan_readonly(L, y), x, y),
         (0, None), None)(np.arange(3.0, dtype=np.float32), 3.0)),
    # a carry the body returns unchanged is the init object itself, eagerly
    # (a float64 NumPy array stays float64, a Python int an int: lane LEFT)
    ("loops_hand_back_untouched_host_carries",
     lambda ns, L: (
         L.fori_loop(0, 3, lambda i, c: (c[0], c[1], c[2] + 1), (np.arange(3.0), 2, 0)),
         L.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (np.int64(4), 0)),
         L.scan(lambda c, x: (c, x), 1.5, np.arange(3, dtype=np.int32))[0])),
    ("custom_linear_solve_weak_b",
     lambda ns, L: L.custom_linear_solve(lambda x: 2 * x, 3.0, lambda mv, y: y / 2)),
    ("custom_linear_solve_weak_b_jit_strong_solver",
     lambda ns, L: ns.jit(lambda b: L.custom_linear_solve(
         lambda x: 2 * x, b, lambda mv, y: y / np.float32(2)))(3.0)),
    ("custom_linear_solve_weak_b_strong_cotangent",
     lambda ns, L: _api(ns).vjp(lambda b: L.custom_linear_solve(
         lambda x: 2 * x, b, lambda mv, y: y / 2, symmetric=True), 3.0)[1](np.float32(1.0))),
    ("custom_linear_solve_weak_b_vmap_batched_matvec",
     lambda ns, L: _api(ns).vmap(lambda s: L.custom_linear_solve(
         lambda x: s * x, 3.0, lambda mv, y: y / s, symmetric=True))(
         np.array([1.0, 2.0], np.float32))),
    ("custom_linear_solve_weak_b_eager_strong_solver",
     lambda ns, L: L.custom_linear_solve(lambda x: 2 * x, 3.0, lambda mv, y: y / np.float32(2))),
    ("scan_length_taken_by_int",
     lambda ns, L: L.scan(lambda c, x: (c + 1, c), 0, None, length=2.5)),
    ("switch_big_python_int_index",
     lambda ns, L: L.switch(2**40 + 1, [lambda: 1.0, lambda: 2.0, lambda: 3.0])),
    ("cond_big_python_int_pred",
     lambda ns, L: ns.jit(lambda: L.cond(2**32, lambda: 1.0, lambda: 2.0))()),
    ("cumlogsumexp_complex",
     lambda ns, L: L.cumlogsumexp(np.array([1 + 1j, 2 - 1j, 0.5j, -3 + 4j], np.complex64))),
    ("cumlogsumexp_complex_reverse_jit",
     lambda ns, L: ns.jit(lambda v: L.cumlogsumexp(v, reverse=True))(
         np.array([1 + 1j, 2 - 1j, 0.5j, -3 + 4j], np.complex64))),
    # issue 29 (StaticForiGrad): bounds a JVP tracer holds concretely make a
    # scan, so reverse mode differentiates a body that uses the carry
    ("grad_fori_concrete_traced_bounds_scan",
     lambda ns, L: _api(ns).value_and_grad(
         lambda x: L.fori_loop(x, x + 2.0, lambda i, c: c * 2.0 + i, x))(1.0)),
    ("vmap_scan_carry_made_strong_by_batched_cond",
     lambda ns, L: _api(ns).vmap(lambda p: L.scan(
         lambda c, x: (L.cond(p > x, lambda c: c + x, lambda c: c * 2.0, c), c), 1.0,
         np.arange(1.0, 4.0, dtype=np.float32)))(np.array([0.0, 3.0], np.float32))),
    ("vmap_while_carry_made_strong_by_batched_cond",
     lambda ns, L: _api(ns).vmap(lambda p: L.while_loop(
         lambda c: c[0] < 3,
         lambda c: (c[0] + 1, L.cond(p > 1.0, lambda v: v + np.float32(1), lambda v: v * 2.0,
                                     c[1])),
         (0, 1.0)))(np.array([0.0, 3.0], np.float32))),
    ("scan_axis_size_per_vmap_call",
     lambda ns, L: _axis_sizes(ns, L, "scan")),
    ("cond_axis_size_per_vmap_call",
     lambda ns, L: _axis_sizes(ns, L, "cond")),
]  # fmt: skip


def _scan_readonly(L: Any, y: Any) -> Any:
    return L.scan(lambda y, _: (y, None), y, None, length=1)[0]


def cases() -> Iterator[Case]:
    used = (
        _api,
        _scan_readonly,
        _shifted,
        _scan_of_fori,
        _solve_scan,
        _without_jit,
        _fori_identity,
        _axis_sizes,
    )
    helpers = "".join(inspect.getsource(h) for h in used)
    for name, fn in ROWS:
        case = script_case(f"control.parity_paths/{name}", on_lax(fn), expect=AGREE)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
