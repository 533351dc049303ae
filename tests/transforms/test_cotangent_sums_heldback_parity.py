"""Cotangent sums typed as JAX 0.10.2's ``add_any`` (issue 29, lane ADDANY),
against JAX live on both backends.

JAX's backward pass accumulates a variable's cotangent with ``add_any``:
staged (a ``jit``, a loop body, any traced program) the sum has its first
term's type, the terms met in JAX's order (the outputs' cotangents first,
then the equations in reverse, an equation's inputs in order); evaluated
eagerly it is ``lax.add``, weak only when both terms are.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

RJAX = SimpleNamespace(
    numpy=rnp,
    lax=ri.lax,
    tree=ri.tree,
    custom_vjp=ri.custom_vjp,
    **{f: getattr(ri, f) for f in ("grad", "jit", "vmap", "vjp", "checkpoint")},
)

F32 = np.float32


def _facts(tree):
    """Per leaf: dtype, weak type and values (rounded)."""
    out = []
    for leaf in jax.tree.leaves(tree):
        a = np.asarray(leaf)
        rounded = np.round(a.astype(np.float64), 4).tolist()
        out.append((str(a.dtype), bool(getattr(leaf, "weak_type", False)), rounded))
    return out


def _check(got, want):
    assert got.keys() == want.keys()
    for mode in want:
        assert _facts(got[mode]) == _facts(want[mode]), mode


# --- a cotangent summed from two outputs ----------------------------------------

_TWO_OUTPUTS = {
    "c, c": lambda jx: lambda c: (c, c),
    "c, c * 2": lambda jx: lambda c: (c, c * 2),
    "c * 2, c": lambda jx: lambda c: (c * 2, c),
    "sin(c), c": lambda jx: lambda c: (jx.numpy.sin(c), c),
}

# the two output cotangents: a Python float (weak) or a NumPy float32 (strong)
_CTS = {"weak, weak": (1.0, 2.0), "weak, strong": (1.0, F32(2)), "strong, weak": (F32(1), 2.0)}


def _two_output_pullbacks(jx, name):
    f = _TWO_OUTPUTS[name](jx)
    out = {}
    for primal_name, primal in (("weak", 1.0), ("strong", F32(1))):
        for ct_name, ct in _CTS.items():
            key = f"{primal_name} primal, {ct_name} cotangents"
            out[f"eager: {key}"] = jx.vjp(f, primal)[1](ct)
            out[f"jit: {key}"] = jx.vjp(jx.jit(f), primal)[1](ct)
            out[f"jit of vjp: {key}"] = jx.jit(lambda p, a, b: jx.vjp(f, p)[1]((a, b)))(primal, *ct)
    return out


@pytest.mark.parametrize("name", sorted(_TWO_OUTPUTS))
def test_staged_cotangent_sums_keep_the_first_terms_type(backend, name):
    _check(_two_output_pullbacks(RJAX, name), _two_output_pullbacks(jax, name))


# --- a custom_vjp bwd whose cotangent is strong for a weak value ---------------


def _custom_vjp_sums(jx):
    @jx.custom_vjp
    def f(c):
        return c * 2.0

    f.defvjp(lambda c: (f(c), None), lambda _, g: (F32(2.0) * g,))
    return {
        "jit, c first": jx.vjp(jx.jit(lambda c: (c, f(c))), 1.0)[1]((1.0, 1.0)),
        "jit, f(c) first": jx.vjp(jx.jit(lambda c: (f(c), c)), 1.0)[1]((1.0, 1.0)),
        "eager": jx.vjp(lambda c: (c, f(c)), 1.0)[1]((1.0, 1.0)),
    }


def test_custom_vjp_strong_cotangents_summed_as_jax(backend):
    _check(_custom_vjp_sums(RJAX), _custom_vjp_sums(jax))


# --- a scan's transposed body: the cotangents' own types, the sums as they are ---
#
# JAX's scan transpose traces its body with the carry and ys cotangents as
# given, accumulates each carry's cotangent as its cotangent's type (so a
# promotion of the carry transposes to that type, not the carry's) and
# returns the sums as they are; the init's cotangent has that type. A weak
# init the body returns strong (``c * x``), a strong one given a Python-float
# cotangent, a cond or a custom_vjp bwd in the body, and fori_loop (a scan
# with static bounds) each differed.


def _custom_vjp_times_two(jx, strong_bwd):
    @jx.custom_vjp
    def f(c):
        return c * 2.0

    bwd_scale = F32(2.0) if strong_bwd else 2.0
    f.defvjp(lambda c: (f(c), None), lambda _, g: (bwd_scale * g,))
    return f


def _custom_vjp_body(jx, times_x):
    f = _custom_vjp_times_two(jx, strong_bwd=True)
    return lambda c, x: (f(c) * x if times_x else f(c), None)


_SCAN_BODIES = {
    "c_times_x": lambda jx: lambda c, x: (c * x, None),
    "c_times_2": lambda jx: lambda c, x: (c * 2.0, None),
    "sin_c_times_x": lambda jx: lambda c, x: (jx.numpy.sin(c) * x, None),
    "c_times_x_plus_sin_c": lambda jx: lambda c, x: (c * x + jx.numpy.sin(c), None),
    "c_times_x_and_y_c": lambda jx: lambda c, x: (c * x, c),
    "c_times_2_and_y_c": lambda jx: lambda c, x: (c * 2.0, c),
    "c_times_x_and_y_c_times_2": lambda jx: lambda c, x: (c * x, c * 2.0),
    "cond": lambda jx: (
        lambda c, x: (
            jx.lax.cond(x > 1, lambda d: d * x, lambda d: d * 2.0, c),
            None,
        )
    ),
    "cond_of_sin": lambda jx: (
        lambda c, x: (
            jx.lax.cond(x > 1, lambda d: jx.numpy.sin(d), lambda d: d * x, c),
            None,
        )
    ),
    "custom_vjp_strong_bwd": lambda jx: _custom_vjp_body(jx, times_x=False),
    "custom_vjp_strong_bwd_times_x": lambda jx: _custom_vjp_body(jx, times_x=True),
}


def _scan_pullbacks(jx, name, kind):
    body = _SCAN_BODIES[name](jx)
    xs = jx.numpy.arange(1.0, 4.0, dtype=jx.numpy.float32)

    def scanned(c):
        return jx.lax.scan(body, c, xs)

    def looped(c):
        return jx.lax.fori_loop(0, 3, lambda i, d: body(d, xs[i])[0], c)

    f = scanned if kind == "scan" else looped
    has_ys = kind == "scan" and scanned(1.0)[1] is not None
    # a Python float (weak) or NumPy float32 (strong) cotangent per output
    makers = {
        "Python": lambda shape: 1.0 if shape == () else jx.lax.broadcast(1.0, shape),
        "NumPy": lambda shape: np.ones(shape, F32),
    }
    out = {}
    for init_name, init in (("weak", 1.0), ("strong", F32(1))):
        for ct_name, make in makers.items():
            ct = make(()) if kind == "fori" else (make(()), make((3,)) if has_ys else None)
            key = f"{init_name} init, {ct_name} cotangents"
            out[f"eager: {key}"] = jx.vjp(f, init)[1](ct)
            out[f"jit: {key}"] = jx.vjp(jx.jit(f), init)[1](ct)
            if has_ys:
                out[f"carry only: {key}"] = jx.vjp(lambda c: f(c)[0], init)[1](make(()))
        final = (lambda c: f(c)[0]) if kind == "scan" else f
        out[f"grad: {init_name} init"] = jx.grad(final)(init)
    return out


@pytest.mark.parametrize("kind", ["scan", "fori"])
@pytest.mark.parametrize("name", sorted(_SCAN_BODIES))
def test_scan_transpose_returns_its_sums_as_jax(backend, name, kind):
    _check(_scan_pullbacks(RJAX, name, kind), _scan_pullbacks(jax, name, kind))
