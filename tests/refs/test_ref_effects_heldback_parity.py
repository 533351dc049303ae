"""``make_jaxpr(f)(...).effects`` compared with JAX 0.10.2 live (issue 29: JAX's
mutable_array_test.py test_basic and test_closed_over_basic check that the
ClosedJaxpr of a function writing a ref has a ``RefEffect``; lane CUSTOM).

JAX's ClosedJaxpr (and its ``.jaxpr``) lists its effects: a read of a ref it
takes or closes over is a ``ReadEffect`` of that ref, a write a
``WriteEffect``, an ``addupdate`` an ``AccumEffect``; debug callbacks a
``DebugEffect``, io_callbacks an ``IOEffect`` or ``OrderedIOEffect``. Compared
here: the effects' class names and, for ref effects, which of the program's
constants-then-inputs the ref is.
"""

from __future__ import annotations

import importlib.util
import pathlib

import jax
import jax.experimental
import jax.extend.core
import pytest

import refimpl as ri
import refimpl.experimental
import refimpl.numpy as rnp
from refimpl.effects import RefEffect


def _cases(ns, io_callback):
    jnp = ns.numpy
    r = ns.new_ref(jnp.zeros(3))

    def write_arg(ref):
        ref[...] += 1.0
        ref[0] += 1

    def write_closed():
        r[1] += 1.0

    def read_arg(ref, x):
        return ref[...] * x

    def accum_arg(ref):
        ns.ref.addupdate(ref, 0, 1.0)

    def io(ordered):
        shape = ns.ShapeDtypeStruct((), jnp.float32)
        return lambda x: io_callback(lambda y: y, shape, x, ordered=ordered)

    def scan_print(x):
        body = lambda c, _: (ns.debug.print("{}", c) or c, None)  # noqa: E731
        return ns.lax.scan(body, x, None, length=2)

    return {
        "write_arg": (write_arg, lambda: (ns.new_ref(jnp.zeros(3)),)),
        "jit_write_arg": (ns.jit(write_arg), lambda: (ns.new_ref(jnp.zeros(3)),)),
        "write_closed": (write_closed, lambda: ()),
        "jit_write_closed": (ns.jit(write_closed), lambda: ()),
        "read_arg": (read_arg, lambda: (ns.new_ref(jnp.zeros(3)), 2.0)),
        "accum_arg": (accum_arg, lambda: (ns.new_ref(jnp.zeros(3)),)),
        "pure": (lambda x: x + 1, lambda: (1.0,)),
        "debug_print": (lambda x: ns.debug.print("{}", x), lambda: (1.0,)),
        "io_unordered": (io(False), lambda: (1.0,)),
        "io_ordered": (io(True), lambda: (1.0,)),
        "scan_debug_print": (scan_print, lambda: (1.0,)),
    }


def _summary(closed, ref_index):
    """Sorted (class name, index of the ref among the Ref-typed constvars +
    invars: refimpl makes an ``addupdate``'s Python scalar a constant, JAX a
    literal, a known difference of the text)."""
    binders = [*closed.jaxpr.constvars, *closed.jaxpr.invars]
    binders = [v for v in binders if str(v.aval).startswith("Ref{")]
    out = []
    for effects in (closed.effects, closed.jaxpr.effects):
        out.append(sorted((type(e).__name__, ref_index(e, binders)) for e in effects))
    return out


def _jax_ref_index(effect, binders):
    ref = getattr(effect, "input", None)  # 0.10.2: the Var
    return next((i for i, v in enumerate(binders) if v is ref), None)


def _ri_ref_index(effect, binders):
    if not isinstance(effect, RefEffect):
        return None
    return next(i for i, v in enumerate(binders) if v is effect.input)


def _jax_summaries():
    ns = jax
    ns.new_ref = jax.new_ref
    ns.ref = jax.ref
    out = {}
    for name, (fun, args) in _cases(ns, jax.experimental.io_callback).items():
        out[name] = _summary(jax.make_jaxpr(fun)(*args()), _jax_ref_index)
    return out


def test_effects_are_jaxs(backend):
    want = _jax_summaries()
    got = {
        name: _summary(ri.make_jaxpr(fun)(*args()), _ri_ref_index)
        for name, (fun, args) in _cases(ri, refimpl.experimental.io_callback).items()
    }
    assert got == want
    assert want["write_arg"][0] == [("ReadEffect", 0), ("WriteEffect", 0)]  # the oracle ran


def test_extend_core_names_the_effect_classes():
    import refimpl.extend.core as ri_core

    assert ri_core.no_effects == jax.extend.core.no_effects == frozenset()
    closed = ri.make_jaxpr(lambda: None)()
    assert closed.effects == set() and isinstance(
        closed.effects, type(jax.make_jaxpr(lambda: None)().effects)
    )
    write = ri.make_jaxpr(lambda ref: ref.__setitem__(0, 1.0))(ri.new_ref(rnp.zeros(2)))
    assert all(isinstance(e, ri_core.Effect) for e in write.effects)


def test_runner_maps_refeffect_and_is_weakly_typed_to_refimpl():
    """tools/run_jax_tests.py's JAX-internal names used by mutable_array_test
    (``RefEffect``) and batching_test (``dtypes.is_weakly_typed``) resolve
    to refimpl's, which answer as JAX's do."""
    from jax._src import dtypes as jax_dtypes

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("run_jax_tests", root / "tools/run_jax_tests.py")
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    names = runner.INTERNAL_NAMES
    assert names["jax._src.state.types.RefEffect"] == "refimpl.effects:RefEffect"
    module, attr = names["jax._src.dtypes.is_weakly_typed"].split(":")
    is_weak = getattr(importlib.import_module(module), attr)
    values_jax = [1, 1.0, True, 1j, jax.numpy.ravel(1), jax.numpy.float32(1), jax.numpy.ones(2)]
    values_ri = [1, 1.0, True, 1j, rnp.ravel(1), rnp.float32(1), rnp.ones(2)]
    assert [is_weak(v) for v in values_ri] == [jax_dtypes.is_weakly_typed(v) for v in values_jax]
    inside_ri, inside_jax = [], []
    ri.vmap(lambda x: inside_ri.append(is_weak(x)) or x)(rnp.ravel(1))
    jax.vmap(lambda x: inside_jax.append(jax_dtypes.is_weakly_typed(x)) or x)(jax.numpy.ravel(1))
    assert inside_ri == inside_jax == [True]


@pytest.mark.parametrize("name", ["write_arg", "write_closed"])
def test_effects_survive_evaluation(backend, name):
    """Reading ``effects`` changes nothing: the ClosedJaxpr still evaluates."""
    fun, args = _cases(ri, refimpl.experimental.io_callback)[name]
    closed = ri.make_jaxpr(fun)(*args())
    assert closed.effects
    assert ri.core_api.eval_jaxpr(closed.jaxpr, closed.consts, *args()) == []
