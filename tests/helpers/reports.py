"""The recorded runs (tests/data/runs) and each cell's numbers recomputed from samples.jsonl with the
json and statistics modules, independently of specbench.analysis."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from pathlib import Path

from scipy import stats as sps

from tests.helpers.cli import invoke

REPO = Path(__file__).resolve().parents[2]


RUNS = REPO / "tests" / "data" / "runs"


QUICK = RUNS / "quick-cpu"


NGL = RUNS / "ngl-sweep-cpu"


CELL = ("pair", "model", "draft", "method", "draft_max", "draft_min", "p_min", "ngl", "ngld")


def specbench(*args, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    """``specbench ARGS`` in-process (tests.helpers.cli.invoke), from the repository by default."""
    return invoke(*args, cwd=cwd, env=env)


def raw_samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines() if line.strip()]


def usable(s: dict) -> bool:
    return s["valid"] and s["status"] == "ok" and s["tps"] is not None


def _speedup(spec: list[dict], base: list[dict]) -> dict:
    """Paired log ratios: per prompt their mean over repetitions, the speedup exp(mean over
    prompts); its interval the t interval of each repetition's mean log ratio over the prompts
    (every recorded pair is present, fewer than 6 repetitions)."""
    base_of = {(b["prompt_id"], b["repetition"]): b["tps"] for b in base}
    logs = {
        (s["prompt_id"], s["repetition"]): math.log(s["tps"] / base_of[s["prompt_id"], s["repetition"]])
        for s in spec
    }
    prompts = sorted({p for p, _ in logs})
    reps = sorted({r for _, r in logs})
    per_prompt = [statistics.mean(logs[p, r] for r in reps) for p in prompts]
    per_rep = [statistics.mean(logs[p, r] for p in prompts) for r in reps]
    low, high = sps.t.interval(0.95, len(reps) - 1, loc=statistics.mean(per_rep), scale=sps.sem(per_rep))
    return {
        "speedup": math.exp(statistics.mean(per_prompt)),
        "speedup_ci_low": math.exp(low),
        "speedup_ci_high": math.exp(high),
        "speedup_repetitions": len(reps),
        "speedup_prompts": len(prompts),
        "speedup_prompt_low": math.exp(min(per_prompt)),
        "speedup_prompt_high": math.exp(max(per_prompt)),
    }


def geomean_over_prompts(samples: list[dict]) -> float:
    """A t/s averaged as the speedup is (issue 58): per prompt the geometric mean over repetitions,
    then the geometric mean over prompts (every recorded sample valid, fewer than 6 repetitions)."""
    logs: dict[str, list[float]] = {}
    for s in samples:
        logs.setdefault(s["prompt_id"], []).append(math.log(s["tps"]))
    return math.exp(statistics.mean(statistics.mean(v) for v in logs.values()))


def expected_rows(run: Path) -> dict[tuple, dict]:
    """The overall row of every cell, recomputed from the JSON lines."""
    samples = raw_samples(run)
    cells: dict[tuple, list[dict]] = {}
    for s in samples:
        if s["role"] == "speculative":
            cells.setdefault(tuple(s[k] for k in CELL), []).append(s)
    out = {}
    for key, spec in cells.items():
        c = dict(zip(CELL, key, strict=True))
        prompts = {(s["prompt_id"], s["repetition"]) for s in spec}
        base = [
            s
            for s in samples
            if s["role"] == "baseline"
            and s["model"] == c["model"]
            and s["ngl"] == c["ngl"]
            and (s["prompt_id"], s["repetition"]) in prompts
        ]
        spec_tps = [s["tps"] for s in spec if usable(s)]
        base_tps = [s["tps"] for s in base if usable(s)]
        used = [s for s in spec if usable(s)]
        accepted = sum(s["metrics"]["n_accept"] for s in used)
        drafted = sum(s["metrics"]["n_drafted"] for s in used)
        predicted = sum(s["metrics"]["n_predict"] for s in used)
        compared = [s["outputs_match"] for s in spec if s["outputs_match"] is not None]
        out[(c["pair"], c["method"], c["draft_max"], c["ngl"], c["ngld"])] = {
            "n": len(spec_tps),
            "baseline_tps": geomean_over_prompts([s for s in base if usable(s)]),
            "baseline_tps_sd": statistics.stdev(base_tps),
            "spec_tps": geomean_over_prompts(used),
            "spec_tps_sd": statistics.stdev(spec_tps),
            **_speedup(used, [s for s in base if usable(s)]),
            "acceptance": accepted / drafted,
            "tokens_per_pass": predicted / (predicted - accepted),
            "outputs_match": all(compared) if compared else None,
            "valid": len(spec_tps) == len(spec) and len(base_tps) == len(base),
            "target": c["model"],
            "draft": c["draft"],
        }
    return out
