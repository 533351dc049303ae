"""Errors JAX's own test files match by their words (issue 29's held-back
run, lane WORDING): ``assertRaisesRegex(cls, regex)`` is a ``re.search`` of
JAX's message, so refimpl's message of the same class must contain JAX's
words (refimpl's own prefix and detail may come before or after them).

Each case is a program, the exception class and the regex of the JAX test
that raises it; it is checked on JAX 0.10.2 live and on refimpl on both
backends. custom_api_test.py's: the custom_jvp rule checks (the rule and the
function named, types spelled ``float32[]``), the custom_vjp fwd rule
checks, and ``closure_convert``'s closure given another tree.
"""

from __future__ import annotations

import collections
import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

JAX = types.SimpleNamespace(lib=jax, np=jnp)
RI = types.SimpleNamespace(lib=ri, np=rnp)


def _scan_apply(lib, f, x):
    """``f`` under a scan of length 1 (so the custom rule's function is traced first)."""
    y, _ = lib.lax.scan(lambda c, _: (f(c), None), x, None, length=1)
    return y


def _jvp_rule_returns(ns, make_out, *, scanned=False, fun_out=lambda x: x**2):
    """The jvp (at 2.0, tangent 1.0) of a custom_jvp function whose rule
    ``foo_jvp`` returns ``make_out(ns, x, t)``."""
    lib = ns.lib

    @lib.custom_jvp
    def f(x):
        return fun_out(x)

    @f.defjvp
    def foo_jvp(primals, tangents):
        return make_out(ns, primals[0], tangents[0])

    x = ns.np.float32(2.0)
    if scanned:
        return lib.jvp(lambda x: _scan_apply(lib, f, x), (x,), (x,))
    return lib.jvp(f, (2.0,), (1.0,))


def _grad_with_fwd(ns, fwd):
    """grad, through a scan, of an identity custom_vjp function with fwd rule ``fwd``."""
    lib = ns.lib

    @lib.custom_vjp
    def f(x):
        return x

    f.defvjp(fwd, lambda _, g: (g,))
    return lib.grad(lambda x: _scan_apply(lib, f, x))(ns.np.float32(1.0))


def _fwd_pair(ns, x):
    return (x, x), None


def _fwd_wide(ns, x):
    return ns.np.zeros((3, *x.shape), x.dtype), None


def _fwd_not_a_pair(ns, x):
    return x


def _closure_convert_other_tree(ns):
    lib = ns.lib
    _, vjp = lib.vjp(lambda x, z: z * x, 2.0, 3.0)
    pure, consts = lib.closure_convert(vjp, 2.0)
    pure(2.0, *consts)  # the example's tree: fine
    return pure(2.0, consts)  # a list more


_OPENING = (
    "Custom JVP rule foo_jvp for function f must produce a pair (list or tuple of length two) "
    "where the first element represents the primal output (equal in value to the output of "
    "the custom_jvp-decorated function f, and in particular "
)
_FWD_OPENING = (
    "Custom VJP fwd rule {} for function f must produce a pair (list or tuple of length two) "
    "where the first element represents the primal output (equal to the output of the "
    "custom_vjp-decorated function f) and the second element represents residuals (i.e. "
    "values stored from the forward pass for use on the backward pass), but instead the fwd "
    "rule output's first element had "
)

# name: (program of a namespace, exception class, JAX's regex); from
# custom_api_test.py (its test named in the comment) unless said otherwise
_CASES = {
    # test_jvp_rule_doesnt_return_pair_error_message
    "jvp_rule_not_a_pair": (
        lambda ns: _jvp_rule_returns(ns, lambda ns, x, t: t),
        TypeError,
        re.escape(
            "Custom JVP rule foo_jvp for function f must produce a pair (list or tuple of "
            "length two) representing primal and tangent outputs, but got 1.0"
        ),
    ),
    # test_jvp_rule_inconsistent_pytree_structures_error_message
    "jvp_rule_primal_tangent_trees": (
        lambda ns: _jvp_rule_returns(
            ns, lambda ns, x, t: ((x**2,), [2 * x * t, x]), fun_out=lambda x: (x**2,)
        ),
        TypeError,
        re.escape(
            "Custom JVP rule foo_jvp for function f must produce primal and tangent outputs "
            "with equal container (pytree) structures, but got PyTreeDef((*,)) and "
            "PyTreeDef([*, *]) respectively."
        ),
    ),
    # test_jvp_rule_primal_out_type_doesnt_match_primal_error_message (both halves)
    "jvp_rule_primal_tree": (
        lambda ns: _jvp_rule_returns(
            ns, lambda ns, x, t: ((x, x), (t, t)), scanned=True, fun_out=lambda x: x
        ),
        TypeError,
        re.escape(
            f"{_OPENING}of the same container/pytree structure), but instead the JVP rule "
            "output's first element had container/pytree structure:\n"
            "    (float32[], float32[])\n"
            "while the custom_jvp-decorated function f had output container/pytree "
            "structure:\n    float32[]."
        ),
    ),
    "jvp_rule_primal_shape": (
        lambda ns: _jvp_rule_returns(
            ns,
            lambda ns, x, t: (ns.np.zeros((3, *x.shape), x.dtype), t),
            scanned=True,
            fun_out=lambda x: x,
        ),
        TypeError,
        re.escape(
            f"{_OPENING}with leaves of the same shape/dtype), but instead the JVP rule "
            "output's first element had shapes/dtypes of:\n    float32[3]\n"
            "while the custom_jvp-decorated function f had output shapes/dtypes of:\n"
            "    float32[]"
        ),
    ),
    # test_primal_tangent_aval_disagreement_error_message
    "jvp_rule_tangent_shape": (
        lambda ns: ns.lib.jvp(_tangent_reshaped(ns), (ns.np.float32(2.0),), (ns.np.float32(1.0),)),
        TypeError,
        re.escape(
            "Custom JVP rule must produce primal and tangent outputs with corresponding "
            "shapes and dtypes. Expected float32[] (tangent type of float32[]) but got "
            "float32[1]."
        ),
    ),
    # test_fwd_rule_primal_out_type_doesnt_match_primal_error_message (both halves)
    "fwd_rule_primal_tree": (
        lambda ns: _grad_with_fwd(ns, lambda x: _fwd_pair(ns, x)),
        TypeError,
        re.escape(
            _FWD_OPENING.format("<lambda>") + "container/pytree structure:\n"
            "    (float32[], float32[])\n"
            "while the custom_vjp-decorated function f had output container/pytree "
            "structure:\n    float32[]."
        ),
    ),
    "fwd_rule_primal_shape": (
        lambda ns: _grad_with_fwd(ns, lambda x: _fwd_wide(ns, x)),
        TypeError,
        re.escape(
            _FWD_OPENING.format("<lambda>") + "shapes/dtypes of:\n    float32[3]\n"
            "while the custom_vjp-decorated function f had output shapes/dtypes of:\n"
            "    float32[]"
        ),
    ),
    # not in the file: the fwd rule's other check, in JAX 0.10.2's words
    "fwd_rule_not_a_pair": (
        lambda ns: _grad_with_fwd(ns, lambda x: _fwd_not_a_pair(ns, x)),
        TypeError,
        re.escape(
            "Custom VJP fwd rule <lambda> for function f must produce a pair (list or tuple "
            "of length two) where the first element represents the primal output (equal to "
            "those of the custom_vjp-decorated function f) and the second element represents "
            "residuals (i.e. values stored from the forward pass for use on the backward "
            "pass), but instead of a pair the fwd rule <lambda> produced "
        ),
    ),
    # test_closure_convert_pytree_mismatch
    "closure_convert_other_tree": (
        _closure_convert_other_tree,
        TypeError,
        "The inputs to the closure produced by closure_convert",
    ),
}


def _tangent_reshaped(ns):
    @ns.lib.custom_jvp
    def f(x):
        return x**2

    @f.defjvp
    def foo_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), ns.np.reshape(t, (1,))

    return f


def _int_carry_scan(ns, body, n=2):
    init = (ns.np.array(0, "int32"),) * n
    return ns.lib.lax.scan(body, init if n > 1 else init[0], None, length=1)


# lax_control_flow_test.py's (its test named in the comment)
_CONTROL_FLOW_CASES = {
    # testCallableErrors
    "associative_scan_not_callable": (
        lambda ns: ns.lib.lax.associative_scan(42, 0),
        TypeError,
        "lax.associative_scan.*callable.*",
    ),
    # testWhileTypeErrors
    "while_cond_pytree": (
        lambda ns: ns.lib.lax.while_loop(lambda c: (1.0, 1.0), lambda c: c, 0.0),
        TypeError,
        re.escape("cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *))."),
    ),
    "while_cond_float": (
        lambda ns: ns.lib.lax.while_loop(lambda c: np.float32(1.0), lambda c: c, np.float32(0.0)),
        TypeError,
        re.escape(
            "cond_fun must return a boolean scalar, but got output type(s) "
            "[ShapedArray(float32[])]."
        ),
    ),
    "while_carry_dtype": (
        lambda ns: ns.lib.lax.while_loop(
            lambda c: True, lambda c: (True, True), (np.bool_(True), np.float32(0.0))
        ),
        TypeError,
        r"The input carry component c\[1\] has type float32\[\] but the corresponding output "
        r"carry component has type bool\[\], so the dtypes do not match.",
    ),
    # testForiLoopErrors, test_fori_loop_with_dynamic_indices_cannot_unroll
    "fori_bound_types": (
        lambda ns: ns.lib.lax.fori_loop(
            np.int16(0), ns.np.int32(10), lambda i, c: c, ns.np.float32(7)
        ),
        TypeError,
        "arguments to fori_loop must have equal types",
    ),
    "fori_unroll_traced_bounds": (
        lambda ns: ns.lib.jit(
            lambda u: ns.lib.lax.fori_loop(np.int16(0), u, lambda i, c: c + 1, 1.0, unroll=3)
        )(10),
        ValueError,
        "Can only use `unroll`",
    ),
    # testCondPredIsNone, testCondTypeErrors, testSwitchErrors
    "cond_pred_none": (
        lambda ns: ns.lib.lax.cond(None, lambda x: x + 1, lambda x: x + 2, 1.0),
        TypeError,
        "cond predicate is None",
    ),
    "cond_pred_function": (
        lambda ns: ns.lib.lax.cond(lambda x: True, lambda t: 2.0, lambda f: 3.0, 1.0),
        TypeError,
        re.escape("Pred type must be either boolean or number, got <function"),
    ),
    "cond_pred_str": (
        lambda ns: ns.lib.lax.cond("foo", lambda t: 2.0, lambda f: 3.0, 1.0),
        TypeError,
        re.escape("Pred must be a scalar, got foo of type <class 'str'>"),
    ),
    "switch_index_str": (
        lambda ns: ns.lib.lax.switch("foo", [lambda _: 2.0, lambda _: 3.0], 1.0),
        TypeError,
        re.escape("Index type must be an integer, got foo."),
    ),
    "switch_index_tuple": (
        lambda ns: ns.lib.lax.switch((1.0, 1.0), [lambda _: 2.0, lambda _: 3.0], 1.0),
        TypeError,
        re.escape("Branch index must be scalar, got (1.0, 1.0) of shape (2,)."),
    ),
    "switch_no_branches": (
        lambda ns: ns.lib.lax.switch(0, [], 1.0),
        ValueError,
        "Empty branch sequence",
    ),
    # testCondTypeErrors, testSwitchErrors: the branches' outputs (lane WORDING2)
    "cond_branch_trees": (
        lambda ns: ns.lib.lax.cond(True, lambda t: {"a": 2.0}, lambda f: {"a": (3.0, 3.0)}, 1.0),
        TypeError,
        re.compile(
            r"cond branch outputs must have the same pytree structure, but they differ:.*"
            r"true_fun output at path \['a'\] is a pytree leaf but false_fun output at path "
            r"\['a'\] is a <class 'tuple'>",
            re.DOTALL,
        ),
    ),
    "cond_branch_types": (
        lambda ns: ns.lib.lax.cond(
            True, lambda t: ns.np.array([1.0], "float32"), lambda f: ns.np.float32(1.0), 1.0
        ),
        TypeError,
        re.compile(
            r"cond branches must have equal output types but they differ.*The output of true_fun "
            r"has type float32\[1\] but the corresponding output of false_fun has type "
            r"float32\[\], so the shapes do not match",
            re.DOTALL,
        ),
    ),
    "switch_branch_trees": (
        lambda ns: ns.lib.lax.switch(1, [lambda _: {"a": 2.0}, lambda _: {"a": (3.0, 3.0)}], 1.0),
        TypeError,
        re.compile(
            r"switch branch outputs must have the same pytree structure, but they differ.*"
            r"branch 0 output at path \['a'\] is a pytree leaf but branch1 output at path "
            r"\['a'\] is a <class 'tuple'>, so their Python types differ.",
            re.DOTALL,
        ),
    ),
    "switch_branch_types": (
        lambda ns: ns.lib.lax.switch(
            1,
            [lambda _: {"a": ns.np.array([1.0], "float32")}, lambda _: {"a": ns.np.float32(1.0)}],
            1.0,
        ),
        TypeError,
        re.compile(
            r"switch branches must have equal output types but they differ.*The output of "
            r"branch 0 at path \['a'\] has type float32\[1\] but the corresponding output of "
            r"branch1 has type float32\[\], so the shapes do not match",
            re.DOTALL,
        ),
    ),
    # not in the file: several differences listed, each named by its path
    "cond_branch_types_listed": (
        lambda ns: ns.lib.jit(
            lambda p: ns.lib.lax.cond(
                p,
                lambda x: (ns.np.zeros(2, "float32"), ns.np.int32(1)),
                lambda x: (x, x),
                ns.np.float32(1.0),
            )
        )(True),
        TypeError,
        re.escape(
            "  * the output of true_fun at path [0] has type float32[2] but the corresponding "
            "output of false_fun has type float32[], so the shapes do not match;\n"
            "  * the output of true_fun at path [1] has type int32[] but the corresponding "
            "output of false_fun has type float32[], so the dtypes do not match.\n"
        ),
    ),
    # testIssue744, testScanBodyOutputError, testScanMetadataError
    "scan_over_python_ints": (
        lambda ns: ns.lib.lax.scan(lambda c, i: (c, i), ns.np.array(1), list(range(5))),
        ValueError,
        "scan got value with no leading axis to scan over.*",
    ),
    "scan_body_not_a_pair": (
        lambda ns: ns.lib.lax.scan(lambda c, x: np.float32(0.0), 0, ns.np.arange(5.0)),
        TypeError,
        re.escape("scan body output must be a pair, got float32[]."),
    ),
    "fori_carry_metadata": (
        lambda ns: ns.lib.lax.fori_loop(
            0, 1, lambda i, x: {"T": ns.np.array([0.5])}, {"t": ns.np.array([1.0])}
        ),
        TypeError,
        r".*with pytree metadata \('t',\).*with pytree metadata \('T',\)",
    ),
    # testScanBodyCarryPytreeMismatchErrors, testScanBodyCarryTypeMismatchErrors
    "scan_carry_length": (
        lambda ns: _int_carry_scan(ns, lambda x, _: ((x[0].astype("float32"),), None)),
        TypeError,
        re.escape(
            "function carry input and carry output must have the same pytree structure, but "
            "they differ:\n\nThe input carry x is a tuple of length 2"
        ),
    ),
    "scan_carry_types": (
        lambda ns: _int_carry_scan(
            ns,
            lambda x, _: (
                (x[0].astype("float32"), x[1].astype("float32").reshape(1, 1), x[2]),
                None,
            ),
            n=3,
        ),
        TypeError,
        re.escape(
            "function carry input and carry output must have equal types, but they differ:\n\n"
            "  * the input carry component x[0] has type int32[] but the corresponding output "
            "carry component has type float32[], so the dtypes do not match;\n"
            "  * the input carry component x[1] has type int32[] but the corresponding output "
            "carry component has type float32[1,1], so the dtypes do not match, and the shapes "
            "do not match."
        ),
    ),
    # test_platform_dependent_no_default (off TPU)
    "platform_dependent_no_default": (
        lambda ns: ns.lib.lax.platform_dependent(3.0, tpu=lambda x: x + 2.0),
        NotImplementedError,
        "translation rule .* not found for platform",
    ),
    # test_scan_length_concrete_error, test_scan_unroll_concrete_error
    "scan_length_traced": (
        lambda ns: ns.lib.jit(lambda n, x: ns.lib.lax.scan(lambda c, z: (c, z), x, (), n))(3, 1.0),
        TypeError,  # a ConcretizationTypeError on both
        "The `length` argument to `scan` expects a concrete `int` value.*",
    ),
    "scan_unroll_traced": (
        lambda ns: ns.lib.jit(
            lambda n, x: ns.lib.lax.scan(lambda c, z: (c, z), x, (), 10, unroll=n)
        )(True, 1.0),
        TypeError,
        "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.*",
    ),
}


# shapes (lane WORDING2): lax_vmap_test.py's testBroadcastShapesFaultyInputs
# (and jnp.broadcast_shapes, which JAX 0.10.2 checks the same way), and JAX's
# canonicalize_shape words where a sampler, lax.full or jnp.zeros reads one
_SHAPE_CASES = {
    "broadcast_shapes_negative": (
        lambda ns: ns.lib.lax.broadcast_shapes((-1,)),
        TypeError,
        re.escape(
            "Only non-negative indices are allowed when broadcasting static shapes, but got "
            "shape (-1,)."
        ),
    ),
    "broadcast_shapes_str": (
        lambda ns: ns.lib.lax.broadcast_shapes("hello"),
        TypeError,
        re.escape("Shapes must be 1D sequences of concrete values of integer type, got hello."),
    ),
    "broadcast_shapes_float_dim": (
        lambda ns: ns.lib.lax.broadcast_shapes((2, 3), (2.0, 3)),
        TypeError,
        re.escape("Shapes must be 1D sequences of concrete values of integer type, got (2.0, 3)."),
    ),
    "jnp_broadcast_shapes_negative": (
        lambda ns: ns.np.broadcast_shapes((2, 3), (-1, 3)),
        TypeError,  # NumPy's is a ValueError
        re.escape("Only non-negative indices are allowed when broadcasting static shapes"),
    ),
    # random_lax_test.py's testStaticShapeErrors: a traced dimension
    "random_normal_traced_shape": (
        lambda ns: ns.lib.jit(lambda d: ns.lib.random.normal(ns.lib.random.key(0), (d, 2)))(3),
        TypeError,
        "Shapes must be 1D.*",
    ),
    # not in the files: JAX's canonicalize_shape words wherever a shape is read
    "random_uniform_float_shape": (
        lambda ns: ns.lib.random.uniform(ns.lib.random.key(0), (2.5,)),
        TypeError,
        re.escape("Shapes must be 1D sequences of concrete values of integer type, got (2.5,)."),
    ),
    "random_split_1d_array": (
        lambda ns: ns.lib.random.split(ns.lib.random.key(0), ns.np.array([3])),
        TypeError,
        "",
    ),
    "lax_full_traced_shape": (
        lambda ns: ns.lib.jit(lambda d: ns.lib.lax.full((d,), 1.0))(3),
        TypeError,
        re.escape(
            "If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
        ),
    ),
    "jnp_zeros_traced_shape": (
        lambda ns: ns.lib.jit(lambda d: ns.np.zeros((d,)))(3),
        TypeError,
        "Shapes must be 1D sequences of concrete values of integer type",
    ),
    "jnp_zeros_str_shape": (
        lambda ns: ns.np.zeros("hello"),
        TypeError,
        re.escape(
            "Shapes must be 1D sequences of concrete values of integer type, got ('hello',)."
        ),
    ),
}


def _pmap_kwargs(ns):
    x = ns.np.array([3.14])
    return ns.lib.pmap(lambda x, y: x, in_axes=((0, 0), 0))(x=(x, x), y=x)


# pmap_test.py's (lane WORDING2): in_axes not a prefix of the positional
# arguments (the path is in the tree of (positional, keyword) arguments), and
# pshuffle's permutation check (under vmap here: one device is enough)
_PMAP_CASES = {
    # testInAxesPyTreePrefixMismatchError
    "pmap_in_axes_not_a_prefix": (
        lambda ns: ns.lib.pmap(lambda x, y: x, in_axes=((0, 0, 0), 0))(
            (ns.np.array([3.14]),) * 2, ns.np.array([3.14])
        ),
        ValueError,
        re.escape(
            "pytree structure error: different lengths of tuple at key path\n"
            "    pmap in_axes[0][0]\n"
            "At that key path, the prefix pytree pmap in_axes has a subtree of type tuple of "
            "length 3, but the full pytree has a subtree of the same type but of length 2."
        ),
    ),
    # testInAxesPyTreePrefixMismatchErrorKwargs
    "pmap_in_axes_keyword_arguments": (
        _pmap_kwargs,
        ValueError,
        re.escape("each argument passed by keyword is mapped"),
    ),
    # not in the file: a list for the tuple of arguments
    "pmap_in_axes_list": (
        lambda ns: ns.lib.pmap(lambda x, y: x, in_axes=[0, 0])(ns.np.ones(1), ns.np.ones(1)),
        ValueError,
        re.escape(
            "pytree structure error: different types at key path\n    pmap in_axes[0]\n"
            "At that key path, the prefix pytree pmap in_axes has a subtree of type\n"
            "    <class 'list'>\nbut at the same key path the full pytree has a subtree of "
            "different type\n    <class 'tuple'>."
        ),
    ),
    # testPShuffleWithBadPerm
    "pshuffle_not_a_permutation": (
        lambda ns: ns.lib.vmap(lambda v: ns.lib.lax.pshuffle(v, "i", [1, 1, 2, 3]), axis_name="i")(
            ns.np.arange(4.0)
        ),
        ValueError,
        r"`perm` does not represent a permutation: \[1.*\]",
    ),
}


_PREFIX_CASES = [
    ((1, 2), [1, 2, 3]),
    ({"a": 1}, {"b": 1}),
    ({"a": 1}, {"b": 1, "a": 2}),
    ((0, None), (1, 2)),
    ((0, (1, 2)), (1, (2, 3, 4))),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=1, a=2)),
    ((0, [0, 1]), (1, [1])),
    ([0, {"x": 0}, (0, 0)], [0, {"y": 1}, (1, 2, 3)]),
    ((0, 0), (1, 2)),
]


@pytest.mark.parametrize("index", range(len(_PREFIX_CASES)))
def test_prefix_errors_as_jax(index):
    """pytree.prefix_errors gives JAX 0.10.2's prefix_errors, message for message."""
    from jax._src.tree_util import prefix_errors

    prefix, full = _PREFIX_CASES[index]
    want = [str(e("in_axes")) for e in prefix_errors(prefix, full)]
    assert [str(e("in_axes")) for e in ri.pytree.prefix_errors(prefix, full)] == want


def _conv_ranks(ns):
    lax = ns.lib.lax
    numbers = lax.ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
    return lax.conv_general_dilated(
        np.ones((1, 1, 1)), np.ones((1, 1, 1, 1)), (1,), ((0, 0),), (1,), (1,), numbers
    )


def _reduce_window_sum(window, strides):
    return lambda ns: ns.lib.lax.reduce_window(
        np.ones((1,)), 0.0, ns.lib.lax.add, window, strides, "VALID"
    )


# lax_test.py's (lane WORDING2), each named by its test method
_LAX_CASES = {
    # testSplitErrors
    "split_negative_size": (
        lambda ns: ns.lib.lax.split(np.arange(5), [-1]),
        ValueError,
        "Sizes passed to split must be nonnegative",
    ),
    "split_sizes_sum": (
        lambda ns: ns.lib.lax.split(np.arange(5), [6]),
        ValueError,
        "Sum of sizes 6 must be equal",
    ),
    # testConvInvalidPadding
    "conv_patches_padding": (
        lambda ns: ns.lib.lax.conv_general_dilated_patches(
            ns.np.ones((1, 10, 10, 5)), (5, 5), window_strides=(1, 1), padding=(3, 3)
        ),
        ValueError,
        r"padding argument.*, got \(3, 3\)",
    ),
    # testBroadcastInDimShapeCheck2
    "broadcast_in_dim_not_a_subset": (
        lambda ns: ns.lib.lax.broadcast_in_dim(np.ones(2, np.float32), (2, 3), (2,)),
        TypeError,
        "broadcast_in_dim broadcast_dimensions must be a subset of output dimensions",
    ),
    # testSqueezeShapeCheck0-4
    "squeeze_repeated": (
        lambda ns: ns.lib.lax.squeeze(np.ones((1, 2, 3)), (0, 0)),
        ValueError,
        "dimensions are not unique",
    ),
    "squeeze_out_of_bounds": (
        lambda ns: ns.lib.lax.squeeze(np.ones((1, 2, 3)), (3,)),
        ValueError,
        "axis 3 is out of bounds",
    ),
    "squeeze_negative_out_of_bounds": (
        lambda ns: ns.lib.lax.squeeze(np.ones((1, 2, 3)), (-4,)),
        ValueError,
        "axis -4 is out of bounds",
    ),
    "squeeze_not_size_one": (
        lambda ns: ns.lib.lax.squeeze(np.ones((1, 2, 3)), (1,)),
        ValueError,
        "cannot select an axis to squeeze out",
    ),
    "squeeze_none": (
        lambda ns: ns.lib.lax.squeeze(np.ones((1, 2, 3)), (None,)),
        TypeError,
        "cannot be interpreted as an integer",
    ),
    # testPadErrors
    "pad_negative_interior": (
        lambda ns: ns.lib.lax.pad(np.zeros(2), 0.0, [(0, 1, -1)]),
        ValueError,
        "interior padding in padding_config must be nonnegative",
    ),
    "pad_negative_size": (
        lambda ns: ns.lib.lax.pad(np.zeros(2), 0.0, [(-4, 0, 1)]),
        ValueError,
        "Dimension size after padding is not at least 0",
    ),
    # testReduceWindowFailures
    "reduce_window_empty_window": (
        _reduce_window_sum((0,), (1,)),
        TypeError,
        "must have every element be",
    ),
    "reduce_window_zero_stride": (
        _reduce_window_sum((1,), (0,)),
        TypeError,
        "must have every element be",
    ),
    "reduce_window_output_tree": (
        lambda ns: ns.lib.lax.reduce_window(
            np.ones((1,)), 0.0, lambda x, y: [x + y], (1,), (1,), "VALID"
        ),
        ValueError,
        "reduce_window output must have the same tree structure as the operands.*",
    ),
    # testReshapeWithUnusualShapes
    "reshape_array_size": (
        lambda ns: ns.lib.lax.reshape(np.ones(3), (np.array([3, 1]),)),
        TypeError,
        "Shapes must be 1D sequences of concrete values of integer type.*",
    ),
    "reshape_float_sizes": (
        lambda ns: ns.lib.lax.reshape(np.ones(3), (1.5, 2.0)),
        TypeError,
        "Shapes must be 1D sequences of concrete values of integer type.*",
    ),
    # testDynamicSliceTypeErrors, testDynamicUpdateSliceTypeErrors
    "dynamic_slice_index_types": (
        lambda ns: ns.lib.lax.dynamic_slice(
            np.ones((3, 4), np.float32), (np.int32(1), np.int16(2)), (2, 2)
        ),
        TypeError,
        "index arguments to dynamic_slice must be integers of the same type",
    ),
    "dynamic_update_slice_index_types": (
        lambda ns: ns.lib.lax.dynamic_update_slice(
            np.ones((3, 4), np.float32), np.zeros((2, 2), np.float32), (np.int32(1), np.int16(2))
        ),
        TypeError,
        "index arguments to dynamic_update_slice must be integers of the same type",
    ),
    # test_reduction_with_repeated_axes_error
    "reduce_repeated_axes": (
        lambda ns: ns.lib.lax.reduce(np.arange(3), 0, ns.lib.lax.add, (0, 0)),
        ValueError,
        "duplicate value in 'axes' .*",
    ),
    # test_conv_general_dilated_different_input_ranks_error
    "conv_input_ranks": (
        _conv_ranks,
        ValueError,
        "conv_general_dilated lhs and rhs must have the same number of dimensions",
    ),
    # test_window_strides_dimension_shape_rule
    "conv_window_strides": (
        lambda ns: ns.lib.lax.conv(ns.np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 1, 1)), [1], "SAME"),
        ValueError,
        "conv_general_dilated window and window_strides must have the same number of dimensions",
    ),
    # test_reduce_window_scalar_init_value_shape_rule
    "reduce_window_init_shape": (
        lambda ns: ns.lib.lax.reduce_window(
            np.ones((4, 4), np.int32),
            np.zeros((1,), np.int32),
            ns.lib.lax.max,
            (2, 2),
            (2, 2),
            "VALID",
            (1, 1),
            (1, 1),
        ),  # fmt: skip
        TypeError,
        r"reduce_window expected init_values to be scalars but init_values have shapes \[\(1,\)\].",
    ),
    # test_reduce_with_mismatched_pytrees_errors
    "reduce_trees": (
        lambda ns: ns.lib.lax.reduce(
            {"x": np.ones(5)}, {"y": 0.0}, lambda x, y: {"x": x["x"] + y["x"]}, [0]
        ),
        ValueError,
        "Operands must have the same tree structure as init_values",
    ),
    # testArgMinMaxEmptyError, testArgMinMaxInvalidAxisError
    "argmin_empty": (
        lambda ns: ns.lib.lax.argmin(np.ones((0, 2)), axis=0, index_dtype=np.int32),
        ValueError,
        "require non-empty reduced dimension",
    ),
    "argmax_invalid_axis": (
        lambda ns: ns.lib.lax.argmax(np.ones((2, 3)), axis=-1, index_dtype=np.int32),
        ValueError,
        "Invalid axis -1 for operand",
    ),
}


# api_test.py's (lane WORDING2)
_API_CASES = {
    # test_binop_mismatch
    "binop_shapes": (
        lambda ns: ns.np.zeros(3) + ns.np.zeros(4),
        TypeError,
        re.escape("add got incompatible shapes for broadcasting: (3,), (4,)."),
    ),
    "binop_shapes_grad": (
        lambda ns: ns.lib.grad(lambda x, y: (x + y).sum())(np.zeros(3), np.zeros(4)),
        TypeError,
        re.escape("add got incompatible shapes for broadcasting: (3,), (4,)."),
    ),
    # test_pmap_static_kwarg_error_message
    "pmap_static_argument_by_keyword": (
        lambda ns: ns.lib.pmap(lambda a, b: a + b, static_broadcasted_argnums=(1,))(
            ns.np.ones((1, 1)), b=1
        ),
        ValueError,
        re.escape(
            "pmapped function has static_broadcasted_argnums=(1,) but was called with only 1 "
            "positional argument. All static broadcasted arguments must be passed positionally."
        ),
    ),
}


# jnp.linalg.solve's shape checks (JAX's is a vectorized function; lead, round 19)
_SOLVE_CASES = {
    "vector_size": (
        lambda ns: ns.np.linalg.solve(ns.np.ones((3, 3)), ns.np.ones(2)),
        ValueError,
        re.escape(
            "inconsistent size for core dimension 'm': 2 vs 3 on vectorized function with "
            "excluded=frozenset() and signature='(m,m),(m)->(m)'"
        ),
    ),
    "matrix_size": (
        lambda ns: ns.np.linalg.solve(ns.np.ones((3, 3)), ns.np.ones((2, 3))),
        ValueError,
        re.escape(
            "inconsistent size for core dimension 'm': 2 vs 3 on vectorized function with "
            "excluded=frozenset() and signature='(m,m),(m,n)->(m,n)'"
        ),
    ),
    "vector_matrix": (
        lambda ns: ns.np.linalg.solve(ns.np.ones(3), ns.np.ones(3)),
        ValueError,
        re.escape("left hand array must be at least two dimensional; got a.shape=(3,)"),
    ),
    "batch_of_vectors": (
        lambda ns: ns.np.linalg.solve(ns.np.ones((4, 3, 3)), ns.np.ones((4, 3))),
        ValueError,
        re.escape(
            "Invalid shapes for solve: (4, 3, 3), (4, 3). Prior to JAX v0.5.0, this would have "
            "been treated as a batched 1-dimensional solve. To recover this behavior, use "
            "solve(a, b[..., None]).squeeze(-1)."
        ),
    ),
}


# Every table above: the JAX test file its programs come from, and the cases.
_TABLES = {
    "custom_api_test": _CASES,
    "lax_control_flow_test": _CONTROL_FLOW_CASES,
    "shapes": _SHAPE_CASES,
    "pmap_test": _PMAP_CASES,
    "lax_test": _LAX_CASES,
    "api_test": _API_CASES,
    "linalg_solve": _SOLVE_CASES,
}


@pytest.mark.parametrize(
    "table, name", [(table, name) for table, cases in _TABLES.items() for name in sorted(cases)]
)
def test_errors_match_jax_by_their_words(backend, table, name):
    """The class and JAX's words, on JAX 0.10.2 and on both backends."""
    program, cls, regex = _TABLES[table][name]
    for ns in (JAX, RI):
        with pytest.raises(cls, match=regex):
            program(ns)
