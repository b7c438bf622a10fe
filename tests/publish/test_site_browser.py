"""The published site in a real browser (Debian's headless Chromium): runs recorded in history
(replayed, tests/fixtures/replay.py; real llama.cpp runs in the integration tier), every page
reached from the index loads with no console error, the trend plots draw every point, points link
to run pages with the run's report, a moved run folder is said missing."""

from __future__ import annotations

import shutil
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from specbench.gate.bisect import BisectState, Commit, Step
from specbench.gate.decision import Status
from specbench.publish.series import load_series
from specbench.results.folder import BISECT
from specbench.results.manifestfile import load_manifest, save_manifest
from specbench.results.samplelog import append_sample, load_samples
from tests.fixtures.replay import TIERS, runs_by
from tests.helpers.cli import specbench
from tests.publish.browser import CHROMIUM, Browser

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="/usr/bin/chromium missing: `apt-get install -y chromium` "
        "(Debian's package; .ci/run installs it) runs the browser tests",
    ),
]

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "ci.yaml"
CHEAP = [
    "--set",
    "prompts.ids=[math-03]",
    "--set",
    "generation.n_predict=16",
    "--set",
    "repetitions=1",
    "--set",
    "warmup=0",
    "--set",
    "generation.threads=1",
    "--quiet",
]
LINKS = "Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href') || a.href.baseVal)"


def as_ab(run: Path, out: Path) -> Path:
    """A two-build run folder from one real run's samples (labels base and head): the ab page's input,
    without building llama.cpp twice here (tests/cli/test_ab_real.py runs real ab)."""
    manifest = load_manifest(run)
    manifest.run_id = out.name
    manifest.builds = {"base": manifest.build, "head": manifest.build}
    out.mkdir()
    for s in load_samples(run):
        for label in ("base", "head"):
            append_sample(out, s.model_copy(update={"build": label, "run_id": out.name}))
    save_manifest(out, manifest)
    return out


def publish(root: Path, out: Path, *runs: Path):
    extra = [a for r in runs for a in ("--runs", str(r))]
    r = specbench("publish", "--out", out, *extra, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.fixture(scope="module", params=TIERS)
def site(request, tmp_path_factory):
    """Two runs recorded in history (replayed; real in the integration tier), an ab run made of
    the second and a bisect folder, published."""
    with runs_by(request, tmp_path_factory):
        yield _site(tmp_path_factory)


def _site(tmp_path_factory):
    root = tmp_path_factory.mktemp("publish")
    results = root / "results"
    for name in ("r1", "r2"):
        r = specbench("run", CONFIG, "--out", results / name, *CHEAP, cwd=root, timeout=1800)
        assert r.returncode == 0, r.stderr[-2000:]
    ab = as_ab(results / "r2", results / "ab-1")
    commits = [Commit(sha="a" * 40, subject="first"), Commit(sha="b" * 40, subject="second")]
    state = BisectState(
        source="/src/llama.cpp",
        good="0" * 40,
        bad="b" * 40,
        metric="baseline_tps",
        threshold=0.05,
        commits=commits,
        steps=[
            Step(
                index=0,
                commit="a" * 40,
                run_dir=str(ab),
                status=Status.FAIL,
                ratio=0.9,
                ci_low=0.85,
                ci_high=0.95,
            )
        ],
    )
    (results / "bisect-1").mkdir()
    (results / "bisect-1" / BISECT).write_text(state.model_dump_json())
    publish(root, root / "site")
    return root, root / "site"


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


def _local(page: Path, href: str) -> Path | None:
    if not href or href.startswith(("#", "http:", "https:", "data:", "mailto:")):
        return None
    return (page.parent / unquote(urlparse(href).path)).resolve()


def test_every_page_linked_from_the_index_loads_without_console_errors(site, browser):
    _, out = site
    seen, todo = set(), deque([out / "index.html"])
    kinds = set()
    while todo:
        page = todo.popleft()
        if page in seen:
            continue
        seen.add(page)
        result = browser.open(page.as_uri(), LINKS)
        assert result.errors == [], (page, result.errors)
        kinds.add(page.parent.name if page.parent != out else page.name)
        for href in result.value:
            target = _local(page, href)
            if target is None:
                continue
            assert target.is_file(), f"{page.name} links to {href}, which is not there"
            if target.suffix == ".html" and target.is_relative_to(out):
                todo.append(target)
    assert {"index.html", "best.html", "trend", "runs", "ab", "bisect"} <= kinds
    assert seen == set(out.rglob("*.html"))  # nothing the site wrote is out of reach


def test_the_trend_plot_draws_every_point_and_switches_its_x_axis(site, browser):
    root, out = site
    series = load_series([root / "results" / "history.sqlite"])
    page = next((out / "trend").glob("*.html"))
    shown = [s for s in series if s.metric != "baseline_tps"] + [
        s for s in series if s.metric == "baseline_tps"
    ]
    expected = sum(len(s.points) for s in shown)
    assert expected >= 8  # 2 runs x (speedup, spec t/s, acceptance, baseline t/s)
    count = "document.querySelectorAll('svg.trend circle.pt').length"
    assert browser.open(page.as_uri(), count).value == expected
    switch = (
        "document.querySelector('button[data-axis=time]').click();"
        "var c = document.querySelector('svg.trend circle.pt'); var before = [c.getAttribute('cx'), "
        "c.getAttribute('data-c')]; document.querySelector('button[data-axis=commit]').click();"
        "[before, [c.getAttribute('cx'), c.getAttribute('data-c')], "
        "getComputedStyle(document.querySelector('g.ax[data-axis=commit]')).display]"
    )
    before, after, shown_axis = browser.open(page.as_uri(), switch).value
    assert after == before[::-1] and shown_axis != "none"  # the points moved to their commit's x
    shot = out.parent / "trend.png"
    browser.open(page.as_uri())
    browser.screenshot(shot)
    from matplotlib.image import imread

    pixels = imread(shot).reshape(-1, 4)
    assert len({tuple(p) for p in pixels[::7]}) > 50  # lines, points and text, not a blank page


def test_points_link_to_run_pages_with_the_runs_report(site, browser):
    _, out = site
    page = next((out / "trend").glob("*.html"))
    hrefs = browser.open(
        page.as_uri(),
        "Array.from(document.querySelectorAll('svg.trend a')).map(a => a.getAttribute('href'))",
    ).value
    runs = {_local(page, h) for h in hrefs if h.startswith("../runs/")}
    assert len(runs) == 2 and all(r.is_file() for r in runs)
    for run in runs:
        report = browser.open(run.as_uri(), "document.querySelector('#report').getAttribute('href')").value
        assert (run.parent / report).is_file()
        loaded = browser.open((run.parent / report).as_uri(), "document.body.innerText")
        assert loaded.errors == [] and "smol" in loaded.value


def test_a_moved_run_folder_keeps_its_points_and_its_page_says_missing(site, browser):
    root, out = site
    moved = root / "moved"
    moved.mkdir(exist_ok=True)
    shutil.move(root / "results" / "r1", moved / "r1")
    try:
        publish(root, root / "site-moved")
        page = next((root / "site-moved" / "trend").glob("*.html"))
        count = "document.querySelectorAll('svg.trend circle.pt').length"
        assert (
            browser.open(page.as_uri(), count).value
            == browser.open(next((out / "trend").glob("*.html")).as_uri(), count).value
        )
        missing = [
            p for p in (root / "site-moved" / "runs").glob("*.html") if "run folder missing" in p.read_text()
        ]
        assert len(missing) == 1 and "results/r1" in missing[0].read_text()
        text = browser.open(missing[0].as_uri(), "document.querySelector('#missing').innerText")
        assert text.errors == [] and "moved or deleted" in text.value
        publish(root, root / "site-found", root / "results", moved)  # --runs the new place: linked again
        assert not any(
            "run folder missing" in p.read_text() for p in (root / "site-found" / "runs").glob("*.html")
        )
    finally:
        shutil.move(moved / "r1", root / "results" / "r1")


def test_the_best_settings_command_line_plans_that_cell(site):
    import html
    import re
    import shlex

    root, out = site
    commands = [
        html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", (out / "best.html").read_text(), re.S)
    ]
    assert len(commands) == 1
    argv = shlex.split(commands[0])
    assert argv[:2] == ["specbench", "run"] and "generation.n_predict=16" in argv  # the run's own --set kept
    r = specbench(*argv[1:], "--dry-run", cwd=root, env={"SPECBENCH_RESULTS": str(root / "dry")})
    assert r.returncode == 0, r.stderr[-2000:]
    planned = [ln for ln in r.stdout.splitlines() if ln.startswith("# rep ") and " speculative " in ln]
    assert planned and all("smol draft draft_max=8" in ln and "math-03" in ln for ln in planned), planned
