#!/usr/bin/env bash
# On the GPU host, after the wheelhouse parts are in /root/wh (docs/design.md, H200 section). One phase per call, back to
# back (each call gets a fresh copy of the working tree; installed packages and data/ stay while it is warm):
#   gpu    install; the GPU tests (TESTS=0: none); stage figures on the 20 h record (synthesised here, ~15 s)
#   seed   the workflow on the 20 h record with device: gpu, then device: cpu, into one JSON
#   demo   the demo workflow on both backends
# Results go to benchmarks/results/ and to $OUT, which comes back; TAG=s9 names them <name>-<date>-s9.json.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -d /tmp/site/snakemake ] || bash /root/wh/install.sh /root/wh > "$OUT/install.log" 2>&1 || { tail "$OUT/install.log"; exit 1; }
export PYTHONPATH=$PWD/src:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
stamp=$(date -u +%Y%m%d)${TAG:+-$TAG}
[ -f data/holter20h.csv ] || python3 -m beatflow.synth data/holter20h.csv data/holter20h_truth.csv --hours 20 --sheet data/holter20h.tsv
case "${1:?phase: gpu, seed or demo}" in
gpu)
  nvidia-smi -L
  [ "${TESTS:-1}" = 0 ] || python3 -m pytest -q -p no:cacheprovider -W ignore::numba.core.errors.NumbaPerformanceWarning \
    tests/test_gpu_transfers.py tests/test_gpu.py tests/test_chunking.py tests/test_kernels.py tests/test_veto.py tests/test_fusion.py tests/test_searchback.py 2>&1 | tee "$OUT/pytest-gpu.log" | tail -8
  timeout 150 python3 benchmarks/stages.py data/holter20h.csv --out "benchmarks/results/stages-h200-$stamp.json" \
    --batch-sizes 256 512 1024 > "$OUT/stages.log" 2>&1; tail -c 1500 "$OUT/stages.log" ;;
seed)
  timeout 560 python3 benchmarks/run_workflow.py --devices gpu cpu --out "benchmarks/results/holter20h-h200-$stamp.json" \
    --keep-logs "$OUT/runs" --records data/holter20h.tsv 2>&1 | tail -25 ;;
demo)
  timeout 400 python3 benchmarks/run_workflow.py --devices gpu cpu --out "benchmarks/results/demo-h200-$stamp.json" \
    --keep-logs "$OUT/runs" 2>&1 | tail -12 ;;
esac
cp benchmarks/results/*-"$stamp".json "$OUT/" 2>/dev/null
(cd "$OUT" && [ -d runs ] && tar czf "runs-$1.tgz" runs && rm -rf runs); true
