"""The held-back run of JAX's tests/lax_control_flow_test.py (issue 29): the
classes where refimpl differed from JAX 0.10.2, each run on both backends
and compared with JAX live, leaf by leaf (shape, dtype, weak type, values)
or by exception class."""

from __future__ import annotations

import jax
from jax import lax as jlax

import refimpl as ri
from refimpl import lax
from tests.helpers.parity import assert_modes_same_as_jax

# --- a control-flow trace reads the named axes bound when it is made


def _axis_env_modes(jx, lax_):
    """The same body functions traced under axes of different sizes: each
    call sees its own ``axis_size('i')`` (JAX's cache keys the axis
    environment; test_caches_depend_on_axis_env)."""
    scan_body = lambda c, _: (c + lax_.axis_size("i"), None)  # noqa: E731
    branch = lambda x: x + lax_.axis_size("i")  # noqa: E731
    body = lambda c: (c[0] + 1, c[1] + lax_.axis_size("i"))  # noqa: E731

    def scan():
        return lax_.scan(scan_body, 0, None, length=1)[0]

    def cond():
        return lax_.cond(True, branch, branch, 0)

    def switch():
        return lax_.switch(1, [branch, branch], 0)

    def while_():
        return lax_.while_loop(lambda c: c[0] < 2, body, (0, 0))

    def fori():
        return lax_.fori_loop(0, 2, lambda i, c: branch(c), 0)

    modes = {}
    for name, f in [
        ("scan", scan),
        ("cond", cond),
        ("switch", switch),
        ("while", while_),
        ("fori", fori),
    ]:
        for size in (2, 3, 2):
            v = jx.vmap(f, axis_name="i", axis_size=size, out_axes=None)
            modes[f"{name}_{size}"] = v()
        modes[f"{name}_jit_4"] = jx.jit(jx.vmap(f, axis_name="i", axis_size=4, out_axes=None))()
    return modes


def test_control_flow_traces_read_the_axis_sizes_bound_at_each_call(backend):
    want = _axis_env_modes(jax, jlax)
    got = _axis_env_modes(ri, lax)
    assert_modes_same_as_jax(got, want)
