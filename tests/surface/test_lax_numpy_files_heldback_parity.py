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
VALUES = {
    # testVecdot: axis counts in each operand's own dimensions, before the
    # other dimensions broadcast ((4, 1, 3) with (4,), axis=0 contracts the 4s)
    "vecdot_axis_per_operand": lambda lib, np_: [
        np_.vecdot(_A.reshape(4, 1, 3), _A[:4] + 1, axis=0),
        np_.vecdot(_A[:4], _A.reshape(4, 3), axis=0),
        np_.vecdot(_A.reshape(2, 2, 3), _A[:6].reshape(2, 3), axis=-1),
        lib.jit(lambda x, y: np_.vecdot(x, y, axis=0))(_A.reshape(4, 1, 3), _A[:4]),
    ],
    # testUnravelIndex: the shape's sizes may be traced (jit of a shape tuple)
    "unravel_index_traced_shape": lambda lib, np_: [
        lib.jit(np_.unravel_index)(np.array([5, -7, 30], np.int8), (3, 4)),
        lib.jit(np_.unravel_index)(np.array([5, 13], np.uint16), (3, 4)),
        lib.jit(np_.unravel_index)(np.int32(5), (np.int16(3), 4)),
        lib.jit(lambda i, s: np_.unravel_index(i, s))(np.array([5, 7]), (3.0, 4)),
        np_.unravel_index(np.array([5, 7]), (True, 4)),
    ],
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
