"""The report says which runs re-ran pairs (a process did not get its share of the CPU) and which
runs' speed moved between pairs (a note: the paired figures cancel it), and which measured duet pairs."""

from __future__ import annotations

from specbench.analysis.caveats import RunInfo, caveats
from specbench.machine.speed import SpeedRecord
from specbench.results.manifest import RunFacts


def _run(**facts) -> RunInfo:
    return RunInfo(run="r1", path="results/r1", facts=RunFacts(run_id="r1", status="complete", **facts))


def test_a_run_with_pairs_measured_again_says_how_many_samples_came_from_them():
    (note,) = [c.text for c in caveats([_run().model_copy(update={"n_rerun": 4})])]
    assert note.startswith("Run r1: 4 samples come from pairs measured again")
    assert caveats([_run()]) == []


def test_a_move_between_pairs_is_said_as_it_is():
    move = "machine speed moved by +32% during the run (from 45.5 to 60.0 t/s), between pairs: ..."
    (note,) = [c.text for c in caveats([_run(speed=SpeedRecord(notes=[move]))])]
    assert note == f"Run r1: {move}."


def test_a_duet_run_says_its_figures_are_half_machine_ones():
    from specbench.results.manifest import facts_from_manifest

    assert facts_from_manifest({"pairing": "duet"}, "r1").pairing == "duet"
    assert facts_from_manifest({}, "r1").pairing == "sequential"  # runs before the key: one after the other
    (note,) = [c.text for c in caveats([_run(pairing="duet")])]
    assert note.startswith("Run r1 measured its builds in duet pairs") and "half-machine" in note


def test_each_fact_is_said_once_at_its_first_place_most_severe_in_the_last_wording():
    from specbench.analysis.caveats import Severity, note, said_once, warning

    said = said_once([
        note("a", "a1"), note("drift", "drift as the report says it"), warning("busy", "busy"),
        warning("drift", "drift, warned"), note("drift", "drift in the run's own words"),
    ])  # fmt: skip
    assert [(c.severity, c.text) for c in said] == [
        (Severity.WARNING, "drift in the run's own words"),  # first said before busy; a warning once
        (Severity.WARNING, "busy"),
        (Severity.NOTE, "a1"),
    ]
