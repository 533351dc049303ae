"""Single-use values through donation: a PRNG key that cannot be used twice.

A counter-based random generator is only as good as the discipline of never
feeding the same key to it twice: two draws from one key are identical. With
``donate_argnums`` the discipline is enforced by the runtime instead of by
code review: ``next_bits`` consumes its key (the key's buffer is donated, and
even holds the new key afterwards), so any second use of the old key raises
``RuntimeError: ... has been deleted ... donated to 'next_bits'``.

Run it: ``python examples/single_use_keys.py``.
"""

from __future__ import annotations

import numpy as np

import refimpl as ri
from refimpl import lax

_MUL_1 = np.uint32(0x7FEB352D)
_MUL_2 = np.uint32(0x846CA68B)
_SEED_SHIFT = np.uint32(16)
_SPLIT_SALT = np.uint32(0x9E3779B9)


def _mix(x):
    """A 32-bit integer hash (Wellons' "lowbias32"); wraps around like uint32 math."""
    x = lax.bitwise_xor(x, lax.shift_right_logical(x, _SEED_SHIFT))
    x = x * _MUL_1
    x = lax.bitwise_xor(x, lax.shift_right_logical(x, np.uint32(15)))
    x = x * _MUL_2
    return lax.bitwise_xor(x, lax.shift_right_logical(x, _SEED_SHIFT))


def make_key(seed: int) -> ri.Array:
    """A fresh key: two uint32 words derived from ``seed``."""
    words = np.array([seed, ~seed], dtype=np.int64) & 0xFFFFFFFF
    return ri.device_put(words.astype(np.uint32))


@ri.jit(donate_argnums=0)  # after a call the key is deleted; its buffer holds the new key
def next_bits(key):
    """-> (the key to use next time, 2 random uint32 words drawn from ``key``)."""
    bits = _mix(key)
    new_key = _mix(lax.bitwise_xor(key, _SPLIT_SALT))
    return new_key, bits


def main() -> dict:
    key = make_key(42)
    key, first = next_bits(key)  # the usual pattern: rebind the name to the new key
    print("first draw: ", np.asarray(first))
    key, second = next_bits(key)
    print("second draw:", np.asarray(second))

    stale = key
    key, bits = next_bits(key)
    try:
        next_bits(stale)  # a key used twice: refused
    except (RuntimeError, ValueError) as error:  # JAX says ValueError (INVALID_ARGUMENT)
        print("reusing a key:", error)
        refused = True
    else:
        refused = False
    return {"first": first, "second": second, "reuse_refused": refused}


if __name__ == "__main__":
    results = main()
