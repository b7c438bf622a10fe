"""benchmarks/share_lines.py on a written run folder: which pairs each CPU-share line keeps, and
the spread of what is left (the noisy pairs here are the low-share ones, so a stricter line narrows)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from specbench.results.records import Generation, Sample
from specbench.results.samplelog import write_samples

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "share_lines.py"


def sample(build: str, rep: int, tps: float, share: float) -> Sample:
    return Sample(
        build=build, role="baseline", model="m", method="none", prompt_id="p", category="code",
        repetition=rep, generation=Generation(n_predict=64), run_id="r", status="ok", valid=True,
        tps=tps, wall_s=2.0, cpu_s=2.0 * share, cpu_threads=1, started_at="2026-11-27T00:00:00",
    )  # fmt: skip


def test_a_stricter_line_keeps_fewer_pairs_and_says_their_spread(tmp_path):
    run = tmp_path / "aa-1"
    run.mkdir()
    rows = []
    # 4 pairs at full share within 1%, 2 pairs at 80% share 30% apart.
    for rep, (head, share) in enumerate([(50.5, 1.0), (49.5, 1.0), (50.4, 0.98), (49.6, 0.99),
                                         (65.0, 0.8), (38.0, 0.8)]):  # fmt: skip
        rows += [sample("base", rep, 50.0, share), sample("head", rep, head, share)]
    write_samples(run, rows)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(run), "--lines", "0.75,0.95"],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = {tuple(line.split()[:4]): line.split()[4] for line in proc.stdout.splitlines()[1:]
           if not line.split()[2].startswith("corr")}  # fmt: skip
    wide = float(got[("aa-1", "baseline", "0.75", "6/6")].rstrip("%"))
    narrow = float(got[("aa-1", "baseline", "0.95", "4/6")].rstrip("%"))
    assert wide > 15 and narrow < 2
    assert got[("aa-1", "speculative", "0.75", "0/0")] == "-"
    # both samples of a pair share one share here: no difference to correlate, and it says so
    assert "aa-1 baseline corr(share head - share base, log ratio) -" in proc.stdout
