"""``jax.example_libraries.stax``: neural network layers as
``(init_fun, apply_fun)`` pairs.

A layer is ``init_fun(rng, input_shape) -> (output_shape, params)`` and
``apply_fun(params, inputs, **kwargs) -> outputs``; combinators build layers
from layers (``serial``, ``parallel``, ``shape_dependent``). The random
streams are JAX's: ``init_fun`` splits ``rng`` exactly as JAX's stax does
(``Dense``: ``k1, k2 = split(rng)``, ``W`` from ``k1``; ``serial``: one
``rng, layer_rng = split(rng)`` per layer), so the same key gives the same
parameters.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import refimpl.numpy as jnp
from refimpl import lax, random
from refimpl.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from refimpl.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "glorot", "logsoftmax",
    "parallel", "randn", "serial", "shape_dependent",
    # the activations and initializers stax re-exports
    "elu", "gelu", "glorot_normal", "leaky_relu", "log_softmax", "normal", "ones", "relu",
    "selu", "sigmoid", "softmax", "softplus", "standardize", "zeros",
]  # fmt: skip

Layer = tuple[Callable[..., Any], Callable[..., Any]]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# --- layers with parameters ----------------------------------------------------------------


def Dense(out_dim: int, W_init: Any = glorot_normal(), b_init: Any = normal()) -> Layer:  # noqa: N802,N803,B008
    """``inputs @ W + b``, ``W: (in, out_dim)``, ``b: (out_dim,)``."""

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))  # noqa: N806
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(spec: tuple, rhs_spec: str, out_chan: int, filter_shape: tuple, input_shape):
    lhs_spec = spec[0]
    sizes = iter(filter_shape)
    return [
        out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(sizes)
        for c in rhs_spec
    ]


def GeneralConv(  # noqa: N802
    dimension_numbers: tuple,
    out_chan: int,
    filter_shape: tuple,
    strides: tuple | None = None,
    padding: Any = "VALID",
    W_init: Any = None,  # noqa: N803
    b_init: Any = normal(1e-6),  # noqa: B008
) -> Layer:
    """A convolution with layouts ``dimension_numbers = (lhs, rhs, out)``
    (e.g. ``('NHWC', 'HWIO', 'NHWC')``), plus a bias per output channel."""
    _, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        kernel_shape = _kernel_shape(
            dimension_numbers, rhs_spec, out_chan, filter_shape, input_shape
        )
        output_shape = lax.conv_general_shape_tuple(
            input_shape, kernel_shape, strides, padding, dimension_numbers
        )
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        out = lax.conv_general_dilated(
            inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers
        )
        return out + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(  # noqa: N802
    dimension_numbers: tuple,
    out_chan: int,
    filter_shape: tuple,
    strides: tuple | None = None,
    padding: Any = "VALID",
    W_init: Any = None,  # noqa: N803
    b_init: Any = normal(1e-6),  # noqa: B008
) -> Layer:
    """A transposed convolution (``lax.conv_transpose``), plus a bias."""
    _, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        kernel_shape = _kernel_shape(
            dimension_numbers, rhs_spec, out_chan, filter_shape, input_shape
        )
        output_shape = lax.conv_transpose_shape_tuple(
            input_shape, kernel_shape, strides, padding, dimension_numbers
        )
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        out = lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
        return out + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(  # noqa: N802
    axis: Any = (0, 1, 2),
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
    beta_init: Any = zeros,
    gamma_init: Any = ones,
) -> Layer:
    """Standardize over ``axis`` (batch statistics), then ``gamma * z + beta``."""
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params: tuple, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[expand] * z + beta[expand]
        if center:
            return z + beta[expand]
        if scale:
            return gamma[expand] * z
        return z

    return init_fun, apply_fun


# --- elementwise layers ----------------------------------------------------------------------


def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A layer applying ``fun(inputs, **fun_kwargs)``; no parameters."""
    return (
        lambda rng, input_shape: (input_shape, ()),
        lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs),
    )


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# --- pooling -------------------------------------------------------------------------------


def _pooling_layer(reducer: Callable, init_val: float, rescaler: Callable | None = None):
    def PoolingLayer(  # noqa: N802
        window_shape: tuple, strides: tuple | None = None, padding: str = "VALID", spec=None
    ) -> Layer:
        """A pooling layer over the spatial axes (``spec``'s ``N``/``C`` are not pooled)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes = (0, len(window_shape) + 1)
        else:
            non_spatial_axes = (spec.index("N"), spec.index("C"))
        for i in sorted(non_spatial_axes):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng: Any, input_shape: tuple) -> tuple:
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            ones_ = (1,) * len(window_shape)
            shape = lax.reduce_window_shape_tuple(
                input_shape, window_shape, strides, pads, ones_, ones_
            )
            return shape, ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims: tuple, strides: tuple, padding: Any) -> Callable:
    def rescale(outputs: Any, inputs: Any, spec: Any) -> Any:
        if spec is None:
            non_spatial_axes = (0, inputs.ndim - 1)
        else:
            non_spatial_axes = (spec.index("N"), spec.index("C"))
        spatial_shape = tuple(
            inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial_axes
        )
        one = jnp.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0.0, lax.add, dims, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes

    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


# --- shape layers and combinators ------------------------------------------------------------


def _flatten_layer() -> Layer:
    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


#: All but the leading axis into one.
Flatten = _flatten_layer()

#: The inputs unchanged.
Identity = (lambda rng, input_shape: (input_shape, ()), lambda params, inputs, **kw: inputs)


def FanOut(num: int) -> Layer:  # noqa: N802
    """``num`` copies of the inputs, as a list."""
    return (
        lambda rng, input_shape: ([input_shape] * num, ()),
        lambda params, inputs, **kwargs: [inputs] * num,
    )


#: The sum of a list of inputs.
FanInSum = (
    lambda rng, input_shape: (input_shape[0], ()),
    lambda params, inputs, **kwargs: sum(inputs),
)


def FanInConcat(axis: int = -1) -> Layer:  # noqa: N802
    """A list of inputs concatenated along ``axis``."""

    def init_fun(rng: Any, input_shape: list) -> tuple:
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = input_shape[0]
        return first[:ax] + (size,) + first[ax + 1 :], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:  # noqa: N802
    """In ``'train'`` mode keep each input with probability ``rate`` (scaled by
    ``1 / rate``), using ``apply_fun``'s ``rng`` keyword; else the identity."""

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
                "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
                "inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`)."
            )
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


def serial(*layers: Layer) -> Layer:
    """The layers one after the other; ``apply_fun``'s ``rng`` is split into one
    key per layer."""
    count = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: list, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, count) if rng is not None else (None,) * count
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Layer ``k`` applied to input ``k`` of a sequence of inputs."""
    count = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng: Any, input_shape: Any) -> Any:
        rngs = random.split(rng, count)
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> list:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, count) if rng is not None else (None,) * count
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[tuple], Layer]) -> Layer:
    """The layer ``make_layer(input_shape)``, built once the input shape is known."""

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
