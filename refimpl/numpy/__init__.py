"""``refimpl.numpy``: a jax.numpy-like layer over the primitives.

Every function accepts refimpl arrays, tracers, NumPy arrays and Python
scalars, promotes with JAX's rules (weak types included), broadcasts like
NumPy, and is written only with ``refimpl.lax`` functions -- so it works the
same eagerly (returning refimpl arrays) and under ``ri.jit``.
"""

import sys as _sys
from typing import Any as _Any

from refimpl import array_ops as _array_ops
from refimpl import dlpack as _dlpack
from refimpl import extended_arrays as _extended_arrays
from refimpl import jax_array_protocol as _jax_array_protocol
from refimpl import lax as _lax
from refimpl import sharding as _sharding
from refimpl._static_args import hashable_statics as _hashable_statics
from refimpl.backends import fast_functions as _fast_functions
from refimpl.numpy import (
    _arrangement,
    _at,
    _bits,
    _calculus,
    _construct,
    _covariance,
    _creation,
    _histograms,
    _index_tricks,
    _indexing,
    _io,
    _jit_boundary,
    _linalg,
    _math,
    _pad,
    _polynomial,
    _products,
    _reductions,
    _scalars,
    _search,
    _selection,
    _setops,
    _shape,
    _stacking,
    _stats,
    _ufunc_objects,
    _ufuncs,
    _vectorize,
    _window_functions,
)
from refimpl.numpy import fft as fft
from refimpl.numpy import linalg as linalg
from refimpl.numpy._arrangement import *  # noqa: F403
from refimpl.numpy._bits import *  # noqa: F403
from refimpl.numpy._calculus import *  # noqa: F403
from refimpl.numpy._construct import *  # noqa: F403
from refimpl.numpy._covariance import *  # noqa: F403
from refimpl.numpy._creation import *  # noqa: F403
from refimpl.numpy._histograms import *  # noqa: F403
from refimpl.numpy._index_tricks import *  # noqa: F403
from refimpl.numpy._indexing import *  # noqa: F403
from refimpl.numpy._io import *  # noqa: F403
from refimpl.numpy._linalg import *  # noqa: F403
from refimpl.numpy._math import *  # noqa: F403
from refimpl.numpy._pad import *  # noqa: F403
from refimpl.numpy._polynomial import *  # noqa: F403
from refimpl.numpy._products import *  # noqa: F403
from refimpl.numpy._promote import is_operand
from refimpl.numpy._reductions import *  # noqa: F403
from refimpl.numpy._scalars import *  # noqa: F403
from refimpl.numpy._search import *  # noqa: F403
from refimpl.numpy._selection import *  # noqa: F403
from refimpl.numpy._setops import *  # noqa: F403
from refimpl.numpy._shape import *  # noqa: F403
from refimpl.numpy._stacking import *  # noqa: F403
from refimpl.numpy._stats import *  # noqa: F403
from refimpl.numpy._ufunc_objects import *  # noqa: F403
from refimpl.numpy._ufuncs import *  # noqa: F403
from refimpl.numpy._vectorize import *  # noqa: F403
from refimpl.numpy._window_functions import *  # noqa: F403

# ufunc objects (add.reduce...) in place of the plain functions of the same names, as jnp's
for _name in _ufunc_objects.MODULE_UFUNCS:
    globals()[_name] = getattr(_ufunc_objects, _name)

__all__ = [
    "is_operand",
    *_creation.__all__,
    *_indexing.__all__,
    *_linalg.__all__,
    *_reductions.__all__,
    *_shape.__all__,
    *_pad.__all__,
    *_ufuncs.__all__,
    *_construct.__all__,
    *_math.__all__,
    *_arrangement.__all__,
    *_bits.__all__,
    *_calculus.__all__,
    *_covariance.__all__,
    *_histograms.__all__,
    *_index_tricks.__all__,
    *_io.__all__,
    *_polynomial.__all__,
    *_products.__all__,
    *_selection.__all__,
    *_setops.__all__,
    *_ufunc_objects.__all__,
    *_vectorize.__all__,
    *_window_functions.__all__,
    *_scalars.__all__,
    *_search.__all__,
    *_stacking.__all__,
    *_stats.__all__,
]

# JAX's device= keyword of the creation functions and astype (before
# out_sharding in their signatures, as JAX's).
for _name in (
    "zeros", "ones", "full", "arange", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "eye", "linspace", "astype", "array", "asarray",
):  # fmt: skip
    like = _name in ("zeros_like", "ones_like", "full_like", "empty_like")
    strong = like or _name == "full"
    globals()[_name] = _creation.accepts_device(globals()[_name], strong=strong, like=like)

# JAX's out_sharding= keyword, accepted where it leaves the result whole on
# one device (refimpl.sharding.check_out_sharding). dot, matmul and einsum
# take their own (lax.dot_general's: the result's sharding over a mesh).
for _name in (
    "tensordot", "zeros", "ones", "full", "arange", "empty",
    "zeros_like", "ones_like", "full_like", "broadcast_to", "asarray", "array",
):  # fmt: skip
    globals()[_name] = _sharding.accepts_out_sharding(globals()[_name])

# Creation functions of host data land on config.backend's default device, as
# JAX's on its default device (refimpl's own modules keep the host versions).
for _name in (
    "asarray", "array", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "arange", "linspace", "logspace", "geomspace", "eye",
    "identity", "tri",
):  # fmt: skip
    globals()[_name] = _creation.on_default_backend(globals()[_name])

# The structural functions take typed key arrays (refimpl/extended_arrays.py).
for _name in _extended_arrays.NUMPY_FUNCTIONS:
    globals()[_name] = _extended_arrays.aware(f"numpy.{_name}", globals()[_name])

# The functions JAX runs as jits type the tangents of their arguments as the
# primals under jvp, as a jit boundary does (_jit_boundary.py)
for _name in _jit_boundary.JIT_BOUNDARY:
    if type(globals().get(_name)) is type(_jit_boundary.jit_boundary):
        globals()[_name] = _jit_boundary.jit_boundary(globals()[_name])

# The functions JAX jits with static arguments refuse unhashable ones there
# (a 0-d NumPy array or a list as axis: JAX's ValueError)
for _name in _jit_boundary.STATIC_ARGNAMES:
    if type(globals().get(_name)) is type(_jit_boundary.jit_boundary):
        globals()[_name] = _hashable_statics(
            f"numpy.{_name}", _jit_boundary.STATIC_ARGNAMES[_name]
        )(globals()[_name])

# jnp.reshape hands a NumPy array or scalar to its own reshape method, as JAX's
reshape = _shape.forwarding_to_numpy(globals()["reshape"])

# NumPy's own functions that jax.numpy exports as they are (jnp.iterable is
# np.iterable): the wrappers below leave them alone
_NUMPY_OWN_FUNCTIONS = ("iterable",)
_own_functions = [_n for _n in __all__ if _n not in _NUMPY_OWN_FUNCTIONS]

# Objects defining __jax_array__ are converted where JAX's jnp functions convert
# them, refused where JAX's jit boundary would abstract them (jax_array_protocol.py)
_jax_array_protocol.install(globals(), _own_functions)
_jax_array_protocol.install(vars(linalg), linalg.__all__, "linalg.")
_jax_array_protocol.install(vars(fft), fft.__all__, "fft.")
for _name in ("reduce", "accumulate", "reduceat", "at"):
    setattr(
        _ufunc_objects.ufunc,
        _name,
        _jax_array_protocol.accepting(f"ufunc.{_name}", getattr(_ufunc_objects.ufunc, _name)),
    )

# Eager calls on device (PJRT) arrays: one cached jit per function and static
# arguments (docs/semantics.md 16.1); the reference backend is unaffected.
_fast_functions.wrap_module(globals(), _own_functions)
# and the function each of the module's ufunc objects calls (rnp.add(x, y)):
# a namespace whose every rebinding (the Python wrapper now, the C++ entry
# when the PJRT backend loads) is installed in its ufunc object


class _UfuncCalls(dict):
    def __setitem__(self, name: str, call: _Any) -> None:
        super().__setitem__(name, call)
        globals()[name].install_call(call)


_calls = _UfuncCalls(
    {
        _n: _jax_array_protocol.accepting(
            _n,
            _jit_boundary.jit_boundary(globals()[_n]._call)
            if _n in _jit_boundary.JIT_BOUNDARY
            else globals()[_n]._call,
        )
        for _n in _ufunc_objects.MODULE_UFUNCS
    }
)
_fast_functions.wrap_module(_calls, list(_calls))

# every array type's operators and methods (refimpl.array_ops) forward to this
# module; array_ops, below the surface, imports none of it
_array_ops.install("numpy", _sys.modules[__name__])
_array_ops.install("at", _at.IndexUpdateHelper)
_array_ops.install("lax", _lax)
_array_ops.install("dlpack", _dlpack)
