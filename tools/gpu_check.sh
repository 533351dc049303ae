#!/usr/bin/env bash
# One prepared check of refimpl's PJRT fast path on the machine's accelerator
# (issue 32): build + install, doctor, transfer/donation checks, the pjrt unit
# tests that make sense on a GPU, a sample of the conformance suite on
# ref,pjrt, and the dispatch benchmark against jax.jit on the same device.
#
#   OUT=/path/to/out [PYTHON=python3] bash tools/gpu_check.sh [--quick] [--build|--no-build]
#
# Run from anywhere; it works in the repository root. Every step has its own
# time limit and the script goes on past failures; $OUT/summary.md lists each
# step's status and seconds, then the results. Logs (flat, 8 files at most):
#   summary.md env.log build.log transfers.log tests.log conformance.log
#   bench.log bench.json
# Progress goes to stdout with timestamps (all that comes back if files fail).
#
# Full mode fits 8 minutes on a 16-core GPU machine (build included); --quick
# (fewer tests, conformance families and benchmark rounds; no build when
# refimpl._pjrt already imports) fits 4 minutes on the CPU plugin.
#
# Build: --build always runs `pip install --no-build-isolation --no-deps .`;
# --no-build never; default (auto): build when refimpl._pjrt does not import.
# After a (non-editable) install the built extension is also copied into the
# source tree's refimpl/ (ignored by git), because the steps run from the
# repository root, where ./refimpl shadows the installed package.
#
# Environment set here for every step (JAX and refimpl share one GPU):
#   XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX reads it; refimpl's GPU client
#   follows the same variable: runtime.client_create_options), unless set.
set -u
set -o pipefail

START=$(date +%s)
QUICK=0
BUILD=auto
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --build) BUILD=yes ;;
    --no-build) BUILD=no ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $arg" >&2; exit 2 ;;
  esac
done

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO" || exit 2
PY="${PYTHON:-python3}"
# an absolute path (the build step runs Python from another directory); the
# symlink itself is kept: resolving a venv's python would leave the venv
if [[ "$PY" == */* ]]; then PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"; fi
export PY
export OUT="${OUT:-$REPO/build/gpu_check_out}"
export REPO
mkdir -p "$OUT"
: >"$OUT/summary.md"

export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PYTHONDONTWRITEBYTECODE=1
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 4)}"

MODE=full
[[ $QUICK == 1 ]] && MODE=quick

elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[$(date +%H:%M:%S) +$(elapsed)s] $*"; }

# The whole run has a budget (GPU_CHECK_BUDGET seconds; full 450, quick 220):
# each step's limit is its own maximum, cut so that the steps after it keep
# their minimum (RESERVE: seconds still needed after the named step).
if [[ $QUICK == 1 ]]; then BUDGET=${GPU_CHECK_BUDGET:-220}; else BUDGET=${GPU_CHECK_BUDGET:-450}; fi
DEADLINE=$(( START + BUDGET ))
# minima: build 60, smoke 10, doctor 10, transfers 15, bench 30, each conformance run 20
declare -A RESERVE=(
  [env]=185 [build]=125 [smoke]=115 [doctor]=105 [transfers]=90 [bench]=60
  [conformance-other]=40 [conformance-lax]=20 [conformance-np]=0 [tests]=0
)

STEP_ROWS=()
# step NAME MAX_S LOG -- command...: runs the command with its own time
# limit (SIGINT first, so pytest still prints its summary; KILL 10 s later),
# appends its output to $OUT/LOG, prints the last lines, records the status.
step() {
  local name=$1 limit=$2 logfile=$3
  shift 4
  local t0 rc status left
  t0=$(date +%s)
  left=$(( DEADLINE - t0 - ${RESERVE[$name]:-0} ))
  (( left < limit )) && limit=$left
  if (( limit < 10 )); then
    STEP_ROWS+=("| $name | SKIPPED (budget spent) | 0 | $logfile |")
    echo "===== $name: skipped, the ${BUDGET}s budget is spent" >>"$OUT/$logfile"
    log "step $name: SKIPPED (budget of ${BUDGET}s spent)"
    return 0
  fi
  log "step $name: start (limit ${limit}s): $*"
  {
    echo "===== $name: $* (limit ${limit}s)"
  } >>"$OUT/$logfile"
  # shell functions run in a child bash (exported with export -f); timeout
  # signals the whole process group, so pytest & co. get the SIGINT too
  timeout -s INT -k 10 "$limit" bash -c '"$@"' _ "$@" >>"$OUT/$logfile" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - t0 ))
  case $rc in
    0) status=ok ;;
    124|137) status="TIMEOUT" ;;
    *) status="FAILED (rc $rc)" ;;
  esac
  echo "===== $name: $status after ${secs}s" >>"$OUT/$logfile"
  STEP_ROWS+=("| $name | $status | $secs | $logfile |")
  log "step $name: $status after ${secs}s; last lines of $logfile:"
  tail -n "${TAIL_LINES:-8}" "$OUT/$logfile" | sed 's/^/    /'
  return $rc
}

log "gpu_check ($MODE) in $REPO with $PY; output in $OUT"

# ---------------------------------------------------------------- environment
env_report() {
  echo "--- date: $(date -u)"
  echo "--- host: $(uname -a)"
  echo "--- nproc: $(nproc 2>/dev/null)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "--- nvidia-smi"
    nvidia-smi 2>&1 | head -25
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  else
    echo "--- nvidia-smi: not found (no NVIDIA GPU tools)"
  fi
  echo "--- python: $("$PY" --version 2>&1) at $(command -v "$PY")"
  "$PY" - <<'EOF'
import importlib.metadata as md
for name in ("jax", "jaxlib", "jax-cuda13-pjrt", "jax-cuda13-plugin", "jax-cuda12-pjrt",
             "numpy", "ml_dtypes", "cffi", "pybind11", "scikit-build-core", "pytest",
             "pytest-timeout", "hypothesis", "fastatomstruct-xla-cpu", "refimpl"):
    try:
        print(f"{name:22} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name:22} (not installed)")
import importlib.util
for module in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12", "fastatomstruct_xla_cpu"):
    try:
        spec = importlib.util.find_spec(module)
    except Exception as err:
        spec = None
    print(f"module {module}: {list(spec.submodule_search_locations or []) if spec else None}")
EOF
  echo "--- cmake: $(cmake --version 2>&1 | head -1); ninja: $(ninja --version 2>&1)"
  echo "--- jax"
  "$PY" - <<'EOF'
import os, time
t = time.perf_counter()
import jax
print("jax", jax.__version__, "devices:", jax.devices(), f"({time.perf_counter() - t:.1f}s)")
print("default backend:", jax.default_backend())
d = jax.devices()[0]
print("device kind:", getattr(d, "device_kind", "?"))
try:
    print("jax memory_stats:", {k: v for k, v in (d.memory_stats() or {}).items()
                                if k in ("bytes_in_use", "bytes_limit", "peak_bytes_in_use")})
except Exception as err:
    print("jax memory_stats:", err)
x = jax.numpy.arange(8.0) * 2
print("jax computes:", x.block_until_ready().sum())
print("XLA_FLAGS after jax:", os.environ.get("XLA_FLAGS", ""))
try:
    from jax._src import lib
    print("jax cuda_path:", getattr(lib, "cuda_path", None))
except Exception as err:
    print("jax cuda_path: ?", err)
EOF
  echo "--- jaxlib internals refimpl uses"
  "$PY" - <<'EOF'
checks = {
    "jaxlib.mlir._mlir_libs._jax_mlir_ext.register_dialects":
        "from jaxlib.mlir._mlir_libs import _jax_mlir_ext as m; m.register_dialects",
    "jaxlib._jax.mlir.serialize_portable_artifact":
        "from jaxlib import _jax; _jax.mlir.serialize_portable_artifact",
    "jaxlib.xla_client.CompileOptions": "from jaxlib import xla_client; xla_client.CompileOptions()",
    "stablehlo.get_current_version":
        "from jaxlib.mlir.dialects import stablehlo; print(stablehlo.get_current_version())",
}
for name, code in checks.items():
    try:
        exec(code)
        print(f"ok      {name}")
    except Exception as err:
        print(f"MISSING {name}: {type(err).__name__}: {err}")
EOF
}
export -f env_report
step env 90 env.log -- env_report

# ---------------------------------------------------------------- build
native_imports() { "$PY" -c "import refimpl._pjrt" >/dev/null 2>&1; }
# an editable install (a developer's venv) is never replaced by the auto build
editable_install() {
  "$PY" - >/dev/null 2>&1 <<'EOF'
import importlib.metadata as md, json, sys
text = md.distribution("refimpl").read_text("direct_url.json") or "{}"
sys.exit(0 if json.loads(text).get("dir_info", {}).get("editable") else 1)
EOF
}
build_and_install() {
  # a system Python may refuse installs (PEP 668); older pips ignore the variable
  export PIP_BREAK_SYSTEM_PACKAGES=1
  if ! "$PY" -m pip install --no-index --no-build-isolation --no-deps \
    -Cbuild-dir=build/gpu_check "$REPO"; then
    echo "pip install failed: building a wheel and unpacking its extension into $REPO/refimpl/"
    rm -rf build/gpu_check_wheel
    "$PY" -m pip wheel --no-index --no-build-isolation --no-deps \
      -Cbuild-dir=build/gpu_check -w build/gpu_check_wheel "$REPO" || return 1
    "$PY" - "$REPO" <<'EOF' || return 1
import glob, sys, zipfile
repo = sys.argv[1]
wheel = glob.glob(f"{repo}/build/gpu_check_wheel/refimpl-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("refimpl/_pjrt"):
            z.extract(name, repo)
            print("unpacked", name)
EOF
    "$PY" -c "import refimpl._pjrt as m; print('source-tree extension:', m.__file__)"
    return 2  # reported as FAILED (rc 2): not installed, but usable from the repository
  fi
  local so
  so=$(cd / && "$PY" -c "import refimpl._pjrt as m; print(m.__file__)") || return 1
  echo "installed extension: $so"
  if [[ "$so" != "$REPO"/* ]]; then
    cp -f "$so" "$REPO/refimpl/" && echo "copied into $REPO/refimpl/ (source-tree imports)"
  fi
  (cd / && "$PY" -c "import refimpl, refimpl._pjrt; print('installed refimpl imports:', refimpl.__file__)")
}
export -f build_and_install
if [[ $BUILD == auto ]] && ! native_imports && editable_install; then
  echo "refimpl is an editable install whose extension does not import: not replacing it;" \
    "rebuild it (pip install -e . --no-build-isolation) or pass --build" >>"$OUT/build.log"
  STEP_ROWS+=("| build | FAILED (editable install without its extension) | 0 | build.log |")
  log "step build: FAILED: editable install without its extension (not replaced)"
elif [[ $BUILD == yes ]] || { [[ $BUILD == auto ]] && ! native_imports; }; then
  step build 300 build.log -- build_and_install
else
  echo "build skipped ($BUILD; refimpl._pjrt imports)" >>"$OUT/build.log"
  STEP_ROWS+=("| build | skipped (already built) | 0 | build.log |")
  log "step build: skipped (refimpl._pjrt imports)"
fi

# ---------------------------------------------------------------- smoke, doctor
smoke() {
  "$PY" - <<'EOF'
# the plugin's C API version, read with ctypes alone (before any client exists)
import ctypes
from refimpl.backends.pjrt import runtime
path = runtime.find_plugin_path()
lib = ctypes.CDLL(path)
lib.GetPjrtApi.restype = ctypes.c_void_p
api = lib.GetPjrtApi()
major = ctypes.c_int.from_address(api + 32).value
minor = ctypes.c_int.from_address(api + 36).value
table = ctypes.c_size_t.from_address(api).value
print(f"plugin C API: {major}.{minor}, table {table} B (refimpl declares 0.106+): {path}")
EOF
  "$PY" - <<'EOF'
import time
t = time.perf_counter()
import numpy as np
import refimpl as ri
from refimpl.backends.pjrt import runtime
path = runtime.find_plugin_path()
print("plugin:", path, "kind:", runtime.plugin_kind(path))
print("create options:", runtime.client_create_options(runtime.plugin_kind(path)))
devices = ri.devices("pjrt")
print("devices:", devices, "platform:", devices[0].platform, "kind:", devices[0].kind)
try:
    print("memory_stats:", devices[0].memory_stats())
except Exception as err:
    print("memory_stats: FAILED", type(err).__name__, err)
from refimpl.backends.pjrt import lowering
lowering.mlir_context()
f = ri.jit(lambda x: ri.numpy.sin(x) * 2 + 1, backend="pjrt")
y = f(np.arange(4, dtype=np.float32))
print("jit result:", np.asarray(y), "on", y.device)
print(f"smoke ok in {time.perf_counter() - t:.1f}s")
EOF
}
export -f smoke
TAIL_LINES=10 step smoke 120 env.log -- smoke
step doctor 90 env.log -- "$PY" -m refimpl.backends.pjrt doctor

# ---------------------------------------------------------------- transfers, donation
TAIL_LINES=14 step transfers 120 transfers.log -- "$PY" tests/backends/test_gpu_transfers.py

# ---------------------------------------------------------------- dispatch benchmark
BENCH_ARGS=(--json "$OUT/bench.json")
[[ $QUICK == 1 ]] && BENCH_ARGS+=(--quick)
TAIL_LINES=22 step bench 150 bench.log -- "$PY" benchmarks/gpu_dispatch.py "${BENCH_ARGS[@]}"

# ---------------------------------------------------------------- conformance sample
# A few cases of every family (--sample), in three runs so that a run cut by
# its limit loses only its own families: the non-numeric families first
# (donation, device_put, jit, vmap, ad, random, scan, ...), then lax.*, then
# np.*/operator.*/promotion.*.
if [[ $QUICK == 1 ]]; then SAMPLE=(--sample 1); CONF_MAX=70; else SAMPLE=(--sample 1); CONF_MAX=150; fi
NUMERIC='lax.*,np.*,operator.*,promotion.*'
conformance_other() {
  "$PY" - "$@" <<'EOF'
import sys
from conformance import cli
from conformance.corpus import all_cases
numeric = {c.group for c in cli.sample_cases(all_cases(), families=sys.argv[1])}
others = sorted({c.group for c in all_cases()} - numeric)
sys.exit(cli.main(["--impl", "ref,pjrt", "--no-progress", "--timeout", "30", "--sample", "1",
                   "--families", ",".join(others)]))
EOF
}
export -f conformance_other
TAIL_LINES=16 step conformance-other "$CONF_MAX" conformance.log -- conformance_other "$NUMERIC"
CONF_COMMON=("$PY" -m conformance --impl ref,pjrt --no-progress --timeout 30 "${SAMPLE[@]}")
TAIL_LINES=16 step conformance-lax "$CONF_MAX" conformance.log -- \
  "${CONF_COMMON[@]}" --families 'lax.*'
TAIL_LINES=16 step conformance-np "$CONF_MAX" conformance.log -- \
  "${CONF_COMMON[@]}" --families 'np.*,operator.*,promotion.*'

# ---------------------------------------------------------------- unit tests
if [[ $QUICK == 1 ]]; then
  export TEST_FILES="tests/backends/test_gpu_transfers.py tests/backends/test_gpu_discovery.py
    tests/backends/test_pjrt_arrays.py"
  TEST_LIMIT=120
else
  export TEST_FILES="tests/backends/test_gpu_transfers.py tests/backends/test_gpu_discovery.py
    tests/backends/test_pjrt_arrays.py tests/backends/test_device_put.py tests/backends/test_pjrt_donation.py
    tests/backends/test_fast_path.py tests/backends/test_fast_eager.py tests/backends/test_compilation_cache.py"
  TEST_LIMIT=150
fi
run_tests() {
  if ! "$PY" -c "import pytest" >/dev/null 2>&1; then
    echo "pytest is not installed: unit tests skipped (the transfers step ran the GPU checks)"
    return 3
  fi
  local extra=(--durations=5)
  if "$PY" -c "import pytest_timeout" >/dev/null 2>&1; then extra+=(--timeout 60); fi
  "$PY" -m pytest -q -p no:cacheprovider -o addopts="" -m "not slow" \
    --import-mode=importlib -rfE "${extra[@]}" $TEST_FILES
}
export -f run_tests
TAIL_LINES=12 step tests "$TEST_LIMIT" tests.log -- run_tests

# ---------------------------------------------------------------- summary
{
  echo "# gpu_check ($MODE): $(date -u +%Y-%m-%dT%H:%MZ), $(elapsed) s in all"
  echo
  echo "| step | status | seconds | log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${STEP_ROWS[@]}"
  echo
  echo "## Machine"
  echo '```'
  grep -E "^(NVIDIA|name,|--- python|jax |jaxlib |jax-cuda|numpy |pytest |hypothesis |cffi |jax [0-9]|default backend|device kind|module jax_plugins)" "$OUT/env.log" | head -20
  grep -E "^(plugin|kind|options|platform|devices|memory|C API|create options|memory_stats):|^(plugin C API|jit result|smoke ok)" "$OUT/env.log" | head -24
  grep -E "^(MISSING|ok  )" "$OUT/env.log"
  echo '```'
  echo
  echo "## Transfers and donation"
  echo '```'
  grep -E "^(ok |FAIL|platform:|[0-9]+ passed)" "$OUT/transfers.log" | tail -16
  echo '```'
  echo
  echo "## Unit tests"
  echo '```'
  grep -E "passed|failed|error|FAILED|ERROR|skipped" "$OUT/tests.log" | tail -25
  echo '```'
  echo
  echo "## Conformance (ref,pjrt; --sample 1 of every family, in 3 runs)"
  echo '```'
  # each run's last 30 lines (its table, the per-platform tolerances used)
  awk '/^===== conformance-/ { if ($3 == "skipped,") print; else if (n) { for (i = (n > 30 ? n - 30 : 0); i < n; i++) print buf[i] }; n = 0; if ($3 ~ /^ok|^FAILED|^TIMEOUT/ || $0 ~ / after /) print; next } { buf[n++] = $0 }' "$OUT/conformance.log"
  echo '```'
  echo
  echo "## Dispatch: refimpl vs jax.jit on the same device (per call, medians)"
  echo '```'
  grep -vE "^=====" "$OUT/bench.log" | tail -22
  echo '```'
} >"$OUT/summary.md"

log "summary written to $OUT/summary.md"
echo "=================================================================== summary.md"
cat "$OUT/summary.md"
ls -la "$OUT"
FAILED=$(printf '%s\n' "${STEP_ROWS[@]}" | grep -cE "FAILED|TIMEOUT")
log "done: $FAILED step(s) failed or timed out"
exit 0
