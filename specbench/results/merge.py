"""``specbench merge``: one run folder from the folders of a sharded sweep's shards.

``shard`` is a cell axis, so merged samples still pair within each shard. Refused: shards of another
config, a shard twice, overlapping cells, a shard unfinished. Missing shards leave the run incomplete.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from specbench.base.errors import InputError, RunError
from specbench.base.formats import now_iso
from specbench.base.paths import inside, os_problem
from specbench.results import folder, manifestfile, runstate, samplelog
from specbench.results.manifest import MergedShard


@dataclass
class MergeResult:
    out: Path
    shards: list[MergedShard]
    n_samples: int
    missing_cells: list[str]
    notes: list[str] = field(default_factory=list)  # what reading the shards left out (duplicates...)

    @property
    def complete(self) -> bool:
        return not self.missing_cells


def merge_runs(dirs: list[Path], out: Path) -> MergeResult:
    """Merge shard folders ``dirs`` into the new run folder ``out`` (nothing is changed in ``dirs``)."""
    if not dirs:
        raise InputError("give the shard folders to merge, e.g. specbench merge shards/* --out results/sweep")
    seen: dict[Path, Path] = {}
    for d in dirs:
        real = d.resolve()
        if real in seen:
            raise InputError(f"{d} is given twice (also as {seen[real]}); give each shard folder once")
        seen[real] = d
    if out.resolve() in seen:
        raise InputError(f"--out {out} is one of the shards; merge into a new folder")
    manifests = []
    for d in dirs:
        m = manifestfile.load_manifest(d)
        if m.shard is None:
            raise InputError(
                f"{d} is not a shard (it was run without --shard); merge only the folders of "
                "`specbench run CONFIG --shard i/N`"
            )
        status = manifestfile.read_facts(d).status
        if status != "complete":
            raise InputError(
                f"shard {m.shard} in {d} is {status}: {runstate.finish_hint(d, status)}, then merge"
            )
        manifests.append((d, m, m.shard))
    first_dir, first, first_shard = manifests[0]
    by_label: dict[str, Path] = {}
    owner: dict[str, str] = {}
    for d, m, shard in manifests:
        if m.plan_id != first.plan_id:
            raise InputError(
                f"{d} is a shard of another config than {first_dir} (plan {m.plan_id} vs {first.plan_id}); "
                "merge shards of one config and one set of --set values"
            )
        if shard.split("/")[1] != first_shard.split("/")[1]:
            raise InputError(
                f"{d} is shard {shard}, {first_dir} is shard {first_shard}: cut into "
                "different numbers of shards; merge shards of one `--shards N`"
            )
        if shard in by_label:
            raise InputError(f"shard {shard} is given twice ({by_label[shard]} and {d}); keep one")
        by_label[shard] = d
        for c in m.shard_cells:
            if c in owner:
                raise InputError(
                    f"cell {c!r} is in shard {owner[c]} and shard {shard} ({d}); "
                    "the shards overlap, merge shards of one plan"
                )
            owner[c] = shard
    folder.check_writable(out)
    runstate.check_fresh(out)
    if folder.has_manifest(out):
        raise InputError(f"{out} already holds a run; choose a new --out folder")
    samples, kept, notes = [], [], []
    for d, m, shard in sorted(manifests, key=lambda dms: int(dms[2].split("/")[0])):
        name = f"shard-{shard.replace('/', '-of-')}"  # "i/N" (ShardLabel): shard-i-of-N
        warnings: list[str] = []
        shard_samples = samplelog.load_samples(d, warnings)
        notes += warnings  # each names its shard folder
        for s in shard_samples:
            samples.append(s.model_copy(update={
                "stdout_path": folder.raw_in_shard(s.stdout_path, name),
                "stderr_path": folder.raw_in_shard(s.stderr_path, name),
            }))  # fmt: skip
        keep_shard(d, out, name)
        kept.append(MergedShard(shard=shard, run_id=m.run_id, hostname=m.env.hostname, status="complete",
                                n_samples=len(shard_samples)))  # fmt: skip
    missing = [c for c in first.plan_cells if c not in owner]
    merged = first.model_copy(deep=True)
    merged.run_id, merged.shard = out.name, None
    merged.shard_cells = [c for c in first.plan_cells if c in owner]
    merged.merged_from = kept
    merged.started_at = min(m.started_at for _, m, _ in manifests)
    merged.resumed_at, merged.command_line = [], []
    merged.model_loads = sum(m.model_loads for _, m, _ in manifests)
    merged.plan_size = sum(m.plan_size for _, m, _ in manifests)
    merged.n_samples_planned = sum(m.n_samples_planned for _, m, _ in manifests)
    merged.noise.busy = [b for _, m, _ in manifests for b in m.noise.busy]
    merged.other_machines = [o for _, m, _ in manifests for o in m.other_machines]
    merged.status, merged.finished_at = "complete", now_iso()
    if missing:
        merged.status = "interrupted"
        merged.status_reason = (
            f"{len(missing)} cell(s) of the plan are in no merged shard ({', '.join(missing)}); "
            "run the missing shards and merge again"
        )
    samplelog.write_samples(out, samples)
    manifestfile.save_manifest(out, merged)
    return MergeResult(out, kept, len(samples), missing, notes)


def keep_shard(src: Path, dst: Path, name: str) -> None:
    """Keep a shard's manifest under ``shards/<name>/`` and its raw logs under ``raw/<name>/`` (hard
    links where the file system allows)."""
    kept, target = inside(dst, folder.SHARDS, name), inside(dst, folder.RAW, name)
    try:
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / folder.MANIFEST, kept / folder.MANIFEST)
        if (src / folder.RAW).is_dir():
            target.mkdir(parents=True, exist_ok=True)
            for f in (src / folder.RAW).iterdir():
                if f.is_file():
                    try:
                        os.link(f, target / f.name)
                    except OSError:
                        shutil.copy2(f, target / f.name)
    except OSError as exc:
        raise RunError(f"cannot copy {src} into {dst}: {os_problem(exc)}") from exc
