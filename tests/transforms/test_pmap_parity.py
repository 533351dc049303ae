"""pmap's options against JAX 0.10.2 (4 host devices, in a fresh JAX process):
``axis_size`` (checked against the mapped size only) and collectives over
``axis_index_groups`` of different sizes under jit and grad."""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from tests.helpers.jax_oracle import in_fresh_jax

JAX_PRELUDE = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np, jax
from jax import lax
def outcome(thunk):
    try:
        return np.asarray(thunk()).tolist()
    except Exception as error:
        return type(error).__name__
"""

PROGRAMS = {
    "matching": "pmap(lambda x: x + 1, axis_size=2)(np.ones((2, 3), np.float32))",
    "mismatch": "pmap(lambda x: x + 1, axis_size=3)(np.ones((2, 3), np.float32))",
    "nothing_mapped": ("pmap(lambda x: x * 2, in_axes=None, axis_size=4)(np.float32(3.0))"),
    "no_arguments": "pmap(lambda: lax.axis_index('i'), 'i', axis_size=2)()",
    "uneven_jit": (
        "jit(pmap(lambda x: lax.psum(x, 'i', axis_index_groups=[[0, 1, 2], [3]]), 'i'))"
        "(np.arange(8, dtype=np.float32).reshape(4, 2))"
    ),
}


@pytest.fixture(scope="module")
def jax_outcomes():
    body = JAX_PRELUDE + "from jax import pmap, jit\nresult = {\n"
    body += "".join(f"    {k!r}: outcome(lambda: {v}),\n" for k, v in PROGRAMS.items())
    return in_fresh_jax(body + "}\n")


pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py


def _outcome(thunk):
    try:
        return np.asarray(thunk()).tolist()
    except Exception as error:  # noqa: BLE001 - compared with what JAX raised
        return type(error).__name__


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_pmap_program_against_jax(jax_outcomes, backend, name):
    def pmap(fun, *args, **kwargs):
        return ri.pmap(fun, *args, backend=backend, **kwargs)

    scope = {"np": np, "lax": lax, "pmap": pmap, "jit": ri.jit}
    got = _outcome(lambda: eval(PROGRAMS[name], scope))  # noqa: S307 - our own table
    assert got == jax_outcomes[name]


LOWER_JAX = (
    JAX_PRELUDE
    + """
f = jax.pmap(lambda x, n: x * n - lax.pmean(x, 'i'), 'i', static_broadcasted_argnums=1)
x = np.arange(16, dtype=np.float32).reshape(4, 4)
c = f.lower(x, 3).compile()
result = {
    "value": outcome(lambda: c(x)),
    "other_tree": outcome(lambda: c([x])),
    "other_dtype": outcome(lambda: c(x.astype(np.int32))),
    "other_shape": outcome(lambda: c(x[:2])),
    "in_avals": [[list(a.shape), str(a.dtype)] for a in c.in_avals[0]],
}
"""
)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_pmap_lower_compile_against_jax(backend):
    expected = in_fresh_jax(LOWER_JAX)
    f = ri.pmap(
        lambda x, n: x * n - lax.pmean(x, "i"), "i", static_broadcasted_argnums=1, backend=backend
    )
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    c = f.lower(x, 3).compile()
    got = {
        "value": _outcome(lambda: c(x)),
        "other_tree": _outcome(lambda: c([x])),
        "other_dtype": _outcome(lambda: c(x.astype(np.int32))),
        "other_shape": _outcome(lambda: c(x[:2])),
        "in_avals": [[list(a.shape), str(a.dtype)] for a in c.in_avals[0]],
    }
    assert got == expected


WEAK_JAX = (
    JAX_PRELUDE
    + """
out = jax.pmap(lambda x: lax.ppermute(2.0, 'i', [(0, 1)]), 'i')(np.ones(4, np.float32))
result = [np.asarray(out).tolist(), str(out.dtype), bool(out.weak_type)]
"""
)


def test_ppermute_of_a_python_scalar_stays_weak(backend):
    # devices no pair sends to get zeros of the operand's (weak) type
    expected = in_fresh_jax(WEAK_JAX)
    f = ri.pmap(lambda x: lax.ppermute(2.0, "i", [(0, 1)]), "i", backend=backend)
    out = f(np.ones(4, np.float32))
    assert [np.asarray(out).tolist(), str(out.dtype), bool(out.weak_type)] == expected


FLAGS_JAX = (
    JAX_PRELUDE
    + """
import jax.numpy as jnp
y = jax.pmap(lambda x: x * 2)(np.ones((4, 3), np.float32))
a = jnp.ones(3)
result = [y.is_fully_replicated, y.is_fully_addressable, a.is_fully_replicated,
          a.is_fully_addressable]
"""
)


def test_replication_flags_of_pmap_outputs(backend):
    expected = in_fresh_jax(FLAGS_JAX)
    y = ri.pmap(lambda x: x * 2, backend=backend)(np.ones((4, 3), np.float32))
    a = ri.numpy.ones(3)
    got = [y.is_fully_replicated, y.is_fully_addressable, a.is_fully_replicated]
    assert got + [a.is_fully_addressable] == expected


INNER_JIT_JAX = (
    JAX_PRELUDE
    + """
x = np.ones(4, np.float32)
result = [
    outcome(lambda: jax.pmap(lambda v: jax.jit(lambda: lax.axis_index('i'))(), 'i')(x)),
    outcome(lambda: jax.pmap(lambda v: jax.jit(lambda: lax.axis_index('i') + 1)() + v, 'i')(x)),
    outcome(lambda: jax.vmap(lambda v: jax.jit(lambda: lax.axis_index('i'))(), axis_name='i')(x)),
]
"""
)


def test_jit_using_the_axis_with_no_mapped_operand(backend):
    # the jit's only operand-free use of the axis: its equation goes to the
    # axis's trace (it ran as if no axis were bound: NotImplementedError on
    # ref, a LoweringError on pjrt)
    expected = in_fresh_jax(INNER_JIT_JAX)
    x = np.ones(4, np.float32)
    got = [
        _outcome(lambda: ri.pmap(lambda v: ri.jit(lambda: lax.axis_index("i"))(), "i")(x)),
        _outcome(lambda: ri.pmap(lambda v: ri.jit(lambda: lax.axis_index("i") + 1)() + v, "i")(x)),
    ]
    inner = ri.jit(lambda: lax.axis_index("i"))
    got.append(_outcome(lambda: ri.vmap(lambda v: inner(), axis_name="i")(x)))
    assert got == expected
