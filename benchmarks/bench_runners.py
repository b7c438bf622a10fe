"""Process runner vs server runner on the same samples: where the wall time of a run goes.

    .venv/bin/python benchmarks/bench_runners.py [--config configs/quickstart.yaml] [--repetitions 2]
        [--out benchmarks/results/runners.json] [--set KEY=VALUE ...]

Runs ``specbench run`` twice on the config (``runner=process``, then ``runner=server``, both at
parallel 1 so the two runs measure the same samples), then prints per runner: wall time,
``model_loads`` (from the manifest), the summed decode time of every sample (process: the
``decoded`` line / the eval time; server: ``timings.predicted_ms``), the time outside decoding
(wall - decode: process start, model loads, prompt evaluation, warmups) and its fraction, and the
baseline t/s. The server/process ratio of the time outside decoding is the number the server
runner is for (goal: under 0.4). Writes all of it as JSON. The machine should be quiet.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specbench.results.manifestfile import load_manifest
from specbench.results.records import Sample
from specbench.results.samplelog import load_samples

ROOT = Path(__file__).resolve().parents[1]


def decode_seconds(s: Sample) -> float:
    """Time the sample spent generating, as llama.cpp measured it."""
    if s.timings is not None and s.timings.predicted_ms is not None:
        return s.timings.predicted_ms / 1000
    m = s.metrics
    if m is not None and m.decoded is not None and m.decoded.seconds is not None:
        return m.decoded.seconds
    target = m.perf.target if m is not None and m.perf is not None else None
    if target is not None and target.eval_ms is not None:
        return target.eval_ms / 1000
    return 0.0


def run_once(config: str, runner: str, repetitions: int, sets: list[str], out: Path) -> dict:
    cmd = [sys.executable, "-m", "specbench", "run", config, "--quiet", "--out", str(out)]
    cmd += ["--set", f"runner={runner}", "--set", f"repetitions={repetitions}", "--set", "sweep.parallel=[1]"]
    for s in sets:
        cmd += ["--set", s]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=ROOT)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"{runner} run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    samples = load_samples(out)
    manifest = load_manifest(out)
    decode = sum(decode_seconds(s) for s in samples)
    base = [s.tps for s in samples if s.role == "baseline" and s.valid and s.tps is not None]
    return {
        "runner": runner,
        "wall_s": round(wall, 2),
        "model_loads": manifest.model_loads,
        "samples": len(samples),
        "valid": sum(s.valid for s in samples),
        "outputs_match": all(s.outputs_match is not False for s in samples),
        "decode_s": round(decode, 2),
        "outside_decode_s": round(wall - decode, 2),
        "outside_decode_fraction": round((wall - decode) / wall, 3),
        "baseline_tps": round(statistics.mean(base), 2) if base else None,
        "run_dir": str(out),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "runners.json")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-runners-") as tmp:
        results = [
            run_once(args.config, runner, args.repetitions, args.sets, Path(tmp) / runner)
            for runner in ("process", "server")
        ]
    proc, srv = results
    summary = {
        "config": args.config,
        "repetitions": args.repetitions,
        "sets": args.sets,
        "runs": results,
        "wall_ratio": round(srv["wall_s"] / proc["wall_s"], 3),
        "outside_decode_ratio": round(srv["outside_decode_s"] / proc["outside_decode_s"], 3),
        "baseline_tps_ratio": round(srv["baseline_tps"] / proc["baseline_tps"], 3)
        if srv["baseline_tps"] and proc["baseline_tps"]
        else None,
    }
    print(f"{'runner':8} {'wall s':>8} {'loads':>6} {'samples':>8} {'decode s':>9} {'outside s':>10} "
          f"{'outside %':>9} {'base t/s':>9}")  # fmt: skip
    for r in results:
        print(f"{r['runner']:8} {r['wall_s']:8.1f} {r['model_loads']:6d} {r['valid']:>3}/{r['samples']:<4} "
              f"{r['decode_s']:9.1f} {r['outside_decode_s']:10.1f} {r['outside_decode_fraction']:9.1%} "
              f"{r['baseline_tps'] or 0:9.1f}")  # fmt: skip
    print(f"server/process: wall {summary['wall_ratio']:.2f}, time outside decoding "
          f"{summary['outside_decode_ratio']:.2f} (goal < 0.40), "
          f"baseline t/s {summary['baseline_tps_ratio']}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
