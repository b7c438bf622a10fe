#!/usr/bin/env bash
# One self-contained GPU call: prepare, CUDA build, server-vs-process benchmark, precision benchmark.
T0=$(date +%s)
O=${OUT:-/tmp/out}; mkdir -p "$O"
bash .gpu/remote-prepare.sh > "$O/prep.log" 2>&1 || { tail -30 "$O/prep.log"; exit 1; }
. /tmp/env.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
B0=$(date +%s); python3 -m specbench build --source /tmp/llama.cpp --backend cuda > "$O/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s)-B0 )) s"; tail -3 "$O/build.log"
left() { echo $(( ${1:-580} - ($(date +%s)-T0) )); }
echo "== runners (left $(left) s)"
timeout $(( $(left 580) * 55 / 100 )) python3 benchmarks/bench_runners.py --config .gpu/h100-runners.yaml --repetitions 2 --out "$O/runners.json" 2>&1 | tail -40
echo "== precision (left $(left) s)"
timeout $(( $(left 585) )) python3 benchmarks/bench_precision.py --config .gpu/h100-runners.yaml --precision 0.03 --out /tmp/prec --set sweep.draft_max=[8] --set max_repetitions=8 2>&1 | tail -40
cp /tmp/prec/*.json "$O/" 2>/dev/null
echo "total $(( $(date +%s)-T0 )) s"
