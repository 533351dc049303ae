"""``jax.extend.random``: the Threefry-2x32 hash itself, as JAX 0.10.2's
``threefry_2x32`` (random_test checks it against the known values of the
reference implementation) and its primitive ``threefry2x32_p``.

``define_prng_impl`` makes a user's PRNG implementation one that
``random.key(..., impl=)``, ``wrap_key_data``, ``split``, ``fold_in`` and
every sampler dispatch on, beside refimpl's own (``impl=`` by name,
docs/semantics.md 15.1). ``threefry_prng_impl``, ``rbg_prng_impl`` and
``unsafe_rbg_prng_impl`` are refimpl's own implementations as JAX's objects
(``key_shape``, ``name``, ``tag`` and the functions on key data; ``impl=``
takes them; a key's ``_impl`` is one). ``seed_with_impl`` and
``random_seed`` are not provided: under ``refimpl.as_jax`` they are
``AttributeError``.
"""

from __future__ import annotations

from typing import Any as _Any

import numpy as _np

from refimpl import lax as _lax
from refimpl import numpy as _rnp
from refimpl import tracing as _tracing
from refimpl.primitives.prng import threefry2x32 as _threefry2x32
from refimpl.primitives.prng import threefry2x32_p
from refimpl.random import _keys

__all__ = [
    "define_prng_impl",
    "rbg_prng_impl",
    "threefry2x32_p",
    "threefry_2x32",
    "threefry_prng_impl",
    "unsafe_rbg_prng_impl",
]

threefry_prng_impl = _keys._BUILTIN_IMPLS["threefry2x32"]
rbg_prng_impl = _keys._BUILTIN_IMPLS["rbg"]
unsafe_rbg_prng_impl = _keys._BUILTIN_IMPLS["unsafe_rbg"]


def define_prng_impl(
    *,
    key_shape: tuple[int, ...],
    seed: _Any,
    split: _Any,
    random_bits: _Any,
    fold_in: _Any,
    name: str = "<unnamed>",
    tag: str = "?",
) -> _Any:
    """A PRNG implementation of the user's functions, as JAX 0.10.2's.

    Args:
        key_shape: The key data's shape of one key: one dimension here
            (``(n,)`` uint32 words).
        seed: ``seed(seed) -> key data`` of an integer seed array.
        split: ``split(key_data, shape) -> key data of shape + key_shape``.
        random_bits: ``random_bits(key_data, bit_width, shape)`` -> unsigned
            bits of ``bit_width`` (8, 16, 32 or 64) and ``shape``.
        fold_in: ``fold_in(key_data, uint32 scalar) -> key data``.
        name: The implementation's name.
        tag: The key dtype's tag (``key<tag>``).

    Returns:
        The implementation (hashable, compared by identity): pass it as
        ``impl=``; ``random.key_impl`` of its keys returns it.

    Raises:
        NotImplementedError: ``key_shape`` has more than one dimension.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> from refimpl.extend.random import define_prng_impl
        >>> impl = define_prng_impl(
        ...     key_shape=(1,),
        ...     seed=lambda s: ri.numpy.reshape(ri.numpy.asarray(s, np.uint32), (1,)),
        ...     split=lambda k, shape: ri.numpy.broadcast_to(k, (*shape, 1)) + 1,
        ...     random_bits=lambda k, w, shape: ri.numpy.full(shape, k[0], np.uint32),
        ...     fold_in=lambda k, d: k + d,
        ...     name="counter", tag="ctr")
        >>> k = ri.random.key(7, impl=impl)
        >>> k.dtype, ri.random.key_data(ri.random.fold_in(k, 3))
        (key<ctr>, Array([10], dtype=uint32))
        >>> ri.random.key_impl(k) is impl
        True
    """
    impl = _keys.PRNGImpl(key_shape, seed, split, random_bits, fold_in, name=name, tag=tag)
    return _keys.register_impl(impl)


def threefry_2x32(keypair: _Any, count: _Any) -> _Any:
    """The Threefry-2x32 hash of the words of ``count`` under ``keypair``.

    As JAX's: ``keypair`` is two uint32 scalars (a pair, or a ``uint32[2]``
    array); ``count``'s words, flattened (an odd count padded with one zero
    word), are hashed as the pairs (first half, second half), and the outputs
    concatenated back into ``count``'s shape.

    Args:
        keypair: the key's two uint32 words.
        count: a uint32 array of any shape.

    Returns:
        A uint32 array of ``count``'s shape.

    Raises:
        TypeError: a key word or ``count`` is not uint32 (JAX's message).

    Example:
        >>> import numpy as np
        >>> from refimpl.extend.random import threefry_2x32
        >>> [hex(int(w)) for w in threefry_2x32(np.uint32([0, 0]), np.uint32([0, 0]))]
        ['0x6b200159', '0x99ba4efe']
    """
    key1, key2 = keypair
    dtypes = [_dtype(key1), _dtype(key2), _dtype(count)]
    if any(d != _np.uint32 for d in dtypes):
        names = [str(d) for d in dtypes]
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got {names}")
    shape = _np.shape(count)
    words = _rnp.ravel(count)
    odd = words.shape[0] % 2
    if odd:  # a zero word pads the last pair; its output word is dropped
        words = _rnp.concatenate([words, _rnp.zeros((1,), _np.uint32)])
    half = words.shape[0] // 2
    y1, y2 = _threefry2x32(key1, key2, words[:half], words[half:])
    out = _rnp.concatenate([y1, y2])
    return _lax.reshape(out[:-1] if odd else out, shape)


def _dtype(x: _Any) -> _np.dtype:
    return _np.dtype(_tracing.get_aval(x, "threefry_2x32", "x").dtype)
