#!/usr/bin/env bash
# Build refimpl._pjrt with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DREFIMPL_SANITIZE=address,undefined) into build/sanitize, then run the
# native and fast-path tests against that module.
#
#   tools/sanitize.sh                 # build + tests/native/ tests/backends/test_fast_path.py
#   tools/sanitize.sh tests/test_x.py # build + the given pytest arguments
#
# CPython itself is not instrumented, so libasan is preloaded (it must come
# first in the process) and leak detection is off (the interpreter keeps
# memory until exit by design). Any sanitizer report aborts the run with a
# nonzero status. .ci/run runs it (step "sanitizers") on the native, fast-path,
# pmap and host-callback tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
BUILD=${REFIMPL_SANITIZE_BUILD:-build/sanitize}
SANITIZERS=${REFIMPL_SANITIZE:-address,undefined}

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DREFIMPL_SANITIZE="$SANITIZERS" \
  -DPython_EXECUTABLE="$PY" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/dev/null
cmake --build "$BUILD" --target _pjrt -j "${JOBS:-2}"

module=$(ls "$BUILD"/_pjrt*.so)
libasan=$(${CXX:-g++} -print-file-name=libasan.so)
libubsan=$(${CXX:-g++} -print-file-name=libubsan.so)
if [ $# -eq 0 ]; then
  set -- tests/native/ tests/backends/test_fast_path.py
fi
echo "sanitize: running pytest $* with $module"
LD_PRELOAD="$libasan $libubsan" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_init_order=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
REFIMPL_SANITIZED_PJRT="$module" \
PYTHONPATH="tools${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" -m pytest -q -p no:cacheprovider -p sanitize_plugin "$@"
