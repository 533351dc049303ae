"""A Python int argument of jit outside the default int type: JAX 0.10.2's
OverflowError and words (naming the argument's path), on both backends,
before and after the call is cached; in-range ints keep JAX's dtype."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri


@pytest.mark.parametrize("body", ["identity", "add_zero", "closure"])
def test_jit_int_overflow_as_jax(backend, body):
    def make(lib):
        return {
            "identity": lambda x: x,
            "add_zero": lambda x: x + 0,
            "closure": lambda x: lib.jit(lambda: x + 0)(),
        }[body]

    f, g = ri.jit(make(ri)), jax.jit(make(jax))
    hi, lo = np.iinfo(np.int32).max, np.iinfo(np.int32).min
    for _ in range(2):  # uncached, then cached
        for bad in (hi + 1, lo - 1):
            with pytest.raises(OverflowError, match="An overflow.*whose argument path is x."):
                f(bad)
            with pytest.raises(OverflowError, match="An overflow.*whose argument path is x."):
                g(bad)
        for good in (hi, lo):
            assert np.asarray(f(good)).dtype == np.asarray(g(good)).dtype
            assert int(f(good)) == int(g(good)) == good


def test_overflow_names_a_nested_argument(backend):
    with pytest.raises(OverflowError, match=r"argument path is d\['a'\]\."):
        ri.jit(lambda d: d["a"])({"a": 2**31})
