"""refimpl's own PRNG implementations as objects, as JAX 0.10.2's registry
holds them (``jax.extend.random.threefry_prng_impl``, ``rbg_prng_impl``,
``unsafe_rbg_prng_impl``; the key's ``_impl``): a :class:`PRNGImpl` per
implementation, with its key shape and dtype tag, whose functions are the
public ones on the implementation's key data. Passing one as ``impl=``
selects the implementation as its name does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from refimpl.random import _basic, _keys


def _builtin(name: str) -> _keys.PRNGImpl:
    tag, width = _keys._IMPLS[name]

    def seed(seed: Any) -> Any:
        return _keys.key_data(_keys.key(seed, impl=name))

    def split(data: Any, shape: Sequence[int]) -> Any:
        return _keys.key_data(_keys.split(_keys.wrap_key_data(data, impl=name), tuple(shape)))

    def fold_in(data: Any, value: Any) -> Any:
        return _keys.key_data(_keys.fold_in(_keys.wrap_key_data(data, impl=name), value))

    def random_bits(data: Any, bit_width: int, shape: Sequence[int]) -> Any:
        dtype = _keys._UINT_OF_BITS[bit_width]
        return _basic.bits(_keys.wrap_key_data(data, impl=name), tuple(shape), dtype)

    return _keys.PRNGImpl((width,), seed, split, random_bits, fold_in, name=name, tag=tag)


_keys._BUILTIN_IMPLS.update({name: _builtin(name) for name in list(_keys._IMPLS)})
