"""Run specbench's noise generator in the foreground: random on/off CPU load for other measurements.

    .venv/bin/python benchmarks/noisegen.py [--duty 0.3] [--burst 1-5] [--threads 1] [--seconds 600]

``--threads`` workers, each busy ``--duty`` of its wall time in bursts of ``--burst`` MIN-MAX CPU
seconds, for ``--seconds`` at most (a hard limit). Ctrl-C stops it; it never outlives this script
(``specbench.base.noisegen``). At the end it prints the duty cycle it measured from its workers'
CPU time against their wall time.
"""

from __future__ import annotations

import argparse
import sys

from specbench.base.noisegen import NoiseGenerator, NoiseSpec


def burst_range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    try:
        return float(lo), float(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give MIN-MAX seconds, e.g. 1-5") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duty", type=float, default=0.3, help="share of its wall time each worker is busy")
    ap.add_argument("--burst", type=burst_range, default=(1.0, 5.0), help="MIN-MAX CPU seconds of a burst")
    ap.add_argument("--threads", type=int, default=1, help="busy workers (one process each)")
    ap.add_argument("--seconds", type=float, default=600.0, help="hard time limit")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    spec = NoiseSpec(args.duty, args.burst, args.seconds, args.threads, args.seed)
    try:
        gen = NoiseGenerator(spec)
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    print(
        f"noise: {spec.threads} worker(s), duty {spec.duty:.0%}, bursts {spec.burst_s[0]:g}-"
        f"{spec.burst_s[1]:g} s, at most {spec.limit_s:g} s (Ctrl-C stops it)",
        file=sys.stderr,
    )
    try:
        with gen:
            gen.wait(spec.limit_s + 30)
    except KeyboardInterrupt:
        pass
    duty = gen.duty()
    print(f"measured duty {duty:.1%}" if duty is not None else "no worker measured", file=sys.stderr)


if __name__ == "__main__":
    main()
