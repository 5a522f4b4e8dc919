#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: checks hetlab's CuPy backend end to end.
#
#   scripts/gpu_check.sh            # from anywhere; uses python3 (or $PYTHON)
#
# Needs, already installed (no network is used): numpy, numba (+ numba-cuda where installed),
# cupy (cupy-cuda12x or cupy-cuda13x), xarray, pandas, pytest, hypothesis. It
#   1. records the environment (GPU, driver, versions)              -> env.txt
#   2. makes the working tree importable: PYTHONPATH (GPU_CHECK_PIP=1: pip -e, no deps)
#   3. runs tests/gpu (real GPU vs numpy reference, cuSPARSE) and the cupy cases of the
#      cross-backend tests (point clouds, sparse, quant, offload GPU blocks)
#                                                                     -> pytest.log
#   4. benchmarks/gpu.py: copy bandwidth, transfers, SpMV/SpMM vs the NVIDIA libraries,
#      quantized GEMV/GEMM, offload search with the cuda target    -> gpu_bench.log and the
#      recording data/recorded/offload-search-<machine>-<date>.json
#   5. times fps, knn, spmv, spmm, gemv_q on numpy / numba / cupy (hl.compare)
#                                  -> timing.log and data/recorded/<kernel>-<kinds>-<machine>-<date>.nc
#      (a .csv beside them instead where h5netcdf is missing)
#   6. memory offload: stream(tier="gpu") of a model that does not fit a 400 MB device budget
#      (GPU_CHECK_MEMOFF_S, 60 s)     -> memory_offload.log and
#      data/recorded/memory-offload-<machine>-<date>.nc (the report as a Dataset)
#   7. writes the report benchmarks/results/gpu-check-<machine>-<date>.md: machine, versions,
#      test summary, the benchmark and the timings, the recordings written
# The recordings and the report land in the working tree, ready to commit; each names the
# machine: $GPU_CHECK_MACHINE, else the GPU's name from nvidia-smi. When $OUT is set (the
# device tool's output folder) they are also copied to $OUT/data/recorded/ and
# $OUT/benchmarks/results/ (copy $OUT's two folders over the checkout to commit them) and the
# logs go to $OUT/logs; else the logs go to ./gpu-check-logs (ignored by git).
# Each step has its own time limit (GPU_CHECK_TESTS_S, GPU_CHECK_BENCH_S, GPU_CHECK_TIMING_S,
# GPU_CHECK_MEMOFF_S: 150, 200, 90, 60 s), so one slow step cannot eat a short device lease; about 6 minutes in all.
# Exit status: 0 all passed; 1 a test or the timing failed; 2 no usable GPU.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
PY="${PYTHON:-python3}"
LOG="${OUT:+$OUT/logs}"
LOG="${LOG:-$ROOT/gpu-check-logs}"
REC="$ROOT/data/recorded"          # recordings: where hl.compare(..., include_recorded=True) looks
RES="$ROOT/benchmarks/results"     # reports
DATE="$(date -u +%F)"
mkdir -p "$LOG" "$REC" "$RES"
STARTED="$LOG/.started"         # files newer than this were written by this run
touch "$STARTED"
trap 'rm -f "$STARTED"' EXIT
# (numba-cuda builds that predate NumPy 2.5 need np.row_stack, which NumPy 2.5 removed:
# hetlab's GPU probe restores the alias, see hetlab/backends/cupy.py; the preflight below
# compiles one kernel, so a toolchain that cannot compile stops the check in seconds.)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
status=0

echo "== environment" | tee "$LOG/env.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  "$PY" - <<'EOF'
import importlib, platform
print("python", platform.python_version())
for mod in ("numpy", "numba", "cupy", "xarray", "pandas", "pytest", "hypothesis"):
    try:
        m = importlib.import_module(mod)
        print(f"{mod} {getattr(m, '__version__', '?')}")
    except Exception as exc:
        print(f"{mod} MISSING ({exc})")
try:
    import numba.cuda as nc
    print("numba.cuda from", nc.__file__)
except Exception as exc:
    print("numba.cuda unusable:", exc)
try:
    import cupy
    print("cuda runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "driver", cupy.cuda.runtime.driverGetVersion())
except Exception as exc:
    print("cupy runtime:", exc)
EOF
} 2>&1 | tee -a "$LOG/env.txt"

MACHINE="${GPU_CHECK_MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null \
  | head -n 1)}"
MACHINE="${MACHINE:-unknown GPU machine}"
SLUG="$(printf '%s' "$MACHINE" | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' | sed 's/^-*//; s/-*$//')"
REPORT="$RES/gpu-check-${SLUG:-machine}-$DATE.md"
export GPU_CHECK_MACHINE="$MACHINE"
echo "machine: $MACHINE" | tee -a "$LOG/env.txt"

echo "== install (no network)"
# Wheels carried to the machine (device tool: carry [".whl"]), e.g. h5netcdf so that the
# timing step writes netCDF recordings: `python -m pip download --no-deps --only-binary=:all:
# --python-version 3.12 --platform manylinux2014_x86_64 -d .whl h5netcdf==1.8.2` here first.
if compgen -G "$ROOT/.whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/hetlab-site "$ROOT"/.whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/hetlab-site"
  echo "installed carried wheels: $(cd "$ROOT/.whl" && ls)"
fi
# PYTHONPATH (set above) makes this tree's hetlab win without touching the environment;
# GPU_CHECK_PIP=1 also installs it editable (pip -e --no-deps --no-build-isolation).
if [ "${GPU_CHECK_PIP:-0}" = 1 ]; then
  if "$PY" -m pip install --no-deps --no-build-isolation -e . >"$LOG/pip.log" 2>&1; then
    echo "editable install done"
  else
    echo "pip install failed (see pip.log); PYTHONPATH=$ROOT still applies"
  fi
else
  echo "PYTHONPATH=$ROOT (set GPU_CHECK_PIP=1 to pip install -e as well)"
fi

echo "== preflight" | tee -a "$LOG/env.txt"
if ! "$PY" - <<'EOF' 2>&1 | tee -a "$LOG/env.txt"
import hetlab as hl
print(hl.__file__)
from hetlab.core.registry import get_backend
get_backend("cupy").require()  # raises BackendUnavailable naming why
print(get_backend("cupy").info())
import cupy
from numba import cuda

@cuda.jit
def _twice(a):  # one numba-cuda compile and launch: the toolchain works here
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= 2

a = cupy.arange(8, dtype=cupy.float32)
_twice[1, 8](a)
assert cupy.asnumpy(a).tolist() == [2.0 * i for i in range(8)], a
print("numba-cuda compiled and ran a kernel")
EOF
then
  echo "no usable GPU: see $LOG/env.txt"
  exit 2
fi

echo "== tests (log: $LOG/pytest.log)"
export PYTHONUNBUFFERED=1
XDIST=()
"$PY" -c "import xdist" 2>/dev/null && XDIST=(-n 8)
# the cupy cases only: the CPU backends and the CUDA simulator are CI's job
timeout "${GPU_CHECK_TESTS_S:-150}" "$PY" -m pytest -q -rfEs -p no:cacheprovider "${XDIST[@]}" \
  -k "cupy or gpu" \
  tests/gpu tests/test_pointcloud.py tests/test_sparse_kernels.py tests/test_quant_kernels.py \
  tests/test_offload_gpu_blocks.py tests/test_offload_memory_gpu.py >"$LOG/pytest.log" 2>&1 || status=1
tail -n 30 "$LOG/pytest.log"

echo "== benchmark (log: $LOG/gpu_bench.log)"
timeout "${GPU_CHECK_BENCH_S:-200}" "$PY" "$ROOT/benchmarks/gpu.py" --record-dir "$REC" \
  --machine "$MACHINE" 2>&1 | tee "$LOG/gpu_bench.log" || status=1

echo "== timing (log: $LOG/timing.log)"
LOG="$LOG" REC="$REC" timeout "${GPU_CHECK_TIMING_S:-90}" "$PY" - <<'EOF' 2>&1 | tee "$LOG/timing.log"
import importlib.util, os, sys
import pandas as pd
import hetlab as hl

pd.set_option("display.width", 160)
out = os.environ["REC"]
machine = os.environ["GPU_CHECK_MACHINE"]
devices = ["numpy", "cupy"]
if importlib.util.find_spec("hetlab.kernels.pointcloud.numba") is not None:
    devices.insert(1, "numba")
ok = True
# the sizes the notebooks compare at, so their include_recorded=True finds matching runs
sizes = {hl.fps: [10_000, 100_000], hl.knn: [10_000, 100_000], hl.spmv: [20_000, 200_000],
         hl.spmm: [20_000, 200_000], hl.gemv_q: [1024, 4096]}
for kernel, kernel_sizes in sizes.items():
    ds = hl.compare(kernel, sizes=kernel_sizes, devices=devices, repeats=3, progress=False)
    name = ds.attrs["kernel"]
    print(f"\n{name}: {ds.attrs.get('description', '')}")
    print(ds.hetlab.table().to_string())
    print("speedup over numpy (median time):")
    print(ds.hetlab.speedup("numpy").to_pandas().to_string())
    ok &= bool(ds["verified"].all())
    try:
        # a recording in data/recorded/: hl.compare(..., include_recorded=True) shows these
        # GPU figures beside live CPU runs, labeled "recorded on <GPU>, <date>"
        print("recorded", hl.record(ds, folder=out, machine=machine))
    except Exception as exc:  # h5netcdf may be missing on GPU images
        from hetlab.recorded import machine_slug

        csv = os.path.join(out, f"{name}-{machine_slug(machine)}-{ds.attrs['created'][:10]}.csv")
        with open(csv, "w") as fh:
            fh.write(f"# {name} on {machine}, {ds.attrs['created']} (hetlab.compare)\n")
            ds.hetlab.table().to_csv(fh)
        print(f"(netCDF not written: {type(exc).__name__}: {exc}; wrote {csv})")
sys.exit(0 if ok else 1)
EOF
[ $? -eq 0 ] || status=1

echo "== memory offload (log: $LOG/memory_offload.log)"
# a decoder of TinyLlama-1.1B's layer shapes (seeded weights) that does not fit a 400 MB device
# budget, streamed from pinned host memory: its report -> data/recorded/memory-offload-*.nc
REC="$REC" timeout "${GPU_CHECK_MEMOFF_S:-60}" "$PY" - <<'EOF' 2>&1 | tee "$LOG/memory_offload.log" \
  || status=1
import os
from hetlab.offload_memory import recording

path = recording.record_gpu_run(os.environ["REC"], os.environ["GPU_CHECK_MACHINE"])
ds = recording.load_recording(path)
print("recorded", path)
print(ds.to_dataframe()[["bytes_read", "read_s", "compute_s", "overlap_s", "stall_s"]])
print({k: ds.attrs[k] for k in ("gpu", "budget_bytes", "peak_bytes", "wall_s",
                                "hidden_fraction")})
EOF

echo "== report: $REPORT"
WRITTEN="$(find "$REC" -maxdepth 1 -type f -newer "$STARTED" | sort)"
{
  echo "# GPU check on $MACHINE, $DATE"
  echo
  echo "Written by \`scripts/gpu_check.sh\` (exit status $status; 0: every test passed and every"
  echo "timed result was verified). Commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null \
    || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' + local changes')."
  echo "Every figure below was measured in this run on this machine."
  echo
  echo "## Recordings written"
  echo
  for f in $WRITTEN; do echo "- \`${f#"$ROOT"/}\`"; done
  [ -n "$WRITTEN" ] || echo "- none"
  echo
  echo "## Environment"
  echo; echo '```'; cat "$LOG/env.txt"; echo '```'
  echo
  echo "## Tests (cupy cases; summary)"
  echo; echo '```'; tail -n 15 "$LOG/pytest.log" 2>/dev/null; echo '```'
  echo
  echo "## Benchmark (benchmarks/gpu.py)"
  echo; echo '```'; cat "$LOG/gpu_bench.log" 2>/dev/null; echo '```'
  echo
  echo "## Timings (hl.compare)"
  echo; echo '```'; cat "$LOG/timing.log" 2>/dev/null; echo '```'
  echo
  echo "## Memory offload (stream(tier='gpu'), a model larger than its device budget)"
  echo; echo '```'; cat "$LOG/memory_offload.log" 2>/dev/null; echo '```'
} >"$REPORT"
if [ -n "${OUT:-}" ]; then  # the device tool returns only $OUT: mirror the tree's new files
  mkdir -p "$OUT/data/recorded" "$OUT/benchmarks/results"
  for f in $WRITTEN; do cp "$f" "$OUT/data/recorded/"; done
  cp "$REPORT" "$OUT/benchmarks/results/"
fi
echo "== done: status $status (report $REPORT; logs in $LOG)"
exit $status
