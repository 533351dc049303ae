"""Subclasses of the Python scalar types (an ``IntEnum`` member, a user
``int`` subclass) are Python scalars, as in JAX 0.10.2: a jit argument traced
as a weak int32, an operand of jnp/lax functions and of tracer operators under
vmap and grad, and ``grad``'s TypeError for an integer input. refimpl refused
them as "not a valid array value". Both backends, against JAX."""

from __future__ import annotations

import enum

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Count(int):
    pass


class Scale(float):
    pass


def _observe(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return ("raise", type(e))
    return ("ok", np.asarray(out).dtype, bool(getattr(out, "weak_type", False)), np.asarray(out))


def _same(got_fn, want_fn):
    got, want = _observe(got_fn), _observe(want_fn)
    assert got[:3] == want[:3], (got, want)
    if want[0] == "ok":
        np.testing.assert_array_equal(got[3], want[3])


_PROGRAMS = {
    "jit_enum": lambda api, np_: api.jit(lambda x: x * 2)(Color.GREEN),
    "jit_int_subclass": lambda api, np_: api.jit(lambda x: x + 1)(Count(3)),
    "jit_float_subclass": lambda api, np_: api.jit(lambda x: x + 1)(Scale(1.5)),
    "asarray": lambda api, np_: np_.asarray(Color.RED),
    "add_float": lambda api, np_: np_.add(Color.RED, 1.5),
    "lax_add": lambda api, np_: api.lax.add(Color.RED, 2),
    "vmap_operand": lambda api, np_: api.vmap(lambda x, c: x * c, in_axes=(0, None))(
        np_.arange(3.0), Color.GREEN
    ),
    "grad_operand": lambda api, np_: api.grad(lambda x, c: x * c)(2.0, Color.GREEN),
    "grad_of_enum": lambda api, np_: api.grad(lambda c: c * 1.0)(Color.GREEN),
    "static_enum": lambda api, np_: api.jit(
        lambda x, c: x * int(c) if c == Color.GREEN else x, static_argnums=1
    )(np.float32(1.5), Color.GREEN),
}


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_int_subclass_as_jax(backend, name):
    program = _PROGRAMS[name]
    _same(lambda: program(ri, rnp), lambda: program(jax, jax.numpy))


def test_a_too_large_int_subclass_overflows(backend):
    with pytest.raises(OverflowError):
        jax.jit(lambda x: x)(Count(2**40))
    with pytest.raises(OverflowError):
        ri.jit(lambda x: x)(Count(2**40))
