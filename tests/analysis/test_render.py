"""The report's formats on a recorded run: same rows everywhere, md fits a GitHub comment, html is
self-contained, csv and json carry the contract keys first."""

import base64
import io
import json
from html.parser import HTMLParser

import pytest

from specbench.analysis import render
from specbench.analysis.cells import CONTRACT_KEYS
from specbench.analysis.report import build_report
from tests.helpers.reports import NGL, QUICK
from tests.helpers.tableentry import with_entry


@pytest.fixture(scope="module")
def report():
    return build_report([QUICK])


@pytest.fixture(scope="module")
def files(report, tmp_path_factory):
    return render.write_report(report, tmp_path_factory.mktemp("out"), by_category=True)


def test_markdown_table_rows_best_and_images(report, files):
    text = files.markdown.read_text()
    rows = report.shown(by_category=True)
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(rows)  # header + one line per row
    assert sum(render.BEST in line for line in table) == sum(r.best for r in rows) > 0
    for png in files.plots:
        assert f"]({png.name})" in text
    for note in report.notes:
        assert note in text
    assert len(text) < render.MD_LIMIT


def test_markdown_leaves_rows_to_csv_when_too_long(report):
    full = render.markdown(report, by_category=True)
    short = render.markdown(report, by_category=True, limit=len(full) - 200)
    assert len(short) <= len(full) - 200
    assert "more rows in report.csv" in short


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.srcs, self.links, self.rows = [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.srcs.append(attrs["src"])
        if tag in ("link", "script", "a") or "href" in attrs:
            self.links.append(tag)
        if tag == "tr":
            self.rows += 1


def test_html_is_self_contained(report, files):
    refs = _Refs()
    refs.feed(files.html.read_text())
    assert refs.links == []
    assert len(refs.srcs) == len(files.plots) >= 4
    for src in refs.srcs:
        head, data = src.split(",", 1)
        assert head == "data:image/png;base64"
        assert base64.b64decode(data)[:4] == b"\x89PNG"
    assert refs.rows == 1 + len(report.shown(by_category=True))


def test_csv_and_json_agree(files):
    import csv

    records = json.loads(files.json.read_text())
    reader = csv.DictReader(io.StringIO(files.csv.read_text()))
    rows = list(reader)
    assert list(reader.fieldnames or [])[: len(CONTRACT_KEYS)] == CONTRACT_KEYS
    assert len(rows) == len(records)
    for rec, row in zip(records, rows, strict=True):
        assert float(row["speedup"]) == pytest.approx(rec["speedup"])
        assert row["category"] == rec["category"]
        assert row["n"] == str(rec["n"]) and all(row[k] == "" for k, v in rec.items() if v is None)


def test_terminal_table_shows_every_cell():
    from rich.console import Console

    report = build_report([QUICK, NGL])
    console = Console(record=True, width=250)
    console.print(render.table(report))
    text = console.export_text()
    assert any(line.startswith("┃ run ") for line in text.splitlines())  # several runs: a run column
    assert text.count(render.BEST) == sum(r.best for r in report.shown(False))
    for run in report.runs:
        assert run.caption() in text


def test_csv_integer_columns_stay_integers():
    """An n-gram row has no draft_max: the column must still read 4, not 4.0 (issue 16)."""
    import csv

    rows = list(csv.DictReader(io.StringIO(render.csv_text(build_report([QUICK])))))
    assert {r["draft_max"] for r in rows} >= {"4", ""} and all("." not in r["draft_max"] for r in rows)
    assert all(r["n"].isdigit() for r in rows)


def test_a_narrow_terminal_drops_columns_not_digits():
    from rich.console import Console

    rep = build_report([QUICK])
    console = Console(width=80, record=True, no_color=True)
    console.print(render.table(rep, width=80))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    rows = [line for line in text.splitlines() if line.startswith("│ smol")]
    assert len(rows) == len(rep.shown(False))  # one line per row: nothing folded onto a second line
    assert all(f"{r.speedup:.2f}x" in line for r, line in zip(rep.shown(False), rows, strict=True))
    assert "left out for the terminal's width: tok/pass" in " ".join(text.split())
    wide = Console(width=300, record=True, no_color=True)
    wide.print(render.table(rep, width=300))
    wide_text = wide.export_text()
    assert "left out" not in wide_text and "tok/pass" in wide_text
    # no calibration cached for this run: no prediction column (Leviathan's formula is not shown)
    assert "predicted" not in wide_text.split("┃", 1)[-1].split("\n", 1)[0]


@pytest.mark.parametrize("width", [90, 80, 70, 60])
def test_headers_wrap_between_words_never_inside_one(tmp_path, width):
    """A server run side by side with a process run (runner, parallel, throughput, ttft columns):
    at any width each header shows whole words ("throughpu" is no header) and lines fit."""
    from rich.console import Console

    from specbench.results.samplelog import append_sample, load_samples
    from tests.helpers.runs import BASE, SPEC, make_run

    server = make_run(tmp_path, "server-run-with-a-long-name", BASE, SPEC)
    for s in load_samples(server):  # the same samples again as a parallel=2 server setting
        append_sample(server, s.model_copy(update={"runner": "server", "parallel": 2, "ttft_ms": 12.5,
                                                    "batch": s.repetition, "batch_wall_s": 2.0,
                                                    "n_generated": 48}))  # fmt: skip
    rep = build_report([server, QUICK])
    shown, _ = render.fit(render.columns(rep.shown(False), len(rep.runs)), rep.shown(False), width)
    console = Console(width=width, record=True, no_color=True)
    console.print(render.table(rep, width=width))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    head = text.split("┡")[0]
    words = {w for line in head.splitlines() for w in line.replace("┃", " ").split()}
    for c in shown:
        assert set(c.header.split()) <= words, (c.header, head)


def test_an_axis_the_table_shows_where_it_varies_gets_its_own_column_only_then(tmp_path):
    """One entry with ``column="varies"`` (as draft_min and p_min): the report shows its column right
    after the draft length only where rows differ in it, drops it first on a narrow terminal, and a
    cell's name leaves it to the table; nothing but the table entry is added."""
    entry = (
        'LlamaOption("seed2", ("--s2",), Count, "N", "New.", group="axis", sweep=(None,), scope="spec", '
        'column="varies")'
    )
    script = """
        from specbench.analysis.cells import cell_name, run_rows
        from specbench.analysis.render import DROP_ORDER, columns
        from specbench.results.records import Generation, Sample

        common = dict(category="chat", generation=Generation(), run_id="r", wall_s=1.0, started_at="t",
                      status="ok", valid=True, model="t", ngl=0, prompt_id="p", repetition=0)
        def shown(*values):
            samples = [Sample(role="baseline", tps=10.0, **common)] + [
                Sample(role="speculative", pair="x", method="ngram-simple", seed2=v, tps=12.0 + v, **common)
                for v in values]
            rows = [r for r in run_rows("r", samples) if r.category == "all"]
            return [c.header for c in columns(rows, 1)], {cell_name(r) for r in rows}
        heads, names = shown(3)
        assert "seed2" not in heads and names == {"x ngram-simple"}, (heads, names)
        heads, names = shown(3, 4)
        assert heads.index("seed2") == heads.index("draft_max") + 1 and names == {"x ngram-simple"}, heads
        assert DROP_ORDER.index("seed2") == DROP_ORDER.index("tok/pass") + 3  # after draft_min, p_min
        print("ok")
        """
    done = with_entry(tmp_path, entry, script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
