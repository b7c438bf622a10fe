"""Issue 58 item 2: a credential inside a recorded value (a URL's userinfo, a ``?token=``, a Hub
token after ``--hf-token``) reaches no file specbench writes and no line it prints. Every writer
and printer of a run's life, over a replayed run (tests/fixtures/replay.py): the dry run, `env`,
`run` (manifest, samples, raw logs, report files), `report`, `compare` and its warnings,
`baseline save`, `history --add` (the database), `publish` (the site); and the same readers over
a run folder an older specbench wrote the secrets into."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import invoke

CI = Path(__file__).resolve().parents[2] / "configs" / "ci.yaml"
TOKEN, PASSWORD, HUB = "tok3nS3cr3tQ", "pa55S3cr3tW", "hf_" + "Zq9xW8vU7t" * 3 + "S6r5"
SECRETS = (TOKEN, PASSWORD, HUB)
ENV = {
    "LLAMA_ARG_MODEL_URL": f"https://models.example/m.gguf?X-Amz-Signature={TOKEN}&X-Amz-Date=2026",
    "LLAMA_ARG_HF_REPO_MIRROR": f"https://me:{PASSWORD}@mirror.example/models?token={TOKEN}",
}
QUICK = ["--set", "pairing=sequential", "--set", "sentinel=false", "--set", "prompts.ids=[code-02]",
         "--set", "repetitions=2", "--set", "warmup=0",
         "--set", f'llama_cpp.args=["--hf-token", "{HUB}"]']  # fmt: skip


def leaks(where: str, text: str | bytes) -> list[str]:
    data = text if isinstance(text, bytes) else text.encode()
    return [f"{where}: {s}" for s in SECRETS if s.encode() in data]


def tree_leaks(root: Path) -> list[str]:
    """Every file under ``root`` (JSON, JSON lines, Markdown, HTML, CSV, SQLite, logs), as bytes."""
    return [hit for p in sorted(root.rglob("*")) if p.is_file() for hit in leaks(str(p), p.read_bytes())]


def said(where: str, r) -> list[str]:
    return leaks(f"{where} (stdout)", r.stdout) + leaks(f"{where} (stderr)", r.stderr)


def test_no_writer_and_no_printer_shows_a_credential(tmp_path, replay):
    found: list[str] = []
    dry = invoke("run", CI, "--dry-run", *QUICK, cwd=tmp_path, env=ENV)
    assert dry.returncode == 0, dry.stderr[-2000:]
    url = "LLAMA_ARG_MODEL_URL=https://models.example/m.gguf?X-Amz-Signature=REDACTED"
    assert url in dry.stdout + dry.stderr
    assert "--hf-token REDACTED" in dry.stdout  # the command line keeps its shape, not the token
    found += said("run --dry-run", dry)
    for args in (["env"], ["env", "--json"]):
        r = invoke(*args, cwd=tmp_path, env=ENV)
        assert r.returncode == 0, r.stderr
        found += said(" ".join(args), r)

    secret_run, plain_run = tmp_path / "results" / "secret", tmp_path / "results" / "plain"
    r = invoke("run", CI, "--out", secret_run, *QUICK, cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    found += said("run", r)
    assert "REDACTED" in (secret_run / "manifest.json").read_text()  # recorded, without the secret
    # the config it records is redacted: the same config and secrets still resume it
    r = invoke("run", CI, "--resume", secret_run, *QUICK, cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    found += said("run --resume", r)
    r = invoke("run", CI, "--out", plain_run, *QUICK[:-2], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]

    # a run folder an older specbench wrote, the secrets in its manifest and samples as they were
    old_run = tmp_path / "results" / "old"
    old_run.mkdir()
    manifest = json.loads((secret_run / "manifest.json").read_text())
    manifest["run_id"] = "old"
    manifest["env"]["variables"] = {**manifest["env"].get("variables", {}), **ENV}
    (old_run / "manifest.json").write_text(json.dumps(manifest))
    samples = (secret_run / "samples.jsonl").read_text().replace("REDACTED", TOKEN)
    (old_run / "samples.jsonl").write_text(samples.replace('"run_id":"secret"', '"run_id":"old"'))

    for run in (secret_run, old_run):
        for fmt in ("table", "html"):  # the files are written whatever it prints
            r = invoke("report", run, "--format", fmt, "--out", tmp_path / "reports" / f"{run.name}-{fmt}",
                       cwd=tmp_path)  # fmt: skip
            assert r.returncode == 0, r.stderr[-2000:]
            found += said(f"report {run.name} -f {fmt}", r)
        for fmt in ("table", "md", "json"):
            r = invoke("compare", plain_run, run, "--format", fmt, cwd=tmp_path)
            assert r.returncode in (0, 1), r.stderr[-2000:]
            assert "environment" in r.stdout + r.stderr  # the warning that names the variables
            found += said(f"compare {run.name} -f {fmt}", r)
        r = invoke(
            "baseline", "save", run, "--name", f"b-{run.name}", "--dir", tmp_path / "baselines", cwd=tmp_path
        )
        assert r.returncode == 0, r.stderr[-2000:]
        found += said(f"baseline save {run.name}", r)
        r = invoke(
            "history", "--add", run, "--db", tmp_path / "history.sqlite", "--format", "json", cwd=tmp_path
        )
        assert r.returncode == 0, r.stderr[-2000:]
        found += said(f"history --add {run.name}", r)
    r = invoke("publish", "--out", tmp_path / "site", "--db", tmp_path / "history.sqlite",
               "--runs", tmp_path / "results", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    found += said("publish", r)

    for root in (secret_run, plain_run, tmp_path / "reports", tmp_path / "baselines", tmp_path / "site"):
        found += tree_leaks(root)
    found += leaks("history.sqlite", (tmp_path / "history.sqlite").read_bytes())
    assert not found, "\n".join(found)
