"""Run one of JAX's own test files, unchanged, on refimpl (or on JAX itself).

    python tools/run_jax_tests.py FILE.py [--backend ref|pjrt|jax] [-k EXPR]
                                  [--json OUT] [--devices N] [--timeout S]
    python tools/run_jax_tests.py --compare JAX.json REFIMPL.json [--markdown OUT]

Issue 29's held-back check runs JAX's test files (``tests/random_test.py``,
``tests/batching_test.py``, ...) against refimpl "with only call conventions
adapted". This tool does that and writes one outcome per test method:
``pass``, ``fail`` (an assertion failed), ``error`` (another exception),
``skip``, or ``missing`` (the test needed a JAX-internal name refimpl has no
equivalent for: not counted as a failure). ``--backend jax`` runs the same
file on real JAX 0.10.2 with nothing aliased, to know which methods JAX
itself passes; ``--compare`` lists, by class, the methods JAX passes and
refimpl does not. Each run is best made in its own process (JAX reads
``XLA_FLAGS`` once, at its import).

How a file is run on refimpl:

* Real JAX is imported first, with its test harness ``jax._src.test_util``
  (``jtu``: ``JaxTestCase``, its assertions, ``parameterized``,
  ``sample_product``) and ``jax._src.config``: these stay JAX's own.
* The file is then loaded with ``jax`` and its public modules resolving to
  refimpl (``refimpl.as_jax.MODULES``: ``jax.numpy`` -> ``refimpl.numpy``,
  ``jax.lax``, ``jax.random``, ``jax.tree_util``, ``jax.sharding``, ...).
* Its imports of other ``jax._src`` modules (``core``, ``prng``,
  ``random``, ``dtypes``, ``state.types``, ...) get a stand-in whose names
  resolve to refimpl's equivalents (:data:`INTERNAL_NAMES`, then the public
  refimpl module of the same role, :data:`INTERNAL_MODULES`); a name with no
  equivalent is a :class:`MissingName` when the test uses it, and that test
  is reported ``missing``.
* The methods run with unittest (absl's parameterized classes expand as
  under pytest); ``-k`` selects ``Class.method`` ids as pytest's ``-k``
  does (substrings joined by ``and``/``or``/``not``).

The adaptations of call conventions, all of them:

1. ``jtu.check_grads``, ``jtu.check_jvp``, ``jtu.check_vjp`` ->
   ``refimpl.test_util``'s (JAX's call real JAX's ``jvp``/``vjp``).
2. ``jtu.create_mesh``/``jtu.create_global_mesh`` -> ``refimpl.make_mesh``
   with the same shape, names and axis types (JAX's builds a mesh of JAX's
   devices); ``jax.config.parse_flags_with_absl`` (``from jax import
   config``) -> JAX's own (the harness's flag parsing).
3. JAX's configuration flags are mirrored into refimpl's where refimpl has
   the flag (:data:`MIRRORED_FLAGS`): after every ``config.update``, every
   entry and exit of a flag's context (``jtu.with_config``, the defaults
   ``JaxTestCase.setUp`` enters, ``with config.x(v):`` in a test), refimpl's
   value is set to JAX's. So JaxTestCase's defaults
   ``jax_numpy_dtype_promotion='strict'`` and
   ``jax_numpy_rank_promotion='raise'`` hold on refimpl too, as on JAX;
   ``jax_enable_checks`` has no refimpl flag and is not mirrored.
4. JAX's registry ``jax._src.prng.prngs`` -> a dict, in JAX's order, of
   implementation names to refimpl's implementation objects (a key's
   ``_impl``, as JAX's registry holds its keys' ``_impl``; the public ones
   are ``jax.extend.random.threefry_prng_impl``, ...; ``random_test``
   builds its cases from it at import); ``jax._src.random.default_prng_impl()``
   -> the object of a key made now.
5. ``sys.argv`` is the file alone while it is imported (its
   ``config.parse_flags_with_absl()`` reads it).
6. ``--devices N`` (default 4): ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
   for JAX and ``REFIMPL_REF_NUM_DEVICES=N`` for refimpl's ref backend,
   set before either is imported.
7. A public module or name the file imports that is not there (refimpl has
   no equivalent, or JAX 0.10.2 no longer has it: ``jax.custom_transpose``,
   ``jax.ad_checkpoint.checkpoint``; on JAX also ``jax._src`` names 0.10.2
   dropped, ``for_loop``) is a missing-name stand-in, so that the file
   loads and only the tests using it are ``missing``. While the file itself
   is imported, using a stand-in gives another one (module-level
   registrations with JAX internals do nothing); in a test it raises.
   ``cache_clear()`` on a missing JAX-internal cache does nothing (refimpl
   has none). The same on both sides for the harness: a name taken from a
   harness module that JAX 0.10.2 no longer has (``from jax._src.lib import
   xla_extension``) and a ``jtu`` helper it no longer has (a decorator such
   as ``jtu.skip_on_xla_cpu_mlir`` makes its test ``missing``).
8. JAX-internal modules that moved before JAX 0.10.2 (:data:`MOVED_MODULES`:
   ``jax._src.prng`` is now ``jax._src.random.prng``, its Threefry functions
   ``jax._src.random.threefry2x32``; ``jax._src.api.pmap`` is
   ``jax._src.pmap.pmap``): on JAX too, the file's import of the old module
   gets a stand-in that finds each name where it is now; a name JAX 0.10.2
   no longer has is ``missing`` there as well.
9. JAX's test-helper modules (``jax._src.internal_test_util.*``:
   ``lax_test_util``'s op records, shapes, ``args_slicer``) are JAX's own
   code, loaded on refimpl as a fresh copy whose ``jax._src`` imports
   resolve as the file's do, so that what they build names refimpl's
   functions.
10. The harness's own jit (``JaxTestCase._CompileAndCheck``'s ``api.jit``,
    ``jtu.JIT_IMPLEMENTATION``) is refimpl's, since it is applied to refimpl
    functions; ``jax._src.ad_checkpoint.saved_residuals`` is
    ``refimpl.ad_checkpoint.residual_sources`` (JAX's ``(aval, source)``
    pairs), ``jax._src.core.Token`` refimpl's ``Token``,
    ``jax._src.array.ArrayImpl`` ``refimpl.Array`` (the base of every
    backend's arrays: ``isinstance`` answers as JAX's, ``type(x) is`` does
    not); ``jax._src.interpreters.partial_eval.dce_jaxpr`` is refimpl's
    ``dce_program`` with the program's constants kept (JAX's prunes an open
    jaxpr, whose constvars stay), ``partial_eval.close_jaxpr`` the program
    itself (refimpl's programs hold their constants), ``jax._src.core.subjaxprs``
    refimpl's ``core.subprograms`` of each equation; the public name JAX 0.10.2
    moved, ``jax.ad_checkpoint.checkpoint``, is ``jax.checkpoint`` (the same
    function) on both sides (:data:`RENAMED_PUBLIC`).
11. ``jtu.promote_like_jnp`` (the tests wrap a NumPy reference in it to
    promote its arguments as ``jnp`` would) promotes with refimpl's
    ``jax.numpy`` rules (:func:`_promote_like_refimpl`): the arguments are
    refimpl's arrays, which JAX's own promotion does not take.
12. JAX's dtype tables the tests compute their NumPy references' dtypes
    with (:data:`HARNESS_DATA`: ``jax._src.dtypes.to_inexact_dtype``,
    ``default_int_dtype``, ...; functions of dtypes and the mirrored x64
    flag, no arrays; its scalar types ``int_``, ``uint``, ``float_``,
    ``complex_``) are JAX's own on both sides;
    ``jax._src.lax.lax._convert_element_type`` (weak or strong inputs) is
    refimpl's ``lax.convert_element_type`` with JAX's optional dtype.
13. ``jtu.assert_dot_precision`` and ``jtu.assert_dot_preferred_element_type``
    (they read the ``dot_general`` equations of a function's jaxpr) trace
    with refimpl's ``make_jaxpr`` and look for refimpl's ``dot_general_p``,
    in nested jaxprs too, with JAX's assertions.
14. JAX's harness counters of JAX's own work (``jtu.count_*``: they read
    events JAX's internals record) count refimpl's work where refimpl does
    the same thing, recorded where it happens (``refimpl.test_events``):
    ``count_jit_tracing_cache_miss`` -> ``refimpl.test_util``'s (a jitted
    function traced for a new signature, ``eval_shape`` and ``make_jaxpr``
    included; both backends); on pjrt also ``count_jit_and_pmap_lowerings``
    (a program lowered to StableHLO; also behind
    ``assert_num_jit_and_pmap_compilations``) and
    ``count_pjit_cpp_cache_miss`` (a call the C++ fast path had no entry
    for), ``count_device_put`` (a device buffer made from host data; JAX
    counts one per array) and ``count_primitive_compiles`` (an eager
    primitive needing a new (primitive, params) jit). The reference backend
    lowers, transfers and compiles nothing and has no C++ path: there these
    four, and everywhere the counters of work refimpl does not do or does
    not count (:data:`UNCOUNTED`: ``count_jit_compilation_cache_miss``,
    ...), are missing-name stand-ins, so their tests are ``missing`` rather
    than passing or failing on JAX's count of nothing.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib
import importlib.util
import json
import os
import pathlib
import re
import signal
import sys
import time
import types
import unittest
from collections.abc import Iterator
from typing import Any

# JAX-internal name -> refimpl's equivalent ("module:attribute")
INTERNAL_NAMES: dict[str, str] = {
    "jax._src.core.mutable_array": "refimpl.ref:new_ref",
    "jax._src.core.new_ref": "refimpl.ref:new_ref",
    "jax._src.core.freeze": "refimpl.ref:freeze",
    "jax._src.core.ShapedArray": "refimpl.core_api:ShapedArray",
    "jax._src.core.ConcretizationTypeError": "refimpl.errors:ConcretizationTypeError",
    "jax._src.prng.PRNGKeyArray": "refimpl.random:PRNGKeyArray",
    "jax._src.prng.PRNGImpl": "refimpl.random:PRNGImpl",
    "jax._src.prng.KeyTy": "refimpl.random:KeyDtype",
    "jax._src.prng.threefry_2x32": "refimpl.extend.random:threefry_2x32",
    # JAX's (aval, source) pairs; refimpl.ad_checkpoint.saved_residuals is avals only
    "jax._src.ad_checkpoint.saved_residuals": "refimpl.ad_checkpoint:residual_sources",
    "jax._src.core.Token": "refimpl.lax._tokens:Token",
    "jax._src.array.ArrayImpl": "refimpl.array:Array",
    # JAX's aval.weak_type of a value (True for a Python int/float/complex)
    "jax._src.dtypes.is_weakly_typed": "refimpl.dtypes:weak_type_of_value",
    # the class of a ClosedJaxpr's ref effects (refimpl.effects)
    "jax._src.state.types.RefEffect": "refimpl.effects:RefEffect",
    # JAX 0.10.2's key primitives as functions (not exported from jax.random)
    "jax._src.prng.random_wrap": "refimpl.random._keys:random_wrap",
    "jax._src.prng.random_unwrap": "refimpl.random._keys:random_unwrap",
    "jax._src.prng.random_bits": "refimpl.random._basic:random_bits",
    # lax functions JAX 0.10.2 does not export from jax.lax (its tests call them)
    "jax._src.lax.parallel.pargmax": "refimpl.lax._parallel:pargmax",
    "jax._src.lax.parallel.pargmin": "refimpl.lax._parallel:pargmin",
    "jax._src.lax.lax.asarray": "refimpl.lax._shapes:asarray",
    "jax._src.lax.lax._delta": "refimpl.lax._shapes:delta",
    "jax._src.lax.windowed_reductions._select_and_gather_add": (
        "refimpl.lax._windowed:select_and_gather_add"
    ),
    "jax._src.lax.windowed_reductions._select_and_scatter_add": (
        "refimpl.lax._windowed:select_and_scatter_add"
    ),
    # whether the persistent compilation cache is on (refimpl's is pjrt's)
    "jax._src.compilation_cache.is_persistent_cache_enabled": (
        "refimpl.backends.pjrt.compilation_cache:is_persistent_cache_enabled"
    ),
}

# JAX's dtype tables the tests build their NumPy references' dtypes from
# (lax_numpy_test's x.astype(dtypes.to_inexact_dtype(x.dtype))): functions of
# dtypes and of the x64 flag (mirrored), no arrays; JAX's own on both sides
HARNESS_DATA = tuple(
    f"jax._src.dtypes.{name}"
    for name in (
        "to_inexact_dtype",
        "to_numeric_dtype",
        "default_int_dtype",
        "default_uint_dtype",
        "default_float_dtype",
        "default_complex_dtype",
        "python_scalar_types_to_dtypes",
        "_weak_types",
        # NumPy's 64-bit scalar types JAX names its defaults by before
        # canonicalization (lax_test's lax.iota(dtypes.int_, n))
        "int_",
        "uint",
        "float_",
        "complex_",
        # the dtype of a fill value before canonicalization (lax_test's
        # testFilledConstant builds its NumPy expectation with it)
        "dtype",
    )
)

# JAX-internal module -> the refimpl modules looked in (in order) for a name
# INTERNAL_NAMES does not list
INTERNAL_MODULES: dict[str, tuple[str, ...]] = {
    "jax._src.core": ("refimpl.core_api", "refimpl.errors", "refimpl.extend.core", "refimpl"),
    "jax._src.prng": ("refimpl.random", "refimpl.extend.random"),
    "jax._src.random": ("refimpl.random",),
    "jax._src.dtypes": ("refimpl.dtypes_api",),
    "jax._src.api": ("refimpl",),
    "jax._src.errors": ("refimpl.errors",),
    "jax._src.lax": ("refimpl.lax",),
    "jax._src.lax.lax": ("refimpl.lax",),
    "jax._src.numpy.lax_numpy": ("refimpl.numpy",),
    "jax._src.tree_util": ("refimpl.tree_util",),
    "jax._src.custom_derivatives": ("refimpl.custom_derivatives", "refimpl"),
    "jax._src.ad_checkpoint": ("refimpl.ad_checkpoint",),
    "jax._src.interpreters.batching": ("refimpl.interpreters.batching",),
    "jax._src.interpreters.ad": ("refimpl.interpreters.ad",),
}

# JAX-internal modules that moved before JAX 0.10.2 -> where their names are
# now (random_test of 2023 imports jax._src.prng; JAX 0.10.2 has
# jax._src.random.prng and jax._src.random.threefry2x32)
MOVED_MODULES: dict[str, tuple[str, ...]] = {
    "jax._src.prng": (
        "jax._src.random.prng",
        "jax._src.random.threefry2x32",
        "jax._src.random.core",
    ),
    "jax._src.random": ("jax._src.random", "jax._src.random.core", "jax._src.random.threefry2x32"),
    # pmap_test's src_api.pmap: JAX 0.10.2 has it in jax._src.pmap
    "jax._src.api": ("jax._src.api", "jax._src.pmap"),
}

# jax._src modules a test file gets as JAX's own: the test harness, the
# installed jaxlib's version (tests compare with it in skipIf), JAX's
# pure-Python helpers (safe_map, safe_zip: no JAX semantics in them) and the
# NumPy reference implementations lax_test checks against
HARNESS = (
    "jax._src.test_util",
    "jax._src.config",
    "jax._src.lib",
    "jax._src.util",
    "jax._src.lax_reference",  # lax_test's NumPy reference implementations
)

# JAX flags (without "jax_") mirrored into refimpl's config of the same name
MIRRORED_FLAGS = (
    "enable_x64",
    "legacy_prng_key",
    "mutable_array_checks",
    "default_prng_impl",
    "disable_jit",
    "check_tracer_leaks",
    "traceback_filtering",
    "explain_cache_misses",
    "default_matmul_precision",
    "numpy_rank_promotion",
    "numpy_dtype_promotion",
)

# public names JAX 0.10.2 moved -> where they are now ("module:attribute");
# jax.ad_checkpoint.checkpoint is jax.checkpoint (the same function)
RENAMED_PUBLIC: dict[str, str] = {"jax.ad_checkpoint.checkpoint": "jax:checkpoint"}

OUTCOMES = ("pass", "fail", "error", "skip", "missing")


class MissingName(AttributeError):
    """A JAX-internal name the test used that refimpl has no equivalent for
    (or, on JAX, that JAX 0.10.2 no longer has)."""


# while the file itself is being imported, a missing name's use gives another
# stand-in instead of raising: module-level registrations with JAX internals
# (lax_control_flow_test's mlir.register_lowering, batching.primitive_batchers)
# do nothing, and only the tests that use the names report missing
_LOADING = [False]


def _raise_missing(qualname: str) -> Any:
    if _LOADING[0]:
        return _missing(qualname)
    raise MissingName(
        f"{qualname}: JAX-internal name not found "
        "(refimpl has no equivalent, or JAX 0.10.2 no longer has it)"
    )


def _no_op(*args: Any, **kwargs: Any) -> None:
    """A JAX-internal cache's ``cache_clear()`` (lax_control_flow_test's setUp
    clears three): refimpl has no such cache."""


class _MissingMeta(type):
    """A stand-in for a missing name: any use (call, attribute, item,
    isinstance, iteration) raises :class:`MissingName`; merely naming it does
    not, so a file that only mentions the name at import still loads."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _raise_missing(cls.__qualname__)

    def __repr__(cls) -> str:
        return f"<missing {cls.__qualname__} #{cls.__dict__.get('_serial')}>"

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "cache_clear":
            return _no_op
        return _raise_missing(f"{cls.__qualname__}.{name}")

    def __getitem__(cls, key: Any) -> Any:
        return _raise_missing(cls.__qualname__)

    def __setitem__(cls, key: Any, value: Any) -> None:
        _raise_missing(cls.__qualname__)

    def __instancecheck__(cls, obj: Any) -> bool:
        _raise_missing(cls.__qualname__)
        return False

    def __subclasscheck__(cls, sub: Any) -> bool:
        _raise_missing(cls.__qualname__)
        return False

    def __iter__(cls) -> Iterator[Any]:
        if _LOADING[0]:  # cases built from it at import (lax_test's
            return iter(())  # dtypes._float8_dtypes): none on this side
        raise MissingName(f"{cls.__qualname__}: JAX-internal name not found")


def _missing(qualname: str) -> Any:
    # named as the real object is, so that test ids built from the name
    # (parameterized testcase_name) are JAX's; numbered in its repr, so that
    # ids built from stand-ins' reprs at import stay distinct (pmap_test's
    # ShardArgsTest formats pxla.ShardingSpec(...) values into its names)
    _SERIAL[0] += 1
    namespace = {"__qualname__": qualname, "_serial": _SERIAL[0]}
    return _MissingMeta(qualname.rpartition(".")[2], (), namespace)


_SERIAL = [0]


def _resolve(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def _prng_registry() -> dict[str, Any]:
    """Adaptation 4: JAX's ``prng.prngs`` as refimpl's implementations, in
    JAX's order (the parameterized test ids number them in that order)."""
    import refimpl as ri

    # JAX's own module, as found before the file's stand-ins were installed
    # (importing it now would give the stand-in of jax._src.random's submodule)
    jax_prng = _REAL_PLACES["jax._src.random.prng"]
    registry = {}
    for name in jax_prng.prngs:
        with contextlib.suppress(ValueError, TypeError):
            registry[name] = ri.random.key(0, impl=name)._impl
    return registry


def _subjaxprs(program: Any) -> Iterator[Any]:
    """``jax._src.core.subjaxprs(jaxpr)`` (api_test's DCETest counts the
    equations of a jaxpr and of the jaxprs in its equations' params, not
    recursively): refimpl's ``core.subprograms`` of each equation."""
    from refimpl import core

    for eqn in program.eqns:
        yield from core.subprograms(eqn)


def _dce_jaxpr(jaxpr: Any, used_outputs: Any) -> tuple[Any, list[bool]]:
    """``jax._src.interpreters.partial_eval.dce_jaxpr(jaxpr, used_outputs)``
    -> (jaxpr, used_inputs): refimpl's ``dce_program``, on a program whose
    constants are part of it. JAX's works on an open jaxpr, whose constvars
    are its leading inputs and stay (its callers evaluate the result with
    the original consts: api_test's DCETest); ``dce_program`` also drops
    the constants no equation reads, so they are put back."""
    import dataclasses

    from refimpl.transforms.dce import dce_program

    new, used_inputs = dce_program(jaxpr, used_outputs)
    kept = dataclasses.replace(
        new,
        const_vars=list(jaxpr.const_vars),
        consts=list(jaxpr.consts),
        const_shardings=list(jaxpr.const_shardings),
    )
    return kept, used_inputs


def _close_jaxpr(program: Any) -> Any:
    """``jax._src.interpreters.partial_eval.close_jaxpr(jaxpr)`` (an open
    jaxpr without constants as a ClosedJaxpr): a refimpl Program holds its
    constants already, so it is its own closed form."""
    return program


def _convert_element_type(
    operand: Any, new_dtype: Any = None, weak_type: bool = False, sharding: Any = None
) -> Any:
    """``jax._src.lax.lax._convert_element_type`` (lax_numpy_test makes weak
    and strong inputs with it): refimpl's ``lax.convert_element_type``, the
    dtype kept when none is given."""
    import refimpl as ri

    dtype = ri.numpy.result_type(operand) if new_dtype is None else new_dtype
    return ri.lax.convert_element_type(operand, dtype, weak_type=weak_type)


def _default_prng_impl() -> Any:
    """``jax._src.random.default_prng_impl()``: the implementation object of
    a key made now (what the registry holds for it)."""
    import refimpl as ri

    return ri.random.key(0)._impl


class _InternalModule(types.ModuleType):
    """``jax._src.X`` as a test file sees it: each name from ``find``
    (refimpl's equivalent, or JAX's own where the module moved); a name
    ``find`` does not know is a missing-name stand-in."""

    def __init__(self, name: str, find: Any) -> None:
        super().__init__(name)
        self.__dict__["__path__"] = []
        self.__dict__["_find"] = find

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        qualname = f"{self.__name__}.{name}"
        find = self.__dict__["_find"]
        value = sys.modules.get(qualname)  # a submodule (jax._src.state.types)
        if isinstance(value, types.ModuleType):
            # a real JAX submodule is not the test's: a stand-in of it
            if not isinstance(value, _InternalModule) and qualname not in HARNESS:
                _REAL_PLACES.setdefault(qualname, value)
                value = _InternalModule(qualname, find)
        else:
            value = find(self.__name__, name)
        if value is _ABSENT:
            value = _missing(qualname)
        self.__dict__[name] = value
        return value


_ABSENT = object()


def _refimpl_equivalent(module: str, name: str) -> Any:
    qualname = f"{module}.{name}"
    if qualname == "jax._src.prng.prngs":
        return _prng_registry()
    if qualname == "jax._src.random.default_prng_impl":
        return _default_prng_impl
    if qualname in INTERNAL_NAMES:
        return _resolve(INTERNAL_NAMES[qualname])
    if qualname == "jax._src.lax.lax._convert_element_type":
        return _convert_element_type
    if qualname == "jax._src.core.subjaxprs":
        return _subjaxprs
    if qualname == "jax._src.interpreters.partial_eval.dce_jaxpr":
        return _dce_jaxpr
    if qualname == "jax._src.interpreters.partial_eval.close_jaxpr":
        return _close_jaxpr
    if qualname in HARNESS_DATA:
        return _real_jax_name(module, name)
    for target in INTERNAL_MODULES.get(module, ()):
        found = getattr(importlib.import_module(target), name, _ABSENT)
        if found is not _ABSENT:
            return found
    return _ABSENT


# the real modules of MOVED_MODULES, found before any stand-in is installed
_REAL_PLACES: dict[str, types.ModuleType] = {}


def _real_jax_name(module: str, name: str) -> Any:
    """On JAX: the name where JAX 0.10.2 has it (a moved module's new places)."""
    for place in MOVED_MODULES.get(module, (module,)):
        found = getattr(_REAL_PLACES.get(place), name, _ABSENT)
        if found is not _ABSENT:
            return found
    return _ABSENT


def _imported_internal_modules(source: str) -> set[str]:
    """The ``jax._src`` modules a file imports (``from jax._src import x``
    imports ``jax._src.x`` when it is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("jax._src"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jax._src"):
            names.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _is_module(name: str) -> bool:
    if name in MOVED_MODULES:
        return True
    try:
        return isinstance(importlib.import_module(name), types.ModuleType)
    except ImportError:
        return False  # a name imported from a module (from jax._src.x import Y)


# JAX's test-helper modules: on refimpl a test file's import of one is a
# fresh copy of it whose own jax._src imports resolve as the file's do, so
# that the cases it builds (lax_test_util's op records) name refimpl's
# functions (adaptation 9)
TEST_HELPERS = "jax._src.internal_test_util."


def _test_helpers(source: str) -> dict[str, str]:
    """The JAX test-helper modules a file imports, each with its file."""
    helpers = {}
    for name in _imported_internal_modules(source):
        if name.startswith(TEST_HELPERS) and _is_module(name):
            origin = importlib.import_module(name).__file__
            assert origin is not None
            helpers[name] = origin
    return helpers


def _load_helper(name: str, origin: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, origin)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _internal_stand_ins(source: str, on_refimpl: bool) -> Iterator[None]:
    """While the file is imported, ``jax._src`` and the internal modules it
    imports are stand-ins (the harness modules are JAX's own): on refimpl
    naming refimpl's equivalents, on JAX naming JAX's own objects (where
    :data:`MOVED_MODULES` says they are now); a name not found is missing."""
    helpers = _test_helpers(source) if on_refimpl else {}
    wanted = {"jax._src"}
    for text in (source, *(pathlib.Path(origin).read_text() for origin in helpers.values())):
        for name in _imported_internal_modules(text):
            parts = name.split(".")
            wanted.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
    wanted -= set(helpers)
    places = {p for places in MOVED_MODULES.values() for p in places} | wanted
    for place in places:
        with contextlib.suppress(ImportError):
            _REAL_PLACES.setdefault(place, importlib.import_module(place))
    stand_ins: dict[str, types.ModuleType] = {}
    for name in sorted(wanted, key=len):
        if name in HARNESS or not _is_module(name):
            continue
        find = _refimpl_equivalent if on_refimpl else _real_jax_name
        stand_ins[name] = _InternalModule(name, find)
    saved = {name: sys.modules.get(name) for name in stand_ins}
    attributes: list[tuple[types.ModuleType, str, Any]] = []
    for name, module in stand_ins.items():
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        holder = sys.modules.get(parent)
        if holder is not None and parent != name:
            attributes.append((holder, child, holder.__dict__.get(child, _ABSENT)))
            holder.__dict__[child] = module
    for name, origin in helpers.items():  # after the stand-ins it imports
        saved[name] = sys.modules.get(name)
        parent, _, child = name.rpartition(".")
        holder = sys.modules[parent]
        attributes.append((holder, child, holder.__dict__.get(child, _ABSENT)))
        holder.__dict__[child] = _load_helper(name, origin)
    try:
        yield
    finally:
        for holder, child, value in reversed(attributes):
            if value is _ABSENT:
                holder.__dict__.pop(child, None)
            else:
                holder.__dict__[child] = value
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


def _harness_imports(source: str) -> list[tuple[str, str | None]]:
    """The names a file takes from JAX's harness modules (``from
    jax._src.lib import xla_extension``): one JAX 0.10.2 no longer has is a
    missing-name stand-in on both sides (adaptation 7)."""
    return [
        (node.module, a.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module in HARNESS
        for a in node.names
    ]


def _jax_imports(source: str, internal: bool) -> list[tuple[str, str | None]]:
    """The ``jax`` modules a file imports (the ``jax._src`` ones too when
    ``internal``), with the name it takes from each (``from jax.m import
    name``) or None (``import jax.m``)."""

    def wanted(name: str) -> bool:
        is_jax = name == "jax" or name.startswith("jax.")
        return is_jax and (internal or not name.startswith("jax._src"))

    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if wanted(a.name)]
        elif isinstance(node, ast.ImportFrom) and wanted(node.module or ""):
            found += [(node.module or "", a.name) for a in node.names]
    return found


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def _public_stand_ins(source: str, internal: bool) -> Iterator[None]:
    """For the whole run: a public module or name the file imports that is
    not there (refimpl has no equivalent, or JAX 0.10.2 no longer has it:
    ``jax.custom_transpose``, ``jax.ad_checkpoint.checkpoint``) is a
    missing-name stand-in, so that the file loads and only the tests that
    use it are ``missing``."""
    added_modules: list[str] = []
    added_names: list[tuple[types.ModuleType, str]] = []

    def attach(holder_name: str, child: str, value: Any) -> None:
        holder = sys.modules.get(holder_name)
        if holder is not None and child not in holder.__dict__:
            holder.__dict__[child] = value
            added_names.append((holder, child))

    for module, name in _jax_imports(source, internal) + _harness_imports(source):
        parts = module.split(".")
        for i in range(2, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in sys.modules or _importable(prefix):
                continue
            sys.modules[prefix] = _InternalModule(prefix, lambda m, n: _ABSENT)
            added_modules.append(prefix)
            attach(".".join(parts[: i - 1]), parts[i - 1], sys.modules[prefix])
        target = sys.modules.get(module)
        if name is None or target is None or name == "*":
            continue
        if not hasattr(target, name) and not _importable(f"{module}.{name}"):
            renamed = RENAMED_PUBLIC.get(f"{module}.{name}")
            attach(module, name, _resolve(renamed) if renamed else _missing(f"{module}.{name}"))
    try:
        yield
    finally:
        for holder, child in reversed(added_names):
            holder.__dict__.pop(child, None)
        for name in reversed(added_modules):
            sys.modules.pop(name, None)


@contextlib.contextmanager
def _public_jax_is_refimpl(backend: str) -> Iterator[None]:
    """``jax`` and its public modules are refimpl's (``refimpl.as_jax``);
    the real ``jax._src`` modules stay in ``sys.modules`` for the harness."""
    from refimpl import as_jax

    real_internals = {n: m for n, m in sys.modules.items() if n.startswith("jax._src")}
    with as_jax.aliased_jax(backend):
        sys.modules.update(real_internals)
        yield


# JAX's (flag, block) values of each promotion flag at the last mirroring
_SYNCED_PROMOTION: dict[str, tuple[Any, Any]] = {}


def _sync_promotion(jax_config: Any, short: str) -> None:
    """A promotion flag is JAX's at both levels: the flag (``config.update``)
    and this thread's block (JaxTestCase's defaults 'strict' and 'raise' are
    blocks: a test reading ``jax.numpy_rank_promotion.get_global()`` sees
    the flag, 'allow', as on JAX). Each level is mirrored when JAX's changes,
    so that refimpl's own blocks inside a test (``@jax.numpy_rank_promotion(
    'allow')`` is refimpl's there) hold while the harness enters JAX's
    contexts of other flags."""
    from refimpl.config import UNSET, config, set_local_promotion

    state = jax_config.config_states[f"jax_{short}"]

    def plain(value: Any) -> Any:  # JAX's NumpyDtypePromotion enum: its string
        return getattr(value, "value", value)

    flag = plain(state.get_global())
    local = state.get_local()
    local = UNSET if local is jax_config.config_ext.unset else plain(local)
    last_flag, last_local = _SYNCED_PROMOTION.get(short, (None, None))
    _SYNCED_PROMOTION[short] = (flag, local)
    if flag != last_flag and config._values[short] != flag:
        config.update(short, flag)
    if local is not last_local and local != last_local:
        set_local_promotion(short, local)


def _sync_flags() -> None:
    """Adaptation 3: refimpl's flags take JAX's values."""
    from jax._src import config as jax_config

    import refimpl as ri

    for short in MIRRORED_FLAGS:
        if short in ("numpy_rank_promotion", "numpy_dtype_promotion"):
            _sync_promotion(jax_config, short)
            continue
        try:
            value = jax_config.config._read(f"jax_{short}")
        except AttributeError:
            continue
        if short == "check_tracer_leaks":
            value = bool(value)
        if short == "traceback_filtering" and value is None:
            continue
        try:
            if getattr(ri.config, short) != value:
                ri.config.update(short, value)
        except (ValueError, TypeError, NotImplementedError):
            pass  # a value refimpl does not model: left at its own


@contextlib.contextmanager
def _mirrored_flags() -> Iterator[None]:
    from jax._src import config as jax_config

    manager = jax_config.StateContextManager
    enter, exit_ = manager.__enter__, manager.__exit__
    set_global = jax_config.State._set

    def mirrored_enter(self: Any) -> Any:
        out = enter(self)
        _sync_flags()
        return out

    def mirrored_exit(self: Any, *exc: Any) -> Any:
        out = exit_(self, *exc)
        _sync_flags()
        return out

    def mirrored_set(self: Any, value: Any) -> None:
        set_global(self, value)
        _sync_flags()

    manager.__enter__, manager.__exit__ = mirrored_enter, mirrored_exit  # type: ignore[method-assign]
    jax_config.State._set = mirrored_set  # type: ignore[method-assign]
    try:
        _sync_flags()
        yield
    finally:
        manager.__enter__, manager.__exit__ = enter, exit_  # type: ignore[method-assign]
        jax_config.State._set = set_global  # type: ignore[method-assign]


@contextlib.contextmanager
def _harness_gaps() -> Iterator[None]:
    """On both sides: a ``jtu`` helper JAX 0.10.2's harness no longer has
    (pmap_test's ``jtu.skip_on_xla_cpu_mlir``, ``count_jit_and_pmap_compiles``)
    is a missing-name stand-in, so that the file loads and the tests that
    use it are ``missing`` (adaptation 7)."""
    from jax._src import test_util as jtu

    def missing_helper(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        qualname = f"jax._src.test_util.{name}"

        def helper(*args: Any, **kwargs: Any) -> Any:
            if _LOADING[0] and len(args) == 1 and callable(args[0]) and not kwargs:
                # a decorator of a test method: the test reports missing
                @functools.wraps(args[0])
                def test_needing_helper(*a: Any, **k: Any) -> Any:
                    return _raise_missing(qualname)

                return test_needing_helper
            return _raise_missing(qualname)

        return helper

    if "__getattr__" in jtu.__dict__:
        yield
        return
    jtu.__dict__["__getattr__"] = missing_helper
    try:
        yield
    finally:
        jtu.__dict__.pop("__getattr__", None)


def _promote_like_refimpl(fun: Any, inexact: bool = False) -> Any:
    """Adaptation 11, ``jtu.promote_like_jnp`` on refimpl: every array in the
    arguments becomes refimpl's array of their joined dtype (inexact if
    asked; one argument alone is only made an array, as JAX's does)."""
    import refimpl as ri
    from refimpl.numpy import _promote

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        flat, tree = ri.tree_util.tree_flatten(args)
        if len(flat) < 2 and not inexact:
            promoted = [ri.numpy.asarray(x) for x in flat]
        else:
            dtype, weak = _promote.result_type("promote_like_jnp", *flat)
            if inexact:
                dtype = _promote.to_inexact_dtype(dtype)
            promoted = [ri.lax.convert_element_type(x, dtype, weak_type=weak) for x in flat]
        return fun(*ri.tree_util.tree_unflatten(tree, promoted), **kwargs)

    return wrapper


def _iter_eqns(jaxpr: Any) -> Iterator[Any]:
    """The equations of a refimpl jaxpr and of the jaxprs in their params."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _iter_eqns(inner)


def _dot_general_params(name: str, fun: Any, args: tuple) -> list[Any]:
    import refimpl as ri

    jaxpr = ri.make_jaxpr(fun)(*args)
    dot_general_p = ri.lax.dot_general_p
    return [e.params[name] for e in _iter_eqns(jaxpr.jaxpr) if e.primitive is dot_general_p]


def _assert_dot_precision(expected_precision: Any, fun: Any, *args: Any) -> None:
    """Adaptation 13: ``jtu.assert_dot_precision`` on refimpl's jaxprs."""
    for precision in _dot_general_params("precision", fun, args):
        msg = f"Unexpected precision: {expected_precision} != {precision}"
        if isinstance(precision, tuple):
            assert precision[0] == expected_precision, msg
            assert precision[1] == expected_precision, msg
        else:
            assert precision == expected_precision, msg


def _assert_dot_preferred_element_type(expected: Any, fun: Any, *args: Any, **kwargs: Any) -> None:
    """Adaptation 13: ``jtu.assert_dot_preferred_element_type`` on refimpl's jaxprs."""
    partial = functools.partial(fun, **kwargs)
    for found in _dot_general_params("preferred_element_type", partial, args):
        assert expected == found, f"Unexpected preferred_element_type: {expected} != {found}"


# jtu counters of JAX's work that refimpl does not count (adaptation 14):
# XLA compilations and the AOT, persistent-cache and sharding paths of JAX's
# dispatch
UNCOUNTED = (
    "count_device_put_fast_path_hit",
    "count_jit_compilation_cache_miss",
    "count_aot_jit_cpp_cache_miss",
    "count_compilation_after_persistent_cache_miss",
    "count_jax_array_shard_arg_calls",
    "count_jit_infer_params_cache_miss",
    "count_subjaxpr_to_hlo_conversion",
    "count_internal_device_puts",
)
# counted on pjrt only: the reference backend lowers and compiles nothing, has
# no C++ path and no device memory to copy to
PJRT_COUNTERS = (
    "count_jit_and_pmap_lowerings",
    "count_pjit_cpp_cache_miss",
    "count_device_put",
    "count_primitive_compiles",
)


def _uncounted(name: str, why: str) -> Any:
    """A jtu counter refimpl has no count for: using it reports the test missing."""

    def counter(*args: Any, **kwargs: Any) -> Any:
        raise MissingName(f"jax._src.test_util.{name}: {why}")

    return counter


def _counters(backend: str) -> dict[str, Any]:
    """Adaptation 14: jtu's counters -> refimpl.test_util's, or missing."""
    import refimpl.test_util as rtu

    counters = {name: _uncounted(name, "refimpl does not count this") for name in UNCOUNTED}
    counters["count_jit_tracing_cache_miss"] = rtu.count_jit_tracing_cache_miss
    for name in PJRT_COUNTERS:
        if backend == "pjrt":
            counters[name] = getattr(rtu, name)
        else:
            counters[name] = _uncounted(name, "the ref backend lowers, copies, compiles nothing")
    return counters


@contextlib.contextmanager
def _harness_adapted(backend: str) -> Iterator[None]:
    """Adaptations 1, 2, 10, 11, 13 and 14 on JAX's ``jtu``."""
    from jax._src import config as jax_config
    from jax._src import test_util as jtu

    import refimpl as ri
    import refimpl.test_util as rtu
    from refimpl import as_jax

    def create_mesh(
        mesh_shape: Any, axis_names: Any, iota_order: bool = False, axis_types: Any = None
    ) -> Any:
        if axis_types is None:
            return ri.make_mesh(tuple(mesh_shape), tuple(axis_names))
        return ri.make_mesh(tuple(mesh_shape), tuple(axis_names), axis_types=axis_types)

    # the harness's own jit (JaxTestCase._CompileAndCheck's api.jit,
    # jtu.JIT_IMPLEMENTATION) is refimpl's: it is applied to refimpl functions
    def refimpl_jit(*args: Any, **kwargs: Any) -> Any:
        return ri.jit(*args, **kwargs)

    refimpl_jit._name = "jit"  # type: ignore[attr-defined]
    replaced = {
        "api": types.SimpleNamespace(**{**vars(jtu.api), "jit": ri.jit}),
        "JIT_IMPLEMENTATION": (refimpl_jit, *jtu.JIT_IMPLEMENTATION[1:]),
        "check_grads": rtu.check_grads,
        "check_jvp": rtu.check_jvp,
        "check_vjp": rtu.check_vjp,
        "promote_like_jnp": _promote_like_refimpl,
        "assert_dot_precision": _assert_dot_precision,
        "assert_dot_preferred_element_type": _assert_dot_preferred_element_type,
        "create_mesh": create_mesh,
        "create_global_mesh": create_mesh,
        **_counters(backend),
    }
    saved = {name: getattr(jtu, name, _ABSENT) for name in replaced}
    for name, value in replaced.items():
        setattr(jtu, name, value)
    # jax.config is refimpl's translation (refimpl.as_jax); its absl flag
    # parsing is the harness's
    aliased_config = as_jax._CONFIG.__dict__
    aliased_config["parse_flags_with_absl"] = jax_config.config.parse_flags_with_absl
    try:
        yield
    finally:
        aliased_config.pop("parse_flags_with_absl", None)
        for name, before in saved.items():
            if before is _ABSENT:
                delattr(jtu, name)
            else:
                setattr(jtu, name, before)


def _load(path: str, source: str, on_refimpl: bool) -> types.ModuleType:
    """Import the test file as module ``jax_test_file``."""
    spec = importlib.util.spec_from_file_location("jax_test_file", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved_argv = sys.argv
    sys.argv = [path]  # adaptation 5
    try:
        sys.modules[spec.name] = module
        with _internal_stand_ins(source, on_refimpl):
            _LOADING[0] = True
            try:
                spec.loader.exec_module(module)
            finally:
                _LOADING[0] = False
    finally:
        sys.argv = saved_argv
    return module


# -- selecting and running the methods


def _matches(expr: str | None, test_id: str) -> bool:
    """pytest's ``-k``: words are case-insensitive substrings of the id,
    joined by ``and``, ``or``, ``not`` and parentheses."""
    if not expr:
        return True
    tokens = re.findall(r"\(|\)|[^\s()]+", expr)
    words = []
    for token in tokens:
        if token in ("and", "or", "not", "(", ")"):
            words.append(token)
        else:
            words.append(repr(token.lower() in test_id.lower()))
    return bool(eval(" ".join(words), {"__builtins__": {}}))  # noqa: S307 (True/False/and/or)


def _tests(module: types.ModuleType, expr: str | None) -> list[unittest.TestCase]:
    suite = unittest.TestLoader().loadTestsFromModule(module)
    found: list[unittest.TestCase] = []

    def walk(s: Any) -> None:
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            elif _matches(expr, _test_id(t)):
                found.append(t)

    walk(suite)
    return found


def _test_id(test: unittest.TestCase) -> str:
    return f"{type(test).__name__}.{getattr(test, '_testMethodName', str(test))}"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:600] if text else ""


class _Timeout(Exception):
    """The test ran past ``--timeout`` seconds."""


class _Recorder(unittest.TestResult):
    """One record per test: outcome, exception class, message's first line."""

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[str, dict[str, Any]] = {}

    def _put(self, test: Any, outcome: str, exc: BaseException | None = None, note: str = ""):
        record: dict[str, Any] = {"outcome": outcome}
        if exc is not None:
            missing = next((e for e in _chain(exc) if isinstance(e, MissingName)), None)
            if missing is not None:
                record["outcome"] = "missing"
                exc = missing
            record["exc"] = type(exc).__name__
            record["msg"] = _first_line(exc)
        if note:
            record["msg"] = note[:300]
        key = _test_id(test) if isinstance(test, unittest.TestCase) else str(test)
        previous = self.records.get(key)
        if previous is None or previous["outcome"] == "pass":  # the first failure is kept
            self.records[key] = record

    def addSuccess(self, test: Any) -> None:  # noqa: N802 (unittest's names)
        self._put(test, "pass")

    def addFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self._put(test, "fail", err[1])

    def addError(self, test: Any, err: Any) -> None:  # noqa: N802
        self._put(test, "error", err[1])

    def addSkip(self, test: Any, reason: str) -> None:  # noqa: N802
        self._put(test, "skip", note=reason)

    def addExpectedFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self._put(test, "pass")

    def addUnexpectedSuccess(self, test: Any) -> None:  # noqa: N802
        self._put(test, "fail", note="unexpected success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:  # noqa: N802
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._put(test, "fail" if failed else "error", err[1])


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise _Timeout(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_tests(tests: list[unittest.TestCase], timeout: float, progress: bool) -> dict:
    recorder = _Recorder()
    for i, test in enumerate(tests):
        start = time.perf_counter()
        try:
            with _time_limit(timeout):
                test.run(recorder)
        except _Timeout as e:  # raised outside the test's own try (setUp/tearDown)
            recorder._put(test, "error", e)
        record = recorder.records.setdefault(_test_id(test), {"outcome": "error", "msg": "?"})
        record["seconds"] = round(time.perf_counter() - start, 3)
        if progress:
            print(f"[{i + 1}/{len(tests)}] {record['outcome']:7} {_test_id(test)}", flush=True)
    return recorder.records


def run_file(
    path: str,
    backend: str = "ref",
    expr: str | None = None,
    timeout: float = 120.0,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the test file's methods on ``backend`` (``ref``, ``pjrt`` or
    ``jax``); the report: file, backend, and per test id its record."""
    import jax  # real JAX first: its harness binds the real modules
    from jax._src import config as jax_config  # noqa: F401
    from jax._src import test_util as jtu  # noqa: F401

    with open(path) as f:
        source = f.read()
    for name in _imported_internal_modules(source):  # the test helpers too
        if name.startswith(TEST_HELPERS) or name in HARNESS:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_harness_gaps())
        on_refimpl = backend != "jax"
        if on_refimpl:
            stack.enter_context(_public_jax_is_refimpl(backend))
            stack.enter_context(_harness_adapted(backend))
            stack.enter_context(_mirrored_flags())
        stack.enter_context(_public_stand_ins(source, internal=False))
        try:
            module = _load(path, source, on_refimpl)
        except Exception as e:  # the file did not import: every test is unknown
            missing = next((x for x in _chain(e) if isinstance(x, MissingName)), None)
            return {
                "file": path,
                "backend": backend,
                "import_error": f"{type(missing or e).__name__}: {_first_line(missing or e)}",
                "tests": {},
            }
        records = _run_tests(_tests(module, expr), timeout, progress)
    del jax
    return {"file": path, "backend": backend, "tests": records}


# -- comparing a refimpl run with JAX's


def compare(jax_report: dict, ref_report: dict) -> dict[str, list[tuple[str, dict]]]:
    """The tests JAX passes and refimpl does not pass, by class (a test
    refimpl skips or reports ``missing`` is listed with that outcome)."""
    by_class: dict[str, list[tuple[str, dict]]] = {}
    for test_id, want in sorted(jax_report["tests"].items()):
        if want["outcome"] != "pass":
            continue
        got = ref_report["tests"].get(test_id, {"outcome": "absent"})
        if got["outcome"] == "pass":
            continue
        cls, _, method = test_id.partition(".")
        by_class.setdefault(cls, []).append((method, got))
    return by_class


def summary(report: dict) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for record in report["tests"].values():
        counts[record["outcome"]] = counts.get(record["outcome"], 0) + 1
    return counts


def markdown(jax_report: dict, ref_report: dict) -> str:
    lines = [
        f"### {os.path.basename(ref_report['file'])} on {ref_report['backend']}",
        "",
        f"JAX: {summary(jax_report)}; refimpl: {summary(ref_report)}",
        "",
        "| class | method | outcome | exception | message |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cls, rows in compare(jax_report, ref_report).items():
        for method, got in rows:
            msg = got.get("msg", "").replace("|", "\\|")
            lines.append(f"| {cls} | {method} | {got['outcome']} | {got.get('exc', '')} | {msg} |")
    return "\n".join(lines) + "\n"


def _set_devices(n: int) -> None:
    """Adaptation 6, before JAX or refimpl is imported."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
    os.environ.setdefault("REFIMPL_REF_NUM_DEVICES", str(n))
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/run_jax_tests.py", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("file", nargs="?")
    parser.add_argument("--backend", choices=["ref", "pjrt", "jax"], default="ref")
    parser.add_argument("-k", dest="expr", default=None)
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--compare", nargs=2, metavar=("JAX_JSON", "REFIMPL_JSON"))
    parser.add_argument("--markdown", default=None, help="with --compare: write the table here")
    options = parser.parse_args(argv)
    if options.compare:
        reports = []
        for name in options.compare:
            with open(name) as f:
                reports.append(json.load(f))
        text = markdown(*reports)
        if options.markdown:
            with open(options.markdown, "w") as f:
                f.write(text)
        print(text)
        return 0
    if not options.file:
        parser.error("a test file (or --compare) is required")
    _set_devices(options.devices)
    report = run_file(
        options.file, options.backend, options.expr, options.timeout, options.progress
    )
    if options.json_out:
        with open(options.json_out, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps({"file": options.file, "backend": options.backend, **summary(report)}))
    if "import_error" in report:
        print("import error:", report["import_error"])
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
