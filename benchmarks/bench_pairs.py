"""Which pairs cancel a noisy machine? The A/A spread of the paired log ratio, per kind of pair.

    .venv/bin/python benchmarks/bench_pairs.py [--config configs/ci.yaml] [--pairs 24]
        [--kinds sequential,duet,server] [--noise quiet,noisy] [--duty 0.3] [--burst 1-5]
        [--server-tokens 32] [--set KEY=VALUE ...] [--out benchmarks/results/pairs.json]

One build against itself (A/A), so every paired log ratio log(B/A) is noise; its standard deviation
is what a paired gate has to see through (``ab`` and ``bisect``: docs/decide.md). The kinds:

- ``sequential`` (``pairing: sequential``): the config's first baseline (llama-completion, its
  ``n_predict`` and ``threads``) run as A then B, the order reversed every pair (ABBA);
- ``duet`` (``pairing: duet``, what ``ab`` runs on CPU builds by default): A and B at the same
  time, each pinned to its own half of the CPUs (``os.sched_setaffinity``, so their threads inherit
  it) with half the threads, the halves swapped every pair; CPU backends only;
- ``server``: two llama-servers of the build, resident, each answering short requests
  (``--server-tokens``), A then B, the order reversed every pair: a pair takes about a second.

Each under ``--noise``: ``quiet`` (nothing of ours beside it) and ``noisy`` (specbench's noise
generator, ``benchmarks/noisegen.py``: one thread busy ``--duty`` of the time in random ``--burst``
second bursts). Within a noise condition the kinds take turns pair by pair, so a host phase falls on
each alike. Prints one table (standard deviation of the log ratio, the median time a pair took, the
CPU share its processes got: ``specbench.machine.contention``) and writes every number as JSON.
``--stand-in BIN`` runs a stand-in binary (tests/fakebins) in place of the config's: the smoke
form that proves the script runs (its numbers mean nothing). Timings need a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from noisegen import NoiseGenerator, NoiseSpec  # benchmarks/noisegen.py, beside this script

from specbench.base.formats import now_iso
from specbench.execute.executor import DuetExecutor, ProcessExecutor
from specbench.execute.judge import judge
from specbench.machine.contention import cpu_share
from specbench.plan.invocation import Invocation
from specbench.plan.pairing import cpu_halves
from specbench.results.records import Generation

KINDS = ("sequential", "duet", "server")
NOISE = ("quiet", "noisy")
PROMPT = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"

Side = tuple[float | None, float | None]  # (t/s, CPU share) of one measurement


class Measurer:
    """Measures one invocation and says its t/s and CPU share; raw logs go to ``folder``."""

    def __init__(self, folder: Path):
        self.folder, self.count = folder, 0

    def index(self) -> int:
        self.count += 1
        return self.count

    def run(self, executor, inv: Invocation) -> Side:
        return self.together(executor, [inv])[0]

    def together(self, executor, invs: list[Invocation]) -> list[Side]:
        """A batch through ``executor`` (a duet pair: both at once), each side's t/s and CPU share."""
        outs = executor.run([(self.index(), inv) for inv in invs], self.folder)
        sides = []
        for inv, out in zip(invs, outs, strict=True):
            sample = judge(inv, out, "bench-pairs", now_iso()).sample
            wall = out.batch_wall_s if out.batch_wall_s is not None else out.wall_s
            sides.append((sample.tps, cpu_share(out.cpu_s, wall, inv.generation.threads)))
        return sides


class Pairs:
    """The three kinds of pair over the same build (A/A); ``pair(kind, k)`` measures pair ``k``."""

    def __init__(self, seq: Invocation, duet: Invocation | None, server: Invocation | None, folder: Path):
        self.seq, self.duet, self.server = seq, duet, server
        self.m = Measurer(folder)
        self.servers = (None, None)
        sets = cpu_halves()
        self.duet_executor = DuetExecutor([list(h) for h in sets], ["a", "b"]) if sets else None
        if server is not None:
            from specbench.execute.server_executor import ServerExecutor

            self.servers = (ServerExecutor(warmup=1), ServerExecutor(warmup=1))  # each keeps its own

    def start(self) -> None:
        """Start both servers (load, warmup, one request) before the first pair is timed."""
        for ex in self.servers:
            if ex is not None and self.server is not None:
                self.m.run(ex, self.server)

    def close(self) -> None:
        for ex in self.servers:
            if ex is not None:
                ex.close()

    def pair(self, kind: str, k: int) -> tuple[Side, Side]:
        """(A, B) of pair ``k``: ABBA order (sequential, server), or CPU halves swapped (duet)."""
        if kind == "duet":  # the executor `ab` runs duet pairs with: it swaps the halves every pair
            assert self.duet is not None and self.duet_executor is not None
            a, b = (self.duet.model_copy(update={"build": label}) for label in ("a", "b"))
            side_a, side_b = self.m.together(self.duet_executor, [a, b])
            return side_a, side_b
        if kind == "server":
            assert self.server is not None
            ex_a, ex_b = self.servers
            run_a = lambda: self.m.run(ex_a, self.server)  # noqa: E731
            run_b = lambda: self.m.run(ex_b, self.server)  # noqa: E731
        else:
            run_a = run_b = lambda: self.m.run(ProcessExecutor(), self.seq)  # noqa: E731
        if k % 2 == 0:
            a = run_a()
            return a, run_b()
        b = run_b()
        return run_a(), b


def stand_in(binary: Path, threads: int, n_predict: int = 8) -> Invocation:
    """A baseline invocation of a stand-in binary (tests/fakebins): the smoke form."""
    return Invocation(
        role="baseline", model="target", ngl=0, prompt_id="p1", category="chat", repetition=0,
        binary_role="completion", argv=[str(binary), "-p", PROMPT, "-t", str(threads)], prompt_text=PROMPT,
        prompt_echoed=True, generation=Generation(n_predict=n_predict, threads=threads), timeout_s=60.0,
    )  # fmt: skip


def from_config(config: Path, sets: list[str], kinds: list[str], duet_threads: int, tokens: int):
    """The config's first baseline invocation for each kind (its build and models prepared)."""
    from specbench.execute import preparation

    def first_baseline(extra: list[str]) -> Invocation:
        prepared = preparation.prepare(preparation.load(config, [*sets, *extra]))
        return next(i for i in prepared.plan.measured if i.role == "baseline")

    seq = first_baseline([])
    duet = first_baseline([f"generation.threads={duet_threads}"]) if "duet" in kinds else None
    server = None
    if "server" in kinds:
        server = first_baseline(["runner=server", f"generation.n_predict={tokens}"])
    return seq, duet, server


def summarize(kind: str, noise: str, rows: list[dict]) -> dict:
    logs = [r["log_ratio"] for r in rows if r["log_ratio"] is not None]
    shares = sorted(s for r in rows for s in (r["share_a"], r["share_b"]) if s is not None)
    return {
        "kind": kind, "noise": noise, "pairs": len(logs), "failed": len(rows) - len(logs),
        "sd_log_ratio": statistics.stdev(logs) if len(logs) > 1 else None,
        "mean_log_ratio": statistics.fmean(logs) if logs else None,
        "pair_s_median": statistics.median(r["pair_s"] for r in rows) if rows else None,
        "cpu_share_min": shares[0] if shares else None,
        "cpu_share_median": statistics.median(shares) if shares else None,
    }  # fmt: skip


def table(summaries: list[dict]) -> str:
    def pct(x: float | None, digits: int = 2) -> str:
        return "-" if x is None else f"{x:.{digits}%}"

    lines = [
        f"{'kind':<11} {'noise':<6} {'pairs':>5} {'sd log(B/A)':>11} {'mean':>7} {'pair s':>7} "
        f"{'cpu share min/median':>21}"
    ]
    for s in summaries:
        pair_s = "-" if s["pair_s_median"] is None else f"{s['pair_s_median']:.2f}"
        share = f"{pct(s['cpu_share_min'], 0)}/{pct(s['cpu_share_median'], 0)}"
        lines.append(
            f"{s['kind']:<11} {s['noise']:<6} {s['pairs']:>5} {pct(s['sd_log_ratio']):>11} "
            f"{pct(s['mean_log_ratio']):>7} {pair_s:>7} {share:>21}"
        )
    return "\n".join(lines)


def burst_range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    try:
        return float(lo), float(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give MIN-MAX seconds, e.g. 1-5") from None


def choices(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(allowed)}")
        return items

    return parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=Path("configs/ci.yaml"))
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--pairs", type=int, default=24, help="pairs of each kind under each noise condition")
    ap.add_argument("--kinds", type=choices(KINDS), default=list(KINDS))
    ap.add_argument("--noise", type=choices(NOISE), default=list(NOISE))
    ap.add_argument("--duty", type=float, default=0.3, help="noisy: share of the time its thread is busy")
    ap.add_argument("--burst", type=burst_range, default=(1.0, 5.0), help="noisy: MIN-MAX seconds a burst")
    ap.add_argument("--server-tokens", type=int, default=32, help="server: tokens a request generates")
    ap.add_argument("--stand-in", type=Path, default=None, help="a stand-in binary (smoke form)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/pairs.json"))
    args = ap.parse_args()
    if args.pairs < 2:
        sys.exit("error: --pairs must be at least 2 (a standard deviation needs two)")
    kinds = list(args.kinds)
    sets = cpu_halves()
    if "duet" in kinds and sets is None:
        print("note: duet left out: it needs at least 2 CPUs and CPU affinity (Linux)", file=sys.stderr)
        kinds.remove("duet")
    half = len(sets[0]) if sets else 1
    if args.stand_in is not None:
        if "server" in kinds:
            print("note: server left out: a stand-in runs as a process only", file=sys.stderr)
            kinds.remove("server")
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        seq, duet, server = stand_in(args.stand_in, threads), stand_in(args.stand_in, half), None
    else:
        seq, duet, server = from_config(args.config, args.sets, kinds, half, args.server_tokens)
    spec = NoiseSpec(duty=args.duty, burst_s=args.burst, limit_s=24 * 3600, seed=44)
    try:
        spec.check()
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    rows: dict[tuple[str, str], list[dict]] = {(k, n): [] for n in args.noise for k in kinds}
    with tempfile.TemporaryDirectory(prefix="bench-pairs-") as tmp:
        pairs = Pairs(seq, duet, server, Path(tmp))
        try:
            pairs.start()
            for noise in args.noise:
                gen = NoiseGenerator(spec) if noise == "noisy" else None
                if gen is not None:
                    gen.start()
                try:
                    for k in range(args.pairs):
                        for kind in kinds:  # the kinds take turns: a host phase falls on each alike
                            start = time.monotonic()
                            (tps_a, share_a), (tps_b, share_b) = pairs.pair(kind, k)
                            ok = bool(tps_a and tps_b and tps_a > 0 and tps_b > 0)
                            rows[(kind, noise)].append({
                                "pair": k, "tps_a": tps_a, "tps_b": tps_b, "share_a": share_a,
                                "share_b": share_b, "pair_s": round(time.monotonic() - start, 3),
                                "log_ratio": math.log(tps_b / tps_a) if ok else None,
                            })  # fmt: skip
                        print(f"{noise}: pair {k + 1}/{args.pairs} done", file=sys.stderr)
                finally:
                    if gen is not None:
                        gen.stop()
                        measured = gen.duty()
                        if measured is not None:
                            print(f"noise: measured duty {measured:.1%}", file=sys.stderr)
        finally:
            pairs.close()
    summaries = [summarize(kind, noise, found) for (kind, noise), found in rows.items()]
    print(table(summaries))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {"config": str(args.config), "stand_in": str(args.stand_in) if args.stand_in else None,
            "duty": args.duty, "burst_s": list(args.burst), "summaries": summaries,
            "pairs": {f"{k}/{n}": v for (k, n), v in rows.items()}}  # fmt: skip
    args.out.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
