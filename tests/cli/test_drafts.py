"""`specbench drafts` as a user runs it: a real process, its formats and its one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import specbench_hub_env as specbench
from tests.models.tiny_gguf import vocab, write_tiny_gguf


@pytest.fixture
def files(tmp_path):
    target = write_tiny_gguf(tmp_path / "target.gguf", n_tensors=8)
    draft = write_tiny_gguf(tmp_path / "drafts" / "small.gguf", n_tensors=2)
    other = write_tiny_gguf(tmp_path / "drafts" / "other.gguf", tokens=vocab(prefix="zz"))
    return target, draft, other


def _env(tmp_path) -> dict:
    return {"SPECBENCH_HOME": str(tmp_path / "home")}  # no build: ranked without costs, said so


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_json_lists_every_candidate_with_its_reason(tmp_path, files):
    target, draft, other = files
    proc = specbench("drafts", target, draft.parent, "--format", "json", cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    data = _strict(proc.stdout)
    rows = {r["candidate"]: r for r in data["rows"]}
    assert rows["small.gguf"]["compatible"] is True and rows["small.gguf"]["reason"] is None
    assert rows["other.gguf"]["compatible"] is False
    assert "token 5 text differs" in rows["other.gguf"]["reason"]
    assert [r["candidate"] for r in data["rows"] if r["kind"] == "ngram"]  # always listed
    assert data["target"]["architecture"] == "llama" and data["target_costs"] == "none"
    assert "note: no llama.cpp build here" in proc.stderr


def test_table_and_markdown(tmp_path, files):
    target, draft, _ = files
    table = specbench("drafts", target, draft, cwd=tmp_path, env=_env(tmp_path))
    assert table.returncode == 0, table.stderr
    assert "small.gguf" in table.stdout and "ngram-simple" in table.stdout
    assert table.stdout.startswith("target: target.gguf (llama")
    md = specbench("drafts", target, draft, "--format", "md", cwd=tmp_path, env=_env(tmp_path))
    assert md.returncode == 0, md.stderr
    lines = md.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| # |"))
    assert lines[head + 1].startswith("|---|")
    assert any(line.startswith("| - | small.gguf |") for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.gguf"], "error: target missing.gguf: model file not found"),
        (["TARGET", "--family", "llama5"], "error: no draft family 'llama5'; known families: "),
    ],
)
def test_bad_input_is_one_line(tmp_path, files, args, message):
    args = [str(files[0]) if a == "TARGET" else a for a in args]
    proc = specbench("drafts", *args, cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr


def test_a_config_names_the_target_and_its_other_models_are_the_candidates(tmp_path, files):
    target, draft, other = files
    cfg = tmp_path / "pair.yaml"
    cfg.write_text(
        f"models:\n  t: {{path: {target}}}\n  d: {{path: {draft}}}\n  o: {{path: {other}}}\n"
        "pairs:\n  p: {target: t, draft: d}\n"
    )
    proc = specbench("drafts", "t", "--config", cfg, "--format", "json", cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    data = _strict(proc.stdout)
    rows = {r["candidate"]: r for r in data["rows"] if r["kind"] == "config"}
    assert set(rows) == {"d", "o"}  # the config's other models, by their names
    assert rows["d"]["compatible"] and not rows["o"]["compatible"]
    assert data["target"]["candidate"] == "t"


def test_measure_into_a_folder_that_holds_a_run_is_refused_before_ranking(tmp_path, files):
    """Not after the candidates' llama-bench timings (half a minute on a 135M pair here)."""
    target, draft, _ = files
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "samples.jsonl").write_text('{"run_id": "x"}\n')
    args = ("drafts", target, draft, "--measure", "1", "--out", taken)
    proc = specbench(*args, cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: {taken} already holds a run")
    assert "timing" not in proc.stderr and proc.stdout == ""  # nothing ranked, nothing timed


def test_a_rows_cells_read_as_the_table_prints_them():
    from specbench.cli.drafts import COLS, _cells
    from specbench.tune.draftmodels import DraftRow

    def cells(**fields) -> dict[str, str]:
        row = DraftRow(candidate="small.gguf", kind="local", compatible=True, **fields)
        return dict(zip((c.header for c in COLS), _cells(row), strict=True))

    timed = cells(decode_ms_measured=3.04, draft_max=4, alpha_break_even=0.355, alpha_goal=0.995, ceiling=2.5)
    assert (timed["measured"], timed["accept 1.0x"], timed["accept 1.5x"]) == ("3.0", "36%", "100%")
    assert (timed["g"], timed["max"], timed["compatible / why not"]) == ("4", "2.50x", "yes")
    unmeasured = cells()
    assert unmeasured["measured"] == unmeasured["accept 1.0x"] == unmeasured["accept 1.5x"] == "-"
