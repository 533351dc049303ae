# ruff: noqa: B023  (the lambdas are called within their loop iteration)
"""JAX 0.10.2's tests/lax_numpy_test.py, lax_numpy_reducers_test.py and
lax_numpy_operators_test.py, run unchanged through tools/run_jax_tests.py
(issue 29, lane NUMPY): the differences that run found, each program run
on JAX (the oracle, live) and on refimpl on both backends.

Compared: an exception's class and its whole message (the tests match
JAX's words with assertRaisesRegex); a value's dtype, weak type, shape and
values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _raised(fn) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and words are compared
        return type(e).__name__, str(e)
    return "no error", ""


def _same_error(program) -> None:
    want = _raised(lambda: program(*LIBS["jax"]))
    got = _raised(lambda: program(*LIBS["ri"]))
    assert want[0] != "no error", want
    assert got == want


# --- lax_numpy_reducers_test ------------------------------------------------------------------

_INITIAL_REDUCERS = ["sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin"]
_WHERE_REDUCERS = [*_INITIAL_REDUCERS, "all", "any", "mean", "var", "std"]
_WHERE_REDUCERS += ["nanmean", "nanvar", "nanstd"]

ERRORS = {}
# testReducerWhereNonBooleanError*: the function called is named, with where's dtype
for _name in _WHERE_REDUCERS:
    ERRORS[f"where_not_bool_{_name}"] = lambda lib, np_, name=_name: getattr(np_, name)(
        np_.zeros(10), where=np_.ones(10, dtype=int)
    )
# testReducerBadInitial
for _name in _INITIAL_REDUCERS:
    ERRORS[f"initial_not_scalar_{_name}"] = lambda lib, np_, name=_name: getattr(np_, name)(
        np_.ones((2, 3, 4)), axis=-1, initial=np_.zeros((1, 2, 3))
    )
# testReductionWithRepeatedAxisError (and the axes of the other reductions)
for _name in ["sum", "max", "mean", "var", "nansum", "all", "ptp", "count_nonzero"]:
    ERRORS[f"repeated_axis_{_name}"] = lambda lib, np_, name=_name: getattr(np_, name)(
        np_.ones((2, 3)), (0, -2)
    )
ERRORS["repeated_axis_ufunc_reduce"] = lambda lib, np_: np_.add.reduce(np_.ones((2, 3)), (1, 1))
# testVecdot: the contracted axes differ
ERRORS["vecdot_axes_mismatch"] = lambda lib, np_: np_.vecdot(
    np_.ones((3, 2, 2)), np_.ones((1, 2, 3)), axis=-2
)
ERRORS["repeated_axis_average"] = lambda lib, np_: np_.average(np_.ones((2, 3)), (0, 0))
ERRORS["repeated_axis_average_weights"] = lambda lib, np_: np_.average(
    np_.ones((2, 3)), (1, 1), weights=np_.ones((2, 3))
)
# testArangeComplex (JAX 0.10.2 refuses what the file's newer JAX deprecated)
ERRORS["arange_complex_stop"] = lambda lib, np_: np_.arange(3 + 0j)
ERRORS["arange_complex_step"] = lambda lib, np_: np_.arange(0, 3, 1j)
# testCumulativeSumErrors
for _name in ["cumulative_sum", "cumulative_prod"]:
    ERRORS[f"{_name}_of_scalar"] = lambda lib, np_, name=_name: getattr(np_, name)(np_.array(1.0))
    ERRORS[f"{_name}_rank_2_no_axis"] = lambda lib, np_, name=_name: getattr(np_, name)(
        np_.ones((2, 3)), include_initial=True
    )


# --- lax_numpy_operators_test -----------------------------------------------------------------

# testOperatorOverloadErrors / testRightOperatorOverloadErrors: the array's class is ArrayImpl
for _op in ["__eq__", "__ne__", "__add__", "__mul__", "__radd__", "__rmul__"]:
    for _other in [list, tuple, set, dict]:
        ERRORS[f"operator{_op}_{_other.__name__}"] = lambda lib, np_, op=_op, other=_other: getattr(
            np_.array([[1, 2], [2, 3]]), op
        )(other([(1, 2), (2, 3)]))


# --- lax_numpy_test: JAX's words ---------------------------------------------------------------

_M3 = np.ones((3, 2, 2))
ERRORS.update(
    {
        # testTensordotErrors
        "tensordot_axes_exceed_ranks": lambda lib, np_: np_.tensordot(_M3, np.ones(2), axes=2),
        "tensordot_lists_differ": lambda lib, np_: np_.tensordot(
            _M3, np.ones(2), axes=([0], [0, 1])
        ),
        "tensordot_strings": lambda lib, np_: np_.tensordot(_M3, np.ones(2), axes=("bad", "ax")),
        "tensordot_not_a_pair": lambda lib, np_: np_.tensordot(_M3, np.ones(2), axes="bad"),
        "tensordot_numpy_int": lambda lib, np_: np_.tensordot(_M3, _M3, axes=np.int32(1)),
        "tensordot_int_and_list": lambda lib, np_: np_.tensordot(_M3, _M3, axes=([1], 0)),
        # testInterpErrors
        "interp_sizes": lambda lib, np_: np_.interp(0.0, np_.arange(2.0), np_.arange(3.0)),
        "interp_left": lambda lib, np_: np_.interp(
            0.0, np_.arange(3.0), np_.arange(3.0), left="interpolate"
        ),
        "interp_right": lambda lib, np_: np_.interp(
            0.0, np_.arange(3.0), np_.arange(3.0), right="interpolate"
        ),
        "interp_complex_x": lambda lib, np_: np_.interp(1j, 1j * np.arange(3.0), np.arange(3.0)),
        # testTakeAlongAxisRequiresIntIndices, testTakeEmpty
        "take_along_axis_float_indices": lambda lib, np_: np_.take_along_axis(
            np_.arange(5), np_.array([3.0], np_.float32), axis=0
        ),
        "put_along_axis_float_indices": lambda lib, np_: np_.put_along_axis(
            np_.arange(5), np_.array([3.0]), 1, axis=0, inplace=False
        ),
        "take_from_empty_axis": lambda lib, np_: np_.take(
            np_.ones((2, 0, 4)), np_.array([0], np_.int32), axis=1
        ),
        # testTraceSameAxesError
        "trace_same_axes": lambda lib, np_: np_.trace(np_.ones((2, 3, 2)), axis1=1, axis2=-2),
        # testBroadcastToInvalidShape (and the same rank's words)
        "broadcast_to_fewer_dims": lambda lib, np_: np_.broadcast_to(np_.zeros((3, 4, 5)), (4, 5)),
        "broadcast_to_incompatible": lambda lib, np_: np_.broadcast_to(np.ones((2, 3)), (4, 3)),
        # test_error_hint
        "zeros_2_3": lambda lib, np_: np_.zeros(2, 3),
        "ones_2_3": lambda lib, np_: np_.ones(2, 3),
        "empty_2_3": lambda lib, np_: np_.empty(2, 3),
        # testArrayUnsupportedDtypeError (and the other creation functions)
        "array_structured_dtype": lambda lib, np_: np_.array(3, [("a", "<i4"), ("b", "<i4")]),
        "zeros_object_dtype": lambda lib, np_: np_.zeros(3, object),
        "ones_str_dtype": lambda lib, np_: np_.ones(3, "U3"),
        "asarray_datetime_dtype": lambda lib, np_: np_.asarray(3, "datetime64[s]"),
        "astype_structured_dtype": lambda lib, np_: np_.arange(3).astype([("a", "<i4")]),
        "zeros_unknown_dtype_name": lambda lib, np_: np_.zeros(3, "foo"),
        "tri_float_size": lambda lib, np_: np_.tri(2.5),
        # testArrayFromInteger / testArrayFromList: NumPy's words for a list
        "array_int_too_large": lambda lib, np_: np_.array(2**31),
        "add_int_too_large": lambda lib, np_: lib.lax.add(2**40, 1),
        "array_list_beyond_int64": lambda lib, np_: np_.array([0, -(2**63) - 1]),
        "array_list_beyond_int32": lambda lib, np_: np_.array([[1, 2], [3, 2**40]]),
        "array_list_into_uint8": lambda lib, np_: np_.array([300], dtype="uint8"),
    }
)

# JAX's concretization errors go on to name the function traced: the phrase
# the tests match is compared, and the class
PHRASES = {
    # testArangeConcretizationError
    "arange_stop": (
        lambda lib, np_: lib.jit(np_.arange)(3),
        "It arose in the jnp.arange argument 'stop'",
    ),
    "arange_start": (
        lambda lib, np_: lib.jit(lambda s: np_.arange(s, 3))(0),
        "It arose in the jnp.arange argument 'start'",
    ),
    # testR_, testC_, testMgrid, testOgrid
    **{
        f"{name}_traced_slice": (
            lambda lib, np_, name=name: lib.jit(lambda a, b: getattr(np_, name)[a:b])(0, 2),
            f"slice start of jnp.{name}",
        )
        for name in ("r_", "c_", "mgrid", "ogrid")
    },
    # test_tri_bug_22751
    "tri_traced_size": (
        lambda lib, np_: lib.jit(np_.tri)(3, M=3, k=0),
        "Shapes must be 1D sequences of concrete values of integer type",
    ),
    # testToBytesJitError, testToListJitError
    "tobytes_traced": (
        lambda lib, np_: lib.jit(lambda x: x.tobytes())(np.ones((3, 4), np.int32)),
        "The tobytes() method was called on traced array with shape int32[3,4].",
    ),
    "tolist_traced": (
        lambda lib, np_: lib.jit(lambda x: x.tolist())(np.ones(3, np.float32)),
        "The tolist() method was called on traced array with shape float32[3].",
    ),
    # testInterpErrors
    "interp_period_array": (
        lambda lib, np_: np_.interp(0.0, np_.arange(3.0), np_.arange(3.0), period=np.ones(1)),
        "period must be a scalar; got",
    ),
}


@pytest.mark.parametrize("name", sorted(PHRASES))
def test_lax_numpy_files_error_phrases(backend, name):
    program, phrase = PHRASES[name]
    want = _raised(lambda: program(*LIBS["jax"]))
    got = _raised(lambda: program(*LIBS["ri"]))
    assert phrase in want[1], want
    assert got[0] == want[0] and phrase in got[1], got


def test_astype_complex_to_real_warns_in_jaxs_words(backend):
    import warnings

    words = []
    for _, np_ in LIBS.values():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np_.array(2.0 + 1.5j, dtype="complex64").astype("float32")
        words.append([str(w.message) for w in caught if w.category is DeprecationWarning])
    assert words[0] == words[1] and words[0]


_WARNING_PROGRAMS = {
    "astype_complex_to_real": lambda np_: np_.array(2.0 + 1.5j, "complex64").astype("float32"),
    "jnp_astype_complex_to_real": lambda np_: np_.astype(np_.array([1j], "complex64"), "int32"),
    "astype_float64_x64_off": lambda np_: np_.ones(3, "float32").astype("float64"),
}


@pytest.mark.parametrize("name", sorted(_WARNING_PROGRAMS))
def test_eager_calls_warn_every_time_as_jax(backend, name):
    # pjrt runs an eager jnp call as a cached jit, whose Python body (and its
    # warnings.warn) ran only at the trace: JAX warns on every call. Each
    # call here is made three times in a row; each must warn as JAX's does,
    # once per call, at the caller's line.
    import warnings

    program = _WARNING_PROGRAMS[name]
    seen = []
    for _, np_ in LIBS.values():
        calls = []
        for _ in range(3):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                program(np_)
            # (the message up to its hint: refimpl's names its own x64 option)
            calls.append([(w.category, str(w.message)[:80], w.filename) for w in caught])
        seen.append(calls)
    want, got = seen
    assert all(len(call) == 1 for call in want), want
    assert [[w[:2] for w in call] for call in got] == [[w[:2] for w in call] for call in want]
    assert all(w[2] == __file__ for call in got for w in call), got


def test_user_jit_warns_at_its_traces_as_jax(backend):
    # JAX's jit runs the Python body only when it traces: a warning there
    # fires once per new signature, not on every call (both backends alike).
    import warnings

    counts = []
    for lib, np_ in LIBS.values():

        def body(x):
            warnings.warn("traced", UserWarning, stacklevel=2)
            return x * 2

        f = lib.jit(body)
        calls = []
        for arg in [np_.ones(3), np_.ones(3), np_.ones(4), np_.ones(4)]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                f(arg)
            calls.append(len(caught))
        counts.append(calls)
    assert counts[0] == [1, 0, 1, 0]
    assert counts[1] == counts[0]


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_lax_numpy_files_error_words(backend, name):
    program = ERRORS[name]
    want = _raised(lambda: program(*LIBS["jax"]))
    if want[0] == "no error":  # JAX 0.10.2 does not raise this one either
        assert _raised(lambda: program(*LIBS["ri"]))[0] == "no error"
        return
    _same_error(program)


# --- lax_numpy_test: values -------------------------------------------------------------------


def _leaves(out) -> list:
    return [
        (str(x.dtype), bool(x.aval.weak_type), x.shape, np.asarray(x).tolist())
        for x in jax.tree.leaves(out)
    ]


_A = np.arange(12, dtype=np.float32)
_BOOL_BYTES = np.array([0, 1, 2, 122, 255], np.uint8).view(bool)
_BOOL_TARGETS = ["uint8", "uint16", "uint32", "int8", "int32", "float32", "bfloat16", "uint4"]
_BOOL_TARGETS += ["int4", "complex64"]


def _bool_bytes_program(lib, np_) -> list:
    x = np_.asarray(_BOOL_BYTES)
    return [
        x.view(np.uint8),
        x.view(np.int8),
        lib.jit(lambda v: v.view(np.int8))(x),
        np_.asarray(_BOOL_BYTES[3]).view(np.int8),
        *(x.astype(t) for t in _BOOL_TARGETS),
        *(lib.jit(lambda v: v.astype(t))(x) for t in _BOOL_TARGETS),
    ]


VALUES = {
    # testVecdot: axis counts in each operand's own dimensions, before the
    # other dimensions broadcast ((4, 1, 3) with (4,), axis=0 contracts the 4s)
    "vecdot_axis_per_operand": lambda lib, np_: [
        np_.vecdot(_A.reshape(4, 1, 3), _A[:4] + 1, axis=0),
        np_.vecdot(_A[:4], _A.reshape(4, 3), axis=0),
        np_.vecdot(_A.reshape(2, 2, 3), _A[:6].reshape(2, 3), axis=-1),
        lib.jit(lambda x, y: np_.vecdot(x, y, axis=0))(_A.reshape(4, 1, 3), _A[:4]),
    ],
    # testArrayFromList: a big Python int joins a list as an int, its dtype bounds it
    "array_list_big_int_with_a_float": lambda lib, np_: [
        np_.array([1.5, 2**40]),
        np_.array([2**70, 1.0]),
        np_.array([1, 2**40], dtype="float16"),
    ],
    # testUnravelIndex: the shape's sizes may be traced (jit of a shape tuple)
    "unravel_index_traced_shape": lambda lib, np_: [
        lib.jit(np_.unravel_index)(np.array([5, -7, 30], np.int8), (3, 4)),
        lib.jit(np_.unravel_index)(np.array([5, 13], np.uint16), (3, 4)),
        lib.jit(np_.unravel_index)(np.int32(5), (np.int16(3), 4)),
        lib.jit(lambda i, s: np_.unravel_index(i, s))(np.array([5, 7]), (3.0, 4)),
        np_.unravel_index(np.array([5, 7]), (True, 4)),
    ],
    # testViewScalar (bool to int8): bool bytes other than 0 and 1 (NumPy bytes
    # viewed as bool) survive a view; conversions read them as XLA does
    "bool_bytes_view_and_convert": lambda lib, np_: _bool_bytes_program(lib, np_),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_lax_numpy_files_values(backend, name):
    program = VALUES[name]
    assert _leaves(program(*LIBS["ri"])) == _leaves(program(*LIBS["jax"]))


# --- lax_numpy_test: where *_like puts its result ------------------------------------------------

# testFullLikeWithDevice / testFullLikeWithSharding: *_like(x) without device
# follows a committed x (its sharding: same shape, or x replicated), unless
# the result is weakly typed; the answers JAX 0.10.2 gives on 4 devices
_LIKE_CASES = """
def cases(api, np_, device_put, devices):
    d = devices[-1]
    strong = device_put(np_.ones((2, 3)), d)
    weak = device_put(np_.asarray(2.0), d)
    uncommitted = np_.ones((2, 3))
    out = {}
    for name in ["zeros_like", "ones_like", "empty_like", "full_like"]:
        fn = getattr(np_, name)
        kw = {"fill_value": 2} if name == "full_like" else {}
        for label, x in [("strong", strong), ("weak", weak), ("uncommitted", uncommitted)]:
            for variant, extra in [("", {}), ("_shape", {"shape": (5,)}),
                                   ("_dtype", {"dtype": np.int32}),
                                   ("_device0", {"device": devices[0]})]:
                y = fn(x, **kw, **extra)
                out[f"{name}_{label}{variant}"] = [
                    sorted(dev.id for dev in y.devices()), str(y.dtype),
                    bool(y.aval.weak_type), list(y.shape)]
    return out
"""


def test_like_functions_follow_a_committed_input(four_ref_devices):
    from tests.helpers.jax_oracle import in_fresh_jax

    want = in_fresh_jax(
        "import os\n"
        'os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"\n'
        "import jax, jax.numpy as jnp, numpy as np\n"
        + _LIKE_CASES
        + "result = cases(jax, jnp, jax.device_put, jax.devices())\n"
    )
    namespace: dict = {"np": np}
    exec(_LIKE_CASES, namespace)  # noqa: S102 - the same source JAX ran
    got = namespace["cases"](ri, rnp, ri.device_put, ri.devices("ref"))
    assert got == want
