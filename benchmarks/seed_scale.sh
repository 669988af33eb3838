#!/usr/bin/env bash
# The seed's case on the GPU host (after gpu_session.sh installed the wheelhouse): a 20-hour 2-lead record
# at 250 Hz with truth, through the whole workflow with device: gpu (and cpu with CPU=1).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
[ -f data/holter20h.csv ] || { time python3 -m beatflow.synth data/holter20h.csv data/holter20h_truth.csv --hours 20 --sheet data/holter20h.tsv; } 2>&1
ls -la data
devices="gpu"; [ "${CPU:-0}" = 1 ] && devices="gpu cpu"
stamp=$(date -u +%Y%m%d)
python3 benchmarks/run_workflow.py --devices $devices --out "benchmarks/results/holter20h-h200-$stamp.json" \
  --keep-logs "$OUT/runs" -- --config records=data/holter20h.tsv 2>&1 | tee "$OUT/workflow20h.log" | tail -40
cp "benchmarks/results/holter20h-h200-$stamp.json" "$OUT/" 2>/dev/null
cd "$OUT" && tar czf runs20h.tgz runs && rm -rf runs
