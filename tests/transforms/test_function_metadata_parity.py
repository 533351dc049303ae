"""What a transformed function says about itself, as JAX 0.10.2 (issue 29;
JAX's tests/api_test.py: the vmap docstring, jit's wraps, make_jaxpr's names).

``vmap(f)``, ``grad(f)``, ``pmap(f)``, ``checkpoint(f)``, ``shard_map(f)``,
``jit(f)``... are dressed as ``f`` (JAX's ``util.wraps``): name, qualified
name, module, docstring (JAX's own words for vmap, grad, value_and_grad,
jacfwd/jacrev/hessian), ``__wrapped__`` (so ``inspect.signature`` is ``f``'s),
annotations and ``f``'s own attributes, and the repr of the function that
results. Each is compared with JAX's for a plain function, a
``functools.partial`` (named after its function), a lambda and a callable
instance (``<unnamed function>``), on both backends. refimpl's messages keep
naming the transformation (``pmap(body): ...``, tests/refs/test_ref_escape.py),
and a jit of a transformed function is listed under ``f``'s name, as JAX's.

Left different (docs/parity_audit.md): the repr of the custom_jvp/custom_vjp/
custom_vmap objects (their class's module), ``make_jaxpr(f).__module__``
(``"jax"`` there, ``"refimpl"`` here), and the objects vjp, linearize and
linear_transpose return (JAX's own classes); custom_gradient, checkify and a
named_call given ``name=`` leave JAX's inner helper's names showing
(``wrapped_fun``, ``checked_fun``, ``wrapper``), which refimpl does not copy.
"""

from __future__ import annotations

import functools
import inspect
import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding as JaxNamedSharding
from jax.sharding import PartitionSpec as JaxP

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import custom_batching
from refimpl.sharding import NamedSharding, PartitionSpec


def f(x: float, y: float = 1.0) -> float:
    """The docstring of f."""
    return x * x * y


f.tag = "f's own attribute"  # type: ignore[attr-defined]


def g(x):  # no docstring, no annotations
    return x * 2.0


class Doubler:
    """A callable instance: no ``__name__``."""

    def __call__(self, x):
        return x * 2.0


PARTIAL = functools.partial(f, y=2.0)
LAMBDA = lambda x: x * 2.0  # noqa: E731
INSTANCE = Doubler()
BASES = {"f": f, "g": g, "partial": PARTIAL, "lambda": LAMBDA, "instance": INSTANCE}


def _mesh_of(m):
    return m.make_mesh((1,), ("x",))


def _sharded_jit(m, fun):
    named, spec = (NamedSharding, PartitionSpec) if m is ri else (JaxNamedSharding, JaxP)
    return m.jit(fun, in_shardings=named(_mesh_of(m), spec()), out_shardings=None)


def _shard_map(m, fun):
    spec = PartitionSpec if m is ri else JaxP
    return m.shard_map(fun, mesh=_mesh_of(m), in_specs=spec(), out_specs=spec())


def _custom_vmap(m, fun):
    return (custom_batching if m is ri else jax.custom_batching).custom_vmap(fun)


def _vectorize(m, fun):
    return (rnp if m is ri else jnp).vectorize(fun)


# (name, how each library makes it from a base callable); every one is dressed
# as the base by JAX 0.10.2
TRANSFORMS = {
    "vmap": lambda m, h: m.vmap(h),
    "grad": lambda m, h: m.grad(h),
    "grad_argnums_tuple": lambda m, h: m.grad(h, argnums=(0,)),
    "grad_has_aux": lambda m, h: m.grad(h, has_aux=True),
    "value_and_grad": lambda m, h: m.value_and_grad(h),
    "value_and_grad_argnums_list": lambda m, h: m.value_and_grad(h, argnums=[0]),
    "jacfwd": lambda m, h: m.jacfwd(h),
    "jacrev": lambda m, h: m.jacrev(h),
    "hessian": lambda m, h: m.hessian(h),
    "pmap": lambda m, h: m.pmap(h),
    "checkpoint": lambda m, h: m.checkpoint(h),
    "remat_with_policy": lambda m, h: m.remat(h, policy=m.checkpoint_policies.nothing_saveable),
    "custom_jvp": lambda m, h: m.custom_jvp(h),
    "custom_vjp": lambda m, h: m.custom_vjp(h),
    "custom_vmap": _custom_vmap,
    "named_call": lambda m, h: m.named_call(h),
    "jit": lambda m, h: m.jit(h),
    "jit_with_shardings": _sharded_jit,
    "shard_map": _shard_map,
    "vectorize": _vectorize,
    "make_jaxpr": lambda m, h: m.make_jaxpr(h),
    # compositions: the outer one is dressed as the inner one, itself as h
    "jit_of_vmap": lambda m, h: m.jit(m.vmap(h)),
    "vmap_of_jit": lambda m, h: m.vmap(m.jit(h)),
    "grad_of_grad": lambda m, h: m.grad(m.grad(h)),
    "jit_of_grad": lambda m, h: m.jit(m.grad(h)),
    "pmap_of_vmap": lambda m, h: m.pmap(m.vmap(h)),
    "checkpoint_of_jit": lambda m, h: m.checkpoint(m.jit(h)),
    "vmap_of_custom_jvp": lambda m, h: m.vmap(m.custom_jvp(h)),
}


def _cases():
    for tname in TRANSFORMS:
        for bname in BASES:
            yield pytest.param(tname, bname, id=f"{tname}-{bname}")


def _read(thunk):
    try:
        return thunk()
    except Exception as error:
        return f"<{type(error).__name__}>"


def _wrapped_label(w, base):
    if not hasattr(w, "__wrapped__"):
        return "<none>"
    inner = w.__wrapped__
    if inner is base:
        return "the base"
    return ("another callable named", _read(lambda: inner.__name__))


def _repr(w):
    # the address varies; the rest is compared
    return re.sub(r"0x[0-9a-f]+", "0x", repr(w))


def metadata(w, base):
    """What a transformed function says about itself."""
    return {
        "__name__": _read(lambda: w.__name__),
        "__qualname__": _read(lambda: w.__qualname__),
        "__module__": _read(lambda: w.__module__),
        "__doc__": _read(lambda: w.__doc__),
        "__wrapped__": _wrapped_label(w, base),
        # (a partial or an instance has none: what shows is each wrapper
        # class's own, an implementation detail)
        "__annotations__": _read(lambda: dict(w.__annotations__))
        if isinstance(base, types.FunctionType)
        else None,
        "signature": _read(lambda: str(inspect.signature(w))),
        "tag": _read(lambda: w.tag),
        # a plain function's repr names it (<function f at 0x>); the class of
        # the custom_* objects is each library's own
        "repr": _repr(w) if isinstance(w, types.FunctionType) else None,
    }


def _made(m, tname, base):
    try:
        return TRANSFORMS[tname](m, base), None
    except Exception as error:
        return None, type(error)


@pytest.mark.parametrize("tname,bname", list(_cases()))
def test_transformed_functions_are_dressed_as_jax_dresses_them(backend, tname, bname):
    base = BASES[bname]
    want, want_error = _made(jax, tname, base)
    got, got_error = _made(ri, tname, base)
    # named_call of a nameless callable: AttributeError, when it is made
    assert got_error is want_error
    if want_error is not None:
        return
    expected = metadata(want, base)
    actual = metadata(got, base)
    if tname == "make_jaxpr":  # JAX's is "jax", refimpl's its own package
        assert actual.pop("__module__") == "refimpl"
        expected.pop("__module__")
    # a plain function in JAX reads <function f at 0x...> (pmap's C++ wrapper
    # on pjrt too); otherwise the repr is the class's own
    actual["repr"] = None if expected["repr"] is None else _repr(got)
    assert actual == expected


def test_jax_docstrings_of_differentiated_and_vectorized_functions(backend):
    # the words of JAX's api_test (test_vmap_preserves_docstr) and of grad's
    def superfun(a):
        """Does things with stuff."""

    assert ri.vmap(superfun).__doc__ == (
        "Vectorized version of superfun. Takes similar arguments as superfun but with "
        "additional array axes over which superfun is mapped.\n\nOriginal documentation:"
        "\n\nDoes things with stuff."
    )
    assert ri.grad(f, argnums=(0, 1)).__doc__ == jax.grad(f, argnums=(0, 1)).__doc__
    assert ri.grad(f).__doc__.startswith("Gradient of f with respect to positional argument(s) 0.")


def _jit_name_in_listing(m, outer):
    """The name under which an inner jit of ``outer`` is listed."""
    x = np.ones((2, 3), np.float32)
    program = m.make_jaxpr(lambda v: outer(v))(x)
    eqns = program.eqns if m is ri else program.jaxpr.eqns
    (eqn,) = [e for e in eqns if e.primitive.name in ("jit", "pjit")]
    return eqn.params["name"]


@pytest.mark.parametrize(
    "compose",
    [
        lambda m: m.jit(m.vmap(g)),
        lambda m: m.jit(m.grad(lambda v: g(v).sum())),
        lambda m: m.jit(m.vmap(PARTIAL)),
        lambda m: m.jit(INSTANCE),
    ],
    ids=["jit_of_vmap", "jit_of_grad_of_lambda", "jit_of_vmap_of_partial", "jit_of_instance"],
)
def test_a_jit_of_a_transformed_function_is_listed_under_the_functions_name(backend, compose):
    assert _jit_name_in_listing(ri, compose(ri)) == _jit_name_in_listing(jax, compose(jax))


def test_traced_fun_name_of_a_jit_of_vmap(backend):
    x = np.ones((2, 3), np.float32)
    want = jax.jit(jax.vmap(g)).trace(x).fun_name
    assert ri.jit(ri.vmap(g)).trace(x).fun_name == want == "g"


def test_refimpl_messages_still_name_the_transformation(backend):
    # the dress is JAX's; the words of refimpl's own errors keep saying which
    # transformation refused (here pmap's static-argument check)
    with pytest.raises(ValueError, match=r"^pmap\(f\): pmapped function has static_broadcasted"):
        ri.pmap(f, static_broadcasted_argnums=(3,))(np.ones((1,), np.float32))
