"""Weak types and signs of zero that earlier held-back lanes (issue 29) left,
probed again against JAX 0.10.2 live on both backends (lane WEAK0,
docs/parity_audit.md).

- A weak scan init the body returns strong: the cotangent's weak type is
  decided at the transpose by the uses that reach a nonzero cotangent
  (a weak value reaching only an unused y leaves it strong), and the last
  such use decides (JAX's cotangent sum keeps its first term's type).
- A jit's transpose traces with the cotangents' own weak types.
- asinh/acosh/atanh differentiate by JAX's jvp rules (signs of zeros of
  higher derivatives), and asinh(-0.0) is -0.0.
- jnp.reshape hands a NumPy array or scalar to its own reshape method.
- A jit's transpose traces with the cotangents' own weak types.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

# the part of the jax namespace these programs use, as refimpl's
RJAX = SimpleNamespace(
    numpy=rnp,
    lax=ri.lax,
    tree=ri.tree,
    **{f: getattr(ri, f) for f in ("grad", "jit", "vmap", "vjp", "jvp", "checkpoint")},
)


def _facts(tree):
    """Per leaf: dtype, weak type, values (rounded) and sign bits (a NaN's
    sign is not compared: XLA's differs between its own code paths)."""
    out = []
    for leaf in jax.tree.leaves(tree):
        a = np.asarray(leaf)
        out.append(
            (
                str(a.dtype),
                bool(getattr(leaf, "weak_type", False)),
                np.round(a.astype(np.float64), 4).tolist(),
                np.where(np.isnan(a), False, np.signbit(a)).tolist(),
            )
        )
    return out


def _same(got, want):
    g, w = _facts(got), _facts(want)
    assert len(g) == len(w)
    for (gd, gw, gv, gs), (wd, ww, wv, ws) in zip(g, w, strict=True):
        assert (gd, gw) == (wd, ww)
        np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-6)
        assert gs == ws, (gv, wv)


# --- a weak scan init whose weak value reaches only some outputs --------------

_SCAN_BODIES = {
    # the weak value reaches an unused y only: strong when the y is unused
    "2c": lambda jx: lambda c, x: (c * x, 2 * c),
    "sin(c)*x": lambda jx: lambda c, x: (c * x, jx.numpy.sin(c) * x),
    # the last use decides: a promotion's term is strong, any other's weak
    "sin(c)*x + c*x": lambda jx: lambda c, x: (jx.numpy.sin(c) * x + c * x, None),
    "c*x + sin(c)*x": lambda jx: lambda c, x: (c * x + jx.numpy.sin(c) * x, None),
    "c*x, (2c, c*x)": lambda jx: lambda c, x: (c * x, (2 * c, c * x)),
    "c*x, (c*x, 2c)": lambda jx: lambda c, x: (c * x, (c * x, 2 * c)),
    # an inner scan whose weak y is unused
    "inner scan, unused y": lambda jx: (
        lambda c, x: (
            jx.lax.scan(lambda d, y: (d * y, 2 * d), c, x * jx.numpy.ones(2, "float32"))[0] * x,
            None,
        )
    ),
}


def _scan_derivatives(jx, name):
    body = _SCAN_BODIES[name](jx)
    xs = jx.numpy.arange(1.0, 4.0)

    def carry(c):
        return jx.lax.scan(body, c, xs)[0]

    def everything(c):
        out, ys = jx.lax.scan(body, c, xs)
        return out + sum(y.sum() for y in jx.tree.leaves(ys))

    return {
        "grad": jx.grad(carry)(1.0),
        "jit grad": jx.jit(jx.grad(carry))(1.0),
        "checkpoint grad": jx.grad(jx.checkpoint(carry))(1.0),
        "grad of all": jx.grad(everything)(1.0),
        "checkpoint grad of all": jx.grad(jx.checkpoint(everything))(1.0),
        "vjp": jx.vjp(carry, 1.0)[1](np.float32(1.0)),
    }


@pytest.mark.parametrize("name", sorted(_SCAN_BODIES))
def test_weak_scan_init_cotangent_from_the_uses_reaching_it(backend, name):
    got, want = _scan_derivatives(RJAX, name), _scan_derivatives(jax, name)
    assert got.keys() == want.keys()
    for mode in want:
        try:
            _same(got[mode], want[mode])
        except AssertionError as err:
            raise AssertionError(f"mode {mode!r}") from err


# --- asinh/acosh/atanh: JAX's jvp rules --------------------------------------

_POINTS = {
    "arcsinh": [0.0, -0.0, 0.5, -2.0],
    "arccosh": [1.0, 1.5, 3.0],
    "arctanh": [0.0, -0.0, 0.5, -0.9],
}


def _inverse_hyperbolic(jx, name):
    f = getattr(jx.numpy, name)
    x = jx.numpy.array(_POINTS[name], "float32")
    d2 = jx.vmap(jx.grad(jx.grad(f)))
    return {
        "value": f(x),
        "d1": jx.vmap(jx.grad(f))(x),
        "d2": d2(x),
        "jit d2": jx.jit(d2)(x),
        "d3": jx.vmap(jx.grad(jx.grad(jx.grad(f))))(x),
        "weak d2": jx.grad(jx.grad(getattr(jx.lax, name.replace("arc", "a"))))(0.5),
        "jvp of a weak array": jx.jvp(f, (jx.numpy.full(3, 2.0),), (np.full(3, 0.5, "float32"),)),
    }


@pytest.mark.parametrize("name", sorted(_POINTS))
def test_inverse_hyperbolic_derivatives_as_jax(backend, name):
    got, want = _inverse_hyperbolic(RJAX, name), _inverse_hyperbolic(jax, name)
    for mode in want:
        try:
            _same(got[mode], want[mode])
        except AssertionError as err:
            raise AssertionError(f"mode {mode!r}") from err


# --- jnp.reshape of NumPy data: NumPy's own method -----------------------------


def _reshapes(jx):
    a64 = np.arange(6.0).reshape(2, 3)
    jnp = jx.numpy
    out = {
        "float64 array": jnp.reshape(a64, (3, 2)),
        "same shape": jnp.reshape(a64, (2, 3)),
        "-1, order F": jnp.reshape(np.arange(6, dtype=np.int8), (-1, 2), order="F"),
        "numpy scalar": jnp.reshape(np.float32(2), ()),
        "python scalar": jnp.reshape(2.0, (1,)),
        "ravel": jnp.ravel(a64),
        "squeeze": jnp.squeeze(a64[:1]),
        "transpose": jnp.transpose(a64),
        "jit": jx.jit(lambda x: jnp.reshape(x, -1))(a64),
    }
    try:
        jnp.reshape(a64, (4,))
    except Exception as err:  # NumPy's error: its message, not JAX's
        out["error"] = type(err).__name__
    return out


def _kind(value):
    if isinstance(value, str):
        return value
    kind = "numpy" if isinstance(value, (np.ndarray, np.generic)) else "array"
    return (kind, str(np.asarray(value).dtype), np.shape(value), np.asarray(value).tolist())


def test_reshape_of_numpy_data_is_numpys_as_jax(backend):
    got, want = _reshapes(RJAX), _reshapes(jax)
    assert {k: _kind(v) for k, v in got.items()} == {k: _kind(v) for k, v in want.items()}


# --- a jit's transpose: the cotangents' own weak types -------------------------

_JITTED = {
    "identity": lambda jx: lambda c: c,
    "c * 2": lambda jx: lambda c: c * 2,
    "sin": lambda jx: jx.numpy.sin,
    "c + 0.0": lambda jx: lambda c: c + 0.0,
    "scan forwarding its carry": lambda jx: (
        lambda c: jx.lax.scan(lambda c, x: (c, c), c, jx.numpy.arange(3.0))[0]
    ),
}


def _jit_pullbacks(jx, name):
    f = jx.jit(_JITTED[name](jx))
    out = {}
    for primal_name, primal in (("weak", 1.0), ("strong", np.float32(1.0))):
        for ct_name, ct in (("numpy", np.float32(2.0)), ("python", 2.0)):
            out[f"{primal_name} primal, {ct_name} cotangent"] = jx.vjp(f, primal)[1](ct)
    return out


@pytest.mark.parametrize("name", sorted(_JITTED))
def test_jit_transpose_keeps_the_cotangents_weak_types(backend, name):
    got, want = _jit_pullbacks(RJAX, name), _jit_pullbacks(jax, name)
    for mode in want:
        try:
            _same(got[mode], want[mode])
        except AssertionError as err:
            raise AssertionError(f"mode {mode!r}") from err
