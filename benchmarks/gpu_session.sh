#!/usr/bin/env bash
# One call on the GPU host, after the wheelhouse parts are in /root/wh (see docs/gpu-host.md):
# install, run the GPU tests and the kernel tests on the real device, then the demo workflow on GPU and CPU.
# Everything worth keeping goes to $OUT (and benchmarks/results/ in the copy that comes back).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -d /tmp/site/snakemake ] || bash /root/wh/install.sh /root/wh > "$OUT/install.log" 2>&1 || { tail "$OUT/install.log"; exit 1; }
export PYTHONPATH=$PWD/src:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L
python3 - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import importlib
for m in ("numpy", "cupy", "cudf", "kvikio", "rmm", "numba", "numba.cuda", "torch", "snakemake", "holoviews", "datashader"):
    mod = importlib.import_module(m); print(m, getattr(mod, "__version__", ""))
import kvikio.defaults, kvikio.cufile_driver
print("kvikio compat preferred:", kvikio.defaults.is_compat_mode_preferred(), "GDS available:", kvikio.cufile_driver.get("is_gds_available"))
PY
python3 -m pytest -q -p no:cacheprovider -W ignore::numba.core.errors.NumbaPerformanceWarning tests/ 2>&1 | tee "$OUT/pytest-gpu.log" | tail -25
stamp=$(date -u +%Y%m%d)
python3 benchmarks/run_workflow.py --devices gpu cpu --out "benchmarks/results/demo-h200-$stamp.json" --keep-logs "$OUT/runs" 2>&1 | tee "$OUT/workflow.log" | tail -40
cp "benchmarks/results/demo-h200-$stamp.json" "$OUT/" 2>/dev/null
cd "$OUT" && tar czf runs.tgz runs && rm -rf runs
