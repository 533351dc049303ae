"""The reference backend's eager memo (refimpl/backends/ref/eager.py): a
repeated eager ufunc or lax elementwise call on reference arrays replays the
recorded primitive application instead of promoting and checking again.

Oracles: the normal path (the function without its wrapper, ``__wrapped__``,
which never consults the memo) for values bit for bit, dtypes and weak types;
JAX's abstract evaluation (``jax.eval_shape``) for dtypes and weak types; the
normal path's own errors. Every test that expects a replay checks the entries'
``hits`` counters, so none can pass without the memo having served the call.
"""

from __future__ import annotations

import operator
import threading

import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax as rlax
import refimpl.numpy as rnp
from refimpl.backends.ref.arrays import RefArray
from refimpl.backends.ref.eager import MemoEntry
from refimpl.config import config

jax = pytest.importorskip("jax")
jnp = jax.numpy

DTYPES = [ml_dtypes.bfloat16, np.float16, np.float32, np.int8, np.uint32, np.bool_, np.complex64]
NUMBERS = [1, 2.5, True, 1j, -0.0]


def _hits(fn) -> int:
    return sum(e.hits for e in fn._eager_memo.values() if type(e) is MemoEntry)


def _data(dtype, shift: int = 0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return (np.arange(6) + shift) % 2 == 0
    if np.issubdtype(dtype, np.integer):
        return ((np.arange(6) + shift) % 5 + 1).astype(dtype)
    values = np.linspace(-2.0, 3.0, 6) + 0.25 * shift
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 0.5j * values[::-1]
    return values.astype(dtype)


def _same(ours, expected) -> None:
    """Bit for bit, with the same dtype, weak type and shape (and uncommitted)."""
    assert type(ours) is RefArray
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    assert ours.weak_type == expected.weak_type
    assert ours.committed == expected.committed
    assert np.asarray(ours).tobytes() == np.asarray(expected).tobytes()


def _outcome(fn, args):
    try:
        return fn(*args), None
    except Exception as error:  # the normal path's error, compared below
        return None, error


def _check_call(fn, plain, args, jax_fn=None):
    """Call ``fn`` twice (record, then replay where the memo serves it) and
    compare both with the normal path ``plain``; True if the memo served one."""
    expected, error = _outcome(plain, args)
    before = _hits(fn)
    for _ in range(2):
        ours, our_error = _outcome(fn, args)
        if error is not None:
            assert type(our_error) is type(error) and str(our_error) == str(error)
            continue
        assert our_error is None, our_error
        _same(ours, expected)
    if error is None and jax_fn is not None:
        _check_against_jax(jax_fn, args, expected)
    return _hits(fn) > before


def _check_against_jax(jax_fn, args, ours) -> None:
    arrays = [i for i, a in enumerate(args) if type(a) is RefArray]
    converted = {
        i: jax.ShapeDtypeStruct(args[i].shape, args[i].dtype, weak_type=args[i].weak_type)
        for i in arrays
    }

    def call(*values):
        full = list(args)
        for i, v in zip(arrays, values, strict=True):
            full[i] = v
        return jax_fn(*full)

    # an array given twice stays one JAX array
    spec = jax.eval_shape(call, *[converted[i] for i in arrays])
    assert np.dtype(spec.dtype) == ours.dtype, (spec, ours.aval)
    if ours.dtype != np.bool_:  # (refimpl's bool results are never weak; see _ufuncs)
        assert spec.weak_type == ours.weak_type, (spec, ours.aval)


BINARY = [
    ("add", rnp.add, jnp.add),
    ("subtract", rnp.subtract, jnp.subtract),
    ("multiply", rnp.multiply, jnp.multiply),
    ("maximum", rnp.maximum, jnp.maximum),
    ("less", rnp.less, jnp.less),
    ("bitwise_and", rnp.bitwise_and, jnp.bitwise_and),
    ("lax.add", rlax.add, jax.lax.add),
]


@pytest.mark.parametrize("wide", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name, fn, jax_fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_grid_matches_the_normal_path_and_jax(name, fn, jax_fn, dtype, wide):
    import jax as real_jax

    old = real_jax.config.jax_enable_x64
    config.update("enable_x64", wide)
    real_jax.config.update("jax_enable_x64", wide)
    try:
        x = rnp.asarray(_data(dtype))
        y = rnp.asarray(_data(dtype, 1))
        other = rnp.asarray(_data(DTYPES[(DTYPES.index(dtype) + 1) % len(DTYPES)], 2))
        cases = [(x, y), (x, x), (x, other), (other, x)]
        cases += [(x, n) for n in NUMBERS] + [(n, x) for n in NUMBERS]
        served = [_check_call(fn, fn.__wrapped__, args, jax_fn) for args in cases]
    finally:
        real_jax.config.update("jax_enable_x64", old)
    # the same-dtype pair is one primitive application, except where it is an
    # error (bitwise_and of floats, subtract of bools) or complex ordering
    # (several applications: real parts, then imaginary parts)
    kind = np.dtype(dtype).kind
    not_one = (
        (name == "bitwise_and" and kind in "fcV")
        or (name == "subtract" and kind == "b")
        or (name == "less" and kind == "c")
        or (name == "lax.add" and kind == "b")
    )
    assert served[0] != not_one


UNARY = [
    ("sin", rnp.sin, jnp.sin),
    ("exp", rnp.exp, jnp.exp),
    ("negative", rnp.negative, jnp.negative),
    ("sqrt", rnp.sqrt, jnp.sqrt),
    ("lax.neg", rlax.neg, jax.lax.neg),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name, fn, jax_fn", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grid_matches_the_normal_path_and_jax(name, fn, jax_fn, dtype):
    x = rnp.asarray(_data(dtype))
    weak = rnp.add(0.5, 0.25)  # a weak float32 array
    served = _check_call(fn, fn.__wrapped__, (x,), jax_fn)
    _check_call(fn, fn.__wrapped__, (weak,), jax_fn)
    floating = np.dtype(dtype).kind in "fcV"  # (bfloat16's kind is "V")
    if name != "negative" and not name.startswith("lax."):
        assert served == floating  # bool and integers convert first: two applications
    elif dtype is not np.bool_:
        assert served


@pytest.mark.parametrize(
    "op", [operator.add, operator.mul, operator.sub, operator.truediv, operator.lt]
)
def test_operators_are_served_by_the_memo(op):
    x = rnp.asarray(_data(np.float32))
    fn = {"add": rnp.add, "mul": rnp.multiply, "sub": rnp.subtract}.get(op.__name__)
    with np.errstate(all="ignore"):  # 3 / 0.0 and 0.0 / 0.0: inf and nan, as ours
        expected = [op(np.asarray(x), 2), op(3, np.asarray(x)), op(np.asarray(x), np.asarray(x))]
    before = _hits(fn) if fn is not None else 0
    for _ in range(3):
        for ours, want in zip([op(x, 2), op(3, x), op(x, x)], expected, strict=True):
            assert ours.dtype == want.dtype and ours.shape == want.shape
            np.testing.assert_allclose(np.asarray(ours), want, rtol=1e-6)
            assert not ours.weak_type
    if fn is not None:
        assert _hits(fn) >= before + 6  # 3 x 3 calls, the first of each recorded


def test_numbers_are_keyed_by_value():
    x = rnp.asarray(np.ones(4, np.float32))
    zero = rnp.multiply(x, 0.0)
    before = _hits(rnp.multiply)
    assert np.signbit(np.asarray(rnp.multiply(x, -0.0))).all()
    assert not np.signbit(np.asarray(rnp.multiply(x, 0.0))).any()
    nan = float("nan")
    for _ in range(2):  # recorded with one NaN, served for the other
        assert not np.signbit(np.asarray(rnp.multiply(x, nan))).any()
        assert np.signbit(np.asarray(rnp.multiply(x, -nan))).all()  # as the normal path
        assert np.signbit(np.asarray(rnp.multiply.__wrapped__(x, -nan))).all()
    for k in range(5):
        np.testing.assert_array_equal(np.asarray(rnp.multiply(x, k)), np.full(4, k, np.float32))
        assert (rnp.multiply(x, k == 1)).dtype == np.float32
    assert _hits(rnp.multiply) > before
    assert zero.dtype == np.float32


@pytest.mark.parametrize("shape", [(), (0,), (2, 3)], ids=["rank0", "empty", "2x3"])
def test_shapes_match_the_normal_path(shape):
    x = rnp.asarray(np.full(shape, 0.5, np.float32))
    x16 = rnp.asarray(np.full(shape, 0.5, np.float16))
    row = rnp.asarray(np.ones(shape[-1:], np.float32))
    served = [
        _check_call(rnp.sin, rnp.sin.__wrapped__, (x,), jnp.sin),
        _check_call(rnp.sin, rnp.sin.__wrapped__, (x16,), jnp.sin),
        _check_call(rnp.add, rnp.add.__wrapped__, (x, 2), jnp.add),
        _check_call(rnp.multiply, rnp.multiply.__wrapped__, (x16, 1.5), jnp.multiply),
    ]
    assert all(served)
    # with a row of another shape, the broadcast is a second application: not served
    served_row = _check_call(rnp.add, rnp.add.__wrapped__, (x, row), jnp.add)
    assert served_row == (row.shape == x.shape)


def test_a_full_memo_starts_over():
    x = rnp.asarray(np.ones(3, np.float32))
    for k in range(300):  # a key per number
        np.testing.assert_array_equal(np.asarray(x * k), np.full(3, k, np.float32))
    assert 0 < len(rnp.multiply._eager_memo) <= 256
    before = _hits(rnp.multiply)
    np.testing.assert_array_equal(np.asarray(x * 299), np.full(3, 299, np.float32))
    assert _hits(rnp.multiply) == before + 1


def test_threads_get_their_own_results():
    arrays = [rnp.asarray(np.full(5, t, np.float32)) for t in range(4)]
    failures = []

    def work(t):
        for k in range(200):
            out = rnp.sin(arrays[t] + k % 7)
            expected = rnp.sin.__wrapped__(rnp.add.__wrapped__(arrays[t], k % 7))
            if np.asarray(out).tobytes() != np.asarray(expected).tobytes():
                failures.append((t, k))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert _hits(rnp.sin) > 0 and _hits(rnp.add) > 0


def test_x64_is_part_of_the_key():
    config.update("enable_x64", True)
    i = rnp.asarray(np.arange(3, dtype=np.int64))
    assert (i + 1).dtype == np.int64
    assert (i + 1).dtype == np.int64  # replayed
    hits = _hits(rnp.add)
    assert hits > 0
    np.testing.assert_array_equal(np.asarray(rnp.add(i, 2**40)), np.arange(3) + 2**40)
    np.testing.assert_array_equal(np.asarray(rnp.add(i, 2**40)), np.arange(3) + 2**40)
    config.update("enable_x64", False)
    for _ in range(2):
        _same(i + 1, rnp.add.__wrapped__(i, 1))  # int32 now, as the normal path says
        with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert"):
            rnp.add(i, 2**40)


def test_same_array_twice_is_part_of_the_key():
    x = rnp.asarray(np.arange(4, dtype=np.float32))
    y = rnp.asarray(np.arange(4, dtype=np.float32) + 10)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(x * x), np.arange(4) ** 2)
    before = _hits(rnp.multiply)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(x * y), np.arange(4) * (np.arange(4) + 10))
        np.testing.assert_array_equal(np.asarray(y * x), np.arange(4) * (np.arange(4) + 10))
    assert _hits(rnp.multiply) > before


def test_errors_come_from_the_normal_path_every_time():
    x = rnp.asarray(np.arange(4, dtype=np.int8))
    b = rnp.asarray(np.ones(4, dtype=bool))
    size = len(rnp.subtract._eager_memo)
    for _ in range(3):
        with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert"):
            x + 2**40
        np.testing.assert_array_equal(np.asarray(x + 300), np.arange(4) + 44)  # wraps, as JAX
        with pytest.raises(TypeError, match="subtract does not accept dtype bool"):
            b - b
    assert len(rnp.subtract._eager_memo) == size  # an error leaves no entry


def test_deleted_and_committed_arrays_take_the_normal_path():
    x = rnp.asarray(np.arange(4, dtype=np.float32))
    rnp.sin(x)
    rnp.sin(x)  # recorded and replayed
    gone = rnp.asarray(np.arange(4, dtype=np.float32))
    gone.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        rnp.sin(gone)
    committed = ri.device_put(np.arange(4, dtype=np.float32), ri.devices()[0])
    assert committed.committed
    for _ in range(2):
        out = rnp.sin(committed)
        assert out.committed and out.device == committed.device
        out = committed + 1
        assert out.committed


def test_traced_calls_do_not_use_the_memo():
    x = rnp.asarray(np.arange(4, dtype=np.float32))
    rnp.sin(x)
    rnp.sin(x)
    before = _hits(rnp.sin)
    np.testing.assert_allclose(np.asarray(ri.jit(rnp.sin)(x)), np.sin(np.arange(4)), rtol=1e-6)
    grad = ri.grad(lambda v: rnp.sin(v).sum())(x)
    np.testing.assert_allclose(np.asarray(grad), np.cos(np.arange(4)), rtol=1e-6)
    assert _hits(rnp.sin) == before


def test_other_arguments_are_not_memoized():
    x = np.arange(4, dtype=np.float32)
    size = len(rnp.cos._eager_memo)
    for _ in range(2):
        rnp.cos(x)  # a NumPy array: not a reference array
        rnp.cos(np.float32(1.0))  # a NumPy scalar
        rnp.cos(1.0)  # no array at all
    assert len(rnp.cos._eager_memo) == size
    assert rnp.sum._eager_memo is None  # a reduction: never memoized
    r = rnp.asarray(x)
    rnp.cos(r)
    rnp.cos(r)
    assert len(rnp.cos._eager_memo) == size + 1 and _hits(rnp.cos) > 0
