"""The first round's choice: the model's best, then others far enough apart to tell apart."""

from specbench.tune.search import Setting, first_round


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
