"""How far a report row's numbers can be trusted, and what to do about it: the relative CI of its
means, whether ``repetitions: auto`` met its precision, and short warnings a user can act on (the
kinds: docs/quality.md).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from specbench.base.docs import docs_page
from specbench.plan.config import Config
from specbench.results.manifest import RunFacts
from specbench.results.precision import Precision, outliers, stratified
from specbench.results.records import Sample

# a run whose manifest lacks them was measured with the config's defaults
DEFAULT_PRECISION = Config.model_fields["precision"].default
DEFAULT_MIN_DECODE_S = Config.model_fields["min_decode_s"].default
EARLY_STOP = 0.9  # outputs ending before this share of n_predict stop on their own (EOS)


@dataclass
class Quality:
    spec_tps_rel_ci: float | None = None
    baseline_tps_rel_ci: float | None = None
    precision_met: bool | None = None  # None unless the run used `repetitions: auto`
    repeatable: bool | None = None  # temperature 0: every repetition drafted, accepted and said the same
    warnings: list[str] = field(default_factory=list)


def _by_prompt(samples: Sequence[Sample]) -> dict[str, list[Sample]]:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in sorted((s for s in samples if s.usable), key=lambda s: (s.prompt_id, s.repetition)):
        groups[s.prompt_id].append(s)
    return groups


def precision_of(samples: Sequence[Sample]) -> Precision:
    return stratified([[s.tps for s in g if s.tps is not None] for g in _by_prompt(samples).values()])


def assess(spec: Sequence[Sample], base: Sequence[Sample], facts: RunFacts | None) -> Quality:
    """The quality fields and warnings of one row (its speculative and matched baseline samples)."""
    facts = facts or RunFacts(run_id="?")
    target = facts.precision or DEFAULT_PRECISION
    ps, pb = precision_of(spec), precision_of(base)
    q = Quality(spec_tps_rel_ci=ps.relative, baseline_tps_rel_ci=pb.relative)
    if facts.auto_repetitions:
        q.precision_met = ps.meets(target) and pb.meets(target)
    loose = [
        (name, p, rel) for name, p in (("spec", ps), ("baseline", pb)) if (rel := p.relative) and rel > target
    ]
    if loose:
        what = ", ".join(f"{name} t/s ±{rel:.1%}" for name, _, rel in loose)
        reps = max(p.n_min for _, p, _ in loose)
        hint = "" if facts.auto_repetitions else "; try --set repetitions=auto"
        q.warnings.append(
            f"imprecise: {what} (95% CI) > precision {target:.1%} after {reps} repetitions{hint}"
        )
    q.repeatable, differs = repeatability(spec)
    found = (_short_window(spec, base, facts), _outliers("spec", spec, ps), _outliers("baseline", base, pb))
    q.warnings += [w for w in (*found, differs, unequal_work(spec, base)) if w]
    if facts.busy:
        more = f" (+{len(facts.busy) - 1} more)" if len(facts.busy) > 1 else ""
        q.warnings.append(f"busy machine: {facts.busy[0]}{more}")
    if facts.other_machines:
        q.warnings.append(f"mixed machines: resumed with --force on another ({facts.other_machines[0]})")
    return q


def _window(s: Sample) -> float | None:
    if not s.usable or not s.n_generated or s.tps is None or s.tps <= 0:
        return None
    return s.n_generated / s.tps


def _short_window(spec: Sequence[Sample], base: Sequence[Sample], facts: RunFacts) -> str | None:
    """The shorter side's mean decode window against min_decode_s, and the n_predict to reach it."""
    limit = facts.min_decode_s if facts.min_decode_s is not None else DEFAULT_MIN_DECODE_S
    windows: dict[str, float] = {}
    for name, samples in (("spec", spec), ("baseline", base)):
        ws = [w for w in map(_window, samples) if w is not None]
        if ws:
            windows[name] = math.fsum(ws) / len(ws)
    if not windows or limit <= 0 or min(windows.values()) >= limit:
        return None
    name = min(windows, key=windows.__getitem__)
    used = [s for s in (spec if name == "spec" else base) if s.usable]
    tps = math.fsum(s.tps for s in used if s.tps is not None) / len(used)
    n_predict = used[0].generation.n_predict
    needed = max(16, math.ceil(limit * tps / 16) * 16)
    generated = math.fsum(s.n_generated or 0 for s in used) / len(used)
    early = (
        f" (outputs end near {generated:.0f} tokens by themselves: a larger n_predict alone will not do)"
        if generated < EARLY_STOP * n_predict
        else ""
    )
    return (
        f"short decode window: {windows[name]:.2f} s ({name}) < min_decode_s {limit:g} s, so timing noise "
        f"dominates; n_predict {needed} would reach it at {tps:.0f} t/s{early}"
    )


def _outliers(name: str, samples: Sequence[Sample], whole: Precision) -> str | None:
    found, kept = [], []
    for prompt, group in _by_prompt(samples).items():
        values = [s.tps for s in group if s.tps is not None]  # all of them (usable)
        odd = set(outliers(values))
        med = sorted(values)[len(values) // 2]
        found += [
            f"{prompt} rep {group[i].repetition + 1} ({values[i]:.1f} t/s, median {med:.1f})" for i in odd
        ]
        kept.append([v for i, v in enumerate(values) if i not in odd])
    if not found or whole.mean is None:
        return None
    clean = stratified(kept)  # the CI of the other repetitions: does the outlier matter against it?
    moved = clean.mean - whole.mean if clean.mean is not None else None
    shift = moved / whole.mean if moved is not None and whole.mean else 0.0
    inside = moved is not None and clean.half_width is not None and abs(moved) <= clean.half_width
    verdict = "within the others' 95% CI" if inside else "beyond the others' 95% CI: rerun on a quiet machine"
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return f"outlier repetitions ({name}): {shown}; dropping them moves the mean {shift:+.1%}, {verdict}"


def _deterministic(s: Sample) -> tuple | None:
    """What a greedy sample must repeat exactly: drafted and accepted tokens, and its text."""
    if s.status not in ("ok", "invalid") or s.metrics is None:
        return None
    return (s.metrics.n_drafted, s.metrics.n_accept, s.output_sha256)


def repeatability(spec: Sequence[Sample]) -> tuple[bool | None, str | None]:
    """At temperature 0 the repetitions of a prompt draft, accept and generate the same tokens: ones
    that differ mean a sample depended on an earlier one (state a server kept, a warmup that primed
    it) or a nondeterministic build. (None, None) when not greedy or no prompt was repeated."""
    groups: dict[str, set[tuple]] = defaultdict(set)
    for s in spec:
        key = _deterministic(s)
        if key is not None and s.generation.temperature == 0:
            groups[s.prompt_id].add(key)
    if all(len(v) <= 1 for v in groups.values()):
        repeated = any(sum(1 for s in spec if s.prompt_id == p) > 1 for p in groups)
        return (True if repeated else None), None
    bad = sorted(p for p, v in groups.items() if len(v) > 1)
    shown = "; ".join(
        f"{p}: " + ", ".join(f"{d}/{a} accepted" for d, a, _ in sorted(groups[p], key=str)) for p in bad[:2]
    )
    return False, (
        f"not repeatable: at temperature 0 the repetitions of {len(bad)} prompt(s) drafted, accepted or "
        f"generated differently ({shown}): a sample depended on an earlier one (state llama.cpp kept "
        "between requests) or the build is not deterministic; its speedup is not a measurement of the setting"
    )


def unequal_work(spec: Sequence[Sample], base: Sequence[Sample]) -> str | None:
    """Both sides of a speedup must be timed over the same generated tokens (``Sample.timed_tokens``):
    the prompt whose sides differ most, with the counts (a run ``execute.judge.capped_span`` could not
    cut is timed over all it decoded; samples recorded without the counts say nothing)."""
    timed_base = {(b.prompt_id, b.repetition): b.timed_tokens for b in base if b.usable and b.timed_tokens}
    worst = None
    for s in spec:
        b = timed_base.get((s.prompt_id, s.repetition))
        if s.usable and s.timed_tokens and b and s.timed_tokens != b:
            if worst is None or abs(s.timed_tokens - b) > abs(worst[1] - worst[2]):
                worst = (s.prompt_id, s.timed_tokens, b)
    if worst is None:
        return None
    prompt, n_spec, n_base = worst
    return (
        f"unequal work: on {prompt} the speculative side was timed over {n_spec} tokens, the baseline over "
        f"{n_base}; its speedup compares different spans (a speculative run that neither its step log nor "
        f"the baseline's text could cut is timed over everything it decoded; {docs_page('timing.md')})"
    )
