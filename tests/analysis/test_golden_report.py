"""The fixture runs give the same report as before the cell redesign (issue 20): every row's every
number, the notes, the row order and each sample's history identity, against a JSON file the old
code wrote (see tests/analysis/golden_report.py).

Issue 36 changed what a row's speedup is (paired by prompt and repetition, the geometric mean over
prompts, an interval from repetition noise on the log scale: specbench.analysis.figures), so in
that file, and only there, ``speedup``, ``speedup_ci_low``, ``speedup_ci_high`` and the notes that
quote a speedup carry the new numbers, and the rows gained ``speedup_repetitions``,
``speedup_prompts``, ``speedup_prompt_low`` and ``speedup_prompt_high``; every other number is
still the old code's. (The old interval of ngl-sweep-cpu's ngl 0 cell was [-0.19, 9.27].) Issue 42
removed the note comparing speedups with Leviathan's formula (the report's prediction is now the
calibrated model, which these runs do not have), and only that note. Issue 58 marks ★ only on a
decided real cell (``analysis.figures.pick_best``): every row's ``best`` and the notes that say why
a pair has no ★ are the new code's; and it averages a row's t/s as its speedup is (geometric over
prompts, over the speedup's pairs: ``figures.figure``), so ``baseline_tps``, ``spec_tps`` and their
``*_ci_low``/``*_ci_high`` are the new code's too (the sd columns are still the old code's). And the
notes are said once, warnings first, with the rows' quality warnings in one line per kind among them
(``analysis.caveats.said_once``, ``analysis.report.digest``): the ``imprecise`` lines are the new code's."""

import json

from specbench.results.cell import OPTION_FIELDS
from tests.analysis.golden_report import GOLDEN, report_numbers

# fields rows gained since; the fixture runs have them at their default
NEW_KEYS = {
    "build": None, "shard": None, "machine": None, "model_calibration": None,
    "synth_len": None, "synthetic": False, "accept_len": None, "accept_by_pos": None, "depth": 0,
    **dict.fromkeys(OPTION_FIELDS),  # llama.cpp options: not passed (the default)
    "baseline_window": None,
}  # fmt: skip
SPAN_KEYS = {"baseline_decode_tps", "baseline_outside", "spec_outside"}
ACCEPTANCE_CI = {"acceptance_ci_low", "acceptance_ci_high"}  # issue 62: computed from the samples
REPEATABLE = "repeatable"  # issue 42: whether greedy repetitions agreed (the fixture runs' all do)


def test_report_numbers_are_those_of_the_code_before_the_redesign():
    golden = json.loads(GOLDEN.read_text())
    now = report_numbers()
    assert now.keys() == golden.keys()
    for name, old in golden.items():
        if name.startswith("identity:"):
            assert now[name] == old, name
            continue
        assert now[name]["notes"] == old["notes"], name
        assert len(now[name]["rows"]) == len(old["rows"]), name
        for new_row, old_row in zip(now[name]["rows"], old["rows"], strict=True):
            extra = {k: v for k, v in new_row.items() if k not in old_row}
            assert SPAN_KEYS <= extra.keys(), name  # docs/timing.md: computed from the samples' logs
            assert extra.get(REPEATABLE) in (True, None), name
            extra = {k: v for k, v in extra.items() if k not in SPAN_KEYS | {REPEATABLE} | ACCEPTANCE_CI}
            assert extra == NEW_KEYS, name
            assert {k: new_row[k] for k in old_row} == old_row, name
