"""How fast `specbench parse` is: a ~10 MB log made of the real corpus, parsed from memory and from disk.

    .venv/bin/python benchmarks/bench_parse.py [--mb 10] [--repeat 5]

Prints the best of N wall-clock and CPU times and the throughput. The log repeats every real log in
tests/logs/real/ (mostly the verbose run: model loading, debug lines, generated text, statistics).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from specbench.parse.process import parse_file, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "logs" / "real"


def best_of(repeat: int, fn, *args) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds over `repeat` calls."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn(*args)
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0, help="size of the log in MB (default 10)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts")
    args = ap.parse_args()

    unit = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.iterdir()))
    text = unit * int(args.mb * 1e6 // len(unit) + 1)
    mb = len(text.encode("utf-8")) / 1e6
    print(f"log: {mb:.1f} MB, {text.count(chr(10)):,} lines (corpus repeated)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.log"
        path.write_text(text, encoding="utf-8")
        for name, fn, arg in (("parse_text", parse_text, text), ("parse_file", parse_file, path)):
            wall, cpu = best_of(args.repeat, fn, arg)
            print(f"{name}: {wall:.3f} s wall ({mb / wall:.0f} MB/s), {cpu:.3f} s CPU ({mb / cpu:.0f} MB/s)")


if __name__ == "__main__":
    main()
