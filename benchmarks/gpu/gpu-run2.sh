#!/usr/bin/env bash
# Second GPU call: CUDA build, then repetitions fixed 3 vs auto (precision 0.03) with the server runner.
T0=$(date +%s)
O=${OUT:-/tmp/out}; mkdir -p "$O"
bash .gpu/remote-prepare.sh > "$O/prep.log" 2>&1 || { tail -30 "$O/prep.log"; exit 1; }
. /tmp/env.sh
export PYTHONUNBUFFERED=1
B0=$(date +%s); python3 -m specbench build --source /tmp/llama.cpp --backend cuda > "$O/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s)-B0 )) s"
echo "== precision (left $(( 585 - ($(date +%s)-T0) )) s)"
timeout $(( 585 - ($(date +%s)-T0) )) python3 benchmarks/bench_precision.py --config .gpu/h100-runners.yaml --precision 0.03 \
  --out /tmp/prec --set runner=server --set generation.n_predict=512 --set max_repetitions=8 > "$O/precision.log" 2>&1
echo "precision rc=$?"; tail -40 "$O/precision.log"
cp /tmp/prec/*.json "$O/" 2>/dev/null; ls "$O"
echo "total $(( $(date +%s)-T0 )) s"
