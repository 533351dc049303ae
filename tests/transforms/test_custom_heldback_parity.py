"""JAX's custom_api_test.py run against refimpl (issue 29's held-back run,
lane CUSTOM): the programs of its tests where refimpl differed, compared with
JAX 0.10.2 live on both backends.

* ``make_jaxpr(f)(x).pretty_print(use_color=False)`` and ``.literals``
  (custom_api_test's test_pretty_print): the listing ``str`` gives and the
  constants, as JAX's ClosedJaxpr.
"""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

JAX = types.SimpleNamespace(lib=jax, np=jnp)
RI = types.SimpleNamespace(lib=ri, np=rnp)

# --- the ClosedJaxpr methods ---------------------------------------------------------------------


def _programs(n: Any) -> list:
    @n.lib.custom_jvp
    def f(x):
        return x + 1

    f.defjvp(lambda p, t: (f(*p), t[0]))

    @n.lib.custom_vjp
    def g(x):
        return x + 1

    g.defvjp(lambda x: (g(x), ()), lambda _, ct: (ct,))
    x = np.array([4.2], np.float32)
    c = np.arange(3.0, dtype=np.float32)
    return [
        n.lib.make_jaxpr(f)(x),
        n.lib.make_jaxpr(g)(x),
        n.lib.make_jaxpr(lambda y: y * n.np.asarray(c))(x),
    ]


def test_pretty_print_is_the_listing_and_literals_the_constants():
    # custom_api_test's test_pretty_print (the listing itself is refimpl's)
    for n in (JAX, RI):
        for program in _programs(n):
            assert program.pretty_print(use_color=False) == str(program)
            assert program.pretty_print(print_shapes=True, name_stack=False) == str(program)
            assert program.literals is program.consts
            with pytest.raises(TypeError):
                program.pretty_print(False)
    got = [np.asarray(c) for c in _programs(RI)[2].literals]
    want = [np.asarray(c) for c in _programs(JAX)[2].literals]
    assert [(c.dtype, c.tolist()) for c in got] == [(c.dtype, c.tolist()) for c in want]
