"""At temperature 0 a cell's acceptance and text are exact: the gate checks them by default (issue 42).

A copy of a recorded real run (tests/data/runs/quick-cpu) with every acceptance 20 points lower and
t/s unchanged used to pass `specbench compare` with exit 0; only `--metric acceptance` failed it."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from specbench.cli import app
from specbench.gate.baseline import load_run
from specbench.gate.compare import compare, default_metrics

RUN = Path(__file__).parents[1] / "data" / "runs" / "quick-cpu"


def _edited(tmp_path: Path, name: str, edit) -> Path:
    out = tmp_path / name
    shutil.copytree(RUN, out)
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines() if x.strip()]
    (out / "samples.jsonl").write_text("".join(json.dumps(edit(s)) + "\n" for s in lines))
    return out


def _lower_acceptance(s: dict) -> dict:
    if s["role"] == "speculative" and s.get("acceptance") is not None:
        s["acceptance"] = max(0.0, s["acceptance"] - 0.20)
    return s


def test_a_run_whose_acceptance_fell_20_points_fails_compare_by_default(tmp_path):
    lowered = _edited(tmp_path, "lowered", _lower_acceptance)
    base, cur = load_run(RUN), load_run(lowered)
    assert "acceptance" in default_metrics(base, cur)
    cmp = compare(base, cur, default_metrics(base, cur), allow_noisy=True)
    failed = {(c.label, c.prompt_id) for c in cmp.failed}
    acc = next(m for m in cmp.metrics if m.metric == "acceptance")
    assert acc.count("fail") > 0 and cmp.exit_code == 1
    assert failed and all("baseline" not in label for label, _ in failed)
    # the CLI, with no option at all: exit 1 and the acceptance table says why
    result = CliRunner().invoke(app, ["compare", str(RUN), str(lowered), "--allow-noisy"])
    assert result.exit_code == 1, result.output
    assert "acceptance" in result.output and "-20.0 points" in result.output


def test_changed_text_fails_unless_allowed_and_the_same_run_passes(tmp_path):
    def other_text(s: dict) -> dict:
        if s["role"] == "speculative" and s.get("output_sha256"):
            s["output_sha256"] = "0" * 64
        return s

    changed = _edited(tmp_path, "changed", other_text)
    base, cur = load_run(RUN), load_run(changed)
    cmp = compare(base, cur, ["spec_tps"], allow_noisy=True)
    out = next(m for m in cmp.metrics if m.metric == "output")
    assert out.count("fail") == len(out.cells) > 0 and cmp.exit_code == 1
    assert "generated text changed at temperature 0" in out.cells[0].reason
    allowed = compare(base, cur, ["spec_tps"], allow_noisy=True, allow_output_change=True)
    assert allowed.exit_code == 0 and next(m for m in allowed.metrics if m.metric == "output").count("warn")
    same = compare(base, load_run(RUN), default_metrics(base, base), allow_noisy=True)
    assert same.exit_code == 0 and not same.failed


def _two_builds(head_text_changed: bool) -> list:
    """quick-cpu's samples as an A/B run of one build against itself (labels base and head)."""
    samples = load_run(RUN).samples
    out = []
    for label in ("base", "head"):
        for s in samples:
            update = {"build": label}
            if label == "head" and head_text_changed and s.role == "speculative" and s.output_sha256:
                update["output_sha256"] = "f" * 64
            out.append(s.model_copy(update=update))
    return out


def test_ab_fails_a_head_build_whose_greedy_text_changed():
    from specbench.gate.ab import paired_compare

    same = paired_compare(_two_builds(False), "r", "base", "head", ["spec_tps"], allow_noisy=True)
    outputs = [d for d in same.decisions if d.metric == "output"]
    assert outputs and all(d.status == "pass" for d in outputs)
    changed = paired_compare(_two_builds(True), "r", "base", "head", ["spec_tps"], allow_noisy=True)
    failed = [d for d in changed.decisions if d.metric == "output"]
    assert failed and all(d.status == "fail" for d in failed) and changed.exit_code == 1
    assert "generated other text than base at temperature 0" in failed[0].reason
    allowed = paired_compare(
        _two_builds(True), "r", "base", "head", ["spec_tps"], allow_noisy=True, allow_output_change=True
    )
    assert allowed.exit_code == 0


def test_a_baseline_only_ab_checks_the_baseline_text():
    """`--metric baseline_tps` measures only the baseline (Plan.of_roles): its text is checked."""
    from specbench.gate.ab import paired_compare

    def baseline_only(head_text_changed: bool) -> list:
        out = []
        for s in _two_builds(False):
            if s.role != "baseline":
                continue
            if s.build == "head" and head_text_changed and s.output_sha256:
                s = s.model_copy(update={"output_sha256": "e" * 64})
            out.append(s)
        return out

    same = paired_compare(baseline_only(False), "r", "base", "head", ["baseline_tps"], allow_noisy=True)
    outputs = [d for d in same.decisions if d.metric == "output"]
    assert outputs and all(d.status == "pass" and "baseline" in d.cell for d in outputs)
    changed = paired_compare(baseline_only(True), "r", "base", "head", ["baseline_tps"], allow_noisy=True)
    assert [d.status for d in changed.decisions if d.metric == "output"] == ["fail"] * len(outputs)
    assert changed.exit_code == 1
