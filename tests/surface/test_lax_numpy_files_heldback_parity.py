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
