"""Mutable array references as in JAX 0.10.2 (issue 29, class 1): new_ref's
keyword arguments, AbstractRef.update, free_ref, and JAX's ValueErrors for a
ref passed twice into (or returned by) a custom_vjp function. Compared with
JAX where JAX runs the same program."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_new_ref_kind_and_memory_space_are_part_of_the_type(backend):
    r = ri.new_ref(rnp.zeros(3), kind="anselm_ref")
    j = jax.new_ref(jnp.zeros(3), kind="anselm_ref")
    assert ri.typeof(r).kind == jax.typeof(j).kind == "anselm_ref"
    assert ri.typeof(ri.new_ref(rnp.zeros(3))).kind is None
    assert ri.typeof(ri.new_ref(1.0, memory_space=None)).memory_space is None

    def f(x):
        ref = ri.new_ref(x, kind="anselm_ref")
        ref[...] += 1.0
        return ref[...]

    assert float(ri.jit(f, backend=backend)(1.0)) == 2.0


def test_abstract_ref_update():
    ty = ri.typeof(ri.new_ref(rnp.zeros(3)))
    jty = jax.typeof(jax.new_ref(jnp.zeros(3)))
    assert ty.update(kind="k").kind == jty.update(kind="k").kind == "k"
    new_inner = ri.typeof(rnp.zeros(2, "int32"))
    updated = ty.update(inner_aval=new_inner)
    assert updated.inner_aval == new_inner and updated.shape == (2,)
    assert ty.update() == ty


def test_free_ref():
    r = ri.new_ref(rnp.arange(3.0))
    assert ri.free_ref(r) == () == jax.free_ref(jax.new_ref(jnp.arange(3.0)))
    with pytest.raises(TypeError):
        ri.free_ref(rnp.arange(3.0))


def _aliasing(lib, jit):
    @lib.custom_vjp
    def f(x_ref, y_ref):
        return 0.0

    f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
    x_ref = lib.new_ref(0.0)
    return (lib.jit(f) if jit else f)(x_ref, x_ref)


@pytest.mark.parametrize("jit", [False, True])
def test_one_ref_passed_twice_into_a_custom_vjp_primal(jit):
    with pytest.raises(ValueError, match="x_ref and y_ref"):
        _aliasing(jax, jit)
    with pytest.raises(ValueError, match="x_ref and y_ref"):
        _aliasing(ri, jit)


@pytest.mark.parametrize("nondiff", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_a_ref_returned_by_a_custom_vjp_primal(jit, nondiff):
    # mutable_array_test's return_from_custom_vjp_primal(_nondiff_argnum):
    # JAX's ValueError names the "custom_vjp primal function", also under jit
    def run(lib):
        if nondiff:

            @functools.partial(lib.custom_vjp, nondiff_argnums=(0,))
            def f(_, ref):
                return ref

            f.defvjp(lambda _, ref: ..., lambda *_: ...)
            g = lib.jit(f, static_argnums=0) if jit else f
            return g("hi", lib.new_ref(0.0))

        @lib.custom_vjp
        def f(ref):
            return ref

        f.defvjp(lambda ref: ..., lambda *_: ...)
        return (lib.jit(f) if jit else f)(lib.new_ref(0.0))

    with pytest.raises(ValueError, match="custom_vjp primal function"):
        run(jax)
    with pytest.raises(ValueError, match="custom_vjp primal function"):
        run(ri)


def test_distinct_refs_into_a_custom_vjp_primal_still_run():
    @ri.custom_vjp
    def f(x_ref, y_ref):
        return x_ref[...] + y_ref[...]

    f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
    assert float(f(ri.new_ref(1.0), ri.new_ref(2.0))) == 3.0
    assert np.isfinite(float(f(ri.new_ref(1.0), y_ref=ri.new_ref(2.0))))


# mutable_array_test's return_from_jit and return_from_jit_arg: JAX's
# ValueError says where the returned ref came from
RETURNED_REF = [
    (
        lambda lib: lib.jit(lib.new_ref)(np.arange(3)),
        r"traced for jit returned a mutable array reference.*\n\n.*was created on line",
    ),
    (
        lambda lib: lib.jit(lambda x_ref: x_ref)(lib.new_ref(np.arange(3))),
        r"traced for jit returned a mutable array reference.*\n\n"
        r".*was passed in as the argument x_ref",
    ),
    (
        lambda lib: lib.jit(lambda x: [x, lib.new_ref(x)])(1.0),
        r"traced for jit returned a mutable array reference.*\n\n.*was created on line",
    ),
]


@pytest.mark.parametrize("case", range(len(RETURNED_REF)))
def test_a_ref_returned_by_jit_says_where_it_came_from(backend, case):
    run, words = RETURNED_REF[case]
    with pytest.raises(ValueError, match=words):
        run(jax)
    with pytest.raises(ValueError, match=words):
        run(ri)
