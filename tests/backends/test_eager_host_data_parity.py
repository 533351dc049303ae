"""Eager operations on host data alone (NumPy arrays, Python numbers, no
operand at all) while pjrt is the default backend run on its default device,
as JAX 0.10.2's run on its own: the result is a pjrt array, and its values
are XLA's (lax_test testOp's float32 ``betainc`` cases compare the eager call
with the jit's; lax_numpy_test testArange compares ``type(jnp.arange(n))``
with ``type(lax.iota(...))``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.backends.pjrt.arrays import PjrtArray

_HOST_PROGRAMS = {
    "lax.iota": lambda lax_, np_: lax_.iota(np.int32, 77),
    "lax.broadcasted_iota": lambda lax_, np_: lax_.broadcasted_iota(np.int32, (2, 3), 1),
    "lax.full": lambda lax_, np_: lax_.full((2,), 3.0),
    "lax.full_like": lambda lax_, np_: lax_.full_like(np.ones(3, np.float32), 2),
    "lax.add": lambda lax_, np_: lax_.add(1.0, 2.0),
    "lax.betainc": lambda lax_, np_: lax_.betainc(np.float32(2), np.float32(3), np.float32(0.4)),
    "sin": lambda lax_, np_: np_.sin(np.ones(3, np.float32)),
    "arange": lambda lax_, np_: np_.arange(77),
    "zeros": lambda lax_, np_: np_.zeros(3),
    "full": lambda lax_, np_: np_.full((2,), 7),
    "eye": lambda lax_, np_: np_.eye(2),
    "linspace": lambda lax_, np_: np_.linspace(0, 1, 4),
    "zeros_like": lambda lax_, np_: np_.zeros_like(np.ones(3, np.float32)),
    # results wrapped from host data without a primitive (as_array)
    "copy": lambda lax_, np_: np_.copy(np.ones(3, np.float32)),
    "fft": lambda lax_, np_: np_.fft.fft(np.ones(4, np.float32)),
    "meshgrid": lambda lax_, np_: np_.meshgrid(np.ones(2, np.float32), np.ones(3, np.float32))[0],
    "tril_indices": lambda lax_, np_: np_.tril_indices(3)[1],
    "r_": lambda lax_, np_: np_.r_[1, 2],
    "frombuffer": lambda lax_, np_: np_.frombuffer(b"\x01\x00\x00\x00", np.int32),
}


@pytest.mark.parametrize("name", sorted(_HOST_PROGRAMS))
def test_host_data_lands_on_the_default_backend(name):
    ri.config.update("backend", "pjrt")
    program = _HOST_PROGRAMS[name]
    want = program(jax.lax, jnp)
    got = program(lax, rnp)
    assert type(got) is PjrtArray, type(got)
    assert got.device == ri.devices("pjrt")[0] and not got.committed
    assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_betainc_of_host_data_is_the_jits_as_jax():
    # JAX's eager betainc on NumPy data is its jit's, bit for bit (testOp's
    # _CompileAndCheck compares them at 1e-6); refimpl's pjrt ran the eager call
    # on the reference backend, whose betainc (its own algorithm) is up to 6e-6
    # from XLA's. (refimpl's lowering is another continued fraction than JAX's:
    # 41 % of these are bit-equal to JAX's, all within 5e-7.)
    ri.config.update("backend", "pjrt")
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.1, 10, 200).astype(np.float32) for _ in range(2))
    x = rng.uniform(0, 1, 200).astype(np.float32)
    want_eager, want_jit = jax.lax.betainc(a, b, x), jax.jit(jax.lax.betainc)(a, b, x)
    np.testing.assert_array_equal(np.asarray(want_eager), np.asarray(want_jit))
    got_eager, got_jit = lax.betainc(a, b, x), ri.jit(lax.betainc)(a, b, x)
    assert type(got_eager) is PjrtArray
    np.testing.assert_array_equal(np.asarray(got_eager), np.asarray(got_jit))
    np.testing.assert_allclose(np.asarray(got_eager), np.asarray(want_eager), rtol=0, atol=1e-6)


# --- where *_like puts its result (lax.full_like's rule, JAX 0.10.2) --------------------------

_LIKE_CASES = {
    f"{name}_{kind}": f"{fn}({kind}{extra})"
    for kind in ("weak", "strong")
    for name, fn, extra in [
        ("zeros_like", "jnp.zeros_like", ""),
        ("ones_like", "jnp.ones_like", ""),
        ("full_like", "jnp.full_like", ", 2.0"),
        ("empty_like", "jnp.empty_like", ""),
        ("lax_full_like", "lax.full_like", ", 1"),
        ("lax_full_like_int", "lax.full_like", ", 1, dtype='int32'"),
        ("lax_full_like_shape", "lax.full_like", ", 1, shape=(2,)"),
        ("zeros_like_element", "jnp.zeros_like", "[0]"),
    ]
}
# a weakly typed and a strongly typed array committed to device 3
_LIKE_SETUP = """
d = jax.devices()
weak = jax.device_put(lax.broadcast(3.0, (3,)), d[3])
strong = jax.device_put(jnp.ones(3), d[3])
result = {}
for name, expression in CASES.items():
    out = eval(expression)
    result[name] = [d.index(out.device), bool(COMMITTED(out)), str(out.dtype), bool(out.weak_type)]
"""


def test_like_functions_place_as_jax(backend):
    from tests.helpers.jax_oracle import in_fresh_jax

    body = (
        "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import jax, jax.numpy as jnp\nfrom jax import lax\n"
        f"CASES = {_LIKE_CASES!r}\nCOMMITTED = lambda x: x._committed\n" + _LIKE_SETUP
    )
    want = in_fresh_jax(body)
    if backend == "ref":
        ri.config.update("ref_num_devices", 4)
    scope = {"jax": ri, "jnp": rnp, "lax": lax, "CASES": _LIKE_CASES}
    scope["COMMITTED"] = lambda x: x.committed
    exec(_LIKE_SETUP, scope)
    got = scope["result"]
    assert got == want


# --- jit drops the arguments its program does not read before placing the call -----------

_UNUSED_CASES = {
    "unused_only": "jax.jit(lambda y: jnp.zeros(3))(x3)",
    "unused_committed_used_uncommitted": "jax.jit(lambda y, z: z * 2)(x3, jnp.ones(3))",
    "unused_on_3_used_on_2": "jax.jit(lambda y, z: z * 2)(x3, x2)",
    "keep_unused": "jax.jit(lambda y: jnp.zeros(3), keep_unused=True)(x3)",
    "keep_unused_clash": "jax.jit(lambda y, z: z * 2, keep_unused=True)(x3, x2)",
    "used_in_part": "jax.jit(lambda y: y[0] * 0 + jnp.zeros(3))(x3)",
    "used_twice_clash": "jax.jit(lambda y, z: z * y)(x3, x2)",
    "returned_as_is": "jax.jit(lambda y, z: (y, z + 1))(x3, jnp.ones(3))[1]",
}
_UNUSED_SETUP = """
d = jax.devices()
x3 = jax.device_put(jnp.ones(3), d[3])
x2 = jax.device_put(jnp.ones(3), d[2])
result = {}
for name, expression in CASES.items():
    try:
        out = eval(expression)
    except Exception as e:
        result[name] = type(e).__name__
        continue
    result[name] = [d.index(out.device), bool(COMMITTED(out))]
"""


def test_jit_places_by_the_arguments_it_uses_as_jax(backend):
    from tests.helpers.jax_oracle import in_fresh_jax

    body = (
        "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import jax, jax.numpy as jnp\n"
        f"CASES = {_UNUSED_CASES!r}\nCOMMITTED = lambda x: x._committed\n" + _UNUSED_SETUP
    )
    want = in_fresh_jax(body)
    if backend == "ref":
        ri.config.update("ref_num_devices", 4)
    scope = {"jax": ri, "jnp": rnp, "CASES": _UNUSED_CASES}
    scope["COMMITTED"] = lambda x: x.committed
    exec(_UNUSED_SETUP, scope)
    # and twice more: the second call is the C++ fast path's hit (pjrt)
    exec(_UNUSED_SETUP, scope)
    assert scope["result"] == want


def test_eager_primitive_jits_are_bounded(monkeypatch):
    # an eager cond of a fresh function each call is a new (primitive, params)
    # key each time: the jits kept are bounded, and the values stay JAX's
    from refimpl.backends.pjrt import backend as pjrt_backend

    monkeypatch.setattr(pjrt_backend, "EAGER_JITS_KEPT", 8)
    x = ri.device_put(np.arange(3.0, dtype=np.float32), ri.devices("pjrt")[0])
    for i in range(20):
        got = ri.lax.cond(True, lambda v, i=i: v + i, lambda v, i=i: v - i, x)
        want = jax.lax.cond(
            True, lambda v, i=i: v + i, lambda v, i=i: v - i, np.arange(3.0, dtype=np.float32)
        )
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert len(pjrt_backend._eager_jitted) <= 8
