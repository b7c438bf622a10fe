"""The paired gate over one run that measured two (or more) llama.cpp builds side by side.

``specbench ab`` and ``specbench compare RUN`` (one multi-build run folder) end here. A cell is a
sample's cell without its build and prompt; its pairs are the (prompt, repetition) measured on both
builds back to back. This module finds the pairs; ``gate.paired`` judges them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, computed_field

from specbench.base.errors import InputError
from specbench.gate.compare import cell_label
from specbench.gate.decision import EXIT_CODES, OUTPUT, SEVERITY, STILL_OPEN, THRESHOLD, Status, Verdict
from specbench.gate.paired import CONFIDENCE, PairedDecision, decide_points, decide_ratio
from specbench.results.metrics import METRICS, PAIRED_DEFAULT, check_metric, paired_order
from specbench.results.records import Measurement, Sample

# The fields of a cell without its build, prompt and repetition (whatever axes a sample has).
_NOT_CELL = {"build", "prompt_id", "category", "repetition", "generation"}


def parse_build_spec(text: str, flag: str) -> tuple[str | None, str | None]:
    """``SRC[@REF]`` -> (source or None for the config's own, ref or None for the tree as it is).

    The ref follows the last ``@``; ``@REF`` alone takes the config's source at REF."""
    text = text.strip()
    if not text:
        raise BuildChoiceError(f"{flag}: empty; write SRC[@REF], e.g. ~/llama.cpp@master or @HEAD~1")
    src, at, ref = text.rpartition("@") if "@" in text else (text, "", "")
    if at and not ref.strip():
        raise BuildChoiceError(f"{flag} {text}: nothing after '@'; write SRC@REF, e.g. ~/llama.cpp@master")
    if any(c.isspace() for c in ref) or ref.startswith("-"):
        raise BuildChoiceError(
            f"{flag} {text}: {ref!r} is not a git ref; write SRC@REF, e.g. ~/llama.cpp@v1.2"
        )
    if src:
        if not Path(src).expanduser().is_dir():
            raise BuildChoiceError(
                f"{flag} {text}: {src} is not a folder; write SRC[@REF] with SRC a llama.cpp tree"
            )
        src = str(Path(src).expanduser().resolve())
    return (src or None), (ref or None)


class BuildChoiceError(InputError):
    """--base/--head do not name the run's builds."""


class CellDecision(PairedDecision):
    cell: str


class PairedComparison(BaseModel):
    run: str
    base: str  # build labels
    head: str
    threshold: float
    decisions: list[CellDecision]
    nothing: list[str] = []  # metrics with no sample on either build (an interrupted or empty run)
    allow_noisy: bool = False
    confidence: float = CONFIDENCE

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form; mypy cannot type it
    @property
    def exit_code(self) -> int:
        """1 any fail, else 4 nothing to compare, else 3 any undecided (0 with ``allow_noisy``), else 0."""
        return int(EXIT_CODES[self.verdict])

    @property
    def verdict(self) -> Verdict:
        nothing = bool(self.nothing) or not self.decisions
        return Verdict.of(self.count(Status.FAIL), self.count(Status.TOO_NOISY), nothing, self.allow_noisy)

    def count(self, status: Status) -> int:
        return sum(d.status == status for d in self.decisions)


def builds_in(samples: Sequence[Sample]) -> list[str]:
    """The build labels of a run, in the order the first repetition ran them (the config's order)."""
    ordered = sorted(samples, key=lambda s: s.repetition)  # stable: file order within a repetition
    return list(dict.fromkeys(s.build for s in ordered if s.build is not None))


def choose_builds(labels: Sequence[str], base: str | None, head: str | None) -> tuple[str, str]:
    """Which build is base and which head: named, or the only two (``base``/``head`` when so labelled,
    else in the config's order)."""
    known = ", ".join(labels) or "none"
    for flag, value in (("--base", base), ("--head", head)):
        if value is not None and value not in labels:
            raise BuildChoiceError(f"{flag} {value}: no build of that label in the run (builds: {known})")
    if base is not None and base == head:
        raise BuildChoiceError(f"--base and --head are both {base}: name two different builds")
    if len(labels) < 2:
        measured = f"one build ({labels[0]})" if labels else "one build"
        raise BuildChoiceError(
            f"the run measured {measured}: a paired comparison needs a run of two (`specbench ab`, or "
            "`llama_cpp:` as a list); compare two separate runs with `specbench compare BASELINE CURRENT`"
        )
    if base is not None and head is not None:
        return base, head
    if len(labels) > 2:
        raise BuildChoiceError(
            f"the run measured {len(labels)} builds ({known}): pass --base LABEL --head LABEL"
        )
    if base is None and head is None:
        return ("base", "head") if set(labels) == {"base", "head"} else (labels[0], labels[1])
    other = next(x for x in labels if x not in (base, head))  # of the two, the one not named
    return base or other, head or other


def _cell(s: Measurement) -> tuple:
    return tuple((f, getattr(s, f)) for f in Measurement.model_fields if f not in _NOT_CELL)


def _label(s: Sample) -> str:
    return cell_label(s.model_copy(update={"build": None}))  # the cell without its build


class CellPairs(BaseModel):
    """One cell's values on base and head over the (prompt, repetition) both measured validly."""

    label: str
    base: list[float]
    head: list[float]
    n_base: int  # valid values of each build, paired or not
    n_head: int
    measured_head: int = 0  # samples of head, valid or not (0: head never ran the cell)
    head_failure: str | None = None  # why head's samples failed (the first reason; a crash names its cure)


def pairs(samples: Sequence[Sample], metric: str, base: str, head: str) -> dict[tuple, CellPairs]:
    """Per cell: its label and the values of base and head over the (prompt, repetition) both have."""
    m = check_metric(metric)
    paired = m.pairing(samples)
    by_cell: dict[tuple, list[Sample]] = defaultdict(list)
    for s in samples:
        if s.role == m.role and s.build in (base, head):
            by_cell[_cell(s)].append(s)
    out = {}
    for key, cell in by_cell.items():
        values: dict[str | None, dict[tuple, float]] = {base: {}, head: {}}
        for s in cell:
            # no value (a t/s of 0 too): a build that generated nothing has stopped working, not a pair
            value = m.value(s, paired) if s.valid and s.status == "ok" else None
            if value is not None:  # a duplicated sample line replaces, never double-counts
                values[s.build][(s.prompt_id, s.repetition)] = value
        heads = [s for s in cell if s.build == head]
        failed = (s.invalid_reason for s in heads if s.status in ("failed", "timeout") and s.invalid_reason)
        both = sorted(set(values[base]) & set(values[head]))
        out[key] = CellPairs(
            label=_label(cell[0]), n_base=len(values[base]), n_head=len(values[head]),
            measured_head=len(heads), head_failure=next(failed, None),
            base=[values[base][k] for k in both], head=[values[head][k] for k in both],
        )  # fmt: skip
    return out


def decide(
    base_values: list[float],
    head_values: list[float],
    metric: str,
    threshold: float,
    confidence: float = CONFIDENCE,
) -> PairedDecision:
    if METRICS[metric].scale == "points":  # judged against ACCEPTANCE_POINTS, whatever the threshold
        return decide_points(base_values, head_values, metric=metric, confidence=confidence)
    return decide_ratio(base_values, head_values, threshold=threshold, metric=metric, confidence=confidence)


def paired_compare(
    samples: Sequence[Sample],
    run: str,
    base: str | None = None,
    head: str | None = None,
    metrics: Sequence[str] = PAIRED_DEFAULT,
    threshold: float = THRESHOLD,
    confidence: float = CONFIDENCE,
    allow_missing: bool = False,
    allow_noisy: bool = False,
    allow_output_change: bool = False,
) -> PairedComparison:
    """Judge head against base in every cell and metric of a multi-build run. A cell head has no valid
    sample of where base has fails (head stopped working), unless head never ran it (a run cut short:
    ``allow_missing`` passes it); a metric no build has a sample of is "nothing to compare"."""
    if not samples:
        return PairedComparison(
            run=run, base=base or "base", head=head or "head", threshold=threshold, decisions=[],
            nothing=["the run has no sample yet"], allow_noisy=allow_noisy, confidence=confidence,
        )  # fmt: skip
    base, head = choose_builds(builds_in(samples), base, head)
    decisions, nothing = [], []
    for metric in dict.fromkeys(metrics):
        cells = pairs(samples, metric, base, head)
        if not cells:
            nothing.append(f"{metric}: no {METRICS[metric].role} sample on either build")
        for cp in cells.values():
            d = decide(cp.base, cp.head, metric, threshold, confidence)
            if cp.n_base and not cp.n_head and not cp.measured_head:  # a run cut short before head ran it
                why = f"not measured on {head} ({cp.n_base} valid on {base}): the run was cut short"
                status = Status.PASS if allow_missing else Status.FAIL
                why += " (--allow-missing)" if allow_missing else "; --allow-missing to accept"
                d = d.model_copy(update={"status": status, "reason": why})
            elif cp.n_base and not cp.n_head:  # head stopped working where base worked: a regression
                why = (
                    f"{head} has no valid sample where {base} has {cp.n_base} (failed, timed out, "
                    "no draft, or 0 t/s)"
                )
                why += f": {cp.head_failure}" if cp.head_failure else ""
                d = d.model_copy(update={"status": Status.FAIL, "reason": why})
            decisions.append(CellDecision(cell=cp.label, **d.model_dump(exclude={"decision"})))
    decisions += output_decisions(samples, base, head, allow_output_change)
    rank = {m: i for i, m in enumerate((*paired_order(), OUTPUT))}
    decisions.sort(key=lambda d: (SEVERITY.index(d.status), rank[d.metric], d.cell))
    return PairedComparison(
        run=run, base=base, head=head, threshold=threshold, decisions=decisions, nothing=nothing,
        allow_noisy=allow_noisy, confidence=confidence,
    )  # fmt: skip


def output_decisions(
    samples: Sequence[Sample], base: str, head: str, allow_change: bool = False
) -> list[CellDecision]:
    """At temperature 0 any correct build gives the same models and prompt the same text: a cell whose
    head generated other text than base fails, unless ``allow_change``. The speculative cells' text
    is checked; a run that measured none (``--metric baseline_tps``) has its baselines' checked."""
    texts: dict[tuple, dict[str, dict[str, set[str]]]] = {}
    labels: dict[tuple, str] = {}
    ours = [s for s in samples if s.build in (base, head)]
    role = "speculative" if any(s.role == "speculative" for s in ours) else "baseline"
    for s in ours:
        b = s.build  # base or head (ours); None only to the type checker
        greedy = s.role == role and s.generation.temperature == 0 and s.status in ("ok", "invalid")
        if b is None or not greedy or not s.output_sha256:
            continue
        key = _cell(s)
        labels.setdefault(key, _label(s))
        texts.setdefault(key, {base: {}, head: {}})[b].setdefault(s.prompt_id, set()).add(s.output_sha256)
    out = []
    for key, by_build in texts.items():
        prompts = sorted(set(by_build[base]) & set(by_build[head]))
        if not prompts:
            continue
        changed = [p for p in prompts if by_build[base][p] != by_build[head][p]]
        if changed:
            status = Status.PASS if allow_change else Status.FAIL
            where = f"{len(changed)} of {len(prompts)} prompts ({', '.join(changed[:3])})"
            why = f"{head} generated other text than {base} at temperature 0 on {where}: its numerics changed"
            why += " (--allow-output-change)" if allow_change else "; --allow-output-change passes it"
        else:
            status, why = Status.PASS, f"the same text on all {len(prompts)} prompts"
        out.append(CellDecision(
            cell=labels[key], metric=OUTPUT, unit="text", n_pairs=len(prompts), status=status, reason=why
        ))  # fmt: skip
    return out


def undecided_samples(
    samples: Sequence[Sample],
    base: str,
    head: str,
    metrics: Sequence[str],
    threshold: float,
    open_: frozenset[Status] = STILL_OPEN,
) -> list[Sample]:
    """The samples of every cell some metric leaves open (``open_``: bisect's run against bad wants
    more pairs on a pass too): with ``repetitions: auto`` only those get another round. None once a
    cell has failed: a fail is the verdict whatever the open cells say, so more rounds only spend."""
    open_cells = set()
    for metric in dict.fromkeys(metrics):
        for key, cp in pairs(samples, metric, base, head).items():
            status = decide(cp.base, cp.head, metric, threshold).status
            if status == Status.FAIL:
                return []
            if status in open_:
                open_cells.add(key)
    return [s for s in samples if s.build in (base, head) and _cell(s) in open_cells]
