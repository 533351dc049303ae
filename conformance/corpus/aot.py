"""Ahead-of-time lowering (SPEC section 3 "Ahead-of-time, cross-platform lowering").

``jit(f).trace(*args).lower(lowering_platforms=...)`` and ``.compile()``:
the types a ``Lowered`` reports (``in_avals``, ``out_info``, ``args_info``
with its donation flags), modules lowered for ``cuda`` and ``tpu`` on this
CPU-only machine (they must parse and verify; several platforms add a
leading ``_platform_index`` argument), ``lax.platform_dependent`` on every
backend (the ``cpu`` branch here), and ``Compiled`` calls.

Expectations are constants and NumPy oracles that JAX must meet as well
whenever ``jax`` is in the run, so no recording is needed. Not here, because
JAX differs on purpose (tests/transforms/test_aot.py covers refimpl's side): compiling
a module lowered for another platform (JAX compiles it for the CPU anyway,
refimpl refuses with the reason) and compiling a multi-platform module (JAX
0.10.2 fails inside ``compile``; refimpl runs it with the CPU branch).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises, Weak

TAGS = ["aot"]

X = np.arange(6, dtype=np.float32).reshape(2, 3)
X2 = np.array([[0.5, -1.25, 2.0], [3.0, -0.75, 1.5]], np.float32)  # exact sums


def _describe(aval: Any) -> str:
    """``~float32[2, 3]`` for a weak float32 array of shape (2, 3)."""
    weak = "~" if getattr(aval, "weak_type", False) else ""
    return f"{weak}{np.dtype(aval.dtype).name}{list(aval.shape)}"


def _map(tree: Any, leaf: Any) -> Any:
    """``leaf`` applied to every non-container node of ``(args, kwargs)``-like trees."""
    if isinstance(tree, tuple):
        return tuple(_map(t, leaf) for t in tree)
    if isinstance(tree, list):
        return [_map(t, leaf) for t in tree]
    if isinstance(tree, dict):
        return {k: _map(v, leaf) for k, v in tree.items()}
    return leaf(tree)


def _f(a: Any, b: Any, *, c: Any) -> Any:
    return {"s": a * b + c, "t": (a.sum(), b)}


def _in_avals(ns: Any) -> Any:
    lowered = ns.jit(_f).trace(X, 1.5, c=X).lower()
    return _map(lowered.in_avals, _describe)


def _out_info(ns: Any) -> Any:
    # Lowered.out_info is strongly typed (the weak output `b` too), as JAX's
    lowered = ns.jit(_f).trace(X, 1.5, c=X).lower()
    return _map(lowered.out_info, _describe)


def _args_info(ns: Any, **donate: Any) -> Any:
    lowered = ns.jit(_f, **donate).trace(X, 1.5, c=X).lower()
    # an ArgInfo has shape, dtype and donated (no weak type, in JAX either)
    return _map(lowered.args_info, lambda info: (_describe(info), bool(info.donated)))


def _verifies(text: str) -> bool:
    """Whether the StableHLO text parses and verifies (jaxlib's MLIR, with the
    dialects JAX registers)."""
    try:
        from jaxlib.mlir import ir
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext
        from jaxlib.mlir.dialects import chlo, stablehlo
    except ImportError as err:  # pragma: no cover - jaxlib is a dependency
        raise Unsupported(f"no jaxlib MLIR to verify modules: {err}") from err
    with ir.Context() as context:
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        context.append_dialect_registry(registry)
        context.load_all_available_dialects()
        stablehlo.register_dialect(context)
        chlo.register_dialect(context)
        module = ir.Module.parse(text)
        return bool(module.operation.verify())


def _main_signature(text: str) -> dict[str, Any]:
    (line,) = [line for line in text.splitlines() if "func.func public @main(" in line]
    return {
        "arguments": line.count("%arg"),
        "platform_index": '"_platform_index"' in line,
    }


def _by_platform(ns: Any, x: Any) -> Any:
    return ns.lax_.platform_dependent(x, tpu=lambda v: v - 1.0, default=lambda v: v * 3.0)


def _lowered_for(platforms: tuple[str, ...]) -> Any:
    def script(ns: Any) -> Any:
        lowered = ns.jit(lambda x: _by_platform(ns, x)).trace(X).lower(lowering_platforms=platforms)
        text = lowered.as_text()
        return {"verifies": _verifies(text), **_main_signature(text)}

    return script


def _same_text_without_platform_code(ns: Any) -> Any:
    """Without platform_dependent, nothing in the module depends on the platform."""
    traced = ns.jit(lambda x: ns.np_.tanh(x) * 2.0 + 1.0).trace(X)
    cpu = traced.lower().as_text()
    return {
        platform: traced.lower(lowering_platforms=(platform,)).as_text() == cpu
        for platform in ("cuda", "tpu")
    }


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _grad_by_platform(ns: Any, x: Any) -> Any:
    def f(v: Any) -> Any:
        out = ns.lax_.platform_dependent(v, cpu=lambda u: u * u, tpu=lambda u: 5.0 * u)
        return out.sum()

    return _api(ns).grad(f)(x)


def _vmap_by_platform(ns: Any, x: Any) -> Any:
    def f(v: Any) -> Any:
        return ns.lax_.platform_dependent(v, cpu=lambda u: u[::-1], default=lambda u: u)

    return _api(ns).vmap(f)(x)


def _compiled_call(ns: Any) -> Any:
    compiled = ns.jit(_f).trace(X, 1.5, c=X).lower().compile()
    return compiled(ns.asarray(X2), 2.0, c=ns.asarray(X))


def _compiled_call_oracle() -> Any:
    return {"s": X2 * np.float32(2.0) + X, "t": (X2.sum(dtype=np.float32), Weak(np.float32(2.0)))}


def _compiled_for_cpu(ns: Any) -> Any:
    lowered = ns.jit(lambda x: _by_platform(ns, x)).trace(X).lower(lowering_platforms=("cpu",))
    return lowered.compile()(ns.asarray(X2))


def _compiled_wrong_signature(ns: Any) -> Any:
    compiled = ns.jit(lambda x: x * 2.0).trace(X).lower().compile()
    return ns.capture(compiled, np.ones((3, 3), np.float32))


def cases() -> Iterator[Case]:
    yield script_case(
        "aot.lowered/in_avals",
        _in_avals,
        expect=(("float32[2, 3]", "~float32[]"), {"c": "float32[2, 3]"}),
        tags=[*TAGS, "quick"],
    )
    yield script_case(
        "aot.lowered/out_info",
        _out_info,
        expect={"s": "float32[2, 3]", "t": ("float32[]", "float32[]")},
        tags=TAGS,
    )
    yield script_case(
        "aot.lowered/args_info/donate_argnums=0",
        lambda ns: _args_info(ns, donate_argnums=0),
        expect=(
            (("float32[2, 3]", True), ("float32[]", False)),
            {"c": ("float32[2, 3]", False)},
        ),
        tags=[*TAGS, "quick"],
    )
    yield script_case(
        "aot.lowered/args_info/donate_argnames=c",
        lambda ns: _args_info(ns, donate_argnames="c"),
        expect=(
            (("float32[2, 3]", False), ("float32[]", False)),
            {"c": ("float32[2, 3]", True)},
        ),
        tags=TAGS,
    )
    yield script_case(
        "aot.lowered/args_info/no-donation",
        _args_info,
        expect=(
            (("float32[2, 3]", False), ("float32[]", False)),
            {"c": ("float32[2, 3]", False)},
        ),
        tags=TAGS,
    )
    for platforms, arguments in (
        (("cuda",), 1),
        (("tpu",), 1),
        (("rocm",), 1),
        (("tpu", "cpu"), 2),
        (("cuda", "tpu"), 2),
        (("cpu", "cuda", "tpu"), 2),
    ):
        yield script_case(
            f"aot.lower/lowering_platforms={','.join(platforms)}",
            _lowered_for(platforms),
            expect={
                "verifies": True,
                "arguments": arguments,
                "platform_index": len(platforms) > 1,
            },
            tags=TAGS,
        )
    yield script_case(
        "aot.lower/no-platform-code-same-text",
        _same_text_without_platform_code,
        expect={"cuda": True, "tpu": True},
        tags=TAGS,
    )
    for mode in ("jit", "eager"):
        yield fn_case(
            f"aot.platform_dependent/cpu-branch/{mode}",
            lambda ns, x: ns.lax_.platform_dependent(
                x, cpu=lambda v: v + 1.0, tpu=lambda v: v - 1.0
            ),
            [X2],
            oracle=lambda x: x + np.float32(1.0),
            mode=mode,
            tags=[*TAGS, "quick"] if mode == "jit" else TAGS,
        )
        yield fn_case(
            f"aot.platform_dependent/default-branch/{mode}",
            _by_platform,
            [X2],
            oracle=lambda x: x * np.float32(3.0),
            mode=mode,
            tags=TAGS,
        )
        yield fn_case(
            f"aot.platform_dependent/gpu-refused/{mode}",
            lambda ns, x: ns.lax_.platform_dependent(
                x, gpu=lambda v: v * 0.0, default=lambda v: ns.np_.sin(v)
            ),
            [X2],
            expect=Raises(ValueError, "'cuda' or 'rocm'"),
            mode=mode,
            tags=TAGS,
        )
        yield fn_case(
            f"aot.platform_dependent/cuda-rocm-default/{mode}",
            lambda ns, x: ns.lax_.platform_dependent(
                x, cuda=lambda v: v * 0.0, rocm=lambda v: v, default=lambda v: ns.np_.sin(v)
            ),
            [X2],
            oracle=np.sin,
            mode=mode,
            tags=TAGS,
        )
        yield fn_case(
            f"aot.platform_dependent/several-operands/{mode}",
            lambda ns, x, y: ns.lax_.platform_dependent(
                x, y, cpu=lambda a, b: (a * b, a - b), tpu=lambda a, b: (a, b)
            ),
            [X2, X],
            oracle=lambda x, y: (x * y, x - y),
            mode=mode,
            tags=TAGS,
        )
    yield fn_case(
        "aot.platform_dependent/grad",
        _grad_by_platform,
        [X2],
        oracle=lambda x: 2.0 * x,
        tags=TAGS,
    )
    yield fn_case(
        "aot.platform_dependent/vmap",
        _vmap_by_platform,
        [X2],
        oracle=lambda x: x[:, ::-1],
        tags=TAGS,
    )
    yield fn_case(
        "aot.platform_dependent/no-branch-for-cpu",
        lambda ns, x: ns.lax_.platform_dependent(x, tpu=lambda v: v),
        [X2],
        expect=Raises(
            NotImplementedError,
            {"jax": "not found for platform cpu", "*": "no branch for the platform 'cpu'"},
        ),
        mode="eager",
        tags=TAGS,
    )
    yield script_case(
        "aot.compiled/call",
        _compiled_call,
        expect=_compiled_call_oracle,
        tags=[*TAGS, "quick"],
    )
    yield script_case(
        "aot.compiled/lowered-for-cpu",
        _compiled_for_cpu,
        expect=lambda: X2 * np.float32(3.0),
        tags=TAGS,
    )
    yield script_case(
        "aot.compiled/wrong-signature",
        _compiled_wrong_signature,
        expect=Raises(TypeError, {"jax": "Argument types differ", "*": "another signature"}),
        tags=TAGS,
    )
