"""refimpl: a readable reference for JAX-style tracing, jit, donation, scan
unrolling and masking, with a PJRT fast path behind the same front door.

    import refimpl as ri
    import refimpl.numpy as rnp
    from refimpl import lax
"""

from refimpl import (
    backends,
    custom_batching,
    debug,
    dlpack,
    effects,  # noqa: F401 (fills core.PROGRAM_EFFECTS: Program.effects)
    errors,
    lax,
    nn,
    ops,
    random,
    ref,
    scipy,
    tree,
    tree_util,
    typing,
)
from refimpl.ad_checkpoint import checkpoint, checkpoint_policies, remat
from refimpl.array import Array
from refimpl.backends.placement import default_backend, device_put, devices
from refimpl.backends.ref.arrays import Device
from refimpl.caches import clear_caches
from refimpl.callbacks import effects_barrier, pure_callback
from refimpl.config import config
from refimpl.contexts import (
    check_tracer_leaks,
    checking_leaks,
    debug_key_reuse,
    default_matmul_precision,
    default_prng_impl,
    disable_jit,
    enable_checks,
    enable_custom_prng,
    enable_x64,
    ensure_compile_time_eval,
    legacy_prng_key,
    named_call,
    named_scope,
    no_tracing,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    threefry_partitionable,
    transfer_guard,
)
from refimpl.core import Program, ShapedArray, check_program
from refimpl.custom_derivatives import custom_jvp, custom_vjp
from refimpl.device_queries import (
    block_until_ready,
    default_device,
    device_count,
    device_get,
    live_arrays,
    local_device_count,
    local_devices,
    print_environment_info,
    process_count,
    process_index,
)
from refimpl.experimental.shard_map import shard_map
from refimpl.gradient_utils import closure_convert, custom_gradient, fwd_and_bwd, jacobian
from refimpl.introspection import float0, make_jaxpr, typeof
from refimpl.invertible import custom_ivjp, invertible
from refimpl.primitives import base as _primitives_base
from refimpl.ref import Ref, empty_ref, free_ref, freeze, new_ref
from refimpl.sharding import NamedSharding, P, Shard, make_mesh, set_mesh
from refimpl.tracing import ConcretizationTypeError, UnexpectedTracerError
from refimpl.transforms.ad import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from refimpl.transforms.batching import vmap
from refimpl.transforms.jit import Jitted, ShapeDtypeStruct, eval_shape, jit, make_program
from refimpl.transforms.masking.transform import mask
from refimpl.transforms.pmap import pmap
from refimpl.transforms.sharded import (
    make_array_from_callback,
    make_array_from_single_device_arrays,
    reshard,
)
from refimpl.tree_util import (
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = [
    "debug",
    "dlpack",
    "errors",
    "typing",
    "nn",
    "ops",
    "random",
    "scipy",
    "tree",
    "Array",
    "ConcretizationTypeError",
    "Device",
    "Jitted",
    "Program",
    "ShapeDtypeStruct",
    "ShapedArray",
    "UnexpectedTracerError",
    "check_program",
    "config",
    "custom_jvp",
    "custom_vjp",
    "checkpoint",
    "checkpoint_policies",
    "remat",
    "invertible",
    "custom_ivjp",
    "custom_batching",
    "default_backend",
    "device_put",
    "devices",
    "eval_shape",
    "fwd_and_bwd",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linear_transpose",
    "linearize",
    "make_program",
    "mask",
    "register_pytree_node",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "tree_util",
    "vmap",
    "pmap",
    "shard_map",
    "make_mesh",
    "set_mesh",
    "NamedSharding",
    "P",
    "Shard",
    "reshard",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "value_and_grad",
    "vjp",
    "Ref",
    "empty_ref",
    "free_ref",
    "freeze",
    "new_ref",
    "ref",
    "block_until_ready",
    "clear_caches",
    "closure_convert",
    "custom_gradient",
    "default_device",
    "device_count",
    "device_get",
    "disable_jit",
    "enable_x64",
    "legacy_prng_key",
    "check_tracer_leaks",
    "checking_leaks",
    "debug_key_reuse",
    "default_matmul_precision",
    "default_prng_impl",
    "enable_checks",
    "enable_custom_prng",
    "numpy_dtype_promotion",
    "numpy_rank_promotion",
    "threefry_partitionable",
    "transfer_guard",
    "ensure_compile_time_eval",
    "no_tracing",
    "float0",
    "jacobian",
    "live_arrays",
    "local_device_count",
    "local_devices",
    "make_jaxpr",
    "named_call",
    "named_scope",
    "process_count",
    "print_environment_info",
    "process_index",
    "pure_callback",
    "effects_barrier",
    "typeof",
]


def _load_native_backend() -> None:
    """Load the PJRT backend with refimpl, whichever backend is selected, when
    its native extension is there (import only: no client starts). Loading it
    puts its native entries (C++ calls serving eager hits on PJRT arrays) in
    place of the exported ``lax``/``numpy`` functions, so done here, before a
    program takes any, every function stays the same object for the whole run
    (``f = lax.add; lax.add(x, y); f is lax.add``, as JAX's; its tests compare
    ops by identity), where a load at first use replaced them mid-program.
    Without the extension the reference backend runs alone, and asking for
    ``pjrt`` says what to install."""
    try:
        backends.get("pjrt")
    except ImportError:
        pass


_load_native_backend()
# the rules refimpl's primitives run with in programs (the reference backend's
# compiled form): a later def_impl changes eager evaluation only, as in JAX
_primitives_base.seal_library_rules()
