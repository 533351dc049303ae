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
