"""``custom_root``: implicit differentiation of a root finder.

Built on :class:`refimpl.custom_jvp` (as JAX's): the primal is
``solve(f, initial_guess)``; its jvp is
``-tangent_solve(d f/d x at the solution, d f/d params)``, by the implicit
function theorem (``f(params, x*(params)) = 0``). Its sibling
``custom_linear_solve`` is the primitive of ``primitives/linear_solve.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from refimpl import dtypes, tracing
from refimpl.array import as_array
from refimpl.core import Program
from refimpl.custom_derivatives import custom_jvp
from refimpl.primitives import elementwise as ew
from refimpl.primitives.linear_solve import _call_program, _check_callable, _trace_fn, _tree
from refimpl.transforms import ad
from refimpl.transforms.ad_util import Zero

# --- custom_root ------------------------------------------------------------------------------


def custom_root(
    f: Callable[[Any], Any],
    initial_guess: Any,
    solve: Callable[[Callable, Any], Any],
    tangent_solve: Callable[[Callable, Any], Any],
    has_aux: bool = False,
) -> Any:
    """``jax.lax.custom_root``: ``solve(f, initial_guess)``, a root of ``f``,
    differentiated by the implicit function theorem with respect to the
    values ``f`` closes over (not through ``solve``, not w.r.t. the guess).

    With ``x*`` the solution and ``p`` the closed-over values,
    ``f(p, x*(p)) = 0`` gives ``dx* = -(df/dx)^{-1} (df/dp) dp``; the inverse
    is applied by ``tangent_solve(g, y)``, ``g`` the linearization of ``f`` at
    ``x*`` (e.g. ``lambda g, y: y / g(1.0)`` for a scalar). Reverse mode
    transposes ``tangent_solve``'s computation, so it must be linear in
    ``y`` (a division, or a :func:`custom_linear_solve`). With ``has_aux``
    ``solve`` returns ``(x, aux)`` and ``aux`` has zero derivative.

    Built on :class:`refimpl.custom_jvp` (as JAX's), over the Programs of
    ``f``, ``solve`` and the linearize-and-solve step, their captured values
    passed as arguments.
    """

    api = "custom_root"
    for arg, fun in (("f", f), ("solve", solve), ("tangent_solve", tangent_solve)):
        _check_callable(api, arg, fun)
    tu = _tree()
    leaves, tree = tu.tree_flatten(initial_guess)
    avals = [tracing.get_aval(v, api, f"initial_guess{i}") for i, v in enumerate(leaves)]
    fn = _trace_fn(api, "f", "initial_guess", f, tree, avals)

    def f_of(program: Program, consts: Sequence[Any]) -> Callable[[Any], Any]:
        def call(x: Any) -> Any:
            flat = tu.tree_flatten(x)[0]
            return tu.tree_unflatten(tree, _call_program(program, consts, flat))

        return call

    sv = _trace_fn(
        api, "solve", "initial_guess", lambda x: solve(f_of(fn.program, fn.consts), x), tree,
        avals, has_aux,
    )  # fmt: skip
    n = len(avals)

    def linearize_and_solve(flat: Sequence[Any]) -> list[Any]:
        x, rhs = flat[:n], flat[n:]
        f_flat = f_of(fn.program, fn.consts)
        _, f_jvp = ad.linearize(f_flat, tu.tree_unflatten(tree, list(x)))
        out = tangent_solve(f_jvp, tu.tree_unflatten(tree, list(rhs)))
        out_leaves, out_tree = tu.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(
                "custom_root: tangent_solve() output pytree structure must match x, "
                f"got {out_tree} and {tree}."
            )
        return out_leaves

    sol_avals = sv.program.out_avals[:n]
    ls_program, ls_consts, _ = tracing.trace_to_program(
        lambda *xs: linearize_and_solve(xs), [*sol_avals, *sol_avals], "custom_root tangent_solve",
        ["x"] * n + ["b"] * n,
    )  # fmt: skip
    ls_consts = list(ls_consts)
    counts = (len(fn.consts), len(sv.consts), len(ls_consts))

    def parts(args: Sequence[Any]) -> tuple[list, list, list, list]:
        a, b, c = counts
        return (list(args[:a]), list(args[a : a + b]), list(args[a + b : a + b + c]),
                list(args[a + b + c :]))  # fmt: skip

    @custom_jvp
    def root(*args: Any) -> list[Any]:
        _, sc, _, guess = parts(args)
        return _call_program(sv.program, sc, guess)

    def root_jvp(primals: tuple, tangents: tuple) -> tuple[list, list]:
        fc, _, lc, _ = parts(primals)
        fc_dot = parts(tangents)[0]
        outs = root(*primals)
        solution = list(outs[:n])
        # float0 (integer) constants carry no tangent
        fc_dot = [
            Zero(ad.tangent_aval(tracing.get_aval(c, api, 0)))
            if type(t) is Zero or getattr(t, "dtype", None) == dtypes.float0
            else t
            for c, t in zip(fc, fc_dot, strict=True)
        ]
        _, rhs = ad.jvp_flat(
            lambda *cs: _call_program(fn.program, cs, solution),
            fc,
            fc_dot,
        )
        rhs = [
            ad.zeros_like_aval(ad.tangent_aval(a)) if type(r) is Zero else r
            for r, a in zip(rhs, sol_avals, strict=True)
        ]
        sol_dot = [ew.neg(v) for v in _call_program(ls_program, lc, [*solution, *rhs])]
        aux_dot = [
            ad.zeros_like_aval(ad.tangent_aval(tracing.get_aval(a, api, 0))) for a in outs[n:]
        ]
        return outs, [*sol_dot, *aux_dot]

    root.defjvp(root_jvp)
    # eagerly, a solution or aux leaf that solve returns as a constant comes
    # out of its program as NumPy data or a TypedScalar: an array, as JAX's
    outs = [as_array(o) for o in root(*fn.consts, *sv.consts, *ls_consts, *leaves)]
    x = tu.tree_unflatten(tree, list(outs[:n]))
    if has_aux:
        return x, tu.tree_unflatten(sv.out_tree[1], list(outs[n:]))
    return x


__all__ = [
    "custom_root",
]
