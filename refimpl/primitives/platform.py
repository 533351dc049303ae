"""``lax.platform_dependent``: code that differs per platform (cpu, cuda, rocm, tpu).

``platform_dependent(*args, cpu=f, tpu=g, default=h)`` is ``switch(i, branches,
*args)`` where ``i = platform_index()`` is the number of the branch for the
platform the program runs on. ``platform_index_p`` is the only new primitive:

* **impl** (the reference backend, whose platform is ``cpu``): the index of
  the branch that lists ``cpu``, else the default branch;
* **lowering**: for one lowering platform, that platform's branch index as a
  constant, which the ``cond`` it feeds reads while lowering: only that
  branch is emitted, as JAX's lowering (no ``stablehlo.case``); for
  several, a function of the module's leading ``_platform_index`` argument
  (the position of the running platform in ``lowering_platforms``), so the
  ``stablehlo.case`` picks the branch when the executable runs;
* **jvp/batch**: the index is an integer constant of the program (zero
  tangent, never batched), so differentiation and batching reach the
  branches through ``cond``'s own rules, one branch at a time.

A platform with neither its own branch nor a default is a
``NotImplementedError`` (JAX's class: no lowering for that platform) when the
program is evaluated or lowered for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers
from refimpl.primitives.base import Primitive
from refimpl.primitives.control_flow import _switch

__all__ = ["platform_dependent"]

# Platform names as JAX spells them ("gpu" is refused in platform_dependent, as by JAX).
KNOWN_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
REF_PLATFORM = "cpu"

platform_index_p = Primitive("platform_index")


def branch_for(platform: str, platforms: tuple[tuple[str, ...], ...], has_default: bool) -> int:
    """The branch index for ``platform``: the first branch listing it, else the
    default branch (the last one), else a ``NotImplementedError`` (as JAX)."""
    for index, names in enumerate(platforms):
        if platform in names:
            return index
    if has_default:
        return len(platforms)
    listed = sorted({name for names in platforms for name in names})
    raise NotImplementedError(
        # JAX 0.10.2's words: its platform_index has no lowering for the platform
        f"lax.platform_dependent: translation rule for primitive 'platform_index' not found "
        f"for platform {platform}: no branch for the platform {platform!r} (branches for "
        f"{listed}) and no default"
    )


@platform_index_p.def_abstract_eval
def _platform_index_abstract_eval(
    *, platforms: tuple[tuple[str, ...], ...], has_default: bool
) -> ShapedArray:
    """An int32 scalar: ``branch_for(the running platform, platforms, has_default)``."""
    if not isinstance(platforms, tuple) or not all(
        isinstance(names, tuple) and all(isinstance(n, str) for n in names) for names in platforms
    ):
        raise TypeError(
            f"platform_index: platforms must be a tuple of tuples of platform names, "
            f"got {platforms!r}"
        )
    return ShapedArray((), np.dtype(np.int32), weak_type=False)


@platform_index_p.def_impl
def _platform_index_impl(
    *, platforms: tuple[tuple[str, ...], ...], has_default: bool
) -> np.ndarray:
    return np.asarray(branch_for(REF_PLATFORM, platforms, has_default), np.int32)


platform_index_p.def_jvp(ad_helpers.zero_jvp(platform_index_p))


@platform_index_p.def_batch
def _platform_index_batch(args, dims, *, platforms, has_default):
    out = platform_index_p.bind(platforms=platforms, has_default=has_default)
    return out, None


@platform_index_p.def_lowering
def _platform_index_lowering(
    ctx: Any, *, platforms: tuple[tuple[str, ...], ...], has_default: bool
) -> list:
    lowering_platforms = ctx.module.lowering_platforms()
    i32 = np.dtype(np.int32)
    branches = [branch_for(p, platforms, has_default) for p in lowering_platforms]
    if len(lowering_platforms) == 1:
        # a constant the cond it feeds reads while lowering: only that branch
        # is emitted (as JAX's lowering, which knows the platform)
        value = ctx.constant(branches[0], i32)
        ctx.module.know_branch(value, branches[0])
        return [value]
    # several platforms: branches[_platform_index], as a chain of selects
    which = ctx.module.platform_index_value()
    result = ctx.constant(branches[-1], i32)
    for position in range(len(lowering_platforms) - 2, -1, -1):
        is_it = ctx.compare(which, ctx.constant(position, i32), "EQ", i32)
        result = ctx.hlo.select(is_it, ctx.constant(branches[position], i32), result)
    return [result]


def _platform_names(name: str) -> tuple[str, ...]:
    """The platforms a keyword names: itself. Any name is taken, as by JAX
    0.10.2 (``other=``, ``CPU=``: a platform no program runs on, so that
    branch is never chosen), but ``gpu``, which is ambiguous."""
    if name == "gpu":  # JAX 0.10.2 refuses it too: which GPU platform is ambiguous
        raise ValueError("lax.platform_dependent: use 'cuda' or 'rocm', not 'gpu'")
    return (name,)


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None, **per_platform):
    """``jax.lax.platform_dependent``: ``per_platform[p](*args)`` on platform ``p``.

    Keyword arguments name platforms (``cpu``, ``cuda``, ``rocm``, ``tpu``, or
    any other name, which no program runs on; ``gpu`` is a ValueError, as in
    JAX); ``default`` runs on any other platform. Where the index is known
    at once (eagerly, and under ``vmap``/``grad``, which do not stage it)
    only the chosen branch runs, as in JAX. Staged (``jit``, inside a
    ``cond`` or loop body) all branches are traced (they must return the
    same pytree and types, as for ``lax.switch``); which one runs is decided
    when the program runs: on the reference backend that is ``cpu``; on PJRT
    the platform the program was lowered for (see
    ``Traced.lower(lowering_platforms=...)``).
    """

    branches: list[Callable[..., Any]] = []
    platforms: list[tuple[str, ...]] = []
    names: list[str] = []
    for name, fun in per_platform.items():
        if not callable(fun):
            raise TypeError(f"lax.platform_dependent: the branch for {name!r} must be callable")
        platforms.append(_platform_names(name))
        branches.append(fun)
        names.append(f"the branch for {name}")
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: default must be callable")
        branches.append(default)
        names.append("default")
    index = platform_index_p.bind(platforms=tuple(platforms), has_default=default is not None)
    if not isinstance(index, tracing.Tracer):
        # known now (not staged by jit or a cond): only the chosen branch
        # runs, on the arguments as given, as JAX 0.10.2's
        # ``branches[int(platform_index)](*args)``
        return branches[int(index)](*args)
    return _switch("lax.platform_dependent", index, branches, args, names)
