"""What the speed sentinel costs, and whether it stays quiet on a quiet machine.

    .venv/bin/python benchmarks/bench_sentinel.py [--config configs/quickstart.yaml] [--runs 5]
        [--out benchmarks/results/sentinel.json] [--set KEY=VALUE ...] [--keep DIR]

Runs ``specbench run`` ``--runs`` times on the config and prints, per run: its wall time, the
sentinel's readings (count, t/s range), the seconds they took and their share of the run's wall
time (goal: at most 5%), the largest move it saw, whether it warned (goal on a quiet machine: never),
and the 1-minute load average before and after the run (a busy machine is no quiet measurement:
say so with the numbers). The cost comes from the manifest (each reading's wall time), so no run
without the sentinel is needed. Writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specbench.results.manifestfile import load_manifest

ROOT = Path(__file__).resolve().parents[1]


def run_once(config: str, sets: list[str], out: Path) -> dict:
    cmd = [sys.executable, "-m", "specbench", "run", config, "--quiet", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=ROOT)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    speed = load_manifest(out).noise.speed
    values = [tps for _, tps in speed.series()]
    return {
        "run": out.name,
        "wall_s": round(wall, 1),
        "readings": len(speed.readings),
        "phases": [r.phase for r in speed.readings],
        "tps": values,
        "cost_s": round(speed.cost_s(), 2),
        "cost_share": round(speed.cost_s() / wall, 4),
        "moved": speed.moved,
        "warned": bool(speed.warnings),
        "warnings": speed.warnings,
        "windows": [w.model_dump() for w in speed.windows],
        "load_1m_before": round(load_before, 2),
        "load_1m_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sentinel.json")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--keep", type=Path, help="keep the run folders here (run1, run2, ...) for `report`")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-sentinel-") as tmp:
        for i in range(args.runs):
            r = run_once(args.config, args.sets, (args.keep or Path(tmp)) / f"run{i + 1}")
            results.append(r)
            spread = f"{min(r['tps']):.1f}-{max(r['tps']):.1f}" if r["tps"] else "-"
            moved = f"{r['moved']:+.1%}" if r["moved"] is not None else "-"
            print(
                f"run {i + 1}: wall {r['wall_s']:.0f} s, {r['readings']} readings {spread} t/s, "
                f"cost {r['cost_s']:.1f} s = {r['cost_share']:.1%}, moved {moved}, "
                f"{'WARNED' if r['warned'] else 'no warning'}, "
                f"load {r['load_1m_before']}->{r['load_1m_after']}",
                flush=True,
            )
    worst = max(r["cost_share"] for r in results)
    warned = sum(r["warned"] for r in results)
    print(f"largest cost share {worst:.1%} (goal <= 5%); {warned} of {len(results)} runs warned (goal 0)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"config": args.config, "sets": args.sets, "runs": results}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
