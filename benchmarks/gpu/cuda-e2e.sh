#!/usr/bin/env bash
# One GPU call, the CUDA path end to end as a 4090 owner would walk it: prepare, build (with its
# self-test), a quickstart-shaped run on both runners at ngl 99, report, tune, an A/A ab.
# Every step is time-boxed and logged to $OUT so one failure does not hide the others.
T0=$(date +%s)
O=${OUT:-/tmp/out}; mkdir -p "$O"
left() { echo $(( ${LIMIT:-570} - ($(date +%s)-T0) )); }
step() {  # step NAME SECONDS CMD...: run, log, record rc and time
    local name=$1 secs=$2; shift 2
    local l; l=$(left); [ "$secs" -gt "$l" ] && secs=$l
    [ "$secs" -lt 15 ] && { echo "== $name: skipped (no time left)"; return; }
    local s; s=$(date +%s)
    timeout -k 5 "$secs" "$@" > "$O/$name.log" 2>&1; local rc=$?
    echo "== $name rc=$rc in $(( $(date +%s)-s )) s (left $(left) s)"; tail -n "${TAILN:-12}" "$O/$name.log"
}
bash .gpu/remote-prepare.sh > "$O/prep.log" 2>&1 || { tail -30 "$O/prep.log"; exit 1; }
. /tmp/env.sh
export PYTHONUNBUFFERED=1 COLUMNS=160
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
C=benchmarks/gpu/cuda-e2e.yaml
step build 330 python3 -m specbench build --source /tmp/llama.cpp --backend cuda
step env 20 python3 -m specbench env
step run-process 90 python3 -m specbench run $C --out /tmp/r/process
TAILN=25 step report-process 30 python3 -m specbench report /tmp/r/process
step run-server 70 python3 -m specbench run $C --set runner=server --out /tmp/r/server
TAILN=25 step report-server 30 python3 -m specbench report /tmp/r/server
TAILN=25 step tune 60 python3 -m specbench tune $C --budget 45 --out /tmp/r/tune
TAILN=20 step ab 70 python3 -m specbench ab $C --base /tmp/llama.cpp --head /tmp/llama.cpp --budget 40 \
    --set 'sweep.method=[draft]' --set 'sweep.draft_max=[8]' --out /tmp/r/ab
for d in /tmp/r/*; do
    [ -d "$d" ] || continue
    mkdir -p "$O/$(basename "$d")"
    find "$d" -maxdepth 2 \( -name '*.md' -o -name '*.json' -o -name '*.csv' -o -name '*.png' \) -size -2M \
        -exec cp --parents {} "$O/$(basename "$d")/" \; 2>/dev/null
    ls "$d"/samples* "$d"/logs 2>/dev/null | head -3 > "$O/$(basename "$d")/ls.txt"
    tar czf "$O/$(basename "$d")/logs.tgz" -C "$d" logs 2>/dev/null
done
echo "total $(( $(date +%s)-T0 )) s"
