"""Program transformations: jit (signature cache, donation), scan unrolling, masking.

Each transformation lives in its own module (``jit``, ``donation``, ``scan``,
``masking/``); this package imports none of them, so that the primitives can
import ``masking.shape_spec`` without pulling the transformations in.
"""
