"""Public names of JAX 0.10.2 that JAX's own test files use (lax_test,
random_test, api_test, pmap_test) and refimpl lacked before (issue 29), each
in a program whose result shows its meaning. All ``AGREE``: judged by JAX's
recording.

* ``public_names/rng_bit_generator/*``: ``lax.rng_bit_generator``'s bits and
  new key for each ``lax.RandomAlgorithm`` and bit width (XLA's CPU Threefry
  and Philox expansions; the reference computes them in NumPy), under ``jit``
  and under ``vmap`` (JAX's rule draws every row from the first key).
* ``public_names/tokens/*``: ``lax.create_token``/``lax.after_all`` through
  ``jit`` (a token argument and result next to an array) and ``after_all`` of
  an array (TypeError).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ["lax"]

_KEY = np.array([0x12345678, 0x9ABCDEF0, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)


def _rbg(algorithm: int, dtype: Any, shape: tuple[int, ...]):
    def script(ns: Any) -> Any:
        alg = ns.lax_.RandomAlgorithm(algorithm)
        key = ns.asarray(_KEY)
        eager = ns.lax_.rng_bit_generator(key, shape, dtype, alg)
        jitted = ns.jit(lambda k: ns.lax_.rng_bit_generator(k, shape, dtype, alg))(key)
        return eager, jitted

    return script


def _rbg_vmap(ns: Any) -> Any:
    keys = ns.asarray(np.arange(12, dtype=np.uint32).reshape(4, 3))
    draw = ns.api.vmap(lambda k: ns.lax_.rng_bit_generator(k, (2, 3)), in_axes=1)
    return draw(keys)


def _rbg_bad_dtype(ns: Any) -> Any:
    return ns.lax_.rng_bit_generator(ns.asarray(_KEY), (3,), np.int32)


def _tokens_through_jit(ns: Any) -> Any:
    def noop(arr, token):
        return arr * 2, ns.lax_.after_all(token, ns.lax_.create_token(arr))

    token = ns.lax_.create_token()
    arr, out = ns.jit(noop)(ns.asarray(np.arange(3, dtype=np.float32)), token)
    return arr, type(out).__name__, out is token


def _after_all_of_an_array(ns: Any) -> Any:
    return ns.lax_.after_all(ns.lax_.create_token(), ns.asarray(np.ones(2, np.float32)))


def cases() -> Iterator[Case]:
    for algorithm in (0, 1, 2):
        for dtype in (np.uint8, np.uint32):
            for shape in ((), (5,), (3, 4)):
                name = f"{np.dtype(dtype).name}/{'x'.join(map(str, shape)) or 'scalar'}"
                yield script_case(
                    f"public_names/rng_bit_generator/alg{algorithm}/{name}",
                    _rbg(algorithm, dtype, shape),
                    expect=AGREE,
                    tags=TAGS,
                )
    yield script_case("public_names/rng_bit_generator/vmap_axis1", _rbg_vmap, tags=TAGS)
    yield script_case("public_names/rng_bit_generator/bad_dtype", _rbg_bad_dtype, tags=TAGS)
    yield script_case("public_names/tokens/through_jit", _tokens_through_jit, tags=TAGS)
    yield script_case("public_names/tokens/after_all_array", _after_all_of_an_array, tags=TAGS)
