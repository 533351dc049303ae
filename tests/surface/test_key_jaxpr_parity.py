"""``make_jaxpr`` of functions taking or returning typed keys, compared with
JAX 0.10.2 live on both backends (issue 29: JAX's random_test.py
KeyArrayTest.test_scan_jaxpr reads the key types of a jaxpr's variables).

refimpl traces a key array as its ``uint32[..., 2]`` key data; ``make_jaxpr``
shows the program as JAX's jaxpr does (``refimpl.key_jaxpr``): variables of
type ``key<fry>[...]``, the structural equations on them with their logical
parameters, ``random_wrap``/``random_unwrap`` where data becomes keys or keys
data. The program that runs is unchanged; evaluating the shown jaxpr runs it.
"""

from __future__ import annotations

import jax
import jax.extend.core
import numpy as np
import pytest

import refimpl as ri
import refimpl.core_api
import refimpl.extend.core


def _cases(ns):
    """name -> (function, its arguments' maker)."""
    jnp, lax, random = ns.numpy, ns.lax, ns.random

    def keys(*shape):
        seeds = jnp.arange(int(np.prod(shape)), dtype=jnp.uint32)
        return ns.vmap(random.key)(seeds).reshape(*shape)

    def scan_transpose(ks):
        return lax.scan(lambda _, k: (None, k.T), None, ks)

    def scan_carry(k, xs):
        return lax.scan(lambda c, x: (c, x * 2), k, xs)

    def while_carry(k):
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (k, 0))

    def cond(p, k):
        return lax.cond(p, lambda k: k[::-1], lambda k: k, k)

    one = lambda: (keys(),)  # noqa: E731
    return {
        "scan_transpose": (scan_transpose, lambda: (keys(3, 4, 5),)),
        "identity": (lambda k: k, one),
        "reshape": (lambda ks: ks.reshape(2, 3), lambda: (keys(6),)),
        "index": (lambda ks: ks[1], lambda: (keys(4),)),
        "slice": (lambda ks: ks[1:3], lambda: (keys(4),)),
        "concatenate": (lambda a, b: jnp.concatenate([a, b]), lambda: (keys(2), keys(3))),
        "broadcast_to": (lambda k: jnp.broadcast_to(k, (3,)), one),
        "select": (lambda p, a, b: lax.select(p, a, b), lambda: (True, keys(), keys())),
        "jit_inside": (lambda k: ns.jit(lambda k: k[None])(k), one),
        "key_data": (lambda k: random.key_data(k), one),
        "wrap_key_data": (random.wrap_key_data, lambda: (jnp.arange(2, dtype=jnp.uint32),)),
        "key_and_array": (lambda k, x: (k, x + 1), lambda: (keys(2), jnp.ones(2))),
        # refimpl's equations differ from JAX's here (its own while/cond/flip
        # and random programs); the key types of inputs and outputs are JAX's
        "flip": (lambda ks: jnp.flip(ks), lambda: (keys(4),)),
        "scan_carry": (scan_carry, lambda: (keys(), jnp.ones(3))),
        "while_carry": (while_carry, one),
        "cond": (cond, lambda: (True, keys(2))),
        "split": (lambda k: random.split(k), one),
        "uniform": (lambda k: random.uniform(k), one),
    }


# the cases whose whole jaxpr text is JAX's
_SAME_TEXT = (
    "scan_transpose", "identity", "reshape", "index", "slice", "concatenate", "broadcast_to",
    "select", "jit_inside", "key_data", "wrap_key_data", "key_and_array",
)  # fmt: skip


def _shown(ns, name):
    fun, args = _cases(ns)[name]
    closed = ns.make_jaxpr(fun)(*args())
    jaxpr = closed.jaxpr
    return {
        "text": str(closed) if name in _SAME_TEXT else None,
        "invars": [str(v.aval) for v in jaxpr.invars],
        "outvars": [str(v.aval) for v in jaxpr.outvars],
        "avals": ([str(a) for a in closed.in_avals], [str(a) for a in closed.out_avals]),
        "key_typed": [type(v.aval.dtype).__name__ for v in jaxpr.invars],
    }


def test_make_jaxpr_shows_typed_keys_as_jax(backend):
    # every case in one test (the conftest thins parametrizations): the
    # differing names are reported together
    got = {n: _shown(ri, n) for n in _cases(jax)}
    want = {n: _shown(jax, n) for n in _cases(jax)}
    for n in want:  # the key dtype's class: JAX's KeyTy is refimpl's KeyDtype
        want[n]["key_typed"] = ["KeyDtype" if t == "KeyTy" else t for t in want[n]["key_typed"]]
    differ = {n: (got[n], want[n]) for n in want if got[n] != want[n]}
    assert differ == {}


def test_scan_jaxpr_of_keys_as_random_test(backend):
    # random_test.py KeyArrayTest.test_scan_jaxpr, its assertions
    fun, args = _cases(ri)["scan_transpose"]
    jaxpr = ri.make_jaxpr(fun)(*args()).jaxpr
    (a,) = jaxpr.invars
    assert isinstance(a.aval, ri.core_api.ShapedArray)
    assert a.aval.shape == (3, 4, 5)
    assert type(a.aval.dtype) is ri.random.KeyDtype
    (e,) = jaxpr.eqns
    (b,) = e.outvars
    assert b.aval.shape == (3, 5, 4)
    assert type(b.aval.dtype) is ri.random.KeyDtype


def _evaluated(ns, eval_jaxpr, closed=False):
    out = {}
    for name, (fun, args) in _cases(ns).items():
        made = args()
        program = ns.make_jaxpr(fun)(*made)
        results = eval_jaxpr(program if closed else program.jaxpr, program.consts, *made)
        is_key = [ns.numpy.issubdtype(r.dtype, ns.dtypes.prng_key) for r in results]
        out[name] = [
            np.asarray(ns.random.key_data(r) if k else r)
            for r, k in zip(results, is_key, strict=True)
        ]
    return out


def _as_fun(ns):
    # jaxpr_as_fun of the ClosedJaxpr itself (the constants its own)
    return lambda jaxpr, consts, *args: ns.extend.core.jaxpr_as_fun(jaxpr)(*args)


@pytest.mark.parametrize("how", ["eval_jaxpr", "jaxpr_as_fun"])
def test_evaluating_the_shown_jaxpr_gives_keys(backend, how):
    if how == "eval_jaxpr":
        got = _evaluated(ri, ri.core_api.eval_jaxpr)
        want = _evaluated(jax, jax.core.eval_jaxpr)
    else:
        got = _evaluated(ri, _as_fun(ri), closed=True)
        want = _evaluated(jax, _as_fun(jax), closed=True)
    assert got.keys() == want.keys()
    for name in want:
        assert len(got[name]) == len(want[name]), name
        for g, w in zip(got[name], want[name], strict=True):
            np.testing.assert_array_equal(g, w, err_msg=name)
