"""Issue 16: no crash, no lost data, no silent wrong result.

One regression test (or a few) per finding, each failing before its fix.
Where JAX defines the behaviour the test asks JAX too; where the SPEC is
stricter than JAX (a failed call deletes nothing, shapes are validated before
they reach a plugin) the test states the SPEC's rule.
"""

from __future__ import annotations

import functools
import gc
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax, tree_util
from refimpl.core import ShapeError
from tests.helpers.pjrt_helpers import skip_without_pjrt

BACKENDS = ["ref", "pjrt"]


def needs(backend: str) -> None:
    if backend == "pjrt":
        skip_without_pjrt()


# --- 3: impossible shapes are rejected in the abstract values ------------------------------

HUGE = (2**32, 2**32)  # 2**64 elements: no int64 can count them


@pytest.mark.parametrize("backend", BACKENDS)
def test_huge_shape_is_a_clear_error_naming_the_primitive(backend):
    needs(backend)
    f = ri.jit(lambda: rnp.zeros(HUGE), backend=backend)
    with pytest.raises(ShapeError, match=r"broadcast_in_dim: shape \(4294967296, 4294967296\)"):
        f()


def test_eval_shape_rejects_a_huge_shape():
    with pytest.raises(ShapeError, match="more than fit in int64"):
        ri.eval_shape(lambda: rnp.zeros(HUGE))


def test_shape_error_is_a_value_error_and_checks_bytes_too():
    # 2**61 float32 elements fit in int64 as a count, but not as a byte size.
    with pytest.raises(ValueError, match=r"bytes\), more than fit in int64"):
        ri.eval_shape(lambda: rnp.ones((2**61,), np.float32))
    # The same count of int8 fits: only the abstract value is built.
    out = ri.eval_shape(lambda: rnp.ones((2**61,), np.int8))
    assert out.shape == (2**61,)


def test_huge_abstract_argument_names_the_argument():
    def f(x, y):
        return x + y

    big = ri.ShapeDtypeStruct((2**40, 2**40), np.float32)
    with pytest.raises(ShapeError, match=r"jit\(f\) argument y: shape"):
        ri.eval_shape(f, 1.0, big)


@pytest.mark.parametrize(
    "make",
    [
        lambda: lax.broadcast_in_dim(1.0, (2**40, 2**40), ()),
        lambda: lax.broadcasted_iota(np.float32, (2**33, 2**31), 0),
        lambda: rnp.broadcast_to(rnp.ones(3), (2**62, 3)),
    ],
)
def test_every_primitive_goes_through_the_same_check(make):
    with pytest.raises(ShapeError, match="more than fit in int64"):
        ri.eval_shape(make)


def test_arange_with_a_huge_count_is_a_clear_error():
    with pytest.raises(ShapeError, match="arange.*more than fit in int64"):
        rnp.arange(0, 1e20)


# --- 6: host views are immutable; donation never writes where a user can read ------------


def test_host_view_of_a_reference_array_cannot_be_made_writable():
    a = rnp.arange(4.0)
    h = np.asarray(a)
    with pytest.raises(ValueError, match="WRITEABLE"):
        h.setflags(write=True)
    with pytest.raises(ValueError, match="read-only"):
        h[0] = 5.0
    np.testing.assert_array_equal(np.asarray(a), [0.0, 1.0, 2.0, 3.0])


def test_donation_keeps_a_host_view_intact():
    a = rnp.arange(4.0)
    h = np.asarray(a)
    out = ri.jit(lambda x: x * 10, donate_argnums=0)(a)
    np.testing.assert_array_equal(h, [0.0, 1.0, 2.0, 3.0])  # what JAX and pjrt give
    np.testing.assert_array_equal(np.asarray(out), [0.0, 10.0, 20.0, 30.0])
    assert a.is_deleted()


def test_donation_keeps_a_slice_of_a_host_view_intact():
    a = rnp.arange(4.0)
    tail = np.asarray(a)[2:]
    ri.jit(lambda x: x + 1, donate_argnums=0)(a)
    np.testing.assert_array_equal(tail, [2.0, 3.0])


def test_donation_without_views_still_reuses_the_buffer():
    a = rnp.arange(4.0)
    pointer = a.unsafe_buffer_pointer()
    out = ri.jit(lambda x: x * 10, donate_argnums=0)(a)
    assert out.unsafe_buffer_pointer() == pointer


# --- 7: a failed call deletes nothing -------------------------------------------------------


class Failing:
    """A pytree node whose unflatten always raises."""

    def __init__(self, value):
        self.value = value


tree_util.register_pytree_node(
    Failing,
    lambda node: ((node.value,), None),
    lambda data, children: (_ for _ in ()).throw(ZeroDivisionError("unflatten failed")),
)


def test_failing_output_unflatten_deletes_no_donated_input():
    x = rnp.arange(4.0)
    f = ri.jit(lambda x: Failing(x * 10), donate_argnums=0)
    with pytest.raises(ZeroDivisionError, match="unflatten failed"):
        f(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0, 3.0])


class FailsOnArrays:
    """A pytree node whose unflatten accepts refimpl arrays only (user-defined
    nodes make the call run without writing into donated buffers)."""

    def __init__(self, value):
        self.value = value


def _unflatten_arrays_only(data, children):
    (value,) = children
    if not isinstance(value, ri.Array):
        raise TypeError("arrays only")
    return FailsOnArrays(value)


tree_util.register_pytree_node(
    FailsOnArrays, lambda node: ((node.value,), None), _unflatten_arrays_only
)


def test_unflatten_that_rejects_placeholders_still_works_and_donates():
    x = rnp.arange(4.0)
    out = ri.jit(lambda x: FailsOnArrays(x + 1), donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(out.value), [1.0, 2.0, 3.0, 4.0])
    assert x.is_deleted()


# --- 8: errors that name the function and the argument -------------------------------------


def test_static_argnums_out_of_range_is_a_value_error_as_jax():
    with pytest.raises(ValueError, match="only accepts 1 positional arguments"):
        jax.jit(lambda x: x, static_argnums=2**40)
    with pytest.raises(ValueError, match=r"jit\(<lambda>\): static_argnums=\(1099511627776,\)"):
        ri.jit(lambda x: x, static_argnums=2**40)
    with pytest.raises(ValueError, match="out of range"):
        ri.jit(lambda *xs: xs, static_argnums=2**40)


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_argnums_out_of_range_on_both_backends(backend):
    needs(backend)
    with pytest.raises(ValueError, match="only accepts 1 positional arguments"):
        ri.jit(lambda x: x, static_argnums=2**40, backend=backend)
    with pytest.raises(ValueError, match="only accepts 1 positional arguments"):
        ri.jit(lambda x: x, donate_argnums=-2, backend=backend)


def test_donate_argnums_not_an_int_names_the_option():
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): donate_argnums must be ints.*1\.5"):
        ri.jit(lambda x: x, donate_argnums=1.5)
    with pytest.raises(TypeError, match="static_argnames must be strings"):
        ri.jit(lambda x: x, static_argnames=1)


def test_iota_with_a_bad_dtype_names_iota():
    with pytest.raises(TypeError, match="iota.*'foo'"):
        lax.iota("foo", 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_pow_with_a_huge_exponent_matches_jax(backend):
    needs(backend)
    x = np.array([1.0, -1.0, 0.5], np.float32)
    want = np.asarray(jax.lax.integer_pow(jnp.asarray(x), 10**20))
    got = ri.jit(lambda x: lax.integer_pow(x, 10**20), backend=backend)(x)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_compiled_called_with_a_tuple_says_what_differs():
    skip_without_pjrt()
    x = np.ones((4, 4), np.float32)
    compiled = ri.jit(lambda a, b: a @ b, backend="pjrt").trace(x, x).lower().compile()
    with pytest.raises(TypeError, match="tree structure of the arguments changed"):
        compiled((x, x))
    with pytest.raises(TypeError, match=r"argument b: shape changed from \(4, 4\) to \(4, 3\)"):
        compiled(x, x[:, :3])


# --- 9, 10, 11: JAX API behaviours --------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_jitted_method_binds_self_as_jax(backend):
    needs(backend)

    def make(jit):
        class Scale:
            def __init__(self, k):
                self.k = k

            def __hash__(self):
                return hash(self.k)

            def __eq__(self, other):
                return isinstance(other, Scale) and other.k == self.k

            @functools.partial(jit, static_argnums=0)
            def apply(self, x):
                return x * self.k

        return Scale

    x = np.arange(3.0, dtype=np.float32)
    want = make(jax.jit)(3).apply(x)
    got = make(functools.partial(ri.jit, backend=backend))(3).apply(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_eval_shape_accepts_duck_typed_arguments_as_jax():
    class Duck:
        shape = (3, 2)
        dtype = np.dtype(np.int16)

    def f(x):
        return x.astype(np.float32).sum(axis=0)

    want = jax.eval_shape(f, Duck())
    got = ri.eval_shape(f, Duck())
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_donate_argnames_without_a_signature_is_a_value_error_as_jax():
    with pytest.raises(ValueError, match="signature"):
        jax.jit(max, donate_argnames="x")
    with pytest.raises(ValueError, match=r"jit\(max\): getting the signature of max failed"):
        ri.jit(max, donate_argnames="x")


def test_only_reference_sees_every_view():
    from refimpl.backends.ref.execute import _only_reference

    buffers = {0: np.zeros(3)}
    assert _only_reference(buffers, 0)
    view = buffers[0][1:]
    assert not _only_reference(buffers, 0)
    del view
    assert _only_reference(buffers, 0)


def test_views_taken_while_another_thread_donates_keep_their_values():
    f = ri.jit(lambda x: x * 10, donate_argnums=0)
    f(rnp.arange(1000.0))
    for _ in range(20):
        a = rnp.arange(1000.0)
        views, errors = [], []
        start = threading.Barrier(2)

        def reader(a=a, views=views, errors=errors, start=start):
            start.wait()
            for _ in range(50):
                try:
                    views.append(np.asarray(a))
                except RuntimeError as error:
                    errors.append(str(error))
                    return

        thread = threading.Thread(target=reader)
        thread.start()
        start.wait()
        out = f(a)
        thread.join()
        np.testing.assert_array_equal(np.asarray(out), np.arange(1000.0) * 10)
        for view in views:
            np.testing.assert_array_equal(view, np.arange(1000.0))
        assert all("has been deleted" in e for e in errors)


def test_scan_length_beyond_int32_is_rejected_when_traced_without_x64():
    def f(x):
        return lax.scan(lambda c, _: (c + 1, None), x, None, length=2**31)[0]

    with pytest.raises(ValueError, match=r"scan: length 2147483648 does not fit the int32"):
        ri.make_program(f)(1.0)
    ri.config.update("enable_x64", True)
    program = ri.make_program(f)(1.0)  # an int64 counter can count it: only traced here
    assert "length=2147483648" in str(program)


def test_deeply_nested_mask_spec_is_a_parse_error_not_a_recursion_error():
    with pytest.raises(ValueError, match="nests more than 64 levels deep"):
        ri.mask(lambda x: x, ["(" * 500 + "n" + ")" * 500], "(n,)")
    with pytest.raises(ValueError, match="nests more than 64 levels deep"):
        ri.mask(lambda x: x, ["-" * 5000 + "n"], "(n,)")
    assert ri.mask(lambda x: x, ["(" * 20 + "n" + ")" * 20], "(n,)") is not None


# --- 12: mask's out_shape check compares every dim -----------------------------------------


def test_mask_output_with_a_constant_dim_where_out_shape_names_a_size():
    # sum over the masked dim leaves logical shape (3,), not (n,).
    f = ri.mask(lambda x: x.sum(0), ["(n, 3)"], "(n,)")
    with pytest.raises(TypeError, match=r"logical shape \(3,\).*out_shape says '\(n,\)'"):
        f([rnp.ones((3, 3))], {"n": 2})
    g = ri.mask(lambda x: x.sum(1), ["(n, 3)"], "(n,)")
    np.testing.assert_array_equal(np.asarray(g([rnp.ones((3, 3))], {"n": 2}))[:2], [3.0, 3.0])


# --- 14: tracers are instances of ri.Array, as JAX's are of jax.Array ----------------------


@pytest.mark.parametrize("transform", ["jit", "vmap", "grad"])
def test_traced_values_are_arrays_as_in_jax(transform):
    def run(lib, array_type):
        seen = []

        def f(x):
            seen.append(isinstance(x, array_type))
            return (x * 2.0).sum()

        getattr(lib, transform)(f)(np.ones(3, np.float32))
        return seen

    assert run(ri, ri.Array) == run(jax, jax.Array) == [True]
    assert not isinstance(np.ones(3), ri.Array)


# --- 13: control-flow functions and jit(f) twice are traced once, as in JAX ---------------------


def _trace_counts(lib, np_module):
    counts = {"cond_fun": 0, "body_fun": 0, "true_fun": 0, "false_fun": 0, "f": 0}

    def cond_fun(x):
        counts["cond_fun"] += 1
        return x < 10

    def body_fun(x):
        counts["body_fun"] += 1
        return x + 1

    def true_fun(x):
        counts["true_fun"] += 1
        return x + 1.0

    def false_fun(x):
        counts["false_fun"] += 1
        return x - 1.0

    def f(x):
        counts["f"] += 1
        return x * 2

    for _ in range(3):  # eager calls with the same function objects
        lib.lax.while_loop(cond_fun, body_fun, 0)
        lib.lax.cond(True, true_fun, false_fun, 1.0)
    lib.jit(f)(1.0)
    lib.jit(f)(1.0)  # a second jit of the same f shares the first one's cache
    lib.jit(lambda x: lib.lax.while_loop(cond_fun, body_fun, x))(np_module.int32(0))
    return counts


def test_control_flow_and_jit_twice_trace_as_often_as_jax():
    assert _trace_counts(ri, np) == _trace_counts(jax, np)


def test_a_body_closing_over_an_outer_tracer_is_not_reused_across_traces():
    def results(lib):
        holder = {}

        def body(x):  # one function object, reading a tracer of each enclosing trace
            return x + holder["y"]

        def outer(y):
            holder["y"] = y
            return lib.lax.while_loop(lambda x: x < 10.0, body, np.float32(0.0))

        first = lib.jit(outer)(np.float32(1.0))
        second = lib.jit(lambda y: outer(y) * 1.0)(np.float32(3.0))
        return [float(first), float(second)]

    assert results(ri) == [10.0, 12.0]
    # JAX keeps the first trace, whose captured tracer has escaped by then.
    with pytest.raises(jax.errors.UnexpectedTracerError):
        results(jax)


# --- 2 (reference side): a deep pytree is the same clear error on both backends ----------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_deep_pytree_argument_is_a_clear_recursion_error(backend):
    needs(backend)
    deep = np.float32(1.0)
    for _ in range(50_000):
        deep = [deep]
    f = ri.jit(lambda t: 0.0, backend=backend)
    with pytest.raises(RecursionError, match="while flattening the arguments of a jitted"):
        f(deep)
    assert np.asarray(f([[np.float32(1.0)]])) == 0.0  # and the function still works


def test_a_dead_ref_in_a_reference_cycle_does_not_change_trace_counts():
    # An exception kept in the frame that made a ref forms a cycle
    # (exception -> traceback -> frame -> exception) that keeps the dead ref
    # until the cyclic collector runs; cond must still trace each branch once,
    # as JAX does.
    def make_garbage_ref():
        ref = ri.new_ref(np.zeros(3, np.float32))  # noqa: F841 - dies with the frame
        try:
            raise ValueError("kept")
        except ValueError as error:
            kept = error  # noqa: F841

    counts = {}
    gc.collect()
    gc.disable()  # the automatic collector must not happen to free the ref first
    try:
        for lib in (ri, jax):
            make_garbage_ref()
            traces = []

            def true_fun(x, traces=traces):
                traces.append(1)
                return x + 1

            f = lib.jit(lambda x, t=true_fun, c=lib.lax.cond: c(x.sum() > 0, t, lambda v: v - 1, x))
            np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), np.full(3, 2.0))
            counts[lib.__name__] = len(traces)
    finally:
        gc.enable()
    assert counts == {"refimpl": 1, "jax": 1}
