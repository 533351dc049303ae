"""Programs from JAX's tests/api_test.py (the newest stored copy), run on
refimpl's ref and pjrt backends and compared with JAX 0.10.2: values, dtypes,
weak types, output types and exception classes.

The sharding reprs are asked of JAX on 4 host devices in a fresh process
(JAX reads ``XLA_FLAGS`` once, when it starts).
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
from tests.helpers.jax_oracle import in_fresh_jax

# ---------------------------------------------------------------------------
# sharding reprs and default memory kinds
# ---------------------------------------------------------------------------

# expressions over (sharding, np, devices, put, ones); each answers a string
SHARDING_TEXTS = {
    "spec_two": "repr(sharding.PartitionSpec('x', None))",
    "spec_empty": "repr(sharding.PartitionSpec())",
    "spec_tuple": "repr(sharding.PartitionSpec(('x', 'y'), None))",
    "spec_str": "str(sharding.PartitionSpec('x'))",
    "mesh_repr": "repr(MESH)",
    "mesh_str": "str(MESH)",
    "mesh_1d_repr": "repr(sharding.Mesh(np.array(devices()[:4]), ('d',)))",
    "named_repr": "repr(sharding.NamedSharding(MESH, sharding.PartitionSpec('x')))",
    "named_memory_kind": "sharding.NamedSharding(MESH, sharding.PartitionSpec()).memory_kind",
    "named_given_kind": (
        "repr(sharding.NamedSharding(MESH, sharding.PartitionSpec(), memory_kind='device'))"
    ),
    "abstract_memory_kind": (
        "repr(sharding.NamedSharding(MESH.abstract_mesh, sharding.PartitionSpec()).memory_kind)"
    ),
    "single_memory_kind": "sharding.SingleDeviceSharding(devices()[0]).memory_kind",
    "array_memory_kind": "ones(3).sharding.memory_kind",
    "put_memory_kind": (
        "put(np.arange(8.0), sharding.NamedSharding(MESH, sharding.PartitionSpec('x')))"
        ".sharding.memory_kind"
    ),
}

MESH_SOURCE = "MESH = sharding.Mesh(np.array(devices()[:4]).reshape(2, 2), ('x', 'y'))\n"


@pytest.fixture(scope="module")
def jax_sharding_texts():
    body = (
        'import os\nos.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"\n'
        "import numpy as np\nfrom jax import sharding, devices, device_put as put\n"
        "from jax.numpy import ones\n" + MESH_SOURCE + "result = {\n"
    )
    body += "".join(f"    {k!r}: {v},\n" for k, v in SHARDING_TEXTS.items())
    return in_fresh_jax(body + "}\n")


@pytest.mark.usefixtures("four_ref_devices")
@pytest.mark.parametrize("name", list(SHARDING_TEXTS))
def test_sharding_texts_as_jax(jax_sharding_texts, backend, name):
    scope = {
        "sharding": ri.sharding,
        "np": np,
        "devices": ri.devices,
        "put": ri.device_put,
        "ones": ri.numpy.ones,
    }
    exec(MESH_SOURCE, scope)  # noqa: S102 - our own source, shared with the oracle
    assert eval(SHARDING_TEXTS[name], scope) == jax_sharding_texts[name]  # noqa: S307
