"""``linear_solve``: the primitive behind ``lax.custom_linear_solve``.

It holds four closed sub-programs (``matvec``, its transpose ``vecmat``,
``solve`` and ``transpose_solve``) and their captured constants as leading
operands:

* value: ``solve(matvec, b)`` (the ``solve`` program on ``b``);
* jvp: ``x_dot = solve(matvec, b_dot - d matvec[x])`` where ``d matvec[x]``
  is the tangent of ``matvec(x)`` from the tangents of the values
  ``matvec`` closes over; the solver's own constants are not differentiated
  (the solve is assumed exact), as JAX;
* transpose (w.r.t. ``b``): ``ct_b = transpose_solve(vecmat, ct_x)``, the
  same primitive with ``matvec``/``vecmat`` and ``solve``/``transpose_solve``
  swapped, so reverse mode never differentiates *through* ``solve``;
* vmap: every sub-program batched, ``b`` and the result batched at axis 0.

The tracing helpers here (``_trace_fn``, ``_call_program``) are shared with
``lax.custom_root`` (``refimpl/lax/_solvers.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, pytree, tracing
from refimpl.core import Program, ShapedArray, avals_str
from refimpl.primitives import batch_rules, rule_context
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive
from refimpl.primitives.elementwise import convert_element_type_p
from refimpl.transforms.ad_util import UndefinedPrimal, Zero, tangent_aval


def _tree():
    return pytree


# --- tracing the user's functions -----------------------------------------------------------


class _Fn:
    """A user function traced on flat avals: its Program (captured outer values
    first), the captured values, and the output tree (of the solution part
    when ``has_aux``) and the number of solution leaves."""

    def __init__(self, program: Program, consts: list, out_tree: Any, n_out: int) -> None:
        self.program = program
        self.consts = consts
        self.out_tree = out_tree
        self.n_out = n_out


def _trace_fn(
    api: str,
    name: str,
    expected: str,
    fun: Callable[[Any], Any],
    tree: Any,
    avals: Sequence[ShapedArray],
    has_aux: bool = False,
) -> _Fn:
    """Trace ``fun`` on a pytree of ``avals`` shaped as ``tree``; its output
    (the first of a pair when ``has_aux``) must have the same structure and
    shapes as the input, as JAX checks them."""
    tu = _tree()
    info: list = []

    def flat(*xs: Any) -> list[Any]:
        out = fun(tu.tree_unflatten(tree, list(xs)))
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError(
                    f"{api}: {name}() produced a pytree with structure {tu.tree_structure(out)}, "
                    "but a pytree tuple with auxiliary output was expected because has_aux "
                    "was set to True."
                )
            out, aux = out
        else:
            aux = ()
        leaves, out_tree = tu.tree_flatten(out)
        got = [tuple(tracing.get_aval(v, api, i).shape) for i, v in enumerate(leaves)]
        want = [tuple(a.shape) for a in avals]
        # JAX 0.10.2's custom_linear_solve compares the leaves' shapes before the
        # structure (a ValueError); custom_root compares the structure first
        if api == "custom_linear_solve" and got != want:
            raise ValueError(
                f"{api}: {name}() output shapes must match {expected}, got {got} and {want}"
            )
        if out_tree != tree:
            raise TypeError(
                f"{api}: {name}() output pytree structure must match {expected}, "
                f"got {out_tree} and {tree}."
            )
        if got != want:
            raise ValueError(
                f"{api}: {name}() output shapes must match {expected}, got {got} and {want}"
            )
        aux_leaves, aux_tree = tu.tree_flatten(aux)
        info.append((out_tree, aux_tree))
        return [*leaves, *aux_leaves]

    origins = [f"{expected}{i}" for i in range(len(avals))]
    program, captured, _ = tracing.trace_to_program(flat, avals, f"{api} {name}", origins)
    out_tree, aux_tree = info[0]
    return _Fn(program, list(captured), (out_tree, aux_tree), len(avals))


def _call_program(program: Program, consts: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    return tracing.eval_program_bind(program, [*consts, *values])


def _bind(*args: Any, **params: Any) -> list[Any]:
    """``linear_solve_p.bind``, except on concrete operands, where JAX 0.10.2's
    impl runs the solve program op by op: the solution then has the types
    the solver computes from the operands given (a strong cotangent or a
    strong solver gives a strong solution), not ``b``'s as under ``jit``."""
    if any(isinstance(a, tracing.Tracer) for a in args):
        return list(linear_solve_p.bind(*args, **params))
    _, _, sc, _, b = _split(args, params["num_consts"])
    outs = _call_program(params["solve"], sc, b)
    # (a leaf the solver returns as a constant comes out as NumPy data, a
    # Python scalar or a TypedScalar: an array of the program's type)
    return [
        convert_element_type_p.bind(o, new_dtype=a.dtype, weak_type=a.weak_type)
        if isinstance(o, (np.ndarray, np.generic, tracing.TypedScalar))
        or dtypes.is_python_scalar(o)
        else o
        for o, a in zip(outs, params["solve"].out_avals, strict=True)
    ]  # fmt: skip


def _own_weak_type(value: Any, aval: ShapedArray) -> ShapedArray:
    """``aval`` with ``value``'s weak type: JAX binds tangents and cotangents
    as they are, so a strong cotangent of a weak ``b`` stays strong."""
    return aval.update(weak_type=tracing.get_aval(value, "linear_solve", 0).weak_type)


# --- the linear_solve primitive -------------------------------------------------------------

linear_solve_p = Primitive("linear_solve", multiple_results=True)


def _split(args: Sequence[Any], num_consts: tuple[int, int, int, int]) -> list[list[Any]]:
    parts, start = [], 0
    for n in num_consts:
        parts.append(list(args[start : start + n]))
        start += n
    parts.append(list(args[start:]))
    return parts


@linear_solve_p.def_abstract_eval
def _linear_solve_abstract_eval(*avals, matvec, vecmat, solve, transpose_solve, num_consts):
    """The solution has ``b``'s types; after it come ``solve``'s auxiliary outputs."""
    *_, b = _split(avals, num_consts)
    solve_out = solve.out_avals
    for got, want in zip(solve_out[: len(b)], b, strict=False):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise TypeError(
                f"custom_linear_solve: solve returns ({avals_str(solve_out[: len(b)])}) "
                f"for b of types ({avals_str(b)})"
            )
    return [*b, *solve_out[len(b) :]]


@linear_solve_p.def_impl
def _linear_solve_impl(*args, matvec, vecmat, solve, transpose_solve, num_consts):
    _, _, sc, _, b = _split(args, num_consts)
    return rule_context.eval_program(solve, [*sc, *b])


@linear_solve_p.def_lowering
def _linear_solve_lowering(ctx, *args, matvec, vecmat, solve, transpose_solve, num_consts):
    _, _, sc, _, b = _split(args, num_consts)
    return ctx.lower_program(solve, [*sc, *b])


@linear_solve_p.def_jvp
def _linear_solve_jvp(primals, tangents, **params):
    """``x_dot = solve(b_dot - (d matvec)(x))``: the tangents of the values
    ``matvec`` closes over enter through ``matvec``'s JVP at the solution;
    those of the solvers' constants are ignored (the solve is exact)."""
    num_consts = params["num_consts"]
    outs = _bind(*primals, **params)
    mc, _, _, _, b = _split(primals, num_consts)
    mc_dot, _, _, _, b_dot = _split(tangents, num_consts)
    n = len(b)
    x, aux = outs[:n], outs[n:]
    rhs = list(b_dot)
    if any(type(t) is not Zero for t in mc_dot):
        zeros = [Zero(tangent_aval(tracing.get_aval(v, "linear_solve", 0))) for v in x]
        _, mv_dot = rule_context.jvp_flat(
            lambda *vs: _call_program(params["matvec"], vs[: len(mc)], vs[len(mc) :]),
            [*mc, *x],
            [*mc_dot, *zeros],
        )
        rhs = [
            t if type(d) is Zero else (ew.neg(d) if type(t) is Zero else ew.sub(t, d))
            for t, d in zip(rhs, mv_dot, strict=True)
        ]
    aux_zeros = [Zero(tangent_aval(tracing.get_aval(a, "linear_solve", 0))) for a in aux]
    if all(type(t) is Zero for t in rhs):
        return outs, [Zero(tangent_aval(tracing.get_aval(v, "linear_solve", 0))) for v in outs]
    consts = list(primals[: sum(num_consts)])
    b_avals = [tracing.get_aval(v, "linear_solve", 0) for v in x]
    rhs = [
        rule_context.match_aval(t, _own_weak_type(t, tangent_aval(a)))
        for t, a in zip(rhs, b_avals, strict=True)
    ]
    x_dot = _bind(*consts, *rhs, **params)[:n]
    return outs, [*x_dot, *aux_zeros]


@linear_solve_p.def_transpose
def _linear_solve_transpose(cts, *args, matvec, vecmat, solve, transpose_solve, num_consts):
    """``ct_b = transpose_solve(vecmat, ct_x)``: the primitive itself with the
    roles of ``matvec``/``vecmat`` and ``solve``/``transpose_solve`` swapped."""

    if transpose_solve is None:
        raise TypeError(
            "transpose_solve required for backwards mode automatic differentiation "
            "of custom_linear_solve"
        )
    mc, vc, sc, tc, b = _split(args, num_consts)
    if any(isinstance(v, UndefinedPrimal) for v in (*mc, *vc, *sc, *tc)):
        raise NotImplementedError(
            "custom_linear_solve: transposing with respect to the values the functions close "
            "over is not supported (as JAX)"
        )
    n = len(b)
    b_avals = [a.aval for a in b]
    ct_x = [
        rule_context.zeros_like_aval(tangent_aval(a)) if type(c) is Zero else c
        for c, a in zip(cts[:n], b_avals, strict=True)
    ]
    ct_x = [
        rule_context.match_aval(c, _own_weak_type(c, tangent_aval(a)))
        for c, a in zip(ct_x, b_avals, strict=True)
    ]
    outs = _bind(
        *vc, *mc, *tc, *sc, *ct_x,
        matvec=vecmat, vecmat=matvec, solve=transpose_solve, transpose_solve=solve,
        num_consts=(num_consts[1], num_consts[0], num_consts[3], num_consts[2]),
    )  # fmt: skip
    return [None] * sum(num_consts) + list(outs[:n])


@linear_solve_p.def_batch
def _linear_solve_batch(args, dims, *, matvec, vecmat, solve, transpose_solve, num_consts):
    """Every sub-program batched with its constants' batch dims and ``b``
    (and so the solution) batched at axis 0: the solution of a batched system
    is batched even where one program alone would not make it so."""
    frame = rule_context.current_frame()
    size = frame.size
    parts = _split(list(zip(args, dims, strict=True)), num_consts)
    consts_in = [[d is not None for _, d in part] for part in parts[:4]]
    n = len(parts[4])

    def batched(program: Program | None, const_b: list[bool]) -> Program | None:
        if program is None:
            return None
        force = [True] * len(program.out_vars)
        return rule_context.batch_subprogram(
            program, [*const_b, *([True] * n)], frame, force_out=force, name="custom_linear_solve"
        )[0]

    new_params = dict(
        matvec=batched(matvec, consts_in[0]),
        vecmat=batched(vecmat, consts_in[1]),
        solve=batched(solve, consts_in[2]),
        transpose_solve=batched(transpose_solve, consts_in[3]),
        num_consts=num_consts,
    )
    operands = [
        x if d is None else batch_rules.moveaxis(x, d, 0) for part in parts[:4] for x, d in part
    ]
    operands += [batch_rules.bdim_to(x, d, size, 0) for x, d in parts[4]]
    outs = _bind(*operands, **new_params)
    return list(outs), [0] * len(outs)


def _check_callable(api: str, arg: str, fun: Any) -> None:
    if not callable(fun):
        raise TypeError(f"{api}: {arg} must be callable, got {type(fun).__name__}")


def custom_linear_solve(
    matvec: Callable[[Any], Any],
    b: Any,
    solve: Callable[[Callable, Any], Any],
    transpose_solve: Callable[[Callable, Any], Any] | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
) -> Any:
    """``jax.lax.custom_linear_solve``: ``solve(matvec, b)`` differentiated
    implicitly, assuming ``matvec(x) == b`` (not checked).

    ``matvec`` must be linear in its argument and differentiable in the
    values it closes over; ``solve`` need not be differentiable. Forward mode
    solves again with ``solve``; reverse mode solves the transposed system
    with ``transpose_solve(vecmat, ct)``, ``vecmat`` being ``matvec``'s
    transpose (from :func:`refimpl.linear_transpose` of its Program), or with
    ``solve`` itself when ``symmetric`` (then ``vecmat`` is ``matvec``). Without
    ``transpose_solve`` reverse mode is a ``TypeError``, as JAX. With
    ``has_aux`` the solvers return ``(x, aux)``; ``aux`` (the forward
    ``solve``'s) is returned beside the solution and has zero derivative.

    Built as the primitive ``linear_solve`` (module docstring).
    """
    api = "custom_linear_solve"
    for arg, fun in (("matvec", matvec), ("solve", solve)):
        _check_callable(api, arg, fun)
    if transpose_solve is not None:
        _check_callable(api, "transpose_solve", transpose_solve)
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    tu = _tree()
    leaves, tree = tu.tree_flatten(b)
    # b's own types, weak ones included: JAX traces the solvers at them and
    # types the solution as b (so a weak b gives a weak solution under jit)
    avals = [tracing.get_aval(v, api, f"b{i}") for i, v in enumerate(leaves)]
    mv = _trace_fn(api, "matvec", "b", matvec, tree, avals)

    def matvec_fn(x: Any) -> Any:
        flat = tu.tree_flatten(x)[0]
        outs = _call_program(mv.program, mv.consts, flat)
        return tu.tree_unflatten(tree, outs)

    sv = _trace_fn(api, "solve", "b", lambda v: solve(matvec_fn, v), tree, avals, has_aux)
    vecmat_program, vecmat_consts = None, []
    tsolve_program, tsolve_consts = None, []
    if transpose_solve is not None:
        if symmetric:
            vecmat_program, vecmat_consts = mv.program, mv.consts
        else:
            linear = [False] * len(mv.consts) + [True] * len(avals)
            vecmat_program = rule_context.transpose_program(mv.program, linear)
            vecmat_consts = mv.consts
        vm_program, vm_consts = vecmat_program, vecmat_consts

        def vecmat_fn(y: Any) -> Any:
            flat = tu.tree_flatten(y)[0]
            return tu.tree_unflatten(tree, _call_program(vm_program, vm_consts, flat))

        ts = _trace_fn(
            api, "transpose_solve", "b", lambda v: transpose_solve(vecmat_fn, v), tree, avals,
            has_aux,
        )  # fmt: skip
        tsolve_program, tsolve_consts = ts.program, ts.consts
    num_consts = (len(mv.consts), len(vecmat_consts), len(sv.consts), len(tsolve_consts))
    operands = [ad_match(v, a) for v, a in zip(leaves, avals, strict=True)]
    outs = _bind(
        *mv.consts, *vecmat_consts, *sv.consts, *tsolve_consts, *operands,
        matvec=mv.program, vecmat=vecmat_program, solve=sv.program,
        transpose_solve=tsolve_program, num_consts=num_consts,
    )  # fmt: skip
    x = tu.tree_unflatten(tree, outs[: len(avals)])
    if has_aux:
        return x, tu.tree_unflatten(sv.out_tree[1], list(outs[len(avals) :]))
    return x


def ad_match(value: Any, aval: ShapedArray) -> Any:
    """``value`` typed as ``aval`` (a Python scalar ``b`` becomes an array)."""

    got = tracing.get_aval(value, "custom_linear_solve", 0)
    if got == aval:
        return value
    return convert_element_type_p.bind(value, new_dtype=aval.dtype, weak_type=aval.weak_type)


__all__ = [
    "custom_linear_solve",
]
