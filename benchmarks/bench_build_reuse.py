"""How much does a second commit's build reuse from the first? (issue 21, item 1)

    .venv/bin/python benchmarks/bench_build_reuse.py [--home DIR] [--out results/bench-build-reuse]
        [--jobs N] [--keep]

Makes a git history of the pinned llama.cpp tree (tests/fixtures/llama_history: commit 0 is the
pinned tree, commit 1 a notes file, commit 2 a one-line change to ``src/llama-context.cpp``), then,
in an empty ``SPECBENCH_HOME`` (``--home``, default a temporary folder: nothing cached, no ccache
hits from earlier builds), builds ``@commit0`` (everything compiled), ``@commit2`` (what the
change touches) and ``@commit1`` (code as commit 0: relinks only), each as ``specbench build
--source REPO --ref SHA`` does. Prints each build's wall time and Ninja steps, the ratio to the
first, and writes OUT/bench-build-reuse.json. Timings need a quiet machine; steps do not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="SPECBENCH_HOME for the builds (default: a new temporary one)")
    ap.add_argument("--out", type=Path, default=Path("results/bench-build-reuse"))
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the temporary home and history")
    args = ap.parse_args()

    from tests.fixtures.llama_history import SLOW_US, make_history, pinned_tree

    tree = pinned_tree()  # from the usual cache, before SPECBENCH_HOME moves
    scratch = Path(tempfile.mkdtemp(prefix="specbench-reuse-"))
    home = args.home or scratch / "home"
    history = make_history(scratch / "llama.cpp", tree, [0, 0, SLOW_US])
    os.environ["SPECBENCH_HOME"] = str(home)

    from specbench.builder.builder import ensure_build

    rows = []
    for label, sha in (("commit 0 (first)", history.shas[0]), ("commit 2 (decode)", history.shas[2]),
                       ("commit 1 (notes only)", history.shas[1])):  # fmt: skip
        start = time.monotonic()
        info = ensure_build(backend="cpu", source=history.repo, ref=sha, jobs=args.jobs)
        wall = time.monotonic() - start
        rows.append({"build": label, "commit": sha, "wall_s": round(wall, 1), "build_s": info.build_s,
                     "steps": info.build_steps, "ccache": info.ccache, "key": info.key})  # fmt: skip
        print(f"{label:<26} {wall:7.1f} s  {info.build_steps:5d} steps", flush=True)
    first = rows[0]["wall_s"]
    for row in rows:
        row["fraction_of_first"] = round(row["wall_s"] / first, 3) if first else None
    print("\n| build | wall s | Ninja steps | of the first's time |\n| --- | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['build']} | {row['wall_s']} | {row['steps']} | {row['fraction_of_first']:.0%} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench-build-reuse.json").write_text(
        json.dumps({"rows": rows, "cpus": os.cpu_count(), "load": os.getloadavg()}, indent=2)
    )
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
