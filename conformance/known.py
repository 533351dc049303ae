"""Known, intended differences between implementations.

Every entry names the cases it covers (an ``fnmatch`` pattern on the case
name), the implementation whose result differs, why the difference is
intended or accepted, and (``differs``) regular expressions for the
difference lines it excuses (``"['x_deleted']: ..."``): a case with any
other difference is still reported. Every entry's pattern, ``differs`` and
reason are checked against JAX's actual behaviour by
``tests/conformance/test_known_differences.py``. A case that would otherwise
be reported ``differ`` or ``error`` is reported ``known`` instead, with the
reason beside it -- never hidden. An entry that no longer matches any
failing case is listed as *stale* in the report, so fixed differences get
their entries removed.

This list is the one place where refimpl deliberately departs from JAX
0.10.2; docs/semantics.md explains the same decisions in prose.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownDifference:
    pattern: str  # fnmatch pattern on case names
    impl: str  # the implementation that differs ("*" for any)
    reason: str
    statuses: tuple[str, ...] = ("differ", "error")
    # regexes: every difference line must match one (empty: any difference)
    differs: tuple[str, ...] = ()

    def matches(self, case_name: str, impl: str, status: str, detail: str | None = None) -> bool:
        if not (
            status in self.statuses
            and (self.impl == "*" or self.impl == impl)
            and fnmatch.fnmatchcase(case_name, self.pattern)
        ):
            return False
        if not self.differs or detail is None:
            return True
        return all(
            any(re.search(rx, line) for rx in self.differs) for line in difference_lines(detail)
        )


def difference_lines(detail: str) -> list[str]:
    """The ``path: what`` lines of a result's detail (no header, no error report)."""
    lines = detail.splitlines()
    if lines and lines[0].startswith("differs from "):
        lines = lines[1:]
    # an error's report ("raised X: ..." and its indented traceback) follows the lines
    return [line for line in lines if line and not line[0].isspace()
            and not line.startswith("raised ")]  # fmt: skip


_PERCENTILE_FOLDED = (
    "jnp.percentile computes its positions as q / 100 * (n - 1); jax 0.10.2 compiles "
    "the whole of it, and XLA's algebraic simplifier rewrites the division by 100 into a "
    "multiplication by its rounded reciprocal and folds the two constants: a float16 q "
    "is multiplied by f16(f16(1/100) * 328) = 3.28125 and rounded once (position 94.0), "
    "where the reference rounds after each operation as StableHLO defines them "
    "(93.9375, so the lower element is the neighbouring one), as does pjrt for an eager "
    "call; inside a jit XLA folds pjrt's program the same way. nanpercentile and a "
    "bfloat16 q (which XLA computes in float32) are not folded (docs/semantics.md, "
    "compile-time rewrites)."
)


_DEVICE_PLATFORM = (
    "The reference backend's devices are refimpl's own simulated devices, "
    "Device(id=i, platform='ref'): their platform names the backend that holds them, so "
    "that devices('ref') and a pjrt CPU device stay apart in one process (both run on the "
    "host; JAX's platform name 'cpu' is taken for either where a platform is given, and "
    "as_jax's default_backend() is 'cpu'). pjrt's devices are the PJRT CPU plugin's, 'cpu' "
    "as JAX 0.10.2's (api_test.py's test_default_backend and test_jit_default_platform fail "
    "on ref only; docs/semantics.md, devices)."
)


KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(
        "reductions.percentile/f16-q-position-xla-folds-constants",
        "jax",
        _PERCENTILE_FOLDED,
        differs=(r"^\[[01]\]: off by up to \d+ ulps",),
    ),
    KnownDifference(
        "random_more/multivariate_normal_[es][iv][gd]*",
        "pjrt",
        "random.multivariate_normal(method='eigh'/'svd') draws mean + V diag(sqrt(w)) z with the "
        "factorization's vectors, unique only up to the sign of each column. jax 0.10.2 on CPU "
        "runs LAPACK (custom calls lapack_ssyevd_ffi / lapack_sgesdd_ffi, which jaxlib "
        "registers in its own process; the PJRT CPU plugin has no such targets), as refimpl's "
        "reference backend does through NumPy; refimpl's PJRT lowering is Jacobi rotations "
        "(StableHLO has no eigh or svd), whose columns can have the other sign. Other samples "
        "of the same distribution (docs/semantics.md, linear algebra).",
        differs=(r"^out: off by up to .* ulps",),
    ),
    KnownDifference(
        "api.paths/cost_analysis_kinds",
        "jax",
        "Lowered/Compiled.cost_analysis() is the PJRT plugin's cost analysis in refimpl, None "
        "where the plugin has none (the CPU plugin answers UNIMPLEMENTED); jax 0.10.2 on CPU "
        "runs XLA's HLO cost analysis in-process and returns a dict (flops, bytes accessed). "
        "JAX documents the result's structure as arbitrary and None as 'unavailable' "
        "(docs/semantics.md, Lowered and Compiled).",
        differs=(r"^\[[01]\]: .*(NoneType|dict)",),
    ),
    # the case differs on ref: jax and pjrt are judged against ref's 'ref'
    KnownDifference(
        "api.paths/device_platform",
        "jax",
        _DEVICE_PLATFORM,
        differs=(r"^out: expected '(ref|cpu)', got '(cpu|ref)'",),
    ),
    KnownDifference(
        "api.paths/device_platform",
        "pjrt",
        _DEVICE_PLATFORM,
        differs=(r"^out: expected '(ref|cpu)', got '(cpu|ref)'",),
    ),
    KnownDifference(
        "jit.paths/numpy_constant/int_of_asarray",
        "jax",
        "jnp.asarray of NumPy data inside jit is a concrete constant of the program in "
        "refimpl, a tracer in jax 0.10.2: int() of it is 3 here, jax's "
        "ConcretizationTypeError (docs/semantics.md, section 3).",
    ),
    KnownDifference(
        "errors.shapes/np-add-not-broadcastable",
        "jax",
        "SPEC: shape errors are TypeError naming both shapes; jax.numpy raises ValueError "
        "('Incompatible shapes for broadcasting').",
        differs=(r"^out: expected TypeError .*, got ValueError: Incompatible shapes",),
    ),
    KnownDifference(
        "ref.update_paths/eager_add_before_the_start",
        "jax",
        "An eager static index out of a ref's bounds is an error on both sides in refimpl: "
        "jax 0.10.2's check compares only index >= size, so r[-5] of a 3-element ref is "
        "clamped to r[0] and the write lands there silently (docs/semantics.md, Refs).",
        differs=(r"^out: expected ValueError matching 'Out of bound indexer' to be raised, got ",),
    ),
    KnownDifference(
        "ref.update_paths/none_in_index",
        "jax",
        "None in a ref's index adds a unit axis in refimpl, as NumPy and as JAX's own "
        "mutable_array_test expects (test_none_index, skipped there: 'Not yet implemented'); "
        "jax 0.10.2 drops it from a 1-D ref's index (r[None] of 4 elements has shape (4,)) and "
        "raises ValueError 'not enough values to unpack' for a 2-D ref (docs/semantics.md, "
        "Refs).",
    ),
    KnownDifference(
        "ref.paths/grad_constant_write",
        "jax",
        "jax 0.10.2 fails on its own program: grad of a jit that writes a constant into a "
        "ref holding a constant raises AttributeError ('DynamicJaxprTracer has no attribute "
        "accum'); refimpl differentiates it (both tangents of the update are zero), judged "
        "by NumPy.",
        statuses=("error",),
    ),
    KnownDifference(
        "custom.api/custom_vmap_rule_output_without_batch_axis",
        "jax",
        "refimpl checks that a custom_vmap rule's output marked batched has the batch axis "
        "first (a ValueError naming the rule); jax 0.10.2 returns it as it is, so here vmap "
        "over 3 members gives f32[2], a result without the mapped axis (of any other shape "
        "or dtype the rule's output is taken, as JAX; docs/semantics.md, custom_vmap).",
        differs=(r"^out: expected ValueError matching 'custom vmap rule' to be raised, got ",),
    ),
    KnownDifference(
        "jit.cache/same-signature-numpy-and-array",
        "jax",
        "One trace in both; but jax's _cache_size() counts C++ fast-path entries, which are "
        "keyed on the argument's Python type too (numpy.ndarray vs jax.Array), so it reports "
        "2. refimpl's cache is keyed by the SPEC signature only.",
        differs=(r"^\['cache_size'\]: expected [12], got [12]$",),
    ),
    KnownDifference(
        "jit.cache/weak-output-fed-back",
        "jax",
        "One trace in both; jax's _cache_size() has separate C++ fast-path entries for a "
        "Python float and a weakly typed jax.Array of the same signature (see above).",
        differs=(r"^\['cache_size'\]: expected [12], got [12]$",),
    ),
    KnownDifference(
        "device_put/may_alias=[FN]*/donate=True",
        "jax",
        "SPEC: device_put(x, donate=True) deletes x. jax 0.10.2 on CPU, when x already "
        "lives on the target device, returns an array sharing x's buffer and leaves x alive "
        "(with may_alias=False as with None; may_alias=True with donate=True is a ValueError "
        "in both).",
        differs=(r"^\['x_deleted'\]: expected True, got False$",),
    ),
    KnownDifference(
        "device_put/pytree-donated",
        "jax",
        "Same as above, leaf by leaf: jax does not delete donated leaves already on the device.",
        differs=(r"^\['deleted'\]\[\d\]: expected True, got False$",),
    ),
    KnownDifference(
        "device_put/deleted-input",
        "jax",
        "SPEC: device_put of a deleted array raises the deleted-array RuntimeError. jax 0.10.2 "
        "returns another deleted array without raising (the error comes at first use).",
        differs=(r"^out: expected RuntimeError .* to be raised, got a deleted array$",),
    ),
    KnownDifference(
        "donation/same-array-twice",
        "jax",
        "SPEC: the same array passed twice with a donated position is a ValueError raised "
        "before running. jax raises JaxRuntimeError (a RuntimeError) from the PJRT execute.",
        differs=(r"^\['error'\]: expected ValueError .*, got JaxRuntimeError\(RuntimeError\)",),
    ),
    KnownDifference(
        "donation/chained-calls",
        "jax",
        "SPEC: passing a deleted array to a jitted function raises RuntimeError 'has been "
        "deleted'. jax's C++ dispatch (a warm cache entry) raises ValueError 'INVALID_ARGUMENT: "
        "Buffer has been deleted or donated' instead (a cold call raises RuntimeError).",
        differs=(r"^\['again'\]: expected RuntimeError .*, got ValueError: INVALID_ARGUMENT",),
    ),
    KnownDifference(
        "jit.paths/unread/donated_unread",
        "jax",
        "SPEC: after a call, every donated array is deleted. jax 0.10.2 prunes an argument "
        "its program does not read before it donates (keep_unused=False), so an unread "
        "donated array stays alive (docs/semantics.md, which arguments a jit's executable "
        "takes).",
        # (jax against ref, or ref against jax's recording)
        differs=(r"^\['deleted'\]: expected (True|False), got (False|True)$",),
    ),
    KnownDifference(
        "donation/negative-argnum",
        "jax",
        "SPEC: donate_argnums follows static_argnums conventions, negative ints included. "
        "jax 0.10.2 silently ignores a negative donate_argnums entry (nothing is donated).",
        differs=(r"^\[1\]: expected True, got False$",),
    ),
    KnownDifference(
        "scan/errors/unroll-float",
        "jax",
        "SPEC: an unroll that is neither int nor bool is a TypeError. jax 0.10.2 checks "
        "nothing: when the body passes carry and x straight through (this case) it runs the "
        "scan with unroll=2.0; a body that computes fails in its unrolling with TypeError "
        "('float' object cannot be interpreted as an integer; case "
        "scan/errors/unroll-float-computing-body, where both raise).",
        differs=(r"^tree: structure differs: expected \*, got \(\*, \*\)$",),
    ),
    KnownDifference(
        "scan/errors/unroll-string",
        "jax",
        "Both raise TypeError; jax's message (\"'<' not supported between instances of 'str' "
        "and 'int'\") does not name the unroll argument.",
        differs=(r"^out: error message does not match 'unroll': TypeError: '<' not supported",),
    ),
    KnownDifference(
        "donation/unusable-shape-mismatch",
        "jax",
        "SPEC: a donated input is deleted even when no output can reuse its buffer. jax "
        "0.10.2 on CPU warns 'Some donated buffers were not usable' and leaves that input "
        "(f32[3] donated, f32[] returned) alive.",
        differs=(r"^\['x_deleted'\]: expected True, got False$",),
    ),
    KnownDifference(
        "donation/unusable-partial-two-donated-one-output",
        "jax",
        "SPEC: every donated input is deleted. jax 0.10.2 on CPU deletes the donated input "
        "whose buffer the one output reuses, warns 'not usable' for the other and leaves it "
        "alive.",
        differs=(r"^\['b_deleted'\]: expected True, got False$",),
    ),
    KnownDifference(
        "donation/unusable-dtype-mismatch",
        "jax",
        "SPEC: a donated input no output can reuse (int32 in, float32 out) is deleted with a "
        "'not usable' warning. jax 0.10.2 on CPU deletes it too but warns nothing.",
        differs=(r"^\['warned_not_usable'\]: expected True, got False$",),
    ),
    KnownDifference(
        "indexing.paths/dynamic_update_slice_uint8_start_past_its_range",
        "jax",
        "dynamic_update_slice clamps its start into [0, dim - size] exactly in refimpl (both "
        "backends: the PJRT lowering widens starts narrower than int32). jax 0.10.2's XLA CPU "
        "clamps a narrow start in its own type, where the bound wraps: a uint8 start of 127 "
        "into 300 elements, 2 written, goes to uint8(298) = 42; with an int8 start it does so "
        "eagerly and not under jit, so it is not a rule of the operation to follow.",
        differs=(r"^out: off by up to .*; first at \[42\]: expected (42|-7)\.0, got (-7|42)\.0$",),
    ),
    KnownDifference(
        "vmap.paths/grad_of_scan_carry_made_strong_by_batched_cond",
        "jax",
        "grad of a vmapped scan (fori_loop) whose weak carry a cond on a batched predicate "
        "makes strong: jax 0.10.2's init cotangent is weak or strong by the order of the "
        "branches (its transposed body sums the branches' cotangents with add_any, typed as "
        "the first, and a branch that promotes the carry gives a weak one, one that keeps it "
        "weak a strong one); refimpl's transposed scan carries the cotangent's type. Values "
        "and dtypes agree; only the weak flag differs (docs/semantics.md, weak-type carries).",
        differs=(r"^\[[01]\]: weak_type (True|False) != expected (True|False)$",),
    ),
    KnownDifference(
        "ad/weak_tangent_at_jnp/linearize_where_strong_tangent",
        "jax",
        "A linearized function given a strong tangent for a weakly typed primal, through "
        "jnp.where: jax 0.10.2 keeps where's jit in its linear program (it inlines only the "
        "elementwise jits), and that jit types the tangent as the primal (weak); refimpl's "
        "linear program applies where's primitives to the tangent as given (strong). The "
        "same for clip, concatenate and cumsum. Values and dtypes agree; only the weak flag "
        "differs (docs/semantics.md, 'Weak types of tangents at jnp functions').",
        differs=(r"^out: weak_type (True|False) != expected (True|False)$",),
    ),
    KnownDifference(
        "ad/weak_tangent_at_jnp/vjp_prod_weak_cotangent",
        "jax",
        "The pullback of jnp.prod of a 0-d float32 given a Python-float cotangent: jax 0.10.2 "
        "differentiates a one-element product as a reshape (the weak cotangent passes on); "
        "refimpl's prod derivative multiplies by the strong product of the other elements "
        "(1 here), so the input cotangent is strong. Values and dtypes agree; only the weak "
        "flag differs.",
        differs=(r"^\[0\]: weak_type (True|False) != expected (True|False)$",),
    ),
    KnownDifference(
        "np.complex-derivatives/arccosh",
        "jax",
        "arccosh of complex z: refimpl differentiates its principal branch, "
        "1 / (sqrt(z - 1) sqrt(z + 1)) (finite differences of either library's value agree). "
        "jax 0.10.2's acosh jvp rule is rsqrt((z - 1)(z + 1)), the other square root where "
        "Re z < 0: the negated derivative there. Values agree; real z > 1 agrees.",
        differs=(r"^\[1\]\[1\]: real part off by .*imag part off by .*elements",),
    ),
    KnownDifference(
        "sharding/plain_jit/grad_of_jit_closure_auto",
        "jax",
        "grad(jit(f)) outside jit of an f closing over an array split on Auto axes: refimpl "
        "differentiates the jit's program with the constant in it, and the backward pass runs "
        "on one device (the argument's). jax 0.10.2 makes the closed-over array a residual "
        "argument of the backward jit, which then runs over its mesh: the gradient comes out "
        "P('x') over 4 devices (docs/semantics.md, Sharding).",
        differs=(r"^\[1\]: shape \(4, 3\) != expected \(1, 3\)$",),
    ),
    KnownDifference(
        "sharding/plain_jit/under_set_mesh_unsharded",
        "jax",
        "A jit call none of whose arguments or closed-over arrays names a mesh runs on one "
        "device in refimpl, inside set_mesh too: the current mesh gives a bare PartitionSpec "
        "its meaning and lets a closure over Explicit axes run over it, nothing more. jax "
        "0.10.2 lays such a call's outputs out replicated over the current mesh (P(None) over "
        "4 devices; so are eager creations such as jnp.ones there) (docs/semantics.md, "
        "Sharding).",
        differs=(r"^\[1\]: shape \(4, 3\) != expected \(1, 3\)$",),
    ),
]


def find_known(
    case_name: str,
    impl: str,
    status: str,
    entries: list[KnownDifference] | None = None,
    detail: str | None = None,
) -> KnownDifference | None:
    for entry in KNOWN_DIFFERENCES if entries is None else entries:
        if entry.matches(case_name, impl, status, detail):
            return entry
    return None
