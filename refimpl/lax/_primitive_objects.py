"""``lax.<name>_p``: JAX's primitive objects, as refimpl's own primitives.

JAX 0.10.2 exports each primitive as ``jax.lax.<name>_p``. Programs (and JAX's
own tests) compare a program's equations with them
(``make_jaxpr(f)(x).eqns[0].primitive == lax.dynamic_slice_p``) and bind them
(``lax.sin_p.bind(x)``). Here each such name is the very
:class:`~refimpl.primitives.base.Primitive` refimpl's programs hold, so both
work; the object keeps refimpl's ``name`` (``general_gather`` for
``lax.gather_p``, where refimpl's printed programs differ from JAX's).

A JAX primitive that refimpl builds from other primitives (``acosh``, ``exp2``,
``tile``, ``split``...: no equation of that name ever appears in a refimpl
program) has no object here, and its ``_p`` name stays an AttributeError
(docs/semantics.md, "lax primitive objects").
"""

from __future__ import annotations

import sys

from refimpl.primitives.base import Primitive

__all__ = ["JAX_PRIMITIVE_NAMES", "primitive_object"]

#: the ``<name>_p`` objects ``jax.lax`` 0.10.2 exports, by ``<name>``
JAX_PRIMITIVE_NAMES = frozenset(
    """
    abs acos acosh add after_all all_gather all_to_all and approx_top_k argmax argmin asin
    asinh atan atan2 atanh axis_index bessel_i0e bessel_i1e bitcast_convert_type
    broadcast_in_dim cbrt ceil clamp clz complex concatenate cond conj conv_general_dilated
    convert_element_type copy cos cosh create_token cumlogsumexp cummax cummin cumprod
    cumsum dce_sink device_put digamma div dot_general dynamic_slice dynamic_update_slice eq
    eq_to erf erf_inv erfc exp exp2 expm1 fft floor gather ge gt igamma igamma_grad_a
    igammac imag integer_pow iota is_finite le le_to lgamma linear_solve log log1p logistic
    lt lt_to max min mul mulhi ne neg nextafter not optimization_barrier or pad pmax pmin
    polygamma population_count pow ppermute psum ragged_all_to_all real reduce reduce_and
    reduce_max reduce_min reduce_or reduce_precision reduce_prod reduce_sum reduce_window
    reduce_window_max reduce_window_min reduce_window_sum reduce_xor
    regularized_incomplete_beta rem reshape rev rng_bit_generator rng_uniform round rsqrt
    scan scatter scatter_add scatter_max scatter_min scatter_mul scatter_sub
    select_and_gather_add select_and_scatter select_and_scatter_add select_n
    sharding_constraint shift_left shift_right_arithmetic shift_right_logical sign sin sinh
    slice sort split sqrt square squeeze stack stage stop_gradient sub tan tanh tile top_k
    transpose unstack while xor zeta
    """.split()
)

# JAX's name -> the name of the refimpl primitive that plays its part
_REFIMPL_NAME = {
    "gather": "general_gather",
    "scatter": "general_scatter",
    "scatter_add": "general_scatter_add",
    "scatter_sub": "general_scatter_sub",
    "scatter_mul": "general_scatter_mul",
    "scatter_min": "general_scatter_min",
    "scatter_max": "general_scatter_max",
}

_by_name: dict[str, Primitive] = {}


def _refimpl_primitives() -> dict[str, Primitive]:
    """Every primitive object the loaded modules of ``refimpl.primitives``
    define, by name (read at the first ``lax.<name>_p``, when refimpl is
    imported: a primitive module nothing loaded has no equation in any
    program)."""
    if not _by_name:
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("refimpl.primitives.") and module is not None:
                for value in vars(module).values():
                    if isinstance(value, Primitive):
                        _by_name.setdefault(value.name, value)
    return _by_name


def primitive_object(attribute: str) -> Primitive:
    """``lax.<name>_p`` for ``attribute == "<name>_p"``; AttributeError when JAX
    exports no such primitive or refimpl has no primitive playing its part."""
    name = attribute[:-2] if attribute.endswith("_p") else None
    if name in JAX_PRIMITIVE_NAMES:
        found = _refimpl_primitives().get(_REFIMPL_NAME.get(name, name))
        if found is not None:
            return found
        raise AttributeError(
            f"refimpl.lax has no {attribute}: refimpl builds {name} from other "
            "primitives, so no program holds a primitive of that name"
        )
    raise AttributeError(f"module 'refimpl.lax' has no attribute {attribute!r}")
