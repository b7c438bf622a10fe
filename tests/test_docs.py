"""The docs: a short README, and a page for every section the README had before it was split into
the site (commit c2199a3, 1,464 lines): nothing it said was dropped. The site's strict build (a
broken link, anchor or nav entry) is `make lint`'s."""

import re
from pathlib import Path

import pytest
import yaml

from specbench.plan.config import config_from_mapping
from tests.helpers.compat import docs_table, load_rows, render_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

# The README's section titles before the split; each is a heading of a docs page now.
README_SECTIONS = [
    "Set-up",
    "Running a benchmark: `specbench run`",
    "Measurement quality: `repetitions: auto`, warnings, the noise check, `--strict`",
    "Runners: one process per sample, or one llama-server per setting",
    "Config format",
    "The shipped configs",
    "Speculative methods",
    "Synthetic acceptance: the machine's curve (`sweep.synth_len`)",
    "Reports: `specbench report`",
    "Tuning: `specbench tune`",
    "One sweep on several machines: `specbench plan --shards`, `run --shard`, `merge`",
    "Models: `specbench models`",
    "Building llama.cpp: `specbench build`",
    "Several builds in one config",
    "Your machine: `specbench env`",
    "Regression gate in CI: `specbench compare`",
    "The workflow",
    "Creating the first baseline (once per machine)",
    "Two builds side by side: `specbench ab`, `specbench bisect`",
    "Parsing logs: `specbench parse`",
    "When things go wrong",
    "Development",
]
# Bold-led paragraphs of the old README that are sections in all but name.
README_PARAGRAPHS = [
    "**History**", "**Baselines**", "**Where the time goes**", "**The speed model**", "**Which gate when.**",
    "**What each t/s sees.**", "**Where a new axis goes.**",
    "**Test heads: EAGLE-3 and MTP without a download.**",
    "**Published figures.**",
]  # fmt: skip


def headings() -> dict[str, Path]:
    found = {}
    for page in DOCS.glob("*.md"):
        for line in page.read_text().splitlines():
            if m := re.match(r"^#{1,4} (.+)$", line):
                found[m.group(1).strip()] = page
    return found


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 200


def test_the_readme_sets_up_with_make_demo_and_make_test():
    text = README.read_text()
    block = text.split("## Set-up", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.splitlines()] == [["make", "demo"], ["make", "test"]]


@pytest.mark.parametrize("title", README_SECTIONS)
def test_every_old_readme_section_has_a_page(title):
    assert title in headings(), f"no docs page has the heading {title!r}"


@pytest.mark.parametrize("lead", README_PARAGRAPHS)
def test_every_old_readme_paragraph_lead_is_in_the_docs(lead):
    assert any(lead in page.read_text() for page in DOCS.glob("*.md")), lead


# GitHub resolves a README link against the repository's page: ../../actions/workflows/F is the
# Actions page of workflow F (and its badge), whoever owns the repository or its fork.
ACTIONS = re.compile(r"\.\./\.\./actions/workflows/([^/]+)(?:/badge\.svg)?")


def test_the_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text()):
        if m := ACTIONS.fullmatch(target):
            assert (ROOT / ".github" / "workflows" / m[1]).is_file(), target
        elif not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_the_readme_recipe_config_loads(tmp_path):
    """Recipe 1's config is valid as written (models are only named, not fetched, by the loader)."""
    text = README.read_text().split("### 1. Benchmark my pair on my GPU", 1)[1]
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    cfg = config_from_mapping(yaml.safe_load(block), tmp_path, "README recipe 1")
    assert cfg.pairs["llama8b-1b"].draft == "llama32_1b" and cfg.sweep.ngl == [99]


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert re.search(rf":\s+{re.escape(page.name)}\s*$", nav, re.M), (
            f"{page.name} is not in mkdocs.yml nav"
        )


def test_the_formats_page_gives_each_files_current_version():
    """docs/formats.md's table of current versions is the code's: a format raised without its row fails."""
    from specbench.gate.baseline import FORMAT_VERSION as BASELINE
    from specbench.gate.historydb import SCHEMA_VERSION as HISTORY
    from specbench.results.manifest import FORMAT_VERSION as RUN_FOLDER

    text = (DOCS / "formats.md").read_text()
    for constant, version in (
        ("results/manifest.py", RUN_FOLDER),
        ("gate/baseline.py", BASELINE),
        ("gate/historydb.py", HISTORY),
    ):
        row = next(line for line in text.splitlines() if constant in line)
        assert f"| {version} |" in row, row
    for section, version in (
        ("## Run folder", RUN_FOLDER),
        ("## Baseline", BASELINE),
        ("## History database", HISTORY),
    ):
        rows = text.split(section, 1)[1].split("\n## ", 1)[0]
        assert re.search(rf"^\| {version} \|", rows, re.M), f"{section}: no row for version {version}"


def test_the_changelog_has_the_packages_version():
    from specbench import __version__

    assert f"## {__version__} - " in (ROOT / "CHANGELOG.md").read_text()


def test_the_architecture_page_names_every_module_with_its_purpose():
    """The generated page lists every module of every layer, each with a docstring line (not a dash)."""
    import sys

    sys.path.insert(0, str(DOCS / "_hooks"))
    from architecture import architecture_page, first_line, layers, modules

    page = architecture_page()
    for layer in layers():
        for path in modules(layer):
            rel = path.relative_to(ROOT / "specbench").as_posix()
            assert f"| `{rel}` |" in page, rel
            assert first_line(path) != "-", f"{rel} has no docstring: say what the module is for"


def test_the_compatibility_table_is_rendered_from_its_json():
    """docs/build.md's table of llama.cpp trees is the rendering of the integration tier's record
    (tests/data/compat/trees.json): regenerate it with `python -m tests.helpers.compat`."""
    rows = load_rows()
    assert {r["id"] for r in rows} >= {"pin"}  # the pinned tree is a row
    assert docs_table((DOCS / "build.md").read_text()) == render_table(rows)


# A date in a page's prose marks a measurement record (command, date, machine, numbers): those live
# in docs/measured.md (or benchmarks/results/), and a reference page links them (issue 61).
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
RECORD_PAGES = {"measured.md", "formats.md"}  # formats.md dates each format version


def prose(text: str) -> str:
    """The text less fenced code blocks and inline code (example output may show dates)."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`]*`", "", text)


def test_measurement_records_live_on_the_measured_page():
    pages = [README, *(p for p in DOCS.glob("*.md") if p.name not in RECORD_PAGES)]
    dated = {
        f"{page.relative_to(ROOT)}:{n}": line.strip()
        for page in pages
        for n, line in enumerate(prose(page.read_text()).splitlines(), 1)
        if DATE.search(line)
    }
    assert not dated, f"dated records outside docs/measured.md: {dated}"


def test_the_measured_page_indexes_every_record():
    """docs/measured.md opens with a table of its records: a section added without its row fails."""
    text = (DOCS / "measured.md").read_text()
    index = text.split("\n## ", 1)[0]
    for title in re.findall(r"^## (.+)$", text, re.M):
        assert f"| [{title}](#" in index, f"docs/measured.md: no index row for {title!r}"
