"""``lax.ragged_all_to_all`` as JAX 0.10.2's (lax_test's
RaggedTest.testRaggedAllToAllErrors): its argument errors in JAX's words and
order, JAX's behaviour where it does not run (eagerly outside a named axis,
under vmap over its own name, compiled by XLA's CPU backend), and the values
over a pmap's devices on the reference backend, which JAX's CPU backend cannot
compute: there they are checked against JAX's documented definition (its
docstring's pseudocode, in NumPy, and its worked example), with the JVP
(linear) and the transpose (a dot-product test against that definition)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from tests.helpers.jax_oracle import in_fresh_jax

pytestmark = pytest.mark.usefixtures("four_ref_devices")  # tests/conftest.py

_I = np.int32


def _valid():
    return (
        np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32),
        np.zeros(7, np.float32),
        np.array([0, 1, 3], _I),
        np.array([1, 2, 3], _I),
        np.array([0, 1, 3], _I),
        np.array([1, 2, 3], _I),
    )


def _bad_arguments():
    """lax_test's twelve bad calls: one argument replaced each time."""
    for position in (2, 3, 4, 5):
        for bad in (
            np.array([0.0, 1.0, 3.0], np.float32),
            np.array([[0, 1, 3]], _I),
            np.array([], _I),
        ):
            args = list(_valid())
            args[position] = bad
            yield args


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).split("\n--------------------")[0]
    return None


def test_argument_errors_are_jaxs(backend):
    """Types, then ranks, then the axis name, in JAX's words, when lowered."""
    for args in _bad_arguments():
        want = _error(
            lambda a=args: jax.jit(jax.lax.ragged_all_to_all, static_argnames="axis_name").lower(
                *a, axis_name="x"
            )
        )
        got = _error(
            lambda a=args: ri.jit(lax.ragged_all_to_all, static_argnames="axis_name").lower(
                *a, axis_name="x"
            )
        )
        assert want is not None and got == want


def test_where_it_does_not_run_is_jaxs(backend):
    """Outside a named axis: eagerly JAX's RuntimeError, traced its NameError;
    under vmap over its own name JAX's NotImplementedError."""
    args = _valid()
    cases = [
        lambda L, api: L.ragged_all_to_all(*args, axis_name="x"),
        lambda L, api: api.jit(lambda *a: L.ragged_all_to_all(*a, axis_name="x"))(*args),
        lambda L, api: api.vmap(lambda *a: L.ragged_all_to_all(*a, axis_name="x"), axis_name="x")(
            *(np.stack([a, a]) for a in args)
        ),
    ]
    for case in cases:
        want = _error(lambda c=case: c(jax.lax, jax))
        assert want is not None
        assert _error(lambda c=case: c(lax, ri)) == want


# the docstring's worked example: two members
_EXAMPLE = (
    np.array([[1, 2, 2], [3, 4, 0]], np.float32),
    np.zeros((2, 4), np.float32),
    np.array([[0, 1], [0, 1]], _I),
    np.array([[1, 2], [1, 1]], _I),
    np.array([[0, 0], [1, 2]], _I),
    np.array([[1, 1], [2, 1]], _I),
)
_EXAMPLE_RESULT = np.array([[1, 3, 0, 0], [2, 2, 4, 0]], np.float32)


def _definition(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes):
    """JAX's docstring pseudocode, every member at once (axis 0)."""
    n, big = input_offsets.shape
    s = big // n
    result = output.copy()
    for r in range(n):
        for k in range(big):
            sender, j = k // s, r * s + k % s
            start, size = output_offsets[sender, j], recv_sizes[r, k]
            source = input_offsets[sender, j]
            result[r, start : start + size] = operand[sender, source : source + size]
    return result


def _draw(rng, n, s, rows_in, rows_out, rest):
    big = n * s
    send = rng.integers(0, 3, (n, big)).astype(_I)
    recv = send.reshape(n, n, s).transpose(1, 0, 2).reshape(n, big).copy()  # send's all_to_all
    return (
        rng.standard_normal((n, rows_in, *rest)).astype(np.float32),
        rng.standard_normal((n, rows_out, *rest)).astype(np.float32),
        np.clip(np.minimum(rng.integers(0, rows_in, (n, big)), rows_in - send), 0, None).astype(_I),
        send,
        np.clip(np.minimum(rng.integers(0, rows_out, (n, big)), rows_out - send), 0, None).astype(
            _I
        ),
        recv,
    )


def _draw_disjoint(rng, n, s, rest):
    """An exchange whose sent slices and received places do not overlap (the
    layout JAX's transpose rule is exact for): each member's slices back to
    back in its operand, each receiver's slots back to back in its output."""
    big = n * s
    send = rng.integers(0, 3, (n, big)).astype(_I)
    recv = send.reshape(n, n, s).transpose(1, 0, 2).reshape(n, big).copy()
    input_offsets = (np.cumsum(send, 1) - send).astype(_I)
    received_starts = (np.cumsum(recv, 1) - recv).astype(_I)  # receiver r, slot k
    # the sender's table: output_offsets[m, r * s + i] = received_starts[r, m * s + i]
    output_offsets = received_starts.reshape(n, n, s).transpose(1, 0, 2).reshape(n, big).copy()
    rows_in, rows_out = int(send.sum(1).max()) + 1, int(recv.sum(1).max()) + 2
    return (
        rng.standard_normal((n, rows_in, *rest)).astype(np.float32),
        rng.standard_normal((n, rows_out, *rest)).astype(np.float32),
        input_offsets,
        send,
        output_offsets,
        recv,
    )


def _pmapped(fn=None):
    body = fn or (lambda *a: lax.ragged_all_to_all(*a, axis_name="x"))
    return ri.pmap(body, axis_name="x")


def test_values_over_pmap_devices_are_the_definition():
    """Reference backend: the worked example, and random exchanges (1-2 slices
    per member, trailing dims, overlapping writes) against the pseudocode,
    eagerly, under jit and vmapped over another axis (JAX's rule)."""
    ri.config.update("backend", "ref")
    np.testing.assert_array_equal(np.asarray(_pmapped()(*_EXAMPLE)), _EXAMPLE_RESULT)
    np.testing.assert_array_equal(np.asarray(ri.jit(_pmapped())(*_EXAMPLE)), _EXAMPLE_RESULT)
    rng = np.random.default_rng(0)
    for _ in range(12):
        n, s = int(rng.choice([2, 4])), int(rng.integers(1, 3))
        shape = (n, s, int(rng.integers(2, 7)), int(rng.integers(2, 9)))
        rest = tuple(int(v) for v in rng.integers(1, 3, size=int(rng.integers(0, 2))))
        a, b = _draw(rng, *shape, rest), _draw(rng, *shape, rest)
        np.testing.assert_array_equal(np.asarray(_pmapped()(*a)), _definition(*a))
        stacked = [np.stack([x, y], 1) for x, y in zip(a, b, strict=True)]
        got = _pmapped(ri.vmap(lambda *v: lax.ragged_all_to_all(*v, axis_name="x")))(*stacked)
        want = np.stack([_definition(*a), _definition(*b)], 1)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_jvp_and_transpose_follow_the_definition():
    """Linear in operand and output: the JVP is the exchange of the tangents;
    the VJP (JAX's transpose rule: exact for disjoint slices, JAX's layout)
    passes <w, f(d)> == <f^T(w), d> for random w, d."""
    ri.config.update("backend", "ref")
    rng = np.random.default_rng(1)
    a = _draw_disjoint(rng, 4, 2, (2,))
    rest = a[2:]
    d_op, d_out = (rng.standard_normal(x.shape).astype(np.float32) for x in a[:2])

    def f(operand, output, *tables):
        return lax.ragged_all_to_all(operand, output, *tables, axis_name="x")

    def jvp(o, u, do, du, *t):
        return ri.jvp(lambda p, q: f(p, q, *t), (o, u), (do, du))

    _, tangent = ri.pmap(jvp, axis_name="x")(a[0], a[1], d_op, d_out, *rest)
    np.testing.assert_array_equal(np.asarray(tangent), _definition(d_op, d_out, *rest))
    w = rng.standard_normal(a[1].shape).astype(np.float32)

    def vjp(o, u, ww, *t):
        return ri.vjp(lambda p, q: f(p, q, *t), o, u)[1](ww)

    ct_op, ct_out = ri.pmap(vjp, axis_name="x")(a[0], a[1], w, *rest)
    lhs = float(np.sum(w.astype(np.float64) * _definition(d_op, d_out, *rest)))
    rhs = float(np.sum(np.asarray(ct_op, np.float64) * d_op) + np.sum(np.asarray(ct_out) * d_out))
    assert abs(lhs - rhs) < 1e-4 * max(1.0, abs(lhs))


def test_pjrt_cannot_compile_it_as_jax_cannot():
    """XLA's CPU backend has no ragged-all-to-all: JAX's pmap fails to compile
    with its UNIMPLEMENTED error, and so does refimpl's on pjrt (the same
    custom call); the message's first words are XLA's in both."""
    body = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax, numpy as np
a = (np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)) + tuple(
    np.ones((2, 2), np.int32) for _ in range(4))
try:
    jax.pmap(lambda *v: jax.lax.ragged_all_to_all(*v, axis_name="x"), axis_name="x")(*a)
    result = None
except Exception as e:
    result = str(e).splitlines()[0]
"""
    want = in_fresh_jax(body)
    assert want.startswith("UNIMPLEMENTED: HLO opcode `ragged-all-to-all`")
    ri.config.update("backend", "pjrt")
    args = (np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))
    args += tuple(np.ones((2, 2), _I) for _ in range(4))
    error = _error(lambda: _pmapped()(*args))
    assert error is not None and error[1].startswith(want)


def test_lax_exports_it_and_its_primitive():
    assert lax.ragged_all_to_all_p.name == jax.lax.ragged_all_to_all_p.name
    assert lax.ragged_all_to_all.__name__ == jax.lax.ragged_all_to_all.__name__
