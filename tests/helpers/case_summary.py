"""The facts a held-back parity case reports, as source text.

The held-back parity files (issue 29) run each case's source twice: on JAX
0.10.2, often in a fresh interpreter, and on refimpl with ``import jax``
aliased to it. Both sides must reduce results to the same JSON-able facts,
so the reduction travels as source and is exec'd beside the case:

- an array (anything with ``dtype`` and ``shape``) -> ``[dtype, weak, shape,
  values]``; the weak type is read from its abstract value where it has
  one (JAX's tracers and arrays both carry ``aval``), else from
  ``weak_type``; float0 arrays have no values (``None``);
- lists, tuples, dicts -> the same structure of facts;
- Python scalars, strings, ``None`` -> themselves; any other object -> its
  class name;
- ``run(case, *args)`` -> the facts of ``case(*args)``, or
  ``["raised", <exception class name>]``.
"""

from __future__ import annotations

SUMMARY_SOURCE = """
import numpy as np


def _weak(x):
    aval = getattr(x, "aval", None)
    if aval is not None and hasattr(aval, "weak_type"):
        return bool(aval.weak_type)
    return bool(getattr(x, "weak_type", False))


def summary(x):
    if isinstance(x, (list, tuple)):
        return [summary(v) for v in x]
    if isinstance(x, dict):
        return {str(k): summary(v) for k, v in sorted(x.items())}
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, type):
        v = np.asarray(x)
        values = v.tolist() if v.dtype.kind != "V" else None
        return [str(v.dtype), _weak(x), list(v.shape), values]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return type(x).__name__


def run(case, *args):
    try:
        return summary(case(*args))
    except Exception as e:  # noqa: BLE001 -- the class is the fact compared
        return ["raised", type(e).__name__]
"""


# --- the runners of the files whose cases are ``case(jax, jnp, np, P)`` ------------------

_FOUR_DEVICE_JAX = (
    'import os\nos.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"\n'
    "import numpy as np\nimport jax, jax.numpy as jnp\n"
    "from jax.sharding import PartitionSpec as P\n"
)


def jax_facts(cases: dict[str, str]) -> dict[str, object]:
    """Each case's facts on JAX 0.10.2, all in one fresh interpreter with 4
    host devices (JAX reads ``XLA_FLAGS`` only when it starts)."""
    from tests.helpers.jax_oracle import in_fresh_jax

    body = _FOUR_DEVICE_JAX + SUMMARY_SOURCE + "result = {}\n"
    for name, source in cases.items():
        body += source + f"result[{name!r}] = run(case, jax, jnp, np, P)\n"
    return in_fresh_jax(body)


def refimpl_facts(source: str) -> object:
    """The case's facts on refimpl (the current backend), ``import jax``
    aliased to it."""
    from refimpl.as_jax import aliased_jax

    scope: dict = {}
    with aliased_jax():
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.sharding import PartitionSpec as P

        # the check of the check: these names are refimpl's, not JAX's
        assert type(jnp.zeros(())).__module__.startswith("refimpl."), "jax is not aliased"
        exec(SUMMARY_SOURCE + source, scope)  # noqa: S102 -- the tests' own sources
        return scope["run"](scope["case"], jax, jnp, np, P)
