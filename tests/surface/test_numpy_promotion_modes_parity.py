"""JAX's numpy promotion modes, ``jax_numpy_rank_promotion`` ("allow", "warn",
"raise") and ``jax_numpy_dtype_promotion`` ("standard", "strict"), compared
with JAX 0.10.2 live on both backends: what jnp functions return, warn or raise
under each (eager and under jit), weak Python scalars under "strict", the
retrace when a mode changes, and the flag / thread-local block levels
(``.value``, ``.get_global()``, ``config.update``). JAX's own tests:
lax_numpy_test.py testDisableNumpyRankPromotionBroadcasting and
testPreferredElementType, api_test.py test_rank_promotion_forces_retrace."""

from __future__ import annotations

import re
import threading
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import as_jax

LIBS = {"jax": (jax, jnp), "refimpl": (ri, rnp)}


def _normalized(message: str) -> str:
    # JAX names the dtypes of a failed strict join in the order of a Python
    # set (not the operands'); compare them as a sorted tuple
    match = re.match(r"Input dtypes \((.*?)\) have", message)
    if not match:
        return message
    names = tuple(sorted(n.strip() for n in match.group(1).split(", ")))
    return message.replace(match.group(1), ", ".join(names), 1)


def _outcome(np_, fn, compile_with=None):
    """What ``fn(np_)`` gives: its dtype, weak type and values, and the
    warnings it emitted; or its exception's class and (normalized) words."""
    call = (lambda: compile_with(lambda: fn(np_))()) if compile_with else (lambda: fn(np_))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = call()
        except Exception as exc:
            return (type(exc).__name__, _normalized(str(exc)))
    said = [f"{w.category.__name__}: {w.message}" for w in caught]
    values = np.asarray(out)
    # (values to 5 places: the programs' few float ULPs apart are not the point)
    shown = np.round(values.astype(complex), 5) if values.dtype.kind in "fc" else values
    return (str(values.dtype), bool(getattr(out, "weak_type", False)), shown.tolist(), said)


@pytest.fixture(autouse=True)
def _fresh_caches():
    # a mode's warning comes with a trace (JAX's eager jnp functions are jits,
    # as refimpl's on pjrt): each case starts with none cached on either side
    jax.clear_caches()
    ri.clear_caches()


RANK_PROGRAMS = {
    "add": lambda np_: np_.ones(2) + np_.ones((1, 2)),
    "add_fn": lambda np_: np_.add(np_.ones((3, 1)), np_.arange(3.0)),
    "multiply": lambda np_: np_.multiply(np_.ones(2), np_.ones((3, 1))),
    "arctan2": lambda np_: np_.arctan2(np_.ones(2), np_.ones((1, 2))),
    "maximum": lambda np_: np_.maximum(np_.arange(4.0).reshape(2, 2), np_.arange(2.0)),
    "equal": lambda np_: np_.equal(np_.ones((1, 2)), np_.ones(2)),
    "logaddexp": lambda np_: np_.logaddexp(np_.ones(2), np_.ones((2, 2))),
    "power": lambda np_: np_.power(np_.ones((2, 1)), np_.ones(2)),
    "right_shift": lambda np_: np_.right_shift(np_.ones((2, 2), "int32"), np_.ones(2, "int32")),
    "scalar": lambda np_: np_.ones(2) + 3,
    "rank0_array": lambda np_: np_.ones((2, 3)) * np_.float32(2),
    "same_rank": lambda np_: np_.ones((2, 1)) + np_.ones((1, 2)),
    "where": lambda np_: np_.where(np_.ones(2) > 0, np_.ones((2, 2)), 1.0),
    "histogram": lambda np_: np_.histogram(np_.arange(6.0), bins=3)[0],
    "polyfit": lambda np_: np_.polyfit(np_.arange(6.0), np_.arange(12.0).reshape(6, 2), 1),
    # refimpl's own programs (a decomposition's lowering on pjrt) broadcast
    # freely inside; the user's mode is not theirs
    "det_batched": lambda np_: np_.linalg.det(np_.ones((5, 2, 2)) + np_.eye(2)),
    "inv_batched": lambda np_: np_.linalg.inv(np_.eye(3) * 2 + np_.zeros((4, 3, 3))),
    "cov_weights": lambda np_: np_.cov(
        np_.arange(10.0).reshape(2, 5), fweights=np_.arange(1, 6), aweights=np_.ones(5)
    ),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("mode", ["allow", "warn", "raise"])
@pytest.mark.parametrize("program", sorted(RANK_PROGRAMS))
def test_rank_promotion_modes(backend, program, mode, jit):
    got = {}
    for name, (lib, np_) in LIBS.items():
        with lib.numpy_rank_promotion(mode):
            got[name] = _outcome(np_, RANK_PROGRAMS[program], lib.jit if jit else None)
    assert got["refimpl"] == got["jax"]


def _bf16(np_):
    return np_.ones(2, ml_dtypes.bfloat16)


DTYPE_PROGRAMS = {
    "int32_float32": lambda np_: np_.ones(2, "int32") + np_.ones(2, "float32"),
    "float32_float16": lambda np_: np_.ones(2, "float32") * np_.ones(2, "float16"),
    "bfloat16_float16": lambda np_: _bf16(np_) - np_.ones(2, "float16"),
    "int8_int16": lambda np_: np_.maximum(np_.ones(2, "int8"), np_.ones(2, "int16")),
    "uint8_int8": lambda np_: np_.ones(2, "uint8") + np_.ones(2, "int8"),
    "float32_complex64": lambda np_: np_.ones(2, "float32") + np_.ones(2, "complex64"),
    "same_dtype": lambda np_: np_.ones(2, "int16") * np_.ones(2, "int16"),
    "weak_int_float32": lambda np_: np_.ones(2, "float32") + 1,
    "weak_int_bfloat16": lambda np_: _bf16(np_) * 2,
    "weak_int_int8": lambda np_: np_.ones(2, "int8") + 3,
    "weak_float_int32": lambda np_: np_.ones(2, "int32") + 1.5,
    "weak_float_float16": lambda np_: np_.ones(2, "float16") * 0.5,
    "weak_complex_float32": lambda np_: np_.ones(2, "float32") + 1j,
    "weak_float_complex64": lambda np_: np_.ones(2, "complex64") * 2.0,
    "weak_int_bool": lambda np_: np_.ones(2, bool) + 1,
    "weak_int_weak_float": lambda np_: np_.add(np_.asarray(1), 2.5),
    "true_divide_ints": lambda np_: np_.true_divide(np_.ones(2, "int32"), 2),
    "where_mixed": lambda np_: np_.where(
        np_.ones(2, bool), np_.ones(2, "int32"), np_.ones(2, "float32")
    ),
    "concatenate_mixed": lambda np_: np_.concatenate(
        [np_.ones(2, "int32"), np_.ones(2, "float32")]
    ),
    "arange_scalars": lambda np_: np_.arange(1, 5, 0.5),
    "arange_int16": lambda np_: np_.arange(np.int16(2), 10),
    "mgrid_mixed": lambda np_: np_.mgrid[0:2, 0.5:1.5],
    "dot_same": lambda np_: np_.dot(np_.ones(2, "int32"), np_.ones(2, "int32")),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("mode", ["standard", "strict"])
@pytest.mark.parametrize("program", sorted(DTYPE_PROGRAMS))
def test_dtype_promotion_modes(backend, program, mode, jit):
    got = {}
    for name, (lib, np_) in LIBS.items():
        with lib.numpy_dtype_promotion(mode):
            got[name] = _outcome(np_, DTYPE_PROGRAMS[program], lib.jit if jit else None)
    assert got["refimpl"] == got["jax"]


@pytest.mark.parametrize(
    "query",
    [
        lambda np_: np_.result_type(1, 2.0),
        lambda np_: np_.result_type("int32", "float32"),
        lambda np_: np_.result_type(np_.ones(2, "int8"), 1),
        lambda np_: np_.promote_types("int32", "float32"),
        lambda np_: np_.promote_types("float32", "float32"),
    ],
    ids=["weak_weak", "strong_strong", "strong_weak", "promote_types", "promote_same"],
)
@pytest.mark.parametrize("mode", ["standard", "strict"])
def test_dtype_queries(query, mode):
    got = {}
    for name, (lib, np_) in LIBS.items():
        with lib.numpy_dtype_promotion(mode):
            try:
                got[name] = str(query(np_))
            except Exception as exc:
                got[name] = (type(exc).__name__, _normalized(str(exc)))
    assert got["refimpl"] == got["jax"]


def _trace_counts(lib, np_, kind, update):
    """api_test's test_rank_promotion_forces_retrace and its dtype twin: the
    traces of a jit (or of cond's branches) after each call, the modes
    changed by blocks and by the flag."""
    count = [0]

    def g(x):
        count[0] += 1
        return x + x

    f = lib.jit(g) if kind == "jit" else (lambda x: lib.lax.cond(True, g, g, x))
    x = np_.zeros((2, 2))
    seen = []
    try:
        modes = [("allow", "standard")] * 2 + [("warn", "standard"), ("allow", "strict")]
        for rank, dtype in modes:
            with lib.numpy_rank_promotion(rank), lib.numpy_dtype_promotion(dtype):
                f(x)
            seen.append(count[0])
        update("jax_numpy_rank_promotion", "raise")
        f(x)
        seen.append(count[0])
        f(x)
        seen.append(count[0])
        with lib.numpy_dtype_promotion("strict"):
            f(x)  # the mode traced under before, with the flag's "raise": new
            seen.append(count[0])
    finally:
        update("jax_numpy_rank_promotion", "allow")
    f(x)
    seen.append(count[0])
    return seen


@pytest.mark.parametrize("kind", ["jit", "cond"])
def test_a_mode_change_retraces(backend, kind):
    want = _trace_counts(jax, jnp, kind, jax.config.update)
    assert _trace_counts(ri, rnp, kind, as_jax._CONFIG.update) == want


def _levels(lib, update):
    """``.value`` and ``.get_global()`` of both flags around blocks and updates."""
    seen = []
    for state in (lib.numpy_rank_promotion, lib.numpy_dtype_promotion):
        seen.append((str(state.value), str(state.get_global())))
    with lib.numpy_rank_promotion("warn"), lib.numpy_dtype_promotion("strict"):
        seen.append((lib.numpy_rank_promotion.value, lib.numpy_rank_promotion.get_global()))
        seen.append((str(lib.numpy_dtype_promotion.value), lib.numpy_dtype_promotion.get_global()))
        try:
            update("jax_numpy_rank_promotion", "raise")
            seen.append((lib.numpy_rank_promotion.value, lib.numpy_rank_promotion.get_global()))
        finally:
            update("jax_numpy_rank_promotion", "allow")
    seen.append((lib.numpy_rank_promotion.value, str(lib.numpy_dtype_promotion.value)))
    return [tuple(str(getattr(v, "value", v)) for v in pair) for pair in seen]


def test_blocks_are_over_the_flag():
    assert _levels(ri, as_jax._CONFIG.update) == _levels(jax, jax.config.update)


def _other_thread(lib, np_):
    # JAX's blocks are thread-local: a thread sees the flag, not this block
    result = []
    with lib.numpy_rank_promotion("raise"):
        worker = threading.Thread(target=lambda: result.append(_outcome(np_, RANK_PROGRAMS["add"])))
        worker.start()
        worker.join()
        result.append(_outcome(np_, RANK_PROGRAMS["add"])[0])
    return result


def test_a_block_is_this_threads():
    assert _other_thread(ri, rnp) == _other_thread(jax, jnp)


@pytest.mark.parametrize(
    "flag, value", [("numpy_rank_promotion", "loud"), ("numpy_dtype_promotion", "lax")]
)
def test_a_mode_jax_does_not_take_is_its_value_error(flag, value):
    for lib, update in ((jax, jax.config.update), (ri, as_jax._CONFIG.update)):
        with pytest.raises(ValueError) as block_error:
            getattr(lib, flag)(value)
        with pytest.raises(ValueError) as update_error:
            update(f"jax_{flag}", value)
        if lib is jax:
            want = (str(block_error.value), str(update_error.value))
    assert (str(block_error.value), str(update_error.value)) == want


def _flag_changed_by_another_thread(lib, np_, update):
    # a thread in a block of one setting still follows the flags of the others,
    # also when another thread changes one between two calls of a warm jit
    add = lib.jit(lambda x, y: x + y)
    x, y = np_.ones(2, "int32"), np_.ones(2, "float32")
    outcomes = []
    with lib.numpy_rank_promotion("raise"):
        outcomes.append(_outcome(np_, lambda _: add(x, y)))
        worker = threading.Thread(target=update, args=("jax_numpy_dtype_promotion", "strict"))
        worker.start()
        worker.join()
        try:
            outcomes.append(_outcome(np_, lambda _: add(x, y)))
        finally:
            update("jax_numpy_dtype_promotion", "standard")
    return outcomes


def test_a_flag_another_thread_changes_reaches_a_thread_in_a_block(backend):
    got = _flag_changed_by_another_thread(ri, rnp, as_jax._CONFIG.update)
    assert got == _flag_changed_by_another_thread(jax, jnp, jax.config.update)
