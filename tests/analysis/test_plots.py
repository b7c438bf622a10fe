"""Every plot is produced for the recorded quickstart-style run and for the run that swept ngl,
as a real, non-blank PNG; the GPU-layers plot only when ngl was swept."""

import pytest

from specbench.analysis import plots
from specbench.analysis.report import build_report
from tests.helpers.reports import NGL, QUICK

ALWAYS = {plots.SPEEDUP, plots.TPS_BARS, plots.ACCEPTANCE, plots.CATEGORY}


@pytest.mark.parametrize("run,expected", [(QUICK, ALWAYS), (NGL, ALWAYS | {plots.NGL})], ids=["quick", "ngl"])
def test_every_plot_is_written(run, expected, tmp_path):
    import matplotlib.image as mpimg

    made = plots.make_plots(build_report([run]), tmp_path / "report")
    assert {p.name for p in made} == expected
    for path in made:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        img = mpimg.imread(path)
        height, width = img.shape[:2]
        assert 400 <= width <= 3000 and 300 <= height <= 3000, path.name
        assert img[..., :3].std() > 0.05, f"{path.name} is blank"


def test_bars_grow_with_the_number_of_cells(tmp_path):
    import matplotlib.image as mpimg

    one = plots.tps_bars(build_report([NGL]), tmp_path / "one.png")
    two = plots.tps_bars(build_report([QUICK, NGL]), tmp_path / "two.png")
    assert mpimg.imread(two).shape[0] > mpimg.imread(one).shape[0]  # one bar pair per cell stays readable


def test_ngl_plot_needs_a_sweep(tmp_path):
    assert plots.tps_vs_ngl(build_report([QUICK]), tmp_path / "x.png") is None
    assert not (tmp_path / "x.png").exists()
