"""Programs from JAX's tests/api_test.py (the newest stored copy), run on
refimpl's ref and pjrt backends and compared with JAX 0.10.2: values, dtypes,
weak types, output types and exception classes.

The sharding reprs are asked of JAX on 4 host devices in a fresh process
(JAX reads ``XLA_FLAGS`` once, when it starts).
"""

from __future__ import annotations

import functools
import operator
import re

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


# ---------------------------------------------------------------------------
# the class of a conversion a traced value cannot make
# ---------------------------------------------------------------------------

CONVERSIONS = {
    "bool": lambda x: bool(x),
    "if": lambda x: 1 if x > 0 else 0,
    "and": lambda x: (x > 0) and True,
    "int": lambda x: int(x),
    "float": lambda x: float(x),
    "index": lambda x: operator.index(x),
    "hex": lambda x: hex(x),
    "range": lambda x: sum(range(x)),
    "list_index": lambda x: [1, 2, 3][x],
    "asarray": lambda x: np.asarray(x),
    "np_function": lambda x: np.sin(x),
    "item": lambda x: x.item(),
    "tolist": lambda x: x.tolist(),
}


def _conversion_error(api, transform: str, use) -> tuple[str, bool, bool]:
    wrap = {"jit": api.jit, "vmap": api.vmap}[transform]
    arg = np.ones(2, np.int32) if transform == "vmap" else np.int32(1)
    with pytest.raises(TypeError) as info:
        wrap(use)(arg)
    exc = info.value
    return (
        type(exc).__name__,
        isinstance(exc, api.errors.ConcretizationTypeError),
        isinstance(exc, api.errors.TracerBoolConversionError),
    )


@pytest.mark.parametrize("transform", ["jit", "vmap"])
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_conversion_error_class_as_jax(backend, transform, name):
    import jax

    use = CONVERSIONS[name]
    assert _conversion_error(ri, transform, use) == _conversion_error(jax, transform, use)


def test_conversion_errors_catch_by_jax_names():
    # except clauses written for JAX: each catches only its own conversion
    with pytest.raises(ri.errors.TracerIntegerConversionError):
        ri.jit(lambda n: list(range(n)))(3)
    with pytest.raises(ri.errors.TracerArrayConversionError):
        ri.grad(lambda x: np.exp(x))(np.zeros(3, np.float32))
    bool_error = ri.errors.TracerBoolConversionError
    assert not issubclass(ri.errors.TracerIntegerConversionError, bool_error)
    assert issubclass(bool_error, ri.errors.ConcretizationTypeError)
    assert issubclass(ri.errors.ConcretizationTypeError, ri.errors.JAXTypeError)
    # a JVP tracer outside jit still converts (its primal is known)
    assert ri.grad(lambda x: x * 2.0 if x > 0 else -x)(1.0) == 2.0


# ---------------------------------------------------------------------------
# how a type prints (jax.typeof, a jaxpr variable's aval)
# ---------------------------------------------------------------------------

TYPED_VALUES = {
    "f32_vector": lambda api: api.numpy.ones((2, 3)),
    "weak_scalar": lambda api: 1.0,
    "weak_int_array": lambda api: api.numpy.asarray(3) * 2,
    "bool": lambda api: np.array([True, False]),
    "bf16": lambda api: api.numpy.ones(2, api.numpy.bfloat16),
    "uint8": lambda api: np.arange(3, dtype=np.uint8),
    "complex64": lambda api: np.ones((1, 2), np.complex64),
}


def _type_texts(api, make) -> tuple[str, str, bool]:
    aval = api.typeof(make(api))
    return str(aval), repr(aval), aval.weak_type


@pytest.mark.parametrize("name", list(TYPED_VALUES))
def test_typeof_prints_as_jax(name):
    import jax

    make = TYPED_VALUES[name]
    assert _type_texts(ri, make) == _type_texts(jax, make)


def test_jaxpr_variable_avals_print_as_jax():
    import jax

    def texts(api):
        closed = api.make_jaxpr(lambda x, y: (x + 1, y * 2))(1.0, np.ones(2, np.int32))
        return [str(v.aval) for v in closed.jaxpr.invars + closed.jaxpr.outvars]

    assert texts(ri) == texts(jax)


# ---------------------------------------------------------------------------
# jax.default_device with a platform name (api_test's test_jit_default_platform)
# ---------------------------------------------------------------------------


def test_default_device_takes_a_platform_name(backend):
    import jax

    def run(api):
        with api.default_device("cpu"):
            out = api.jit(lambda x: x + 1)(1)
            eager = api.numpy.add(1, 1)
        return [(np.asarray(v).tolist(), str(v.dtype), v.weak_type) for v in (out, eager)]

    assert run(ri) == run(jax)
    with ri.default_device("cpu"):
        placed = ri.jit(lambda x: x + 1)(1)
    assert placed.device == ri.devices("cpu")[0]  # the default backend's first device


# ---------------------------------------------------------------------------
# ShapeDtypeStruct.update and .sharding
# ---------------------------------------------------------------------------

SDS_UPDATES = {
    "shape": {"shape": (3, 1)},
    "dtype": {"dtype": np.int16},
    "weak_off": {"weak_type": False},
    "several": {"shape": (), "dtype": np.bool_, "weak_type": True},
    "nothing": {},
}


@pytest.mark.parametrize("name", list(SDS_UPDATES))
def test_shape_dtype_struct_update_as_jax(name):
    import jax

    def run(api):
        s = api.ShapeDtypeStruct((2,), np.float32, weak_type=True)
        u = s.update(**SDS_UPDATES[name])
        return (repr(u), u.shape, str(u.dtype), u.weak_type, u.sharding, s == u)

    assert run(ri) == run(jax)


# ---------------------------------------------------------------------------
# escaped tracers (api_test's test_escaped_tracers_*): the class and JAX's
# words, with the tracer's type as JAX prints it
# ---------------------------------------------------------------------------


def _escaped_jit(api, saved):
    api.jit(lambda x: saved.append(x) or x)(api.numpy.ones((4, 3), dtype=api.numpy.int32))
    return lambda: saved[0] + 1


def _escaped_into_jit(api, saved):
    api.jit(lambda x: saved.append(x) or x)(0.0)
    return lambda: api.jit(lambda x: x)(saved[0])


def _escaped_from_grad(api, saved):
    def outer(x):
        api.grad(lambda y: saved.append(y) or y)(0.0)
        return x + saved[0]

    return lambda: api.grad(outer)(2.0)


def _escaped_into_closure(api, saved):
    api.jit(lambda x: saved.append(x) or x)(0.0)
    return lambda: api.jit(lambda x: saved[0])(0.0)


ESCAPES = {
    "used_eagerly": (_escaped_jit, r"int32\[4,3\]"),
    "passed_to_jit": (_escaped_into_jit, "Encountered an unexpected tracer"),
    "from_grad": (_escaped_from_grad, "unexpected tracer"),
    "closed_over": (_escaped_into_closure, "Encountered an unexpected tracer"),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escaped_tracer_error_as_jax(backend, name):
    import jax

    build, words = ESCAPES[name]
    for api in (jax, ri):
        with pytest.raises(api.errors.UnexpectedTracerError, match=words):
            build(api, [])()


# ---------------------------------------------------------------------------
# the words of conversion errors (api_test's test_scalar_conversion_errors,
# test_no_double_dots_in_error_message, test_inlined_literals_with_error)
# ---------------------------------------------------------------------------


def _scalar_conversion_outcomes(api) -> list:
    jnp = api.numpy
    values = {
        "array_int": jnp.arange(10, dtype=int),
        "scalar_float": jnp.float32(0),
        "scalar_int": jnp.int32(0),
        "empty_int": jnp.arange(0, dtype="int32"),
        "array1_float": jnp.arange(1, dtype="float32"),
    }
    outcomes = []
    for fname, func in [("index", operator.index), ("hex", hex), ("oct", oct), ("int", int),
                        ("float", float), ("complex", complex), ("bool", bool)]:  # fmt: skip
        for vname, value in values.items():
            for how, call in (("eager", func), ("jit", api.jit(func))):
                try:
                    call(value)
                    outcomes.append((fname, vname, how, "ok"))
                except (TypeError, ValueError) as exc:
                    outcomes.append((fname, vname, how, type(exc).__name__, str(exc)[:60]))
    return outcomes


def test_scalar_conversion_errors_as_jax(backend):
    import jax

    ours, theirs = _scalar_conversion_outcomes(ri), _scalar_conversion_outcomes(jax)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a[:4] == b[:4], (a, b)  # the use, the value, eager/jit, the class
        if len(a) > 4:  # JAX's first words (refimpl's account may follow)
            n = min(len(a[4]), len(b[4]), 40)
            assert a[4][:n] == b[4][:n], (a, b)


@pytest.mark.parametrize(
    "program,error,words",
    [
        (lambda x: 1 if x > 0 else 0, "TracerBoolConversionError", r"with shape bool\[\]\.[^\.]"),
        (lambda x: [1, 2][x], "TracerIntegerConversionError", r"with shape int32\[\]"),
        (lambda x: np.asarray(x), "TracerArrayConversionError", r"with shape int32\[\]"),
    ],
    ids=["bool", "index", "asarray"],
)
def test_conversion_error_words_as_jax(backend, program, error, words):
    import jax

    for api in (jax, ri):
        with pytest.raises(getattr(api.errors, error), match=words):
            api.jit(program)(0)


# ---------------------------------------------------------------------------
# API errors in JAX's words: the class and the regex api_test.py matches
# (the vmap ones agreed already and stay as a guard)
# ---------------------------------------------------------------------------

_X10 = np.random.RandomState(0).randn(10, 4).astype("float32")
_U10 = np.random.RandomState(1).randn(10, 2).astype("float32")

API_ERRORS = {
    "jit_of_noncallable": (TypeError, r"Expected a callable value.*", lambda api: api.jit(3)),
    "static_and_donated_names": (
        ValueError,
        "static_argnames and donate_argnames cannot intersect",
        lambda api: api.jit(lambda x: x, static_argnames="x", donate_argnames="x"),
    ),
    "device_put_alias_and_donate": (
        ValueError,
        "may_alias and donate cannot be True at the same time.",
        lambda api: api.device_put(api.numpy.arange(3), may_alias=True, donate=True),
    ),
    "jit_bad_input": (
        TypeError,
        "Error interpreting argument to .* as an abstract array. The problematic value is of "
        "type .* and was passed to the function at path x.",
        lambda api: api.jit(lambda x: x)("foo"),
    ),
    "jit_bad_input_dtype_object": (
        TypeError,
        "Error interpreting argument to .* as an abstract array. The problematic value is of "
        "type .* and was passed to the function at path x.",
        lambda api: api.jit(lambda x: x)(api.numpy.int32),
    ),
    "jit_bad_input_nested": (
        TypeError,
        re.escape("was passed to the function at path x['a']."),
        lambda api: api.jit(lambda x: x)({"a": "foo"}),
    ),
    "vmap_sizes": (
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        r"  \* one axis had size 10: axis 0 of argument a of type float32\[10,4\];",
        lambda api: api.vmap(lambda a, b: a.sum() + b.sum(), in_axes=(0, 1))(_X10, _U10),
    ),
    "vmap_scalar": (
        ValueError,
        r"rank should be at least 1, but is only 0 \(its shape is \(\)\)",
        lambda api: api.vmap(lambda x: x)(1.0),
    ),
    "vmap_empty": (
        ValueError,
        "vmap wrapped function must be passed at least one argument containing an array",
        lambda api: api.vmap(lambda x: x)({}),
    ),
    "grad_not_enough_args": (
        TypeError,
        "differentiating with respect to argnums=0 requires at least 1 positional",
        lambda api: functools.partial(api.grad(lambda x, y: x + y), x=0.0)(y=1.0),
    ),
}


@pytest.mark.parametrize("name", list(API_ERRORS))
def test_api_error_words_as_jax(backend, name):
    import jax

    error, words, program = API_ERRORS[name]
    for api in (jax, ri):
        with pytest.raises(error, match=words):
            program(api)
