"""``refimpl.lax``: every primitive under its ``jax.lax`` name and signature.

A primitive's binding function lives beside the primitive in
``refimpl/primitives/``; the functions JAX defines over other primitives
(``full``, ``conv``, ``map``, ``custom_root``...) live in this package's
``_*.py`` modules. This module only gathers the public names.
"""

from refimpl import extended_arrays as _extended_arrays
from refimpl import jax_array_protocol as _jax_array_protocol
from refimpl.backends import fast_functions as _fast_functions

# the functions JAX defines over the primitives
from refimpl.lax._approx_top_k import *  # noqa: F403
from refimpl.lax._convolution import *  # noqa: F403
from refimpl.lax._dot import *  # noqa: F403
from refimpl.lax._elementwise import *  # noqa: F403
from refimpl.lax._higher_order import *  # noqa: F403
from refimpl.lax._parallel import *  # noqa: F403
from refimpl.lax._primitive_objects import primitive_object as _primitive_object
from refimpl.lax._ragged_dot import *  # noqa: F403
from refimpl.lax._shapes import *  # noqa: F403
from refimpl.lax._solvers import *  # noqa: F403
from refimpl.lax._tokens import *  # noqa: F403
from refimpl.lax._types import *  # noqa: F403

# jax.lax.linalg: cholesky, eigh, lu, qr, svd, triangular_solve
from refimpl.primitives import decompositions as linalg  # noqa: F401  (jax.lax.linalg)
from refimpl.primitives.barriers import *  # noqa: F403
from refimpl.primitives.bits import *  # noqa: F403
from refimpl.primitives.collectives import *  # noqa: F403
from refimpl.primitives.composite import *  # noqa: F403
from refimpl.primitives.control_flow import *  # noqa: F403
from refimpl.primitives.cumlogsumexp import *  # noqa: F403
from refimpl.primitives.dot_algorithms import *  # noqa: F403
from refimpl.primitives.elementwise import *  # noqa: F403
from refimpl.primitives.fft import *  # noqa: F403
from refimpl.primitives.gather_scatter import *  # noqa: F403
from refimpl.primitives.indexing import *  # noqa: F403
from refimpl.primitives.linalg import *  # noqa: F403
from refimpl.primitives.linear_solve import *  # noqa: F403
from refimpl.primitives.platform import *  # noqa: F403
from refimpl.primitives.precision import *  # noqa: F403
from refimpl.primitives.prng import *  # noqa: F403
from refimpl.primitives.reductions import *  # noqa: F403
from refimpl.primitives.rng_bits import *  # noqa: F403
from refimpl.primitives.scatter import *  # noqa: F403
from refimpl.primitives.sorting import *  # noqa: F403
from refimpl.primitives.special import *  # noqa: F403
from refimpl.primitives.structural import *  # noqa: F403
from refimpl.primitives.windowed import *  # noqa: F403

# The structural functions take typed key arrays (refimpl/extended_arrays.py).
for _name in _extended_arrays.LAX_FUNCTIONS:
    globals()[_name] = _extended_arrays.aware(f"lax.{_name}", globals()[_name])

# convert_element_type converts an object defining __jax_array__, full_like reads
# its shape and dtype, as JAX's (refimpl/jax_array_protocol.py); the others refuse it
for _name in ("convert_element_type", "full_like"):
    globals()[_name] = _jax_array_protocol.accepting(_name, globals()[_name])

# Eager calls on device (PJRT) arrays: one cached jit per function and static
# arguments (docs/semantics.md 16.1); the reference backend is unaffected.
_fast_functions.wrap_module(globals(), [n for n in list(globals()) if not n.startswith("_")])


def __getattr__(name: str) -> object:
    """``lax.<name>_p``: JAX's primitive objects, which are refimpl's own
    (refimpl/lax/_primitive_objects.py); looked up when first read, since
    some primitive modules import this package."""
    return _primitive_object(name)
