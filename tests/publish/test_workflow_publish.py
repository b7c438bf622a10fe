"""The shipped workflow publishes the site: an artifact always, GitHub Pages from the default branch only."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "specbench.yml"
JOBS = yaml.safe_load(WORKFLOW.read_text())["jobs"]


def _runs(job: str) -> str:
    return "\n".join(step.get("run", "") for step in JOBS[job]["steps"])


def test_each_machine_keeps_its_history_and_uploads_it_with_its_runs():
    bench = _runs("bench")
    assert 'cp "$SPECBENCH_HOME/history.sqlite" results/' in bench
    assert 'cp results/history.sqlite "$SPECBENCH_HOME/history.sqlite"' in bench
    keep = next(s for s in JOBS["bench"]["steps"] if s.get("name") == "Keep this machine's history")
    assert keep["if"] == "always()"  # a failed gate's run is a point too


def test_the_site_is_an_artifact_and_goes_to_pages_from_the_default_branch():
    publish = JOBS["publish"]
    assert publish["needs"] == "bench" and "always()" in publish["if"]
    assert "specbench publish" in _runs("publish") and '--db "$dir/history.sqlite"' in _runs("publish")
    uses = {s.get("uses", "").split("@")[0]: s for s in publish["steps"]}
    assert uses["actions/download-artifact"]["with"]["pattern"] == "specbench-results-*"
    assert uses["actions/upload-artifact"]["with"]["path"] == "site/"
    assert "default_branch" in uses["actions/upload-pages-artifact"]["if"]
    pages = JOBS["pages"]
    assert "default_branch" in pages["if"] and pages["environment"]["name"] == "github-pages"
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
