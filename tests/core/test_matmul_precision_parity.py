"""The default matmul precision (``jax.default_matmul_precision``, the
``jax_default_matmul_precision`` flag) recorded in dot_general's and the
convolutions' ``precision`` param and part of every jit signature, compared
with JAX 0.10.2 live on both backends (api_test.py's
test_dot_precision_context_manager, _flag, _forces_retrace)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import as_jax

_X = np.arange(4.0, dtype=np.float32).reshape(2, 2)


def _precision(lib, np_, value, fn):
    with lib.default_matmul_precision(value):
        jaxpr = lib.make_jaxpr(fn(lib, np_))(np_.asarray(_X))
    return [str(e.params["precision"]) for e in jaxpr.eqns if "precision" in e.params]


PROGRAMS = {
    "dot": lambda lib, np_: lambda x: np_.dot(x, x),
    "matmul_operator": lambda lib, np_: lambda x: x @ x,
    "einsum": lambda lib, np_: lambda x: np_.einsum("ij,jk->ik", x, x),
    "explicit_wins": lambda lib, np_: lambda x: np_.dot(x, x, precision="high"),
    "int_dot": lambda lib, np_: lambda x: np_.dot(x.astype(int), x.astype(int)),
    "conv": lambda lib, np_: lambda x: lib.lax.conv(x[None, None], x[None, None], (1, 1), "SAME"),
    "grad": lambda lib, np_: lib.grad(lambda x: np_.dot(x, x).sum()),
}


@pytest.mark.parametrize(
    "value", [None, "bfloat16", "tensorfloat32", "float32", "highest", "BF16_BF16_F32"]
)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_products_record_the_default_precision(backend, program, value):
    want = _precision(jax, jnp, value, PROGRAMS[program])
    assert _precision(ri, rnp, value, PROGRAMS[program]) == want


def test_values_are_unchanged(backend):
    f = ri.jit(rnp.dot)
    plain = np.asarray(f(_X, _X))
    with ri.default_matmul_precision("float32"):
        np.testing.assert_array_equal(np.asarray(f(_X, _X)), plain)


def test_a_value_jax_does_not_take_is_its_value_error(backend):
    words = "new enum value must be None or in"
    for manager in (jax.default_matmul_precision, ri.default_matmul_precision):
        with pytest.raises(ValueError, match=words), manager("fastest"):
            pass
    with pytest.raises(ValueError, match=words):
        as_jax._CONFIG.update("jax_default_matmul_precision", "fastest")


def _trace_counts(lib, np_, update, kind):
    """test_dot_precision_forces_retrace's calls: traces after each."""
    count = [0]

    def g(x):
        count[0] += 1
        return np_.dot(x, x)

    f = lib.jit(g) if kind == "jit" else (lambda x: lib.lax.cond(True, g, g, x))
    x = np_.asarray(_X)
    seen = []
    try:
        for _ in range(2):
            f(x)
            seen.append(count[0])
        with lib.default_matmul_precision("tensorfloat32"):
            f(x)
            seen.append(count[0])
            update("jax_default_matmul_precision", "float32")  # the flag, under the block
            f(x)
            seen.append(count[0])
        for _ in range(2):
            f(x)
            seen.append(count[0])
    finally:
        update("jax_default_matmul_precision", None)
    f(x)
    seen.append(count[0])
    return seen


@pytest.mark.parametrize("kind", ["jit", "cond"])
def test_a_new_precision_traces_again(backend, kind):
    want = _trace_counts(jax, jnp, jax.config.update, kind)
    got = _trace_counts(ri, rnp, as_jax._CONFIG.update, kind)
    # on pjrt too: the C++ fast path's signatures carry the setting, so a
    # setting seen before finds its entry (no trace)
    assert got == want


def test_reading_the_flag_gives_this_threads_value(backend):
    """``jax.config.jax_default_matmul_precision`` inside a block is the
    block's value (the thread's), the flag's outside, as JAX's."""

    def reads(lib, config):
        seen = [config.jax_default_matmul_precision]
        with lib.default_matmul_precision("float32"):
            seen.append(config.jax_default_matmul_precision)
            with lib.default_matmul_precision("bfloat16"):
                seen.append(config.jax_default_matmul_precision)
        seen.append(config.jax_default_matmul_precision)
        return seen

    assert reads(ri, as_jax._CONFIG) == reads(jax, jax.config)
    with ri.default_matmul_precision("high"):
        assert ri.config.default_matmul_precision == "high"


def test_a_block_in_another_thread_is_that_threads_own(backend):
    """A thread's block changes that thread's signature only: the main
    thread's entry is still found (pjrt's C++ key is per thread), as JAX's."""
    import threading

    def counts(lib, np_):
        count = [0]

        def g(x):
            count[0] += 1
            return np_.dot(x, x)

        f = lib.jit(g)
        x = np_.asarray(_X)
        seen = []
        f(x)
        seen.append(count[0])

        def other():
            with lib.default_matmul_precision("float32"):
                f(x)
                f(x)
                seen.append(count[0])

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        f(x)
        seen.append(count[0])
        return seen

    assert counts(ri, rnp) == counts(jax, jnp)
