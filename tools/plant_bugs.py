"""Planted bugs: does the main job catch each one? (issue 36)

    python tools/plant_bugs.py                 # every mutation, on its hint cases
    python tools/plant_bugs.py --full          # what the hints miss: the whole main job
    python tools/plant_bugs.py -m div_jvp_sign -m pad_transpose_lo_hi
    python tools/plant_bugs.py --list

Each mutation replaces one exact text of one file of ``refimpl`` with a
plausible bug. It is applied to a *copy* of the package (``refimpl/`` and
``conformance/`` of this checkout, with the native extension of the
installed build), never to the checkout itself, and the main job,
``python -m conformance --impl ref,pjrt --maxfail 1``, runs on the copy in a
fresh interpreter. The copy is made importable by putting it first on
``sys.path`` and removing the editable install's import hook (which would
otherwise serve the checkout); before and after the run the child checks
that ``refimpl`` and every ``refimpl.*`` module it loaded came from the copy,
and says so -- a run that silently used the unmutated code could never fail.

A mutation is *caught* when the run exits 1 (a case differs or errors) while
the unmutated copy passes the same selection. First each mutation runs on its
hint patterns (a few families where it ought to show): a case that fails
there fails in the main job too, so a catch there is a catch of the main job.
One the hints miss is ``missed (hints)``; with ``--full`` it then runs on the
whole main job (about 15 minutes on 2 cores when nothing fails), and only a
miss there is a miss of the main job.

Exit status: 0 when every selected mutation was caught, 1 when one was
missed, 2 when the harness itself could not judge (a mutation's text is not
found exactly once -- reported as NOT PLANTED, the others still run -- the
unmutated hint cases fail, the copy was not used).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAIN_JOB = ["--impl", "ref,pjrt", "--no-progress"]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository root
    old: str  # exact text, found exactly once
    new: str
    stands_for: str
    hints: tuple[str, ...]  # -k patterns where it ought to show


MUTATIONS: tuple[Mutation, ...] = (
    # --- the eleven classes of issue 36 ---------------------------------------------------
    Mutation(
        "weak_type_promotion",
        "refimpl/dtypes.py",
        "node = _join(frozenset(_node(d, w) for d, w in pairs), config.enable_x64)",
        "node = _join(frozenset(_node(d, False) for d, w in pairs), config.enable_x64)",
        "weak operands promote as strong ones (int8 + 1 -> int32)",
        ("promotion.array-scalar", "promotion.weak-array"),
    ),
    Mutation(
        "div_jvp_sign",
        "refimpl/primitives/elementwise.py",
        "lambda ty, ans, x, y: mul(mul(neg(ty), x), integer_pow(y, -2)),",
        "lambda ty, ans, x, y: mul(mul(ty, x), integer_pow(y, -2)),",
        "the JVP of div: + ty x / y^2 for the denominator's term",
        ("ad_primitives.jvp/div", "ad_primitives.vjp/div", "ad/"),
    ),
    Mutation(
        "pad_transpose_lo_hi",
        "refimpl/primitives/structural.py",
        "tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)",
        "tuple((-hi, -lo, 0) for lo, hi, _ in padding_config)",
        "pad's transpose crops lo and hi swapped",
        ("ad_primitives.vjp/pad", "lax.pad", "rules/pad"),
    ),
    Mutation(
        "dot_general_batch_different_axes",
        "refimpl/primitives/linalg.py",
        "lhs, rhs = batch_rules.moveaxis(lhs, lbd, 0), batch_rules.moveaxis(rhs, rbd, 0)",
        "lhs, rhs = batch_rules.moveaxis(lhs, lbd, 0), batch_rules.moveaxis(rhs, lbd, 0)",
        "dot_general's batch rule moves the rhs by the lhs's batch axis",
        ("vmap.axes_rules/dot_general", "vmap.axes_rules/matmul"),
    ),
    Mutation(
        "scan_unroll_reverse",
        "refimpl/transforms/scan.py",
        "i = position(first if j == 0 else add(first, _index(j)))",
        "i = first if j == 0 else add(first, _index(j))",
        "a partially unrolled scan with reverse=True walks forward",
        ("scan/",),
    ),
    Mutation(
        "donation_unusable_not_reported",
        "refimpl/transforms/donation.py",
        "            unusable.append(i)\n",
        "            pass\n",
        "a donated input without an aliased output is neither warned about nor listed",
        ("donation/",),
    ),
    Mutation(
        "masked_max_fills_zero",
        "refimpl/primitives/reductions.py",
        "(reduce_max_p, dtypes.min_value),",
        "(reduce_max_p, dtypes.zero),",
        "a masked max fills the padding with 0 (wrong for all-negative and empty regions)",
        ("mask.regions/max",),
    ),
    Mutation(
        "checkpoint_default_saves_everything",
        "refimpl/ad_checkpoint.py",
        "    if policy is None:\n        return False\n",
        "    if policy is None:\n        return True\n",
        "checkpoint's default policy saves every value instead of only the inputs",
        ("residuals/", "residuals.split/", "memory_ad/"),
    ),
    Mutation(
        "grouped_collective_ignores_groups",
        "refimpl/primitives/collectives.py",
        "            members[m] = group\n",
        "            members[m] = groups[0]\n",
        "a grouped collective (axis_index_groups) reduces every member over the first group",
        ("pmap/psum_groups", "pmap/pmax_groups", "rules.pmap/"),
    ),
    Mutation(
        "prng_split_order",
        "refimpl/random/_keys.py",
        "return rnp.stack([y1, y2], axis=len(shape))",
        "return rnp.stack([y2, y1], axis=len(shape))",
        "random.split returns the key words swapped",
        ("random/",),
    ),
    Mutation(
        "argmax_tie_lowering",
        "refimpl/primitives/reductions.py",
        'first = ctx.compare(index_a, index_b, "LT", index_dtype)',
        'first = ctx.compare(index_a, index_b, "GT", index_dtype)',
        "argmax/argmin lowered for pjrt: a tie goes to the last index",
        ("lax.argmax", "lax.argmin", "np.argmax"),
    ),
    # --- more plausible bugs on shared paths ----------------------------------------------
    Mutation(
        "weak_flag_dropped_binary",
        "refimpl/primitives/elementwise.py",
        "return ShapedArray(shape, result_dtype or x.dtype, all_weak([x, y]))",
        "return ShapedArray(shape, result_dtype or x.dtype, False)",
        "a binary op's abstract eval drops the weak-type flag",
        ("promotion.", "jit."),
    ),
    Mutation(
        "sub_transpose_sign",
        "refimpl/primitives/elementwise.py",
        "_linear_binary_transpose(sub_p, lambda ct: ct, lambda ct: neg(ct))",
        "_linear_binary_transpose(sub_p, lambda ct: ct, lambda ct: ct)",
        "sub's transpose: the subtrahend's cotangent not negated",
        ("ad_primitives.vjp/sub", "ad/", "planted.transpose/"),
    ),
    Mutation(
        "int_div_floors",
        "refimpl/primitives/elementwise.py",
        "result = np.where(inexact & signs_differ, floor + 1, floor).astype(x.dtype)",
        "result = floor.astype(x.dtype)",
        "integer division rounds toward -inf instead of toward zero (ref)",
        ("lax.div",),
    ),
    Mutation(
        "vmap_negative_in_axis",
        "refimpl/transforms/batching.py",
        "axis = axes[i] = axis % len(shape)\n",
        "axis = axes[i] = abs(axis) % len(shape)\n",
        "vmap counts a negative in_axes from the front",
        ("vmap.axes_rules/", "vmap.axes/"),
    ),
    Mutation(
        "dot_general_rhs_only_out_axis",
        "refimpl/primitives/linalg.py",
        "out_bd = len(lb) + len(lhs_free) + free.index(rbd)",
        "out_bd = len(lb) + free.index(rbd)",
        "dot_general batched in the rhs only: the lhs's free dims forgotten in the out axis",
        ("vmap.axes_rules/dot_general", "vmap.primitive/dot"),
    ),
    Mutation(
        "gather_batch_out_axis",
        "refimpl/primitives/indexing.py",
        "return out, bd if bd < shifted else bd + index_ndim - 1",
        "return out, bd",
        "gather's batch rule (operand batched, indices not): the out axis ignores the index dims",
        ("vmap.axes_rules/", "vmap.primitive/"),
    ),
    Mutation(
        "cumsum_transpose_direction",
        "refimpl/primitives/reductions.py",
        "return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]",
        "return [cumsum_p.bind(ct, axis=axis, reverse=reverse)]",
        "cumsum's transpose scans the same way instead of the other",
        ("ad_primitives.vjp/cumsum", "ad_primitives.vjp/", "np.cumsum"),
    ),
    Mutation(
        "masked_min_fills_zero",
        "refimpl/primitives/reductions.py",
        "(reduce_min_p, dtypes.max_value),",
        "(reduce_min_p, dtypes.zero),",
        "a masked min fills the padding with 0 (wrong for all-positive and empty regions)",
        ("mask.regions/", "mask/"),
    ),
    Mutation(
        "masked_argmin_fill",
        "refimpl/primitives/reductions.py",
        "argmin_p.def_mask(_arg_reduction_mask_rule(argmin_p, dtypes.max_value))",
        "argmin_p.def_mask(_arg_reduction_mask_rule(argmin_p, dtypes.zero))",
        "a masked argmin fills the padding with 0 (picks padding when every value is > 0)",
        ("mask.regions/", "mask/"),
    ),
    Mutation(
        "masked_reverse_cummax_identity",
        "refimpl/primitives/reductions.py",
        "(cummax_p, dtypes.min_value),",
        "(cummax_p, dtypes.zero),",
        "a reversed masked cummax fills the padding with 0 (wrong for negative values)",
        ("mask.regions/", "mask/"),
    ),
    Mutation(
        "masked_reduce_and_identity",
        "refimpl/primitives/reductions.py",
        "(reduce_and_p, _all_ones),",
        "(reduce_and_p, dtypes.zero),",
        "a masked reduce_and fills the padding with False / 0 bits",
        ("mask.regions/", "mask/"),
    ),
    Mutation(
        "switch_clamp_low",
        "refimpl/primitives/control_flow.py",
        "index = clamp(np.int32(0), index, np.int32(len(branches) - 1))",
        "index = clamp(np.int32(-1), index, np.int32(len(branches) - 1))",
        "lax.switch clamps a negative index to -1 (runs the last branch, not the first)",
        ("switch/", "cond/"),
    ),
    Mutation(
        "gather_transpose_scatter_mode",
        "refimpl/primitives/indexing.py",
        'return "clip" if gather_mode == "clip" else "drop"',
        'return "clip"',
        "a fill-mode gather's transpose clips out-of-range indices (adds to the edge)",
        ("ad_primitives.vjp/", "lax.gather", "np.indexing"),
    ),
    Mutation(
        "shift_dims_off_by_one",
        "refimpl/primitives/structural.py",
        "return tuple(d if d < bdim else d + 1 for d in dims)",
        "return tuple(d if d <= bdim else d + 1 for d in dims)",
        "batch rules shift an operand's dims past the batch axis one place too late",
        ("vmap.axes_rules/", "vmap.primitive/"),
    ),
    Mutation(
        "max_jvp_tie_not_split",
        "refimpl/primitives/elementwise.py",
        "return div(hit, add(shared, _c(1, aval)))",
        "return hit",
        "max/min's JVP at a tie gives each operand the whole tangent (JAX: half each)",
        (
            "ad_primitives.jvp/max",
            "ad_primitives.vjp/max",
            "ad_primitives.jvp/min",
            "ad_primitives.vjp/min",
        ),
    ),
    Mutation(
        "ppermute_transpose_direction",
        "refimpl/primitives/collectives.py",
        "inverse = tuple((dst, src) for src, dst in perm)",
        "inverse = tuple(perm)",
        "ppermute's transpose sends the cotangent the same way, not back",
        ("rules.pmap/ppermute", "pmap/ppermute", "vmap.collective/ppermute"),
    ),
    Mutation(
        "ppermute_batch_direction",
        "refimpl/primitives/collectives.py",
        "        source[dst] = src\n",
        "        source[src] = dst\n",
        "ppermute under vmap/pmap (ref): member s reads from d instead of d from s",
        ("rules.pmap/ppermute", "pmap/ppermute", "vmap.collective/ppermute"),
    ),
    Mutation(
        "masked_scatter_window_past_end",
        "refimpl/primitives/gather_scatter.py",
        "bound = elementwise.sub(size, np.asarray(window[d], dtype))",
        "bound = size",
        "a masked scatter lets a window start up to the logical size (writes into padding)",
        ("mask.paths/", "mask.regions/indexing"),
    ),
    Mutation(
        "sort_key_priority",
        "refimpl/primitives/reductions.py",
        "order = np.lexsort(keys_last[::-1], axis=-1)",
        "order = np.lexsort(keys_last, axis=-1)",
        "a multi-key sort (ref) orders by the last key first",
        ("lax.sort", "np.sort", "vmap.primitive/sort"),
    ),
    Mutation(
        "dynamic_slice_clamp",
        "refimpl/primitives/indexing.py",
        "int(np.clip(int(start), 0, dim - size))",
        "int(np.clip(int(start), 0, dim - 1))",
        "dynamic_slice (ref) clamps a start to the last element, not to size - slice size",
        ("lax.dynamic_slice", "lax.dynamic_update_slice", "rules/dynamic"),
    ),
    Mutation(
        "fori_loop_weak_bound_dtype",
        "refimpl/primitives/control_flow.py",
        "return hi.dtype if lo.weak_type else lo.dtype",
        "return lo.dtype if lo.weak_type else hi.dtype",
        "fori_loop with one weak bound takes the weak bound's dtype for the index",
        ("fori_loop", "paths.control/"),
    ),
    Mutation(
        "cond_number_predicate_sign",
        "refimpl/primitives/control_flow.py",
        "pred = (pred != 0) if dtypes.is_python_scalar(pred) else ne(pred, zero)",
        "pred = (pred != 0) if dtypes.is_python_scalar(pred) else elementwise.gt(pred, zero)",
        "lax.cond with a number predicate: a negative one counts as False",
        ("cond/", "paths.control/"),
    ),
)


# The child: run the conformance CLI on the copy at argv[1] (importable from it),
# with the editable install's finder removed, and check every refimpl module it
# loaded came from there.
CHILD = r"""
import os, sys
copy = os.path.realpath(sys.argv[1])
sys.meta_path[:] = [f for f in sys.meta_path
                    if not type(f).__module__.startswith("_editable")]
sys.path.insert(0, copy)
for name in [n for n in sys.modules if n.split(".")[0] in ("refimpl", "conformance")]:
    del sys.modules[name]
import refimpl, conformance
def foreign():
    return sorted(
        n for n, m in list(sys.modules.items())
        if n.split(".")[0] in ("refimpl", "conformance") and getattr(m, "__file__", None)
        and not os.path.realpath(m.__file__).startswith(copy + os.sep)
    )
if foreign():
    print("plant_bugs: modules not from the copy:", foreign(), flush=True)
    sys.exit(3)
from conformance import cli
status = cli.main(sys.argv[2:])
if foreign():
    print("plant_bugs: modules not from the copy:", foreign(), flush=True)
    sys.exit(3)
print("plant_bugs: ran on the copy", os.path.dirname(refimpl.__file__), flush=True)
sys.exit(status)
"""


def native_extension() -> str:
    """The built ``refimpl._pjrt`` of the installed package (the editable install
    keeps it in the build tree, not in the checkout)."""
    spec = importlib.util.find_spec("refimpl._pjrt")
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise SystemExit("plant_bugs: refimpl._pjrt is not built (pip install -e . first)")
    return spec.origin


def make_copy(dest: str) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("refimpl", "conformance"):
        shutil.copytree(os.path.join(ROOT, package), os.path.join(dest, package), ignore=ignore)
    so = native_extension()
    shutil.copy2(so, os.path.join(dest, "refimpl", os.path.basename(so)))


def check_mutations(mutations: Sequence[Mutation]) -> list[str]:
    problems = []
    for m in mutations:
        with open(os.path.join(ROOT, m.path)) as f:
            count = f.read().count(m.old)
        if count != 1:
            problems.append(f"{m.name}: the text to replace occurs {count} times in {m.path}")
    return problems


@dataclass
class Run:
    status: int
    seconds: float
    first_failure: str
    output: str


_FAILURE = re.compile(r"^\s*\[(differ|error)\] (\S+) on (\w+)", re.M)


def run_main_job(
    copy: str, patterns: Sequence[str], timeout: float, exclude: Sequence[str] = ()
) -> Run:
    args = [*MAIN_JOB, "--maxfail", "1"]
    for p in [*patterns, *(f"!{e}" for e in exclude)]:
        args += ["-k", p]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, copy, *args],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        status, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        status, output = -1, f"timed out after {timeout:.0f}s\n{e.stdout or ''}"
    seconds = time.perf_counter() - started
    found = _FAILURE.search(output)
    first = f"{found.group(2)} ({found.group(3)}, {found.group(1)})" if found else ""
    if status in (0, 1) and "plant_bugs: ran on the copy" not in output:
        status = 3  # cannot tell what ran
    return Run(status, seconds, first, output)


def apply(copy: str, m: Mutation) -> str:
    target = os.path.join(copy, m.path)
    with open(target) as f:
        original = f.read()
    with open(target, "w") as f:
        f.write(original.replace(m.old, m.new, 1))
    return original


def restore(copy: str, m: Mutation, original: str) -> None:
    with open(os.path.join(copy, m.path), "w") as f:
        f.write(original)


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/plant_bugs.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "-m", dest="names", action="append", default=[], help="only this mutation (repeat)"
    )
    parser.add_argument(
        "--full", action="store_true", help="run what the hints miss on the whole main job"
    )
    parser.add_argument("--no-hints", action="store_true", help="skip the hint runs (with --full)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave these cases out of every run (e.g. 'planted.': the corpus before them)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args(argv)

    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        print(f"plant_bugs: unknown mutation(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    if args.list:
        for m in chosen:
            print(f"{m.name:36} {m.path:38} {m.stands_for}")
        return 0
    # a text others have edited since is reported and skipped, the rest still run
    problems = check_mutations(chosen)
    if problems:
        print("plant_bugs: cannot plant:\n  " + "\n  ".join(problems), file=sys.stderr)
    unplantable = {p.split(":")[0] for p in problems}
    if args.no_hints and not args.full:
        print("plant_bugs: --no-hints needs --full", file=sys.stderr)
        return 2

    tmp = tempfile.mkdtemp(prefix="plant_bugs_")
    try:
        make_copy(tmp)
        hints = sorted({p for m in chosen if m.name not in unplantable for p in m.hints})
        if not args.no_hints:
            base = run_main_job(tmp, hints, args.timeout, args.exclude)
            print(f"unmutated copy on the hint cases: exit {base.status} ({base.seconds:.0f}s)")
            if base.status != 0:
                print(base.output[-4000:])
                print("plant_bugs: the unmutated copy does not pass the hint cases; cannot judge")
                return 2
        rows = [["mutation", "stands for", "result", "first failing case", "s"]]
        missed = 0
        for m in chosen:
            if m.name in unplantable:
                rows.append([m.name, m.stands_for[:60], "NOT PLANTED", "text not found", "0"])
                continue
            original = apply(tmp, m)
            try:
                runs = []
                if not args.no_hints:
                    runs.append(("hints", run_main_job(tmp, m.hints, args.timeout, args.exclude)))
                if args.full and (not runs or runs[-1][1].status == 0):
                    runs.append(("main job", run_main_job(tmp, [], args.timeout, args.exclude)))
            finally:
                restore(tmp, m, original)
            where, run = runs[-1]
            if run.status == 1:
                result = f"caught ({where})"
            elif run.status == 0:
                result, missed = f"MISSED ({where})", missed + 1
            else:
                print(run.output[-3000:])
                print(f"plant_bugs: {m.name}: the run exited {run.status}; cannot judge")
                return 2
            seconds = f"{sum(r.seconds for _, r in runs):.0f}"
            rows.append([m.name, m.stands_for[:60], result, run.first_failure, seconds])
            print(f"{m.name}: {result} {run.first_failure}", flush=True)
        print()
        print(table(rows))
        planted = len(chosen) - len(unplantable)
        print(
            f"\n{planted - missed} of {planted} planted caught"
            + (f"; {len(unplantable)} not planted (text not found)" if unplantable else "")
        )
        return 1 if missed else 2 if unplantable else 0
    finally:
        if args.keep:
            print(f"copy kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
