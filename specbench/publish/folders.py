"""The run folders the site links to: plain runs, ``ab`` runs (two builds), ``bisect`` folders.

Nothing is written to them; a folder that cannot be read is noted and left out, never fatal (one
moved or half-copied folder must not stop a nightly site).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from specbench.base.errors import SpecbenchError
from specbench.base.formats import json_text
from specbench.gate.ab import PairedComparison, paired_compare
from specbench.gate.bisect import BisectState
from specbench.gate.decision import THRESHOLD, Status
from specbench.gate.paired import ab_word
from specbench.parse.crash import first_line
from specbench.plan.sections import SweepConfig
from specbench.results.cell import CELL_FIELDS
from specbench.results.folder import BISECT, REPORT, REPORT_PAGE, has_manifest
from specbench.results.manifest import facts_from_manifest
from specbench.results.manifestfile import manifest_data
from specbench.results.samplelog import load_samples

REPORT_HTML = Path(REPORT) / REPORT_PAGE


@dataclass
class RunFolder:
    path: Path
    run_id: str
    started_at: str
    key: str  # history's run key (RunFacts.run_key)
    machine: str
    commit: str
    made_by: str | None  # run, tune, ab, bisect, merge...
    command_line: list[str]
    config_path: str | None
    pairs: dict  # the resolved config's pairs (to reproduce one pair's cell)
    builds: dict[str, str]  # label -> commit, for a run of several builds


@dataclass
class AbRun:
    run: RunFolder
    comparison: PairedComparison | None
    problem: str = ""  # why there is no comparison

    def worst(self, pair: str | None = None) -> str | None:
        """The decision ``ab`` printed for the whole run (or for one pair's cells)."""
        if self.comparison is None:
            return None
        found = {d.status for d in self.comparison.decisions if pair is None or d.cell.split(" ")[0] == pair}
        worst_first = (Status.FAIL, Status.TOO_NOISY, Status.IMPROVED, Status.PASS)
        return next((ab_word(status) for status in worst_first if status in found), None)


@dataclass
class BisectRun:
    path: Path
    state: BisectState

    def step_dir(self, run_dir: str) -> Path:
        """A step's run folder: as recorded, or (a relative path) beside the bisect's state file."""
        return Path(run_dir) if Path(run_dir).is_absolute() else self.path / Path(run_dir).name


@dataclass
class Folders:
    runs: dict[str, RunFolder] = field(default_factory=dict)  # by run key
    abs: list[AbRun] = field(default_factory=list)
    bisects: list[BisectRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_run_folder(path: Path) -> RunFolder:
    data = manifest_data(path)  # parsed once: its facts and the fields only the site reads
    facts = facts_from_manifest(data, path.name)
    builds = found if isinstance(found := data.get("builds"), dict) else {}
    config = found if isinstance(found := data.get("config"), dict) else {}  # a stranger's file
    line = [str(a) for a in data.get("command_line") or []]
    return RunFolder(
        path=path,
        run_id=facts.run_id,
        started_at=facts.started_at or "",
        key=facts.run_key,
        machine=facts.machine.describe(),
        commit=facts.llama_cpp_commit or "unknown",
        made_by=line[1] if len(line) > 1 else None,
        command_line=line,
        config_path=data.get("config_path"),
        pairs=found if isinstance(found := config.get("pairs"), dict) else {},
        builds={
            str(k): str(v.get("commit") or "?" if isinstance(v, dict) else "?") for k, v in builds.items()
        },
    )


def _candidates(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if has_manifest(root) or (root / BISECT).is_file():
            found.append(root)
        elif root.is_dir():
            found += [p for p in sorted(root.iterdir()) if has_manifest(p) or (p / BISECT).is_file()]
    return found


def scan(roots: list[Path], recorded: list[str]) -> Folders:
    """Every readable run, ab run and bisect under ``roots`` and at history's ``recorded`` paths."""
    out = Folders()
    seen: set[Path] = set()
    thresholds: dict[Path, float] = {}  # a bisect step is judged at its bisect's --threshold
    todo = _candidates(roots) + [Path(p) for p in recorded if has_manifest(Path(p))]
    while todo:
        path = todo.pop(0)
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            if (path / BISECT).is_file():
                state = BisectState.model_validate_json((path / BISECT).read_text(encoding="utf-8"))
                out.bisects.append(BisectRun(path=path, state=state))
                steps = [out.bisects[-1].step_dir(s.run_dir) for s in state.steps]
                thresholds.update({step.resolve(): state.threshold for step in steps})
                todo += steps
                continue
            if not has_manifest(path):
                continue
            run = read_run_folder(path)
        except (SpecbenchError, OSError, ValueError, ValidationError) as exc:
            out.notes.append(f"left out {path}: {first_line(str(exc)) or type(exc).__name__}")
            continue
        out.runs.setdefault(run.key, run)
        if len(run.builds) >= 2:
            out.abs.append(_ab(run, thresholds.get(real, THRESHOLD)))
    out.abs.sort(key=lambda a: a.run.started_at)
    return out


def _ab(run: RunFolder, threshold: float) -> AbRun:
    """The paired gate as ``specbench compare RUN`` gives it (5%), or at its bisect's threshold."""
    try:
        samples = load_samples(run.path)
        return AbRun(run=run, comparison=paired_compare(samples, run.run_id, threshold=threshold))
    except SpecbenchError as exc:
        return AbRun(run=run, comparison=None, problem=str(exc))


def _kept_sets(line: list[str], replaced: set[str]) -> list[str]:
    """The run's own ``--set KEY=VALUE`` (prompts, generation, repetitions...) but those replaced."""
    out, args = [], iter(line)
    for arg in args:
        if arg == "--set":
            value = next(args, "")
        elif arg.startswith("--set="):
            value = arg.removeprefix("--set=")
        else:
            continue
        if value.split("=", 1)[0].strip() not in replaced:
            out += ["--set", value]
    return out


def _one_value(value: object) -> str:
    """A one-value sweep list as --set reads it (YAML): plain where that reads back the same, JSON
    (which is YAML) where a comma or a colon would split or change it (tensor_split ``3,1``)."""
    if isinstance(value, bool):
        return "[on]" if value else "[off]"
    if isinstance(value, int | float) or re.fullmatch(r"[A-Za-z0-9_.+-]+", str(value)):
        return f"[{value}]"
    return json_text([value], None)


def reproduce(run: RunFolder | None, pair: str, key: dict) -> str:
    """``specbench run`` of the run's config (and its own --set values) with this one cell: its pair
    and its settings by --set."""
    config = "CONFIG"
    if run is not None and run.config_path:
        config = run.config_path
    elif run is not None and len(run.command_line) > 2 and run.command_line[2].endswith((".yaml", ".yml")):
        config = run.command_line[2]
    argv = ["specbench", "run", config]
    mine: list[str] = []
    if run is not None and pair in run.pairs:
        mine += ["--set", "pairs=" + json_text({pair: run.pairs[pair]}, None, separators=(",", ":"))]
    for axis in AXES:
        if key.get(axis) is not None:
            mine += ["--set", f"sweep.{axis}={_one_value(key[axis])}"]
    if key.get("runner") and key["runner"] != "process":
        mine += ["--set", f"runner={key['runner']}"]
    replaced = {"pairs", "runner", *(f"sweep.{a}" for a in AXES)}
    kept = _kept_sets(run.command_line, replaced) if run is not None else []
    return shlex.join(argv + kept + mine)


# The sweep axes a best cell is pinned to by --set: every axis of results/cell.py that is a sweep
# key, so a new axis needs nothing here. ``args`` is left out: a set's name alone is not a --set value
# (the run's config defines the sets), so the command runs each set of the config.
AXES = tuple(a for a in CELL_FIELDS if a in SweepConfig.model_fields and a != "args")
