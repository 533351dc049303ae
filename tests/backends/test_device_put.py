"""device_put (the SPEC table), virtual devices and committed placement.

The table and placement rules are checked on the reference backend here, and
against real JAX on 2 virtual CPU devices (in a subprocess, since JAX's
device count is fixed when it starts) at the end of the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import refimpl as ri
from refimpl.backends.ref.arrays import Device


def arr(values, dtype=np.float32) -> ri.Array:
    return ri.device_put(np.asarray(values, dtype=dtype))


def ptr(a: ri.Array) -> int:
    return a.unsafe_buffer_pointer()


@pytest.fixture
def two_devices():
    ri.config.update("ref_num_devices", 2)
    return ri.devices()


# --- the table, for an Array argument ---------------------------------------------


def test_may_alias_and_donate_both_true_is_a_value_error():
    x = arr([1.0, 2.0])
    with pytest.raises(ValueError, match="may_alias and donate cannot be True at the same time"):
        ri.device_put(x, donate=True, may_alias=True)
    assert not x.is_deleted()


@pytest.mark.parametrize("may_alias", [True, None])
def test_may_alias_without_donation_returns_x_itself(may_alias):
    x = arr([1.0, 2.0])
    assert ri.device_put(x, may_alias=may_alias) is x
    assert not x.is_deleted()
    committed = ri.device_put(arr([1.0]), ri.devices()[0])
    assert ri.device_put(committed, ri.devices()[0], may_alias=may_alias) is committed


@pytest.mark.parametrize("may_alias", [True, None])
def test_may_alias_with_a_new_placement_copies(may_alias):
    x = arr([1.0, 2.0])  # uncommitted
    y = ri.device_put(x, ri.devices()[0], may_alias=may_alias)  # now committed: a new array
    assert y is not x and y.committed and not x.committed
    assert not np.shares_memory(np.asarray(x), np.asarray(y))
    assert not x.is_deleted()


@pytest.mark.parametrize("may_alias", [False, None])
@pytest.mark.parametrize("explicit_device", [False, True])
def test_donate_deletes_x_and_reuses_its_buffer(may_alias, explicit_device):
    x = arr([1.0, 2.0])
    before = ptr(x)
    device = ri.devices()[0] if explicit_device else None
    y = ri.device_put(x, device, donate=True, may_alias=may_alias)
    assert x.is_deleted()
    assert y is not x and not y.is_deleted()
    assert ptr(y) == before  # same device: the buffer moved over
    assert y.committed == explicit_device
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="donated to 'device_put'"):
        x + 1


def test_donate_to_another_device_copies_and_deletes(two_devices):
    x = ri.device_put(arr([1.0, 2.0]), two_devices[0])
    y = ri.device_put(x, two_devices[1], donate=True)
    assert x.is_deleted() and y.device == two_devices[1] and y.committed
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])


@pytest.mark.parametrize("explicit_device", [False, True])
def test_no_alias_no_donate_is_always_a_fresh_buffer(explicit_device):
    x = arr([1.0, 2.0])
    device = ri.devices()[0] if explicit_device else None
    y = ri.device_put(x, device, donate=False, may_alias=False)
    assert y is not x and not x.is_deleted()
    assert ptr(y) != ptr(x)
    assert not np.shares_memory(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


@pytest.mark.parametrize(
    "may_alias, donate", [(True, False), (False, True), (False, False), (None, True), (None, False)]
)
@pytest.mark.parametrize("explicit_device", [False, True])
def test_device_put_of_a_deleted_array_raises_the_deleted_error(may_alias, donate, explicit_device):
    x = arr([1.0, 2.0])
    x.delete()
    device = ri.devices()[0] if explicit_device else None
    with pytest.raises(RuntimeError, match="has been deleted"):
        ri.device_put(x, device, donate=donate, may_alias=may_alias)


def test_flag_conflict_is_reported_before_the_deleted_error():
    x = arr([1.0])
    x.delete()
    with pytest.raises(ValueError, match="cannot be True at the same time"):
        ri.device_put(x, donate=True, may_alias=True)


# --- NumPy arrays, Python scalars, pytrees, tracers -----------------------------------------


@pytest.mark.parametrize(
    "may_alias, donate", [(True, False), (False, True), (False, False), (None, True), (None, False)]
)
def test_numpy_input_is_always_copied_and_never_changed(may_alias, donate):
    n = np.array([1.0, 2.0], np.float32)
    y = ri.device_put(n, donate=donate, may_alias=may_alias)
    assert isinstance(y, ri.Array) and not y.committed and y.device == ri.devices()[0]
    assert not np.shares_memory(np.asarray(y), n)
    assert n.flags.writeable
    n[0] = 9.0
    assert np.asarray(y)[0] == 1.0


def test_python_scalars_are_weakly_typed_and_numpy_is_canonicalized():
    assert ri.device_put(1.0).weak_type and ri.device_put(1.0).dtype == np.float32
    assert ri.device_put(3).weak_type and ri.device_put(3).dtype == np.int32
    assert not ri.device_put(np.float32(1.0)).weak_type
    assert ri.device_put(np.arange(3)).dtype == np.int32  # x64 off
    assert ri.device_put(np.ones(2)).dtype == np.float32


def test_pytree_device_put_donates_every_array_leaf():
    x, n = arr([1.0]), np.array([2.0], np.float32)
    out = ri.device_put({"a": x, "b": n, "c": (3.0,)}, donate=True)
    assert x.is_deleted() and not out["a"].is_deleted()
    np.testing.assert_array_equal(n, [2.0])
    assert float(out["c"][0]) == 3.0 and out["c"][0].weak_type


def test_donating_the_same_array_twice_in_one_pytree_is_a_value_error():
    x = arr([1.0])
    with pytest.raises(ValueError, match="appears twice"):
        ri.device_put((x, x), donate=True)
    assert not x.is_deleted()
    first, second = ri.device_put((x, x))  # without donation: fine
    assert first is x and second is x


def test_a_deleted_leaf_fails_the_whole_pytree_before_any_change():
    x, gone = arr([1.0]), arr([2.0])
    gone.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        ri.device_put([x, gone], donate=True)
    assert not x.is_deleted()


def test_device_put_inside_a_trace_returns_the_tracer():
    x = arr([1.0, 2.0])
    out = ri.jit(lambda a: ri.device_put(a, donate=True) * 2)(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])


def test_bad_arguments(two_devices):
    with pytest.raises(
        ValueError, match="only accepts .* Received invalid value: 1"
    ):  # JAX's class
        ri.device_put(arr([1.0]), 1)
    with pytest.raises(ValueError, match="not one of devices"):
        ri.device_put(arr([1.0]), Device(2))
    with pytest.raises(TypeError, match="may_alias"):
        ri.device_put(arr([1.0]), may_alias="yes")
    with pytest.raises(TypeError, match="not a valid array value"):
        ri.device_put("text")


# --- virtual devices ---------------------------------------------------------------------


def test_virtual_device_count_is_configurable():
    assert ri.devices() == [Device(0)]
    ri.config.update("ref_num_devices", 3)
    assert [d.id for d in ri.devices()] == [0, 1, 2]
    assert ri.devices("ref") == ri.devices()
    with pytest.raises(ValueError):
        ri.config.update("ref_num_devices", 0)


def test_explicit_device_commits(two_devices):
    d0, d1 = two_devices
    x = ri.device_put(np.ones(2, np.float32), d1)
    assert x.device == d1 and x.committed and x.devices() == {d1}
    y = ri.device_put(np.ones(2, np.float32))
    assert y.device == d0 and not y.committed
    kept = ri.device_put(x)  # no device: an Array keeps its placement
    assert kept is x
    moved = ri.device_put(x, may_alias=False)
    assert moved.device == d1 and moved.committed


def test_jit_output_lives_on_its_committed_inputs_device(two_devices):
    d0, d1 = two_devices
    f = ri.jit(lambda a, b: a + b)
    committed = ri.device_put(np.ones(2, np.float32), d1)
    floating = arr([1.0, 2.0])
    out = f(floating, committed)  # the uncommitted input follows
    assert out.device == d1 and out.committed
    out = f(floating, arr([3.0, 4.0]))
    assert out.device == d0 and not out.committed
    out = f(committed, ri.device_put(np.ones(2, np.float32), d1))
    assert out.device == d1 and out.committed


def test_donated_jit_on_another_device_still_aliases(two_devices):
    x = ri.device_put(np.ones(2, np.float32), two_devices[1])
    before = ptr(x)
    out = ri.jit(lambda a: a * 2, donate_argnums=0)(x)
    assert out.device == two_devices[1] and out.committed and ptr(out) == before


def test_committed_inputs_on_two_devices_is_an_error_naming_both(two_devices):
    d0, d1 = two_devices
    x = ri.device_put(np.ones(2, np.float32), d0)
    y = ri.device_put(np.ones(2, np.float32), d1)

    def combine(first, second):
        return first * second

    with pytest.raises(ValueError) as excinfo:
        ri.jit(combine)(x, y)
    message = str(excinfo.value)
    for part in ("incompatible devices", "jit(combine)", "first", "second", "id=0", "id=1"):
        assert part in message
    with pytest.raises(ValueError, match=r"incompatible devices for mul.*id=0.*id=1"):
        x * y  # eager ops follow the same rule


def test_eager_results_follow_committed_inputs(two_devices):
    d1 = two_devices[1]
    x = ri.device_put(np.ones(2, np.float32), d1)
    out = arr([1.0, 2.0]) + x
    assert out.device == d1 and out.committed
    plain = arr([1.0]) + 1
    assert not plain.committed


# --- against JAX on two CPU devices ---------------------------------------------------------

JAX_SCRIPT = textwrap.dedent(
    """
    import json, jax, jax.numpy as jnp, numpy as np
    d0, d1 = jax.devices()
    one = lambda: jnp.ones(2, jnp.float32)
    where = lambda a: [a.devices().pop().id, bool(a.committed)]
    out = {}
    out["put numpy, device"] = where(jax.device_put(np.ones(2, np.float32), d1))
    out["put numpy"] = where(jax.device_put(np.ones(2, np.float32)))
    for flags in [(True, False), (False, True), (False, False), (None, True), (None, False)]:
        x = jax.device_put(one(), d1)
        y = jax.device_put(x, may_alias=flags[0], donate=flags[1])
        out[f"put committed {flags}"] = where(y)
        z = one()
        y = jax.device_put(z, may_alias=flags[0], donate=flags[1])
        out[f"put uncommitted {flags} is x"] = y is z
    add = jax.jit(lambda a, b: a + b)
    out["jit floating+committed"] = where(add(one(), jax.device_put(one(), d1)))
    out["jit floating+floating"] = where(add(one(), one()))
    out["eager floating+committed"] = where(one() + jax.device_put(one(), d1))
    out["put committed to other device"] = where(jax.device_put(jax.device_put(one(), d0), d1))
    x = jax.device_put(one(), d1)
    y = jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    out["donated jit on d1"] = where(y) + [x.is_deleted()]
    for name, fn in [("jit", add), ("eager", lambda a, b: a + b)]:
        try:
            fn(jax.device_put(one(), d0), jax.device_put(one(), d1))
            out[f"{name} two committed"] = "ok"
        except ValueError as e:
            out[f"{name} two committed"] = "ValueError"
    print(json.dumps(out))
    """
)


def ref_placement_results() -> dict:
    d0, d1 = ri.devices()

    def one():
        return arr([1.0, 1.0])

    def where(a):
        return [a.device.id, a.committed]

    out: dict = {}
    out["put numpy, device"] = where(ri.device_put(np.ones(2, np.float32), d1))
    out["put numpy"] = where(ri.device_put(np.ones(2, np.float32)))
    for flags in [(True, False), (False, True), (False, False), (None, True), (None, False)]:
        x = ri.device_put(one(), d1)
        out[f"put committed {flags}"] = where(ri.device_put(x, may_alias=flags[0], donate=flags[1]))
        z = one()
        out[f"put uncommitted {flags} is x"] = (
            ri.device_put(z, may_alias=flags[0], donate=flags[1]) is z
        )
    add = ri.jit(lambda a, b: a + b)
    out["jit floating+committed"] = where(add(one(), ri.device_put(one(), d1)))
    out["jit floating+floating"] = where(add(one(), one()))
    out["eager floating+committed"] = where(one() + ri.device_put(one(), d1))
    out["put committed to other device"] = where(ri.device_put(ri.device_put(one(), d0), d1))
    x = ri.device_put(one(), d1)
    y = ri.jit(lambda a: a * 2, donate_argnums=0)(x)
    out["donated jit on d1"] = where(y) + [x.is_deleted()]
    for name, fn in [("jit", add), ("eager", lambda a, b: a + b)]:
        try:
            fn(ri.device_put(one(), d0), ri.device_put(one(), d1))
            out[f"{name} two committed"] = "ok"
        except ValueError:
            out[f"{name} two committed"] = "ValueError"
    return out


def test_placement_matches_jax_on_two_devices(two_devices):
    pytest.importorskip("jax")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", JAX_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    jax_results = json.loads(done.stdout.strip().splitlines()[-1])
    ours = json.loads(json.dumps(ref_placement_results()))  # tuples -> lists, as JAX's
    assert ours == jax_results
