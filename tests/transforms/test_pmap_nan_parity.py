"""pmax/pmin of NaN over a pmap's devices as JAX 0.10.2 on 4 CPU devices
(fresh JAX process): XLA's all-reduce skips a NaN (the max/min of the other
members; -inf/+inf when every member holds NaN), also within
axis_index_groups and for a value the same on every device; under vmap NaN
propagates. The reference backend propagated NaN over devices too."""

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

SETUP = (
    "nan = np.nan\n"
    "x = np.array([[1., nan, 3., nan], [4., 2., nan, nan], [nan, 5., 0., nan],"
    " [0., -1., 5., nan]], np.float32)\n"
)

PROGRAMS = {
    f"{op}_{form}": code.format(op=op)
    for op in ("pmax", "pmin")
    for form, code in {
        "pmap": "pmap(lambda v: lax.{op}(v, 'i'), 'i')(x)",
        "groups": "pmap(lambda v: lax.{op}(v, 'i', axis_index_groups=[[0, 2], [1, 3]]), 'i')(x)",
        "same_everywhere": "pmap(lambda v: lax.{op}(v * 0 + np.float32(nan), 'i'), 'i')(x)",
        "vmap": "vmap(lambda v: lax.{op}(v, 'i'), axis_name='i')(x)",
        "int": "pmap(lambda v: lax.{op}(v, 'i'), 'i')(np.arange(8).reshape(4, 2))",
    }.items()
}


@pytest.fixture(scope="module")
def jax_outcomes():
    body = JAX_PRELUDE + SETUP + "from jax import pmap, vmap\nresult = {\n"
    body += "".join(f"    {k!r}: outcome(lambda: {v}),\n" for k, v in PROGRAMS.items())
    return in_fresh_jax(body + "}\n")


pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_pmax_pmin_nan_against_jax(jax_outcomes, backend, name):
    def pmap(fun, *args, **kwargs):
        return ri.pmap(fun, *args, backend=backend, **kwargs)

    scope = {"np": np, "lax": lax, "pmap": pmap, "vmap": ri.vmap}
    exec(SETUP, scope)  # noqa: S102 - our own table
    got = np.asarray(eval(PROGRAMS[name], scope))  # noqa: S307 - our own table
    want = np.asarray(jax_outcomes[name])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(got.dtype))
