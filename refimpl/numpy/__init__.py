"""``refimpl.numpy``: a jax.numpy-like layer over the primitives.

Every function accepts refimpl arrays, tracers, NumPy arrays and Python
scalars, promotes with JAX's rules (weak types included), broadcasts like
NumPy, and is written only with ``refimpl.lax`` functions -- so it works the
same eagerly (returning refimpl arrays) and under ``ri.jit``.
"""

from refimpl.backends import fast_functions as _fast_functions
from refimpl.numpy import (
    _construct,
    _creation,
    _extras,
    _indexing,
    _linalg,
    _math,
    _more,
    _reductions,
    _scalars,
    _search,
    _shape,
    _stacking,
    _stats,
    _ufuncs,
)
from refimpl.numpy import fft as fft
from refimpl.numpy import linalg as linalg
from refimpl.numpy._construct import *  # noqa: F403
from refimpl.numpy._creation import *  # noqa: F403
from refimpl.numpy._extras import *  # noqa: F403
from refimpl.numpy._indexing import *  # noqa: F403
from refimpl.numpy._linalg import *  # noqa: F403
from refimpl.numpy._math import *  # noqa: F403
from refimpl.numpy._more import *  # noqa: F403
from refimpl.numpy._promote import is_operand
from refimpl.numpy._reductions import *  # noqa: F403
from refimpl.numpy._scalars import *  # noqa: F403
from refimpl.numpy._search import *  # noqa: F403
from refimpl.numpy._shape import *  # noqa: F403
from refimpl.numpy._stacking import *  # noqa: F403
from refimpl.numpy._stats import *  # noqa: F403
from refimpl.numpy._ufuncs import *  # noqa: F403

__all__ = [
    "is_operand",
    *_creation.__all__,
    *_extras.__all__,
    *_indexing.__all__,
    *_linalg.__all__,
    *_reductions.__all__,
    *_shape.__all__,
    *_ufuncs.__all__,
    *_construct.__all__,
    *_math.__all__,
    *_more.__all__,
    *_scalars.__all__,
    *_search.__all__,
    *_stacking.__all__,
    *_stats.__all__,
]

# Eager calls on device (PJRT) arrays: one cached jit per function and static
# arguments (docs/semantics.md 9.1); the reference backend is unaffected.
_fast_functions.wrap_module(globals(), __all__)
