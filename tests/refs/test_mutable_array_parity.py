"""Refs as JAX 0.10.2's own mutable-array programs use them: which writes
convert a value of another dtype, free_ref inside the jit that made the
ref, a custom_vjp fwd returning a ref that is not its argument, and the
``Ref.addupdate`` method. Each program runs on JAX (the oracle) and on
refimpl, on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _outcome(fn):
    """("ok", value) or ("raise", exception type)."""
    try:
        return "ok", np.asarray(fn())
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "raise", type(e)


def _same(lib_fn):
    want = _outcome(lambda: lib_fn(*LIBS["jax"]))
    got = _outcome(lambda: lib_fn(*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] is want[1], (got, want)
    else:
        assert got[1].dtype == want[1].dtype
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    return want


# --- which writes convert the value --------------------------------------------------------

# (ref dtype, value maker, whole-ref write?): JAX converts a weakly typed
# float into a float ref and any integer into an integer ref; every other
# dtype mismatch is its ValueError "Invalid dtype for `swap`".
WRITES = [
    ("int32", lambda np_: 1.0, False),  # weak float into int
    ("float32", lambda np_: 1, False),  # weak int into float
    ("bfloat16", lambda np_: 1.0, False),  # weak float into bfloat16: converted
    ("bfloat16", lambda np_: 1, False),
    ("int8", lambda np_: 1, False),  # weak int into int8: converted
    ("int16", lambda np_: np_.int32(3), False),  # strong int32 into int16: converted too
    ("bfloat16", lambda np_: np_.float32(1.0), False),  # strong float32: refused
    ("float32", lambda np_: np_.ones(3, "bfloat16"), True),
    ("complex64", lambda np_: 1.0, False),
    ("float32", lambda np_: True, False),
    ("uint8", lambda np_: 2, False),
]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", range(len(WRITES)))
def test_a_write_converts_as_jax(backend, case, jit):
    dtype, make, whole = WRITES[case]

    def run(lib, np_):
        ref = lib.new_ref(np_.zeros(3, dtype))

        def write(r):
            if whole:
                r[...] = make(np_)
            else:
                r[1] = make(np_)

        (lib.jit(write) if jit else write)(ref)
        return ref[...]

    _same(run)


def test_an_int_ref_incremented_by_a_float_is_the_dtype_error(backend):
    def run(lib, np_):
        ref = lib.new_ref(np_.array([0, 0, 0]))
        ref[...] += 1.0

    assert _same(run) == ("raise", ValueError)

    def bf16(lib, np_):
        ref = lib.new_ref(np_.array(0, dtype=ml_dtypes.bfloat16))
        ref[...] += 1.0  # bfloat16 + weak float stays bfloat16
        return ref[...]

    assert _same(bf16)[0] == "ok"


@pytest.mark.parametrize("dtype, value", [("bfloat16", 1.0), ("int8", 1), ("float32", 1)])
def test_addupdate_converts_nothing(backend, dtype, value):
    def run(lib, np_):
        ref = lib.new_ref(np_.zeros(3, dtype))
        lib.ref.addupdate(ref, 1, value)
        return ref[...]

    assert _same(run)[0] == "raise"


def test_a_shape_error_is_reported_before_a_dtype_error(backend):
    with pytest.raises(ValueError, match="Invalid shape"):
        ri.new_ref(rnp.zeros(3, "int32"))[...] = 1.0
    with pytest.raises(ValueError, match="Invalid shape"):
        jax.new_ref(jnp.zeros(3, "int32"))[...] = 1.0


# --- free_ref --------------------------------------------------------------------------------


def _after_free(lib, what):
    @lib.jit
    def f(x):
        ref = lib.empty_ref(lib.ShapeDtypeStruct((), "float32"))
        ref[...] = 2.0 * x
        out = ref[...]
        lib.free_ref(ref)
        if what == "read":
            return ref[...]
        if what == "write":
            ref[...] = x
        if what == "free":
            lib.free_ref(ref)
        if what == "freeze":
            return lib.freeze(ref)
        return out

    return f


@pytest.mark.parametrize("what", ["read", "write", "free", "freeze"])
def test_a_ref_freed_in_the_jit_that_made_it_is_dead(backend, what):
    with pytest.raises(Exception):  # noqa: B017, PT011 - JAX's type varies (ValueError, KeyError)
        _after_free(jax, what)(1.0)
    with pytest.raises(ValueError, match="freed by free_ref"):
        _after_free(ri, what)(1.0)


def test_free_ref_then_nothing_else_runs_and_differentiates(backend):
    f = _after_free(ri, None)
    assert float(f(3.0)) == 6.0
    y, t = ri.jvp(f, (3.0,), (1.0,))
    assert (float(y), float(t)) == (6.0, 2.0)
    assert float(ri.grad(f)(3.0)) == 2.0


@pytest.mark.parametrize("where", ["eager", "grad", "scan"])
def test_free_ref_elsewhere_only_checks_its_argument(backend, where):
    def run(lib, np_):
        def f(x):
            ref = lib.new_ref(x)
            if where == "scan":

                def body(c, _):
                    lib.free_ref(ref)
                    return c, None

                lib.lax.scan(body, 0.0, None, length=1)
            else:
                lib.free_ref(ref)
            return ref[...] * 2.0

        if where == "grad":
            return lib.grad(f)(1.0)
        return lib.jit(f)(1.0) if where == "scan" else f(np_.float32(1.0))

    assert _same(run)[0] == "ok"


# --- custom_vjp residual refs ------------------------------------------------------------------


def _fwd_returns(lib, which, jit):
    outer = lib.new_ref(0.0)

    @lib.custom_vjp
    def f(x, ref):
        return x

    def fwd(x, ref):
        if which == "argument":
            return x, ref
        if which == "new":
            return x, (ref, lib.new_ref(1.0))
        return x, outer

    f.defvjp(fwd, lambda res, ct: (ct, None))
    g = lib.jit(f) if jit else f
    return lib.vjp(g, 3.0, lib.new_ref(0.0))[0]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("which", ["new", "closed-over"])
def test_a_custom_vjp_fwd_may_return_only_its_argument_refs(backend, which, jit):
    with pytest.raises(ValueError, match="custom_vjp fwd function .* that was not an argument"):
        _fwd_returns(jax, which, jit)
    with pytest.raises(ValueError, match="custom_vjp fwd function .* that was not an argument"):
        _fwd_returns(ri, which, jit)
    assert float(_fwd_returns(ri, "argument", jit)) == 3.0


# --- Ref.addupdate --------------------------------------------------------------------------


def test_ref_addupdate_method(backend):
    def run(lib, np_):
        whole = lib.new_ref(np_.zeros(4))
        whole.addupdate(1.0)
        lib.vmap(lambda r: r.addupdate(2.0))(part := lib.new_ref(np_.zeros(4)))
        at = lib.new_ref(np_.zeros(4))
        at.addupdate(np_.float32(3.0), 2)
        return np_.stack([whole[...], part[...], at[...]])

    _same(run)


# --- checkpoint with Ref arguments ------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True])
def test_a_ref_argument_of_a_checkpoint_is_written(backend, jit):
    def run(lib, np_):
        def f(y, r):
            out = y * y
            r[...] += out
            return out

        g = lib.checkpoint(f)
        r = lib.new_ref(np_.float32(1.0))
        out = (lib.jit(g) if jit else g)(np_.float32(2.0), r)
        return np_.stack([out, r[...]])

    assert _same(run)[0] == "ok"


@pytest.mark.parametrize("jit", [False, True])
def test_grad_of_a_checkpoint_reading_a_ref_argument(backend, jit):
    def run(lib, np_):
        g = lib.checkpoint(lambda y, r: np_.sin(y) * r[...])
        r = lib.new_ref(np_.float32(3.0))
        return lib.grad(lib.jit(g) if jit else g)(np_.float32(2.0), r)

    assert _same(run)[0] == "ok"


@pytest.mark.parametrize("jit", [False, True])
def test_grad_of_a_checkpoint_writing_a_differentiated_value_into_a_ref_argument(backend, jit):
    def run(lib, np_):
        def f(y, r):
            out = y * y
            r[...] += out
            return out

        g = lib.checkpoint(f)
        return lib.grad(lib.jit(g) if jit else g)(np_.float32(2.0), lib.new_ref(1.0))

    assert _same(run) == ("raise", Exception)


# --- a Ref among a scan's xs ------------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_a_ref_writes_its_rows(backend, jit, reverse):
    def run(lib, np_):
        ref = lib.new_ref(np_.arange(6.0).reshape(3, 2))
        xs = np_.arange(3.0)

        def body(c, x_r):
            x, r = x_r
            r[1] = r[1] + x * c
            r.addupdate(np_.ones(2, "float32"))
            return c + r[0], r[...] * len(r)

        def f():
            return lib.lax.scan(body, np_.float32(1.0), (xs, ref), reverse=reverse)

        carry, ys = (lib.jit(f) if jit else f)()
        return np_.concatenate([carry[None], ys.ravel(), ref[...].ravel()])

    assert _same(run)[0] == "ok"


def test_grad_of_a_scan_over_a_ref_made_inside(backend):
    def run(lib, np_):
        def f(xs):
            ref = lib.new_ref(xs)
            return lib.lax.scan(lambda c, r: (c + np_.sin(r[...]), None), 0.0, ref)[0]

        return lib.grad(f)(np_.arange(3.0))

    assert _same(run)[0] == "ok"


def test_a_scanned_ref_row_takes_values_of_its_shape(backend):
    def run(lib, np_):
        def body(c, r):
            r.addupdate(1.0)  # a scalar into a row of 2: no broadcasting
            return c, None

        lib.lax.scan(body, 0.0, lib.new_ref(np_.zeros((3, 2))))

    assert _same(run) == ("raise", ValueError)


# --- Refs among cond's operands ---------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("pred", [False, True])
def test_cond_passes_ref_operands_to_its_branches(backend, jit, pred):
    def run(lib, np_):
        ref = lib.new_ref(np_.zeros(3, "float32"))

        def add(x, r):
            r[...] += x
            return x * 2

        def put(x, r):
            r[1] = x[0] + 1
            return x * 3

        def f(p, x):
            return lib.lax.cond(p, add, put, x, ref)

        out = (lib.jit(f) if jit else f)(pred, np_.arange(3.0, dtype="float32"))
        return np_.concatenate([out, ref[...]])

    assert _same(run)[0] == "ok"


def test_switch_and_grad_with_ref_operands(backend):
    def run(lib, np_):
        ref = lib.new_ref(np_.float32(0.0))

        def write(r):
            r[...] = np_.float32(5.0)
            return np_.float32(1.0)

        out = lib.lax.switch(1, [lambda r: r[...], write], ref)

        def f(x):
            r = lib.new_ref(x)
            lib.lax.cond(x > 0, lambda r: r.__setitem__(..., r[...] * 3.0), lambda r: None, r)
            return r[...]

        return np_.stack([out, ref[...], lib.grad(f)(np_.float32(2.0))])

    assert _same(run)[0] == "ok"


def test_cond_ref_operand_errors_name_the_parameters(backend):
    r = ri.new_ref(0.0)
    with pytest.raises(ValueError, match=r"for cond.*at both x1 and x2"):
        ri.lax.cond(True, lambda x1, x2: None, lambda x1, x2: None, r, r)
    with pytest.raises(ValueError, match="closed over and passed as the argument y_ref"):
        ri.lax.cond(True, lambda y_ref: r[...] + y_ref[...], lambda y_ref: r[...], r)
    j = jax.new_ref(0.0)
    with pytest.raises(ValueError, match=r"for cond.*at both x1 and x2"):
        jax.lax.cond(True, lambda x1, x2: None, lambda x1, x2: None, j, j)
    with pytest.raises(ValueError, match="closed over and passed as the argument y_ref"):
        jax.lax.cond(True, lambda y_ref: j[...] + y_ref[...], lambda y_ref: j[...], j)


@pytest.mark.parametrize("lib", ["jax", "ri"])
def test_scan_carry_ref_errors_name_the_carry_parameter(lib):
    api = LIBS[lib][0]
    r = api.new_ref(0.0)
    with pytest.raises(ValueError, match=r"for scan .*appeared at both c\[0\] and c\[1\]"):
        api.lax.scan(lambda c, _: (None, None), (r, r), None, length=1)
    with pytest.raises(ValueError, match="closed over and passed as the argument y_ref"):
        api.lax.scan(lambda y_ref, _: (r[...] + y_ref[...], None), r, None, length=1)


def test_mutable_array_checks_flag():
    # JAX's flag (default True) is accepted; refimpl's checks cannot be turned off
    assert jax.config.jax_mutable_array_checks is True
    ri.config.update("mutable_array_checks", True)
    assert ri.config.mutable_array_checks is True
    with pytest.raises(ValueError, match="always checks mutable array references"):
        ri.config.update("mutable_array_checks", False)


# --- a Ref of typed PRNG keys ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["eager", "jit", "scan"])
def test_a_ref_of_typed_keys(backend, where):
    def run(lib, np_):
        ref = lib.new_ref(lib.random.split(lib.random.key(0), 3))

        def step():
            ref[1] = lib.random.fold_in(ref[1], 7)

        if where == "jit":
            lib.jit(step)()
        elif where == "scan":
            lib.lax.scan(lambda c, _: (step(), (c, None))[1], 0, None, length=2)
        else:
            step()
        return lib.random.key_data(lib.freeze(ref))

    assert _same(run)[0] == "ok"


def test_a_ref_of_keys_takes_only_keys(backend):
    def run(lib, np_):
        ref = lib.new_ref(lib.random.key(0))
        ref[...] = np_.zeros(2, "uint32")

    assert _same(run) == ("raise", ValueError)


# --- a Ref's sharding ----------------------------------------------------------------------


def test_a_ref_and_its_type_have_the_held_arrays_sharding(backend):
    # mutable_array_test's sharding_persists and explicit_sharding_after_indexing
    def run(lib, np_):
        mesh = lib.make_mesh((1,), ("i",), devices=lib.devices()[:1])
        spec = lib.sharding.PartitionSpec("i")
        x = lib.device_put(np_.arange(2), lib.sharding.NamedSharding(mesh, spec))
        ref = lib.new_ref(x)
        traced = []

        @lib.jit
        def read(r):
            traced.append(lib.typeof(r).sharding.spec == lib.typeof(r[...]).sharding.spec)
            return r[...]

        y = read(ref)
        return [
            ref.sharding == x.sharding,
            ref[...].sharding == x.sharding,
            lib.jit(lambda: ref[...])().sharding == x.sharding,
            y.sharding == x.sharding,
            lib.typeof(ref).sharding == lib.typeof(x).sharding,
            *traced,
        ]

    outcome, value = _same(run)
    assert outcome == "ok" and value.tolist() == [True] * 6


# --- a Ref among the differentiated arguments ----------------------------------------------


def _doubled_sum(r):
    r[...] = r[...] * 2
    return r[...].sum()


REF_DERIVATIVES = {
    "grad": lambda lib, r: lib.grad(lambda r: r[...].sum())(r),
    "grad_writing": lambda lib, r: lib.grad(_doubled_sum)(r),
    "grad_argnums": lambda lib, r: lib.grad(lambda x, r: (x * r[...]).sum(), argnums=(0, 1))(
        np.ones(3, np.float32), r
    ),
    "grad_in_a_tuple": lambda lib, r: lib.grad(lambda p: (p[0] * p[1][...]).sum())(
        (np.ones(3, np.float32), r)
    ),
    "value_and_grad_jit": lambda lib, r: lib.jit(lib.value_and_grad(lambda r: r[...].sum()))(r),
    "jacrev": lambda lib, r: lib.jacrev(lambda r: r[...])(r),
    "jacfwd": lambda lib, r: lib.jacfwd(lambda r: r[...])(r),
    "jvp": lambda lib, r: lib.jvp(lambda r: r[...].sum(), (r,), (np.ones(3, np.float32),)),
    "vjp_pullback": lambda lib, r: lib.vjp(lambda r: r[...].sum(), r)[1](np.float32(1)),
}


@pytest.mark.parametrize("name", sorted(REF_DERIVATIVES))
def test_a_differentiated_ref_argument_is_jaxs_value_error(backend, name):
    # JAX 0.10.2: "Expected cotangent type Ref{float32[3]} but got float32[3]" in
    # reverse mode, "`get` must be called on `Ref` types" in forward mode
    # (refimpl returned zeros, and an identity Jacobian)
    prog = REF_DERIVATIVES[name]
    outcome = _same(lambda lib, np_: prog(lib, lib.new_ref(np_.ones(3, np.float32))))
    assert outcome == ("raise", ValueError)
    reverse = name not in ("jacfwd", "jvp")
    with pytest.raises(ValueError, match="Expected cotangent type" if reverse else "`get`"):
        prog(ri, ri.new_ref(rnp.ones(3, np.float32)))
