"""Peak memory of reverse-mode differentiation: invertible VJP and checkpoint.

1. A reversible residual network (RevNet blocks ``x1 += tanh(x2 @ A)``,
   ``x2 += tanh(x1 @ B)``) of depth 8, 32 and 128, differentiated with plain
   ``grad`` and with ``ri.invertible`` (weights closed over, activations
   rebuilt from the outputs in the backward pass).
2. A 16-layer MLP (``x = tanh(x @ W + b)``) differentiated plainly and with
   every layer under ``ri.checkpoint(policy=nothing_saveable)``.

Gradients are taken with respect to the inputs (activations), the weights
being closed over, so the measure is the memory of the activations and their
cotangents rather than of the weight gradients (which every method must
produce). "Backward peak" is the peak memory during the pullback (the backward pass)
above what was allocated before the forward pass, so it includes the
residuals the forward pass kept:

* ref: ``tracemalloc`` (NumPy reports its buffers to it), started before
  ``ri.vjp`` and with its peak reset after it;
* pjrt: eager execution on a PJRT device, in a fresh subprocess per
  configuration; the peak resident set size (``VmHWM``, reset through
  ``/proc/self/clear_refs``) during the pullback minus the RSS before the
  forward pass.

Gradients are checked against plain ``grad`` in every configuration.

Run: ``python benchmarks/memory_ad.py [--batch 128] [--width 256] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tracemalloc
from typing import Any

import numpy as np

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.invertible import invertible

DEPTHS = (8, 32, 128)


def revnet_params(depth: int, width: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(width)
    return [
        (rng.standard_normal((width, width)) * scale).astype(np.float32) for _ in range(2 * depth)
    ]


def revnet(params: list, x1: Any, x2: Any) -> tuple[Any, Any]:
    for i in range(len(params) // 2):
        x1 = x1 + rnp.tanh(x2 @ params[2 * i])
        x2 = x2 + rnp.tanh(x1 @ params[2 * i + 1])
    return x1, x2


def revnet_loss(kind: str):
    def loss(params: list, x1: Any, x2: Any) -> Any:
        if kind == "invertible":
            y1, y2 = invertible(lambda a, b: revnet(params, a, b))(x1, x2)
        else:
            y1, y2 = revnet(params, x1, x2)
        return rnp.sum(y1 * y2)

    return loss


def mlp_params(depth: int, width: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(width)
    return [
        (
            (rng.standard_normal((width, width)) * scale).astype(np.float32),
            np.zeros(width, np.float32),
        )
        for _ in range(depth)
    ]


def mlp_loss(kind: str):
    def layer(x: Any, w: Any, b: Any) -> Any:
        return rnp.tanh(x @ w + b)

    if kind == "checkpoint":
        layer = ri.checkpoint(layer, policy=ri.checkpoint_policies.nothing_saveable)

    def loss(params: list, x: Any) -> Any:
        for w, b in params:
            x = layer(x, w, b)
        return rnp.sum(x * x)

    return loss


def make_case(case: str, kind: str, depth: int, batch: int, width: int, device: Any = None):
    rng = np.random.default_rng(1)
    # refimpl arrays up front: refimpl.numpy would copy a NumPy weight at each use
    put = (lambda v: ri.device_put(v, device)) if device is not None else ri.device_put
    if case == "revnet":
        params = [put(p) for p in revnet_params(depth, width)]
        xs = [put(rng.standard_normal((batch, width)).astype(np.float32)) for _ in range(2)]
        return revnet_loss(kind), params, xs
    params = [(put(w), put(b)) for w, b in mlp_params(depth, width)]
    xs = [put(rng.standard_normal((batch, width)).astype(np.float32))]
    return mlp_loss(kind), params, xs


def grads_with_peak_ref(loss, params, xs) -> tuple[list, int]:
    tracemalloc.start()
    try:
        _, pullback = ri.vjp(lambda *xs: loss(params, *xs), *xs)
        tracemalloc.reset_peak()
        grads = pullback(np.float32(1.0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return [np.asarray(g) for g in ri.tree_leaves(grads)], peak


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def grads_with_peak_pjrt(loss, params, xs) -> tuple[list, int]:
    before = _rss_kib("VmRSS")
    _, pullback = ri.vjp(lambda *xs: loss(params, *xs), *xs)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    grads = pullback(np.float32(1.0))
    peak = _rss_kib("VmHWM") - before
    return [np.asarray(g) for g in ri.tree_leaves(grads)], peak * 1024


def _pjrt_child(case: str, kind: str, depth: int, batch: int, width: int, out: str) -> None:
    device = ri.devices("pjrt")[0]
    loss, params, xs = make_case(case, kind, depth, batch, width, device)
    ri.vjp(lambda *xs: loss(params, *xs), *xs)[1](np.float32(1.0))  # compile every op first
    grads, peak = grads_with_peak_pjrt(loss, params, xs)
    np.savez(out, *grads)
    print(json.dumps({"peak": peak}))


def run_pjrt(case: str, kind: str, depth: int, batch: int, width: int, out: str) -> int:
    cmd = [sys.executable, __file__, "--child", case, kind, str(depth), str(batch), str(width), out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--no-pjrt", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", choices=("revnet", "mlp"), default=None)
    parser.add_argument("--mlp-batch", type=int, default=1024)
    args = parser.parse_args()
    mib = 2.0**20
    results: dict[str, Any] = {"batch": args.batch, "width": args.width, "rows": []}
    plans = [("revnet", d, ("plain", "invertible"), args.batch) for d in DEPTHS]
    # a larger batch for the MLP: its activations must dominate the coarse RSS measure
    plans.append(("mlp", 16, ("plain", "checkpoint"), args.mlp_batch))
    plans = [p for p in plans if args.only in (None, p[0])]
    for case, depth, kinds, batch in plans:
        row: dict[str, Any] = {"case": case, "depth": depth, "batch": batch}
        ref_grads = None
        for kind in kinds:
            loss, params, xs = make_case(case, kind, depth, batch, args.width)
            grads, peak = grads_with_peak_ref(loss, params, xs)
            if ref_grads is None:
                ref_grads = grads
            err = max(
                float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-30))
                for a, b in zip(ref_grads, grads)
            )
            row[f"ref_{kind}_mib"] = peak / mib
            row[f"{kind}_max_rel_err"] = err
            if not args.no_pjrt:
                out = f"/tmp/memory_ad_{case}_{kind}_{depth}.npz"
                row[f"pjrt_{kind}_mib"] = run_pjrt(case, kind, depth, batch, args.width, out)
                row[f"pjrt_{kind}_mib"] /= mib
                with np.load(out) as data:
                    got = [data[k] for k in sorted(data.files, key=lambda s: int(s.split("_")[1]))]
                row[f"pjrt_{kind}_max_rel_err"] = max(
                    float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-30))
                    for a, b in zip(ref_grads, got)
                )
        print(json.dumps(row))
        results["rows"].append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, case, kind, depth, batch, width, out = sys.argv
        _pjrt_child(case, kind, int(depth), int(batch), int(width), out)
    else:
        main()
