"""``mask``'s paths the other masking families leave untaken (found with
``tools/conformance_coverage.py``); refimpl only (JAX has had no ``mask``
since 2021), so every case has its own oracle: NumPy on the unpadded
inputs for values, and for the checks the error class and the words of
SPEC "Masking" / docs/semantics.md (a check removed or loosened fails).

* spec forms: powers, a whole ``_`` dim, a scalar ``()``, specs without
  parentheses or with a trailing comma, nested parentheses;
* the checks of ``mask(fun, in_shapes, out_shape)`` and of a masked call
  (arguments, sizes, ranks, constant dims, padding too small, outputs);
* spec syntax errors, each with the position it names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import Case, Oracle, script_case
from conformance.observe import Raises

REQUIRES = ("mask",)
_R = np.random.default_rng(3639)
V = _R.standard_normal(9).astype(np.float32)
M = _R.standard_normal((3, 5)).astype(np.float32)


def _case(name: str, script: Callable[[Any], Any], expect: Any) -> Case:
    return script_case(f"mask.paths/{name}", script, expect=expect, requires=REQUIRES,
                       tags=("masking",))  # fmt: skip


def _run(ns: Any, fun: Callable[..., Any], in_shapes: Any, out_shape: Any, args: list,
         sizes: dict) -> Any:  # fmt: skip
    masked = ns.mask(fun, in_shapes, out_shape)
    return masked([ns.asarray(a) for a in args], sizes)


# --- values ---------------------------------------------------------------------------------


def _power_spec(ns: Any) -> Any:
    out = _run(ns, lambda x: ns.np_.cumsum(x * 2), ["(n**2,)"], "(n**2,)", [V], {"n": 2})
    return np.asarray(ns.to_numpy(out))[:4]


def _whole_dim_any(ns: Any) -> Any:
    """``_`` dims are unconstrained: the rows of an (_, n) matrix, summed over n."""
    out = _run(ns, lambda x: x.sum(1), ["(_, n)"], "(_,)", [M], {"n": 3})
    return np.asarray(ns.to_numpy(out))


def _scalar_and_bare_specs(ns: Any) -> Any:
    """A scalar spec ``()``, a spec without parentheses, one with a trailing
    comma and one in double parentheses, all in one call."""
    out = _run(
        ns, lambda x, s, y, z: (x * s + y, z.max()), ["n", "()", "n,", "((n + 1))"],
        ("n,", "()"), [V, np.float32(3), V * 2, V], {"n": 4},
    )  # fmt: skip
    return [np.asarray(ns.to_numpy(out[0]))[:4], np.asarray(ns.to_numpy(out[1]))]


def _sizes_of_two_names(ns: Any) -> Any:
    """Two sizes in one spec (an outer product), sizes given as NumPy ints."""
    out = _run(ns, lambda a, b: a[:, None] * b[None, :], ["(n,)", "(m,)"], "(n, m)",
               [V[:4], V[4:9]], {"n": np.int32(3), "m": np.int64(2)})  # fmt: skip
    return np.asarray(ns.to_numpy(out))[:3, :2]


def _unary_minus(ns: Any) -> Any:
    """A spec with a unary minus (``-n + 9``) matches one written ``9 - n``."""
    out = _run(ns, lambda x: x * 2, ["(-n + 9,)"], "(9 - n,)", [V], {"n": 3})
    return np.asarray(ns.to_numpy(out))[:6]


def _strided_sum(ns: Any) -> Any:
    """A strided slice's logical size ``(n + 1)//2`` computed at run time (the
    sum masks the padding past it), for odd and even n."""
    masked = ns.mask(lambda x: x[::2].sum(), ["(n,)"], "()")
    return [np.asarray(ns.to_numpy(masked([ns.asarray(V)], {"n": n}))) for n in (5, 4, 0)]


def _nested_jit(ns: Any) -> Any:
    """A jit inside the masked function is masked like the caller (inlined)."""
    inner = ns.jit(lambda y: ns.np_.cumsum(y * 2))
    masked = ns.mask(lambda x: (inner(x), inner(x).sum()), ["(n,)"], ("(n,)", "()"))
    out = masked([ns.asarray(V)], {"n": 6})
    return [np.asarray(ns.to_numpy(out[0]))[:6], np.asarray(ns.to_numpy(out[1]))]


def _masking_module(ns: Any) -> Any:
    return importlib.import_module(f"{ns.api.__name__}.transforms.masking.transform")


def _logical_size(ns: Any) -> Any:
    """``logical_size("n")`` inside the masked function (the masked mean), and
    its two errors: unknown name (KeyError), outside any masked trace
    (RuntimeError); the masked function's repr."""
    module = _masking_module(ns)
    masked = ns.mask(lambda x: x.sum() / module.logical_size("n"), ["(n,)"], "()")
    mean = np.asarray(ns.to_numpy(masked([ns.asarray(V)], {"n": 7})))
    unknown = ns.mask(lambda x: x * module.logical_size("m"), ["(n,)"], "(n,)")
    return [mean, ns.capture(unknown, [ns.asarray(V)], {"n": 2}),
            ns.capture(module.logical_size, "n"), repr(masked).startswith("<masked")]  # fmt: skip


# --- the checks -----------------------------------------------------------------------------


def _err(fun: Callable[..., Any], in_shapes: Any, out_shape: Any, args: Any, sizes: Any,
         wrap: bool = True) -> Callable[[Any], Any]:  # fmt: skip
    def script(ns: Any) -> Any:
        masked = ns.mask(fun(ns) if fun is not None else (lambda x: x), in_shapes, out_shape)
        given = [ns.asarray(a) for a in args] if wrap else args
        return masked(given, sizes)

    return script


def _not_callable(ns: Any) -> Any:
    return ns.mask(3, ["(n,)"], "(n,)")


ERRORS: list[tuple[str, Callable[[Any], Any], type, str]] = [
    ("not_callable", _not_callable, TypeError, "fun must be callable"),
    ("in_shapes_not_a_list", _err(None, "(n,)", "(n,)", [V], {"n": 2}), TypeError,
     "in_shapes must be a list"),
    ("spec_not_a_string", _err(None, [3], "(n,)", [V], {"n": 2}), TypeError,
     "must hold shape spec strings"),
    ("out_shape_unknown_size", _err(None, ["(n,)"], "(m,)", [V], {"n": 2}), ValueError,
     r"sizes \['m'\] that no input spec mentions"),
    ("args_not_a_list", _err(None, ["(n,)"], "(n,)", V, {"n": 2}, wrap=False), TypeError,
     "args must be a list"),
    ("args_do_not_match", _err(None, ["(n,)"], "(n,)", [V, V], {"n": 2}), TypeError,
     "args do not match in_shapes"),
    ("sizes_not_a_dict", _err(None, ["(n,)"], "(n,)", [V], [2]), TypeError,
     "logical_sizes must be a dict"),
    ("size_unknown", _err(None, ["(n,)"], "(n,)", [V], {"n": 2, "m": 1}), ValueError,
     r"unknown \['m'\]"),
    ("size_bool", _err(None, ["(n,)"], "(n,)", [V], {"n": True}), TypeError,
     "must be an integer scalar"),
    ("rank", _err(None, ["(n, 3)"], "(n, 3)", [V], {"n": 2}), TypeError,
     r"has rank 1 but its spec '\(n, 3\)' has rank 2"),
    ("constant_dim", _err(None, ["(n, 4)"], "(n, 4)", [M], {"n": 2}), TypeError,
     "dim 1 must be 4"),
    ("padding_too_small", _err(None, ["(2*n,)"], "(2*n,)", [V], {"n": 5}), ValueError,
     "does not fit in its padded size 9"),
    ("output_structure", _err(lambda ns: lambda x: (x, x), ["(n,)"], "(n,)", [V], {"n": 2}),
     TypeError, "output structure"),
    ("output_logical_shape", _err(lambda ns: lambda x: x.sum() * x, ["(n,)"], "()", [V],
                                  {"n": 2}), TypeError, r"output 0 has logical shape \(n,\)"),
    ("constant_for_masked_output", _err(lambda ns: lambda x: ns.np_.ones(9, np.float32),
                                        ["(n,)"], "(n,)", [V], {"n": 2}), TypeError,
     r"logical shape \(9,\)"),
    ("strided_output_spec", _err(lambda ns: lambda x: x[::2], ["(n,)"], "(n,)", [V],
                                 {"n": 5}), TypeError, r"logical shape \(\(n \+ 1\)//2,\)"),
    ("no_masking_rule", _err(lambda ns: lambda x: ns.lax_.while_loop(
        lambda c: c[0] < 3.0, lambda c: c + 1.0, x), ["(n,)"], "(n,)", [V], {"n": 2}),
     NotImplementedError, "'while' has no masking rule"),
    ("shown_negative_leading_term", _err(None, ["(-n + 9,)"], "(n,)", [V], {"n": 3}), TypeError,
     r"logical shape \(-n \+ 9,\)"),
    ("shown_power", _err(None, ["(n**2,)"], "(n,)", [V], {"n": 2}), TypeError,
     r"logical shape \(n\*\*2,\)"),
    ("shown_floordiv_in_product", _err(lambda ns: lambda x: ns.np_.concatenate([x[::2], x[::2]]),
                                       ["(n,)"], "(n,)", [V], {"n": 3}), TypeError,
     r"logical shape \(2\*\(\(n \+ 1\)//2\),\)"),
    ("different_sizes_combined", _err(lambda ns: lambda x, y: x + y, ["(n,)", "(m,)"], "(n,)",
                                      [V, V], {"n": 2, "m": 3}), TypeError,
     "different logical sizes"),
]  # fmt: skip


SPEC_ERRORS: list[tuple[str, str, str]] = [
    ("empty", "", "the spec is empty"),
    ("unexpected_character", "(n$,)", r"unexpected character '\$'"),
    ("underscore_in_expression", "(_ + 1,)", "'_' stands for a whole unconstrained dim"),
    ("underscore_as_factor", "(2*_,)", "'_' stands for a whole unconstrained dim"),
    ("missing_close", "(n,", r"expected a dim|'\)'"),
    ("missing_close_nested", "((n + 1,)", r"expected '\)'|',' or '\)'"),
    ("exponent_a_name", "(n**m,)", "expected an integer exponent"),
    ("empty_dim", "(,)", "expected a dim"),
    ("trailing_text", "n 3", "expected ',' or the end of the spec"),
    ("too_deep", "(" + "-" * 70 + "n,)", "nests more than"),
]


def _spec_error(spec: str) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        return ns.mask(lambda x: x, [spec], "(n,)")

    return script


def cases() -> Iterator[Case]:
    yield _case("spec/power", _power_spec, Oracle(lambda: np.cumsum(V[:4] * 2)))
    yield _case("spec/whole_dim_any", _whole_dim_any, Oracle(lambda: M[:, :3].sum(1)))
    yield _case("spec/scalar_and_bare", _scalar_and_bare_specs,
                Oracle(lambda: [V[:4] * 3 + V[:4] * 2, np.float32(V[:5].max())]))  # fmt: skip
    yield _case("spec/two_sizes", _sizes_of_two_names,
                Oracle(lambda: V[:3, None] * V[4:6][None, :]))  # fmt: skip
    yield _case("spec/unary_minus", _unary_minus, Oracle(lambda: V[:6] * 2))
    yield _case("strided_sum", _strided_sum,
                Oracle(lambda: [V[:5:2].sum(), V[:4:2].sum(), np.float32(0)]))  # fmt: skip
    yield _case("nested_jit", _nested_jit,
                Oracle(lambda: [np.cumsum(V[:6] * 2), np.cumsum(V[:6] * 2).sum()]))  # fmt: skip
    yield _case("logical_size", _logical_size,
                Oracle(lambda: [V[:7].sum() / np.float32(7), Raises(KeyError, "no size named 'm'"),
                                Raises(RuntimeError, "only available while"), True]))  # fmt: skip
    for name, script, exc, key in ERRORS:
        yield _case(f"errors/{name}", script, Raises(exc, key))
    for name, spec, key in SPEC_ERRORS:
        yield _case(f"errors/spec/{name}", _spec_error(spec), Raises(ValueError, key))
