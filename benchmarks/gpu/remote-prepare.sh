#!/usr/bin/env bash
# Set up specbench on the GPU machine (no network) from the bundle in .gpu/.
# Run from the specbench repo root (the working tree travels as is):  bash .gpu/remote-prepare.sh
# Then:  . /tmp/env.sh && python3 -m specbench build --source /tmp/llama.cpp --backend cuda
# Gives: /tmp/site (wheels), /tmp/llama.cpp (pinned source, trimmed), /tmp/m/smol-l8.gguf, /tmp/env.sh.
# PREP_ROOT=DIR puts all of it under DIR instead of /tmp (for trying the script elsewhere).
set -euo pipefail
R=${PREP_ROOT:-/tmp}
B=.gpu
if [ ! -f pyproject.toml ] || [ ! -d specbench ] || [ ! -d "$B/whl" ] || [ ! -f "$B/llama-src.tar.xz" ]; then
    echo "remote-prepare: run from the specbench repo root, with the bundle at $B/" >&2
    exit 1
fi
T0=$(date +%s)
mkdir -p "$R/site" "$R/m" "$R/sbhome"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$R/site" "$B"/whl/*.whl

rm -rf "$R/llama.cpp"
tar xJf "$B/llama-src.tar.xz" -C "$R"
[ -f "$R/llama.cpp/CMakeLists.txt" ] || { echo "remote-prepare: $R/llama.cpp has no CMakeLists.txt" >&2; exit 1; }

# The same tree as specbench's own source cache, so `specbench build` without --source (and the test
# fixtures that build) find the pinned commit here instead of trying PyPI. The tree carries the
# marker .specbench-source.json, so both routes give the same build key.
COMMIT=$(sed -n 's/.*"commit": *"\([0-9a-f]\{40\}\)".*/\1/p' "$R/llama.cpp/.specbench-source.json")
mkdir -p "$R/sbhome/sources"
[ -n "$COMMIT" ] && ln -sfn "$R/llama.cpp" "$R/sbhome/sources/llama.cpp-$COMMIT"

cp "$B"/m/*.gguf "$R/m/"

cat > "$R/env.sh" <<EOS
export PYTHONPATH="$R/site:$PWD" SPECBENCH_HOME="$R/sbhome" PATH="/usr/local/cuda/bin:\$PATH"
EOS
# shellcheck disable=SC1090,SC1091
. "$R/env.sh"

# What the run will rely on; fails here rather than half way through a build.
python3 - "$R/m" <<'EOF'
import importlib, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
mods = ["specbench", "specbench.cli", "pydantic", "pydantic_core", "typer", "rich", "click", "yaml", "gguf",
        "platformdirs", "filelock", "huggingface_hub", "httpx2", "numpy", "scipy", "matplotlib",
        "jinja2", "tqdm"]
bad = []
for m in mods:
    try:
        mod = importlib.import_module(m)
    except Exception as exc:  # report every missing piece at once
        bad.append(f"{m}: {type(exc).__name__}: {exc}")
        continue
    where = getattr(mod, "__file__", "") or ""
    print(f"  {m:16} {getattr(mod, '__version__', ''):12} {where}")
if bad:
    print("remote-prepare: imports failed:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
from gguf import GGUFReader
for p in sorted(Path(sys.argv[1]).glob("*.gguf")):
    r = GGUFReader(str(p))
    arch = r.fields["general.architecture"].contents()
    print(f"  model {p.name}: {arch}, {r.fields[f'{arch}.block_count'].contents()} layers, {len(r.tensors)} tensors")
EOF
python3 -m specbench --help >/dev/null

echo "python: $(python3 -V 2>&1) at $(command -v python3)"
echo "cmake:  $(cmake --version 2>/dev/null | head -1 || echo MISSING)"
echo "nvcc:   $(nvcc --version 2>/dev/null | tail -1 || echo MISSING)"
echo "gpu:    $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null || echo MISSING)"
echo "remote-prepare: ready in $(( $(date +%s) - T0 )) s; now: . $R/env.sh"
