"""Tune's candidate grid and the first round's choice: the model's best, then others far enough
apart to tell apart."""

from specbench.plan.config import Config
from specbench.tune.candidates import Setting, candidates, first_round


def settings(*draft_max: int, ngld: int = 0) -> list[Setting]:
    return [Setting(g, 0, 0.0, 0, ngld) for g in draft_max]


def test_takes_the_models_best_even_next_to_the_probe_then_spreads():
    ranked = settings(9, 10, 11, 12, 13, 6, 16, 4)
    probe = {Setting(8, 0, 0.0, 0, 0).key()}
    chosen = [s.draft_max for s in first_round(ranked, probe, 2)]
    assert chosen == [9, 12]  # 10 and 11 are within 1.3x of 8 or 9; 12 is the next one apart


def test_skips_measured_settings_and_stops_at_k():
    ranked = settings(12, 16, 4, 2)
    measured = {ranked[0].key()}
    assert [s.draft_max for s in first_round(ranked, measured, 1)] == [16]
    assert [s.draft_max for s in first_round(ranked, measured, 3)] == [16, 4, 2]


def test_spreads_within_one_ngld_only():
    ranked = settings(12, ngld=0) + settings(12, ngld=99) + settings(13, ngld=0)
    chosen = [(s.draft_max, s.ngld) for s in first_round(ranked, set(), 3)]
    assert chosen == [(12, 0), (12, 99)]


def test_the_grid_covers_every_draft_min_and_p_min_of_the_config_with_draft_min_up_to_draft_max():
    config = Config.model_validate(
        {
            "models": {"t": {"path": "t.gguf"}, "d": {"path": "d.gguf"}},
            "pairs": {"p": {"target": "t", "draft": "d"}},
            "sweep": {"draft_max": [8], "draft_min": [0, 3], "p_min": [0.0, 0.5]},
        }
    )
    grid = candidates(config, 0, [0], 5)
    assert {(s.draft_min, s.p_min) for s in grid} == {(0, 0.0), (0, 0.5), (3, 0.0), (3, 0.5)}
    assert all(s.draft_min <= s.draft_max <= 5 for s in grid)
    assert sorted(s.draft_max for s in grid if (s.draft_min, s.p_min) == (3, 0.5)) == [3, 4, 5]
    assert len(grid) == len({s.key() for s in grid}) == 2 * 5 + 2 * 3


class _NoCalibration:
    def costs(self, model, layers):
        return None


def test_tune_writes_a_measured_speedup_as_the_report_does():
    """Tune's candidates read the report's rows, and print them the same: an interval from two
    repetitions of the recorded run, ``n=1`` from one (issue 36)."""
    from pathlib import Path

    from specbench.analysis.cells import ALL, run_rows
    from specbench.analysis.render import _speedup
    from specbench.cli.tune import _x
    from specbench.results.manifestfile import read_run
    from specbench.tune.candidates import Candidate, predict

    samples = read_run(Path(__file__).resolve().parents[1] / "data/runs/quick-cpu").samples
    for reps, shown in ((2, "["), (1, "n=1")):
        rows = [r for r in run_rows("r", [s for s in samples if s.repetition < reps])
                if r.category == ALL and r.method == "draft"]  # fmt: skip
        by_key = {Setting.of(r).key(): r for r in rows}
        cands = {k: Candidate(Setting.of(r)) for k, r in by_key.items()}
        predict(cands, by_key, _NoCalibration(), "smol_f32", "smol_q4", 0, None)
        assert len(cands) == 2
        for key, c in cands.items():
            assert c.speedup == by_key[key].speedup and shown in _x(c)
            assert _x(c) == _speedup(by_key[key])
