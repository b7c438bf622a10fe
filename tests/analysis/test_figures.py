"""What may be called a cell's best (issue 58): one rule, ``figures.pick_best``, for report's ★,
tune's choice, history and the results site. Its consumers are tested where they live; here the
rule itself."""

from specbench.analysis.figures import MAX_SPREAD, Standing, pick_best, standing


def test_a_figure_is_decided_only_with_an_interval_within_the_spread():
    assert standing(1.4, 1.1, 1.7) == Standing.DECIDED
    assert standing(2.61, 0.0, 373145.74) == Standing.UNDECIDED  # the card
    assert standing(2.0, 1.0, 1.0 * MAX_SPREAD * 1.01) == Standing.UNDECIDED
    assert standing(1.2, None, None) == Standing.UNDECIDED  # one repetition: no interval
    assert standing(1.4, 1.1, 1.7, synthetic=True) == Standing.SYNTHETIC
    assert standing(None, None, None) == Standing.NOTHING


def test_the_best_is_the_highest_decided_real_cell_else_says_what_it_is():
    cells = {
        "synthetic": (9.0, 8.9, 9.1, True),
        "wide": (3.0, 0.1, 90.0, False),
        "real": (1.3, 1.2, 1.4, False),
        "slower": (0.8, 0.7, 0.9, False),
    }
    fig, synth = (lambda k: cells[k][:3]), (lambda k: cells[k][3])
    best = pick_best(cells, fig, synth)
    assert (best.item, best.standing) == ("real", Standing.DECIDED)
    best = pick_best(["synthetic", "wide"], fig, synth)
    assert (best.item, best.standing) == ("wide", Standing.UNDECIDED)
    best = pick_best(["synthetic"], fig, synth)
    assert (best.item, best.standing) == ("synthetic", Standing.SYNTHETIC)
    assert pick_best([], fig, synth).item is None
