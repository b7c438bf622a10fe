"""The published figure beside the measured one, for runs whose config says what to ``expect:``."""

from __future__ import annotations

from specbench.analysis.cells import ReportRow, cell_name
from specbench.analysis.figures import pick_best
from specbench.results.expect import Expectation


def _figure(value: float | str, kind: str, measured: bool) -> str:
    """Published numbers as written (2.01 t/s stays 2.01); measured ones to a sensible precision."""
    if isinstance(value, str):
        return value
    if kind == "speedup":
        return f"{value:.2f}x"
    if kind == "acceptance":
        return f"{value:.1%}" if measured else f"{value:.0%}" if value <= 1 else f"{value:g}%"
    return f"{value:.1f} t/s" if measured else f"{value:g} t/s"


def _figures(values: dict[str, float | str | None], measured: bool = False) -> str:
    labels = {"speedup": "speedup {}", "acceptance": "acceptance {}",
              "spec_tps": "speculative {}", "baseline_tps": "baseline {}"}  # fmt: skip
    shown = [labels[k].format(_figure(v, k, measured)) for k, v in values.items() if v is not None]
    return ", ".join(shown) or "no figure given"


def published_note(expect: Expectation, run: str, rows: list[ReportRow]) -> str:
    """One sentence: what was published for the setup, then the run's best cell in the same terms."""
    source = f" ({expect.source})" if expect.source else ""
    published = _figures(
        {k: getattr(expect, k) for k in ("speedup", "acceptance", "spec_tps", "baseline_tps")}
    )
    text = f"Published for this setup{source}: {published}."
    if expect.note:
        text += f" {expect.note.rstrip('.')}."
    mine = [r for r in rows if r.run == run and r.category == "all" and r.speedup is not None]
    if not mine:
        return text + f" Run {run} has no valid speculative cell to set beside it."
    pick = pick_best(mine, lambda r: (r.speedup, r.speedup_ci_low, r.speedup_ci_high), lambda r: r.synthetic)
    best = pick.item
    if best is None:
        return text + f" Run {run} has no valid speculative cell to set beside it."
    which = "best cell" if pick.decided else f"highest cell, {pick.standing}"  # the one rule (figures.py)
    measured = _figures(
        {"speedup": best.speedup, "acceptance": best.acceptance, "spec_tps": best.spec_tps,
         "baseline_tps": best.baseline_tps}, measured=True
    )  # fmt: skip
    return text + f" Measured in {run} ({which}, {cell_name(best)}): {measured}."
