"""Donation against real JAX (jax.jit(donate_argnums=...) on CPU).

Each case runs the same function under ``jax.jit`` and ``ri.jit`` on fresh
arguments and records, per input leaf, whether it was deleted; per output
leaf, which input's buffer it reuses (``unsafe_buffer_pointer`` equality);
and whether the "not usable" warning was given. The two records must be
equal, except for the intentional differences listed in ``DIFFERENCES``,
which are asserted as they are (so a change on either side shows up here).
"""

from __future__ import annotations

import types
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import refimpl as ri
from tests.helpers.jax_oracle import in_fresh_jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_platforms", "cpu")

RI = types.SimpleNamespace(
    name="ref",
    jit=ri.jit,
    lax=ri.lax,
    put=ri.device_put,
    array=ri.device_put,
    leaves=ri.tree_leaves,
)
# jax.device_put of a 64-byte-aligned NumPy array may share the NumPy memory,
# and XLA never reuses such a buffer; jnp.array always copies.
JAX = types.SimpleNamespace(
    name="jax",
    jit=jax.jit,
    lax=jax.lax,
    put=jax.device_put,
    array=jnp.array,
    leaves=jax.tree.leaves,
)


class Raw:
    """Marks an argument leaf to pass as a NumPy array (not a device array)."""

    def __init__(self, value: np.ndarray) -> None:
        self.value = value


def f32(*values):
    return np.asarray(values, np.float32)


@dataclass
class Case:
    fn: Any  # lib -> the function to jit
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    jit_kwargs: dict = field(default_factory=dict)


def nested_inner_donation(lib):
    inner = lib.jit(lambda y: y * 2, donate_argnums=0)
    return lambda x: inner(x) + 1


def nested_outer_donation(lib):
    inner = lib.jit(lambda y: y * 2)
    return lambda x: inner(x) + 1


CASES = {
    "unary": Case(
        lambda L: lambda x: x * 2 + 1, (f32(1, 2, 3),), jit_kwargs=dict(donate_argnums=0)
    ),
    "identity donated": Case(
        lambda L: lambda x: x, (f32(1, 2),), jit_kwargs=dict(donate_argnums=0)
    ),
    "identity": Case(lambda L: lambda x: x, (f32(1, 2),)),
    "pass-through of the undonated": Case(
        lambda L: lambda a, b: (a, b + 1), (f32(1, 2), f32(3, 4)), jit_kwargs=dict(donate_argnums=1)
    ),
    "donate_argnames, keyword call": Case(
        lambda L: lambda a, b: a + b, (f32(1, 2),), dict(b=f32(3, 4)), dict(donate_argnames="b")
    ),
    "donate_argnums, keyword call": Case(
        lambda L: lambda a, b: a + b, (f32(1, 2),), dict(b=f32(3, 4)), dict(donate_argnums=1)
    ),
    "donate_argnames, positional call": Case(
        lambda L: lambda a, b: a + b, (f32(1, 2), f32(3, 4)), jit_kwargs=dict(donate_argnames="b")
    ),
    "pytree": Case(
        lambda L: lambda s: {"w": s["w"] * 2, "b": s["b"] - 1},
        ({"w": np.ones((2, 3), np.float32), "b": f32(1, 2, 3)},),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "first free output in order": Case(
        lambda L: lambda a, b: (L.lax.slice(a, (0,), (2,)), a + b, a - b),
        (f32(1, 2, 3), f32(4, 5, 6)),
        jit_kwargs=dict(donate_argnums=(0, 1)),
    ),
    "second input only": Case(
        lambda L: lambda a, b: (L.lax.slice(b, (0,), (2,)) + 1, a * b),
        (f32(1, 2, 3), f32(4, 5, 6)),
        jit_kwargs=dict(donate_argnums=1),
    ),
    "weak input, strong output": Case(
        lambda L: lambda x: L.lax.convert_element_type(x, np.float32) * np.float32(2),
        (2.0,),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "same result twice": Case(
        lambda L: lambda x: (lambda y: (y, y))(x * 2),
        (f32(1, 2),),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "donated input also returned": Case(
        lambda L: lambda x: (x * 2, x), (f32(1, 2),), jit_kwargs=dict(donate_argnums=0)
    ),
    "swap": Case(
        lambda L: lambda a, b: (b, a),
        (f32(1, 2), f32(3, 4)),
        jit_kwargs=dict(donate_argnums=(0, 1)),
    ),
    "numpy in a donated position": Case(
        lambda L: lambda x: x + 1, (Raw(f32(1, 2)),), jit_kwargs=dict(donate_argnums=0)
    ),
    "inner jit donation under an outer trace": Case(nested_inner_donation, (f32(1, 2),)),
    "outer donation around an inner jit": Case(
        nested_outer_donation, (f32(1, 2),), jit_kwargs=dict(donate_argnums=0)
    ),
    # --- cases where the reference differs on purpose (see DIFFERENCES) ---
    "two donated, one matching output": Case(
        lambda L: lambda a, b: a + b, (f32(1, 2), f32(3, 4)), jit_kwargs=dict(donate_argnums=(0, 1))
    ),
    "unused donated argument": Case(
        lambda L: lambda a, b: b * 2, (f32(1, 2, 3), f32(1, 2)), jit_kwargs=dict(donate_argnums=0)
    ),
    "dtype change, same bytes": Case(
        lambda L: lambda x: L.lax.convert_element_type(x, np.int32),
        (f32(1, 2, 3),),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "shape change, same bytes": Case(
        lambda L: lambda x: L.lax.reshape(x * 2, (1, 3)),
        (f32(1, 2, 3),),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "dtype change, fewer bytes": Case(
        lambda L: lambda x: L.lax.convert_element_type(x, np.float16),
        (f32(1, 2, 3, 4),),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "smaller output": Case(
        lambda L: lambda x: L.lax.slice(x, (0,), (2,)) * 2,
        (f32(1, 2, 3, 4),),
        jit_kwargs=dict(donate_argnums=0),
    ),
    "negative donate_argnums": Case(
        lambda L: lambda a, b: a + b, (f32(1, 2), f32(3, 4)), jit_kwargs=dict(donate_argnums=-2)
    ),
}

# case -> {field: (what JAX 0.10.2 does, what the reference does)}
DIFFERENCES = {
    # SPEC: a donated input is deleted whether or not its buffer was reused.
    # JAX keeps donated inputs it could not use.
    "two donated, one matching output": {"deleted": ([True, False], [True, True])},
    # JAX prunes unused arguments before donation (no deletion, no warning).
    "unused donated argument": {
        "deleted": ([False, False], [True, False]),
        "warned": (False, True),
    },
    # SPEC matches on shape and dtype; XLA on CPU also reuses a buffer of the
    # same byte size (and then JAX gives no warning).
    "dtype change, same bytes": {"aliases": ([0], [None]), "warned": (False, True)},
    "shape change, same bytes": {"aliases": ([0], [None]), "warned": (False, True)},
    # Here JAX hands the buffer to XLA as a "donor" it did not use: kept, no warning.
    "dtype change, fewer bytes": {"deleted": ([False], [True]), "warned": (False, True)},
    "smaller output": {"deleted": ([False], [True])},
    # JAX 0.10.2 accepts negative donate_argnums but never donates them;
    # SPEC resolves them per call like static_argnums.
    "negative donate_argnums": {
        "deleted": ([False, False], [True, False]),
        "aliases": ([None], [0]),
    },
}


def make_args(lib, case: Case):
    def put(leaf):
        if isinstance(leaf, Raw):
            return leaf.value.copy()
        return lib.array(leaf)

    is_leaf = lambda v: isinstance(v, Raw)  # noqa: E731
    args = ri.tree_map(put, case.args, is_leaf=is_leaf)
    kwargs = ri.tree_map(put, case.kwargs, is_leaf=is_leaf)
    return args, kwargs


def pointer(leaf) -> int | None:
    if isinstance(leaf, np.ndarray):
        return leaf.ctypes.data
    return leaf.unsafe_buffer_pointer()


def observe(lib, case: Case) -> dict[str, Any]:
    args, kwargs = make_args(lib, case)
    in_leaves = lib.leaves((args, kwargs))
    pointers = [pointer(leaf) if not isinstance(leaf, float) else None for leaf in in_leaves]
    numpy_before = [np.array(leaf) for leaf in in_leaves if isinstance(leaf, np.ndarray)]
    jitted = lib.jit(case.fn(lib), **case.jit_kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = lib.leaves(jitted(*args, **kwargs))
    numpy_after = [leaf for leaf in in_leaves if isinstance(leaf, np.ndarray)]
    for before, after in zip(numpy_before, numpy_after, strict=True):
        np.testing.assert_array_equal(before, after)  # NumPy inputs are never changed
    return {
        "deleted": [bool(leaf.is_deleted()) for leaf in in_leaves if hasattr(leaf, "is_deleted")],
        "aliases": [
            pointers.index(pointer(out)) if pointer(out) in pointers else None for out in outs
        ],
        "warned": any("not usable" in str(w.message) for w in caught),
        "values": [np.asarray(out).tolist() for out in outs],
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_donation_matches_jax(name):
    case = CASES[name]
    with_jax, with_ref = observe(JAX, case), observe(RI, case)
    assert with_ref["values"] == with_jax["values"]
    for key in ("deleted", "aliases", "warned"):
        expected_jax, expected_ref = DIFFERENCES.get(name, {}).get(key, (None, None))
        if expected_jax is None:
            assert with_ref[key] == with_jax[key], key
        else:  # an intentional difference: both sides pinned
            assert (with_jax[key], with_ref[key]) == (expected_jax, expected_ref), key


def test_every_listed_difference_has_a_case():
    assert set(DIFFERENCES) <= set(CASES)


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("lib", [JAX, RI], ids=["jax", "ref"])
def test_the_same_array_twice_with_donation_deletes_nothing(lib):
    x = lib.array(f32(1, 2))
    f = lib.jit(lambda a, b: a + b, donate_argnums=0)
    # Difference: JAX fails inside Execute with a JaxRuntimeError (a
    # RuntimeError); the reference raises ValueError before tracing.
    expected = ValueError if lib is RI else RuntimeError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(expected, match="same array" if lib is RI else "donated"):
            f(x, x)
    assert not x.is_deleted()


@pytest.mark.parametrize("lib", [JAX, RI], ids=["jax", "ref"])
def test_errors_while_tracing_delete_nothing(lib):
    def broken(a):
        raise ZeroDivisionError("injected")

    x = lib.array(f32(1, 2, 3))
    with pytest.raises(ZeroDivisionError):
        lib.jit(broken, donate_argnums=0)(x)
    assert not x.is_deleted()
    y = lib.array(f32(1, 2, 3))
    with pytest.raises(TypeError):
        lib.jit(lambda a: a + lib.array(f32(1, 2, 3, 4)), donate_argnums=0)(y)
    assert not y.is_deleted()


# JAX's answer, from a JAX nothing else has run in (tests/helpers/jax_oracle.py
# says why): the error class and message of each use of a donated array
_JAX_DELETED_USES = """
import jax, jax.numpy as jnp, numpy as np
x = jnp.array(np.array([1, 2, 3], np.float32))
jax.jit(lambda a: a + 1, donate_argnums=0)(x)
result = []
for use in (lambda: x + 1, lambda: np.asarray(x), lambda: repr(x), lambda: x[0]):
    try:
        use()
        result.append(None)
    except Exception as error:
        result.append([type(error).__name__, str(error)])
"""


def test_deleted_array_message():
    x = RI.array(f32(1, 2, 3))
    RI.jit(lambda a: a + 1, donate_argnums=0)(x)
    theirs = in_fresh_jax(_JAX_DELETED_USES)
    uses = (lambda: x + 1, lambda: np.asarray(x), lambda: repr(x), lambda: x[0])
    for use, (their_class, their_message) in zip(uses, theirs, strict=True):
        with pytest.raises(RuntimeError) as excinfo:
            use()
        assert their_class == "RuntimeError"
        # Same first sentence; the reference adds who the array was donated to.
        first = "Array has been deleted with shape=float32[3]."
        assert their_message.startswith(first) and str(excinfo.value).startswith(first)
        assert "donated to '<lambda>'" in str(excinfo.value)


# --- device_put against JAX --------------------------------------------------------------


@pytest.mark.parametrize("may_alias", [True, False, None])
@pytest.mark.parametrize("donate", [True, False])
def test_device_put_flags_against_jax(may_alias, donate):
    results = {}
    for lib in (JAX, RI):
        x = lib.array(f32(1, 2, 3))
        before = x.unsafe_buffer_pointer()
        try:
            y = lib.put(x, donate=donate, may_alias=may_alias)
        except ValueError:
            results[lib.name] = "ValueError"
            continue
        results[lib.name] = {
            "is x": y is x,
            "x deleted": x.is_deleted(),
            "same buffer": y.unsafe_buffer_pointer() == before,
        }
    if donate and not may_alias:
        # Difference: JAX on CPU returns a new Array on the same buffer and
        # keeps x; SPEC deletes x ("copy or reuse; x deleted").
        assert results["jax"] == {"is x": False, "x deleted": False, "same buffer": True}
        assert results["ref"] == {"is x": False, "x deleted": True, "same buffer": True}
    else:
        assert results["ref"] == results["jax"]


def test_device_put_may_alias_with_a_new_placement_against_jax():
    # Difference: JAX commits by making a second Array on x's buffer; the
    # reference copies, because two Arrays never share a buffer (donating one
    # would change the other).
    x = jax.device_put(f32(1, 2))
    y = jax.device_put(x, jax.devices()[0], may_alias=True)
    assert y is not x and y.committed and y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    a = ri.device_put(f32(1, 2))
    b = ri.device_put(a, ri.devices()[0], may_alias=True)
    assert b is not a and b.committed and b.unsafe_buffer_pointer() != a.unsafe_buffer_pointer()


@pytest.mark.parametrize("may_alias", [True, None])
def test_device_put_of_a_deleted_array_against_jax(may_alias):
    # Difference: JAX returns a deleted x as it is when it may alias; SPEC
    # says device_put of a deleted array raises the deleted-array error.
    x = jax.device_put(f32(1, 2))
    x.delete()
    assert jax.device_put(x, may_alias=may_alias) is x
    a = ri.device_put(f32(1, 2))
    a.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        ri.device_put(a, may_alias=may_alias)
    for lib, gone in ((JAX, x), (RI, a)):  # without aliasing both raise
        with pytest.raises(RuntimeError, match="has been deleted"):
            lib.put(gone, may_alias=False)


def test_device_put_of_numpy_never_shares_memory():
    # Difference: on CPU, jax.device_put of a 64-byte-aligned NumPy array may
    # use the NumPy memory itself; the reference always copies, so the Array
    # owns its buffer and later changes to the NumPy array cannot reach it.
    storage = np.zeros(64, np.float32)
    offset = (-storage.ctypes.data % 64) // 4
    aligned = storage[offset : offset + 16]
    assert aligned.ctypes.data % 64 == 0
    shared = jax.device_put(aligned)
    assert shared.unsafe_buffer_pointer() == aligned.ctypes.data
    ours = ri.device_put(aligned)
    assert not np.shares_memory(np.asarray(ours), aligned)
