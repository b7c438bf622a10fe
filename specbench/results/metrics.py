"""Every metric specbench judges and shows, declared once: compare, ab, bisect, history, publish and
the CLI read a metric's facts from ``METRICS``, so a new metric is one ``Metric`` entry.

Scales: ``ratio`` metrics (higher is better) are judged on the ratio of the two sides and summarised
by geometric means; ``points`` metrics are fractions judged in percentage points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from specbench.base.errors import InputError

if TYPE_CHECKING:  # the CLI builds its help texts from this table: it stays light to import
    from specbench.results.records import Sample

Scale = Literal["ratio", "points"]


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # as compare's tables title it
    role: Literal["baseline", "speculative"]  # the samples it reads
    read: Callable[[Sample, Mapping[tuple, Sample]], float | None]  # (sample, paired baselines) -> value
    scale: Scale  # which decide rule judges it (ratio: throughput/decide_ratio; points: acceptance/points)
    text: Callable[[float], str]  # one value as compare and history print it
    axis: str  # the y axis label of ``history --plot``
    title: str  # its section on the results site
    site_unit: str  # the site's plot unit
    paired: bool = False  # reads each sample's paired baseline (``bracket.paired_baseline``): a speedup
    baseline_span: bool = False  # reads a baseline's t/s, whose timer changed with run folder format 2

    @property
    def positive(self) -> bool:
        """A value of 0 or less is no value (nothing generated), for rates and ratios."""
        return self.scale == "ratio"

    def value(self, s: Sample, paired: Mapping[tuple, Sample]) -> float | None:
        """The sample's value; None when unmeasured, not finite or (ratio scale) 0 or less."""
        v = self.read(s, paired)
        if v is None or not math.isfinite(v) or (self.positive and v <= 0):
            return None
        return float(v)

    def pairing(self, samples: Sequence[Sample]) -> dict[tuple, Sample]:
        """The paired baselines ``read`` needs (empty for a metric that reads none)."""
        from specbench.results import bracket

        return bracket.paired_baseline(samples) if self.paired else {}


def _two(v: float) -> str:
    return f"{v:.2f}"


def _speedup(s: Sample, paired: Mapping[tuple, Sample]) -> float | None:
    from specbench.results import bracket

    return bracket.speedup_ratio(s, paired.get(s.sample_key()))  # the report's pairing (results/bracket.py)


_ALL = (
    Metric(name="spec_tps", unit="t/s", role="speculative", read=lambda s, _: s.tps, scale="ratio",
           text=_two, axis="spec_tps (t/s)", title="speculative t/s", site_unit="t/s"),
    Metric(name="baseline_tps", unit="t/s", role="baseline", read=lambda s, _: s.tps, scale="ratio",
           text=_two, axis="baseline_tps (t/s)", title="baseline t/s (the target alone)", site_unit="t/s",
           baseline_span=True),
    Metric(name="speedup", unit="x", role="speculative", read=_speedup, scale="ratio",
           text=lambda v: f"{v:.3f}", axis="speedup (x)", title="speedup", site_unit="x", paired=True,
           baseline_span=True),
    Metric(name="acceptance", unit="%", role="speculative", read=lambda s, _: s.acceptance, scale="points",
           text=lambda v: f"{v * 100:.1f}%", axis="acceptance", title="acceptance", site_unit="fraction"),
    # tokens per target pass: how much each pass of the target yields (1 without speculation)
    Metric(name="tokens_per_pass", unit="tokens", role="speculative", read=lambda s, _: s.tokens_per_pass,
           scale="ratio", text=_two, axis="tokens per target pass", title="tokens per target pass",
           site_unit="tokens"),
)  # fmt: skip
METRICS: dict[str, Metric] = {m.name: m for m in _ALL}

COMPARE_DEFAULT = ("spec_tps", "baseline_tps")  # compare adds acceptance where both sides are greedy
PAIRED_DEFAULT = ("baseline_tps", "spec_tps", "speedup", "acceptance")
SITE_FIRST = "speedup"  # the results site leads each page with it, then the table's order


def roles_read(names: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The sample roles a gate judging ``names`` needs, which are all ``ab``/``bisect`` measure: each
    metric's role, a speedup's baseline, and with both the window after the speculative servers.
    No metric reads the draft alone (a quarter of each round on ``configs/ci.yaml``)."""
    from specbench.results.bracket import AFTER

    metrics = [METRICS[n] for n in names]
    roles = {m.role for m in metrics} | {"baseline" for m in metrics if m.paired}
    if {"speculative", "baseline"} <= roles:
        roles.add(AFTER)
    return frozenset(roles)


def choices(last: str = " or ") -> str:
    """``spec_tps, baseline_tps, ... or tokens_per_pass``: the names for help texts and errors."""
    names = list(METRICS)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])}{last}{names[-1]}"


def check_metric(name: str) -> Metric:
    """The metric a --metric option names; every command refuses an unknown one in the same words."""
    if name not in METRICS:
        raise InputError(f"--metric {name}: choose one of {choices()}")
    return METRICS[name]


def site_order() -> list[str]:
    return [SITE_FIRST, *(n for n in METRICS if n != SITE_FIRST)]


def paired_order() -> list[str]:
    """How ``ab`` ranks its decisions: its default list, then the rest of the table."""
    return [*PAIRED_DEFAULT, *(n for n in METRICS if n not in PAIRED_DEFAULT)]
