"""An unnamed vmap inside or around an unnamed pmap, against JAX 0.10.2 on 4
host devices (in a fresh JAX process), on both backends: the reference
pmap runs its devices in lock step as a batch, and that batch must not be
taken for the vmap's (or the vmap's for it) although both are named
``None``. Host callbacks run once per device with the vmap's members
batched by their ``vmap_method``; a ``custom_vmap`` function's rule sees
the vmap's members only (also in ``vmap(pmap(f))``, where the reference
pmap's batch is met first), and under pmap alone the function itself runs."""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from tests.helpers.jax_oracle import in_fresh_jax

# Shared by both sides: ``jax``, ``jnp`` and ``cb`` are JAX's or refimpl's.
SOURCE = """
import numpy as np
seen, log = [], []

def host(x):
    seen.append(list(np.shape(x)))
    return np.asarray(x) * 2

def with_callback(method):
    def f(x):
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(host, shape, x, vmap_method=method)
    return f

@cb.custom_vmap
def g(x):
    return jnp.sin(x)

@g.def_vmap
def g_rule(size, batched, xs):
    log.append([size, list(batched), list(xs.shape)])
    return jnp.cos(xs), batched[0]

@cb.custom_vmap
def h(x):
    return jax.lax.psum(x, "i")

@h.def_vmap
def h_rule(size, batched, xs):
    log.append([size, list(batched), list(xs.shape)])
    return jax.lax.psum(xs, "i") * 10, batched[0]

x42 = np.arange(8, dtype=np.float32).reshape(4, 2)
x24 = x42.reshape(2, 4)

def outcome(thunk):
    seen.clear()
    log.clear()
    try:
        value = np.asarray(thunk()).round(5).tolist()
    except Exception as error:
        value = type(error).__name__
    return [value, sorted(seen), log[:]]

PROGRAMS = {
    "pmap_vmap_callback_sequential": lambda: jax.pmap(jax.vmap(with_callback("sequential")))(x42),
    "pmap_vmap_callback_expand_dims": lambda: jax.pmap(jax.vmap(with_callback("expand_dims")))(x42),
    "vmap_pmap_callback_expand_dims": lambda: jax.vmap(jax.pmap(with_callback("expand_dims")))(x24),
    "vmap_pmap_callback_broadcast_all": lambda: (
        jax.vmap(jax.pmap(with_callback("broadcast_all")), in_axes=(None,))(x42[:, 0])
    ),
    "vmap_pmap_callback_no_method": lambda: jax.vmap(jax.pmap(with_callback(None)))(x24),
    "pmap_callback_no_method": lambda: jax.pmap(with_callback(None))(x42[:, 0]),
    "pmap_vmap_custom_vmap": lambda: jax.pmap(jax.vmap(g))(x42),
    "pmap_custom_vmap": lambda: jax.pmap(g)(x42[:, 0]),
    "vmap_pmap_custom_vmap": lambda: jax.vmap(jax.pmap(g))(x24),
    "vmap_pmap_custom_vmap_device_only": lambda: (
        jax.vmap(jax.pmap(lambda a, b: g(a) * b), in_axes=(0, None))(x24, x42[:, 0])
    ),
    "vmap_pmap_custom_vmap_out_axes": lambda: jax.vmap(jax.pmap(g), 1, 1)(x42),
    "jit_pmap_custom_vmap": lambda: jax.jit(jax.pmap(g))(x42[:, 0]),
    "vmap_pmap_jvp_custom_vmap": lambda: jax.vmap(
        jax.pmap(lambda a: jax.jvp(g, (a,), (a,)))
    )(x24),
    "pmap_named_custom_vmap_psum": lambda: jax.pmap(h, "i")(x42[:, 0]),
    "vmap_pmap_named_custom_vmap_psum": lambda: jax.vmap(jax.pmap(h, "i"))(x24),
    "pmap_named_vmap_psum": lambda: jax.pmap(jax.vmap(lambda v: jax.lax.psum(v, "i")), "i")(x42),
    "vmap_pmap_named_pmax_nan": lambda: jax.vmap(
        jax.pmap(lambda v: jax.lax.pmax(v, "i"), "i")
    )(np.where(x24 == 3, np.nan, x24)),
    "pmap_vmap_named_pmax_nan": lambda: jax.pmap(
        jax.vmap(lambda v: jax.lax.pmax(v, "i"), axis_name="i")
    )(np.where(x42 == 3, np.nan, x42)),
}
result = {name: outcome(thunk) for name, thunk in PROGRAMS.items()}
"""

NAMES = [
    "pmap_vmap_callback_sequential",
    "pmap_vmap_callback_expand_dims",
    "vmap_pmap_callback_expand_dims",
    "vmap_pmap_callback_broadcast_all",
    "vmap_pmap_callback_no_method",
    "pmap_callback_no_method",
    "pmap_vmap_custom_vmap",
    "pmap_custom_vmap",
    "vmap_pmap_custom_vmap",
    "vmap_pmap_custom_vmap_device_only",
    "vmap_pmap_custom_vmap_out_axes",
    "jit_pmap_custom_vmap",
    "vmap_pmap_jvp_custom_vmap",
    "pmap_named_custom_vmap_psum",
    "vmap_pmap_named_custom_vmap_psum",
    "pmap_named_vmap_psum",
    "vmap_pmap_named_pmax_nan",
    "pmap_vmap_named_pmax_nan",
]


@pytest.fixture(scope="module")
def jax_results():
    prelude = (
        "import os\n"
        'os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"\n'
        "import jax, jax.numpy as jnp\n"
        "import jax.custom_batching as cb\n"
    )
    return in_fresh_jax(prelude + SOURCE)


pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py


def _refimpl_results():
    import refimpl.custom_batching as rcb  # noqa: PLC0415 - the module under test, as jax's
    import refimpl.numpy as rnp  # noqa: PLC0415

    scope = {"jax": ri, "jnp": rnp, "cb": rcb}
    exec(SOURCE, scope)  # noqa: S102 - the programs shared with the JAX process
    return scope["result"]


@pytest.mark.parametrize("name", NAMES)
def test_unnamed_vmap_and_pmap_as_jax(backend, jax_results, name):
    got = _refimpl_results()[name]
    want = jax_results[name]
    if isinstance(want[0], str):  # the exception's class
        assert got[0] == want[0], (got, want)
    else:  # NaN equal to NaN
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0], np.float32))
    assert got[1:] == want[1:], (got, want)  # the callback's calls, the rule's calls
