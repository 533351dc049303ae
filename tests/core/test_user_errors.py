"""What a newcomer sees when something is wrong: the error or warning names
the function they called and, where JAX gives one, the same hint. Each case
is checked against what JAX 0.10.2 says for the same call."""

from __future__ import annotations

import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def _error(fn) -> Exception:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def test_grad_of_int_input_names_grad():
    got = _error(lambda: ri.grad(lambda x: x**2)(3))
    want = _error(lambda: jax.grad(lambda x: x**2)(3))
    assert type(got) is type(want) is TypeError
    assert str(got).startswith("grad requires real- or complex-valued inputs")
    assert str(got) == str(want)


def test_value_and_grad_still_names_itself():
    got = _error(lambda: ri.value_and_grad(lambda x: x**2)(3))
    assert str(got).startswith("value_and_grad requires")


@pytest.mark.parametrize(
    "name, rnp_name",
    [("add", "add"), ("mul", "multiply"), ("sub", "subtract"), ("max", "maximum")],
)
def test_lax_dtype_mismatch_names_lax_and_suggests_rnp(name, rnp_name):
    x, y = np.ones(2, np.float32), np.ones(2, np.int32)
    got = str(_error(lambda: getattr(lax, name)(x, y)))
    want = str(_error(lambda: getattr(jax.lax, name)(x, y)))
    assert want.startswith(f"lax.{name} requires arguments to have the same dtypes")
    assert got.startswith(
        f"lax.{name} requires arguments to have the same dtypes, got float32, int32."
    )
    assert f"jnp.{rnp_name} is a similar function" in want
    assert f"rnp.{rnp_name} (refimpl.numpy.{rnp_name}) is a similar function" in got
    # and the suggested function does accept the mixed dtypes, as JAX's does
    np.testing.assert_array_equal(getattr(rnp, rnp_name)(x, y), getattr(jnp, rnp_name)(x, y))


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_string_argument_to_jit_hints_at_static_argnums(backend):
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    got = _error(lambda: ri.jit(lambda x, mode: x, backend=backend)(1.0, "fast"))
    want = _error(lambda: jax.jit(lambda x, mode: x)(1.0, "fast"))
    assert type(got) is type(want) is TypeError
    assert "static_argnums" in str(want)
    text = str(got)
    assert "'mode'" in text and "str 'fast'" in text
    assert "static_argnums" in text and "static_argnames" in text
    # the hint is right: marked static, the call works
    assert float(ri.jit(lambda x, mode: x, static_argnames="mode")(1.0, "fast")) == 1.0


_CREATORS = {
    "ones": lambda m, d: m.ones(3, dtype=d),
    "zeros": lambda m, d: m.zeros(3, dtype=d),
    "full": lambda m, d: m.full(3, 1, dtype=d),
    "empty": lambda m, d: m.empty(2, dtype=d),
    "array": lambda m, d: m.array([1, 2], dtype=d),
    "asarray": lambda m, d: m.asarray([1, 2], dtype=d),
    "arange": lambda m, d: m.arange(3, dtype=d),
    "eye": lambda m, d: m.eye(2, dtype=d),
    "identity": lambda m, d: m.identity(2, dtype=d),
    "linspace": lambda m, d: m.linspace(0, 1, 3, dtype=d),
    "zeros_like": lambda m, d: m.zeros_like(m.ones(2), dtype=d),
    "ones_like": lambda m, d: m.ones_like(m.ones(2), dtype=d),
    "full_like": lambda m, d: m.full_like(m.ones(2), 1, dtype=d),
    "astype": lambda m, d: m.ones(2).astype(d),
}


def _warned(fn) -> tuple[str, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return str(result.dtype), [
        f"{w.category.__name__}: {str(w.message).split(', and will')[0]}" for w in caught
    ]


@pytest.mark.parametrize("dtype", [np.float64, "float64", np.int64, np.complex128, float, int])
@pytest.mark.parametrize("fn_name", sorted(_CREATORS))
def test_64_bit_dtype_without_x64_warns_like_jax(fn_name, dtype):
    create = _CREATORS[fn_name]
    got = _warned(lambda: create(rnp, dtype))
    want = _warned(lambda: create(jnp, dtype))
    assert got == want


def test_64_bit_dtype_warning_points_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rnp.ones(3, dtype=np.float64)
    (warning,) = caught
    assert warning.filename == __file__
    assert "Explicitly requested dtype float64 requested in ones is not available" in str(
        warning.message
    )
    assert "enable_x64" in str(warning.message)


def test_no_warning_with_x64():
    with ri.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rnp.ones(3, dtype=np.float64).dtype == np.float64


def test_pjrt_module_help_exits_0():
    done = subprocess.run(
        [sys.executable, "-m", "refimpl.backends.pjrt", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m refimpl.backends.pjrt doctor")
    bad = subprocess.run(
        [sys.executable, "-m", "refimpl.backends.pjrt", "bogus"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "usage:" in bad.stderr


def test_conformance_no_progress_has_help_text(capsys):
    from conformance import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    line = text[text.index("  --no-progress") :].split("--native-logs")[0]
    assert "progress bar" in line
