#!/usr/bin/env bash
# On the GPU host, after the wheelhouse parts are in /root/wh (made here by `PART_MB=40 ../shared/gpu-wheelhouse/build --
# wfdb pyedflib jsonschema lightgbm`: the host lacks lightgbm, which the classifier needs; each .gpu-wheelhouse/part-NN
# carried and copied there in its own call). One phase per call, back to back (each call gets a fresh copy of the
# working tree; installed packages and data/ stay while it is warm):
#   gpu    install; the GPU tests (TESTS=0: none), logged by name to benchmarks/results/pytest-gpu-h200-<stamp>.log; stage figures on the 20 h record (synthesised here, ~15 s; STAGES=0: not)
#   seed   the workflow on the 20 h record: device gpu, cpu, and gpu with a process per job (no warm workers), into one JSON
#   demo   the demo workflow on both backends
#   profile  what a rule's process pays before its work (python3 -m benchmarks.imports), then seed
#   warm   the 20 h record's warm GPU run alone: once to compile its kernels, then REPEATS (2) times
#   cohort8  8 copies of the 20 h record in one snakemake call, GPU backend (COHORT8_DEVICES=cpu: the CPU backend, ~320 s), nvidia-smi sampled every 250 ms
#   mitdb  the 22 MIT-BIH DS1 records as one cohort (WFDB with their .atr, carried to /root/mitdb beforehand):
#          where each job's time goes on the GPU (benchmarks/job_profile.py; PROFILE=0: not), then GPU and CPU
#          backends in one report (each record's evaluation.json: detection and classes)
#   h20    where each job's time goes on the 20 h record (PROFILE=0: not), the record on the GPU and the CPU (H20_DEVICES),
#          their classes beat by beat (benchmarks/backend_agreement.py; results kept in KEEP, default /tmp/keep20),
#          then the 8 x 20 h cohort (COHORT8_DEVICES: gpu; memory and utilisation sampled; COHORT8=0: not)
#   week   the 20 h record tiled WEEK_TILES (8: 160 h) times as one parquet record (benchmarks/tile_record.py), on
#          WEEK_DEVICES (gpu cpu), memory (each process's too) and utilisation sampled (caches filled first; FILL=0:
#          already), then REPEATS (0) more GPU runs
# Rule logs go to $LOGS (default $OUT/runs); KEEP=dir keeps the mitdb, h20 and week phases' results per backend there.
# Results go to benchmarks/results/ and to $OUT, which comes back; TAG=s9 names them <name>-<date>-s9.json.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -d /tmp/site/snakemake ] || bash /root/wh/install.sh /root/wh > "$OUT/install.log" 2>&1 || { tail "$OUT/install.log"; exit 1; }
export PYTHONPATH=$PWD/src:/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
stamp=$(date -u +%Y%m%d)${TAG:+-$TAG}
[ -f data/holter20h.csv ] || python3 -m beatflow.synth data/holter20h.csv data/holter20h_truth.csv --hours 20 --sheet data/holter20h.tsv
cohort8() {  # 8 copies of the 20 h record in one call (COHORT8_DEVICES: gpu), nvidia-smi sampled; $1: the default timeout
  { head -1 data/holter20h.tsv; for i in 1 2 3 4 5 6 7 8; do tail -n +2 data/holter20h.tsv | sed "s/^holter20h/holter20h_$i/"; done; } \
    > data/cohort8.tsv
  timeout "${COHORT_TIMEOUT:-$1}" python3 -m benchmarks.run_workflow --devices ${COHORT8_DEVICES:-gpu} \
    --out "benchmarks/results/cohort8-h200-$stamp.json" --records data/cohort8.tsv 2>&1 \
    | grep -E '"(gpu|cpu|busy_fraction|mean_utilisation_pct|max_memory_used_mib|samples)"|wall' | head -20
}
case "${1:?phase: gpu, seed, demo, profile, warm, cohort8, mitdb, h20 or week}" in
gpu)
  nvidia-smi -L
  if [ "${TESTS:-1}" != 0 ]; then
    # every test file with a GPU-marked test or one taking the gpu fixture, and the CUDA kernels' tests;
    # BEATFLOW_GPU=1: a missing or broken GPU stack fails those tests instead of skipping them;
    # -rA names every test with its outcome (and shows what passing tests printed: the measured GPU-CPU figures)
    files=$( (grep -lE 'pytest\.mark\.gpu|def test_\w*\([^)]*\bgpu\b' tests/test_*.py; echo tests/test_kernels.py) | sort -u)
    log=benchmarks/results/pytest-gpu-h200-$stamp.log
    { echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) BEATFLOW_GPU=1 pytest -rA" $files; nvidia-smi -L; } > "$log"
    BEATFLOW_GPU=1 python3 -m pytest -rA -p no:cacheprovider -W ignore::numba.core.errors.NumbaPerformanceWarning \
      --junitxml="$OUT/pytest-gpu.xml" $files >> "$log" 2>&1
    echo "pytest rc $?" >> "$log"
    cp "$log" "$OUT/"; cp "$OUT/pytest-gpu.xml" "${log%.log}.xml" 2>/dev/null  # $OUT comes back: commit them from there
    grep -E '^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) ' "$log" | cut -c1-150; tail -3 "$log"
  fi
  [ "${STAGES:-1}" != 0 ] && timeout 150 python3 -m benchmarks.stages data/holter20h.csv --out "benchmarks/results/stages-h200-$stamp.json" \
    --batch-sizes 256 512 1024 > "$OUT/stages.log" 2>&1; tail -c 1500 "$OUT/stages.log" ;;
seed|profile)
  # a fresh host compiles CuPy's and Numba's kernels into their disk caches on the first GPU run (12 s of NVRTC
  # in segment alone); a user's machine has them after its first run, so fill them before timing anything
  timeout 200 python3 -m benchmarks.run_workflow --devices gpu --out "$OUT/cache-fill.json" > /dev/null 2>&1
  [ "$1" = profile ] && timeout 200 python3 -m benchmarks.imports --out "benchmarks/results/imports-h200-$stamp.json" \
    > "$OUT/imports.log" 2>&1
  timeout 500 python3 -m benchmarks.run_workflow --devices gpu cpu gpu-per-job --out "benchmarks/results/holter20h-h200-$stamp.json" \
    --keep-logs "${LOGS:-$OUT/runs}" --records data/holter20h.tsv 2>&1 | tail -40
  for i in $(seq "${REPEATS:-0}"); do  # the warm GPU run again: its spread
    timeout 100 python3 -m benchmarks.run_workflow --devices gpu --records data/holter20h.tsv \
      --out "benchmarks/results/holter20h-h200-$stamp-repeat$i.json" 2>&1 | grep -A2 workflow_wall_s
  done ;;
warm)  # the warm GPU run only, after filling the caches: once to compile the 20 h record's kernels, then REPEATS times
  timeout 200 python3 -m benchmarks.run_workflow --devices gpu --out "$OUT/cache-fill.json" > /dev/null 2>&1
  for i in 0 $(seq "${REPEATS:-2}"); do
    timeout 100 python3 -m benchmarks.run_workflow --devices gpu --records data/holter20h.tsv --keep-logs "${LOGS:-$OUT/runs}" \
      --out "benchmarks/results/holter20h-h200-$stamp-warm$i.json" 2>&1 | grep -A2 workflow_wall_s
  done ;;
cohort8)
  cohort8 560 ;;
mitdb)
  { printf 'record\tpath\ttruth\n'; for h in /root/mitdb/*.hea; do r=$(basename "$h" .hea)
      printf '%s\t%s\t%s\n' "$r" "/root/mitdb/$r" "/root/mitdb/$r.atr"; done; } > data/mitdb.tsv
  [ "${FILL:-1}" != 0 ] && timeout 200 python3 -m benchmarks.run_workflow --devices gpu --out "$OUT/cache-fill.json" > /dev/null 2>&1
  [ "${PROFILE:-1}" != 0 ] && timeout 200 python3 -m benchmarks.job_profile --device gpu --records data/mitdb.tsv \
    --out "benchmarks/results/job-profile-mitdb-h200-$stamp.json" 2>&1 | grep -A12 '"gpu_slot"'
  timeout ${MITDB_TIMEOUT:-540} python3 -m benchmarks.run_workflow --devices ${MITDB_DEVICES:-gpu cpu} --records data/mitdb.tsv \
    --out "benchmarks/results/mitdb-h200-$stamp.json" --keep-logs "${LOGS:-$OUT/runs}" ${KEEP:+--keep-results "$KEEP"} 2>&1 | tail -20 ;;
week)
  [ "${FILL:-1}" != 0 ] && timeout 200 python3 -m benchmarks.run_workflow --devices gpu --out "$OUT/cache-fill.json" > /dev/null 2>&1
  python3 -m benchmarks.tile_record data/holter20h.csv data/holter20h_truth.csv --times "${WEEK_TILES:-8}" --out data/week
  timeout "${WEEK_TIMEOUT:-540}" python3 -m benchmarks.run_workflow --devices ${WEEK_DEVICES:-gpu cpu} --records data/week.tsv \
    --out "benchmarks/results/week-h200-$stamp.json" --keep-logs "${LOGS:-$OUT/runs}" ${KEEP:+--keep-results "$KEEP"} 2>&1 | tail -40
  for i in $(seq "${REPEATS:-0}"); do  # the GPU run again: its spread (single runs differ by 10-40 % between sessions)
    timeout "${WEEK_TIMEOUT:-540}" python3 -m benchmarks.run_workflow --devices gpu --records data/week.tsv \
      --out "benchmarks/results/week-h200-$stamp-repeat$i.json" 2>&1 | grep -A2 workflow_wall_s
  done ;;
h20)  # the 20 h record on both backends (caches filled first; FILL=0: already), then 8 of them as one GPU cohort
  [ "${FILL:-1}" != 0 ] && timeout 200 python3 -m benchmarks.run_workflow --devices gpu --out "$OUT/cache-fill.json" > /dev/null 2>&1
  [ "${PROFILE:-1}" != 0 ] && timeout 120 python3 -m benchmarks.job_profile --device gpu --records data/holter20h.tsv \
    --out "benchmarks/results/job-profile-holter20h-h200-$stamp.json" 2>&1 | head -12
  keep=${KEEP:-/tmp/keep20}
  timeout 240 python3 -m benchmarks.run_workflow --devices ${H20_DEVICES:-gpu cpu} --records data/holter20h.tsv \
    --out "benchmarks/results/holter20h-h200-$stamp.json" --keep-logs "${LOGS:-$OUT/runs}" --keep-results "$keep" 2>&1 \
    | grep -A3 -E 'workflow_wall_s|"plot"' | head -20
  [ -d "$keep/gpu" ] && [ -d "$keep/cpu" ] && python3 -m benchmarks.backend_agreement "$keep/gpu" "$keep/cpu" \
    --out "benchmarks/results/backend-agreement-holter20h-h200-$stamp.json" \
    --workflow-json "benchmarks/results/holter20h-h200-$stamp.json" 2>&1 | tail -5
  [ "${COHORT8:-1}" != 0 ] && cohort8 200 ;;
demo)
  timeout 400 python3 -m benchmarks.run_workflow --devices gpu cpu --out "benchmarks/results/demo-h200-$stamp.json" \
    --keep-logs "${LOGS:-$OUT/runs}" 2>&1 | tail -12 ;;
esac
cp benchmarks/results/*-"$stamp"*.json "$OUT/" 2>/dev/null  # with the warm and repeat runs
(cd "$OUT" && [ -d runs ] && tar czf "runs-$1.tgz" runs && rm -rf runs); true
