"""``ShapeDtypeStruct(..., is_ref=True)``: the abstract type of a Ref
argument, for ``jit(f).trace`` / ``lower`` of a function taking a Ref, as in
JAX 0.10.2. Each case runs on both backends and asks JAX for the expected
behaviour."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import refimpl as ri
import refimpl.numpy as rnp


def _bump(r):
    r[...] += 1.0
    return r[...] * 2


def test_is_ref_struct_repr_and_equality(backend):
    for m, np_ in ((jax, jnp), (ri, rnp)):
        s = m.ShapeDtypeStruct((3,), np_.float32, is_ref=True)
        plain = m.ShapeDtypeStruct((3,), np_.float32)
        assert s.is_ref and not plain.is_ref
        assert s != plain
        assert hash(s) == hash(m.ShapeDtypeStruct((3,), np_.float32, is_ref=True))
    assert repr(ri.ShapeDtypeStruct((3,), rnp.float32, is_ref=True)) == repr(
        jax.ShapeDtypeStruct((3,), jnp.float32, is_ref=True)
    )


def test_trace_and_lower_a_function_taking_a_ref(backend):
    def run(m, np_):
        s = m.ShapeDtypeStruct((3,), np_.float32, is_ref=True)
        jf = m.jit(_bump)
        info = jf.trace(s).out_info
        compiled = jf.lower(s).compile()
        r = m.new_ref(np_.arange(3.0, dtype=np_.float32))
        out = compiled(r)
        return info.shape, np.dtype(info.dtype), np.asarray(out), np.asarray(r[...])

    want = run(jax, jnp)
    got = run(ri, rnp)
    assert got[:2] == want[:2]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])
