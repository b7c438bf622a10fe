"""Trees of other eras, built and run for real (issue 59): the llama.cpp that a `llama-cpp-python`
sdist vendors (0.2.90: August 2024; 0.3.16: August 2025), the ik_llama.cpp fork that
`ik-llama-cpp-python` 0.1.5 vendors, and the pinned tree. Each is fetched from
PyPI once into SPECBENCH_HOME/sources/sdists, extracted once under SPECBENCH_HOME/sources/trees
(a stable path; the build cache keys on the tree's commit, so any path hits it; the fork's sdist has
no git folder: its key is the tree's fingerprint, stable because the extraction is), built with
`specbench build --source TREE` (cached: seconds after the first time) and runs the quickstart pair
(SmolLM2 Q8_0 target, Q4_1 draft; 1 prompt, 16 tokens, 1 repetition) with the draft method on the
process runner, and on the server runner where that tree's llama-server speculates; where it does
not, the run is refused in one line before anything runs.

With SPECBENCH_RECORD_COMPAT=1 each tree's outcome goes into tests/data/compat/trees.json, the
source of docs/build.md's compatibility table (``python -m tests.helpers.compat``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from specbench.analysis.quality import unequal_work
from specbench.base import paths
from specbench.builder.buildinfo import BuildInfo
from specbench.builder.workarea import BUILD_INFO_GENERATOR_TEXT
from specbench.results.samplelog import load_samples
from specbench.tune.calibrate import calibrate, depth_note, has_depth
from tests.fixtures.build import assert_one_line_error, cli
from tests.helpers.compat import record_row
from tests.helpers.realruns import short_prompt, threads, write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass(frozen=True)
class Tree:
    id: str
    tree: str  # how the table names it
    era: str
    package: str | None  # the sdist that vendors it; None: the pinned tree
    server_speculates: bool  # expected: its llama-server takes a draft model and drafts
    # expected: its speculative program logs each step (-lv 5, time-stamped), which times equal work;
    # without, its stamped stdout is cut where the baseline's text ends (parse.span.text_span)
    step_log: bool
    order: int
    ram_cache: bool = True  # expected: its llama-server has --cache-ram (late 2025 on), passed 0
    # expected: its llama-server drafts only for requests that keep their prompt (late 2024 to late
    # 2025), so the executor sends its speculative requests with cache_prompt: true
    keeps_prompt: bool = False
    vendor: str = "llama.cpp"  # the sdist's vendor/ folder that holds the tree
    has_commit: bool = True  # the sdist keeps the submodule's git folder (llama-cpp-python's do)
    ngram_server: str = ""  # an n-gram method its llama-server runs ('': none, refused)
    # a known crash of its speculative program (a bug of the tree, not of specbench): the build's
    # self-test sees it, and the process runner's draft method is refused before anything runs
    process_crash: str = ""


def vendored(version: str, era: str, order: int, **expected) -> Tree:
    """The llama.cpp that llama-cpp-python ``version`` vendors."""
    package = f"llama-cpp-python=={version}"
    return Tree(f"lcp-{version}", f"llama.cpp of {package}", era, package, order=order, **expected)


TREES = [
    vendored("0.2.90", "2024-08", 1, server_speculates=False, step_log=False, ram_cache=False),
    vendored(
        "0.3.16", "2025-08", 2, server_speculates=True, step_log=True, ram_cache=False, keeps_prompt=True
    ),
    Tree(
        "ik-0.1.5",
        "ik_llama.cpp fork of ik-llama-cpp-python==0.1.5",
        "2026-01 (fork)",
        "ik-llama-cpp-python==0.1.5",
        server_speculates=True,
        step_log=False,
        order=3,
        vendor="ik_llama.cpp",
        has_commit=False,
        ngram_server="ngram-simple",
        # llama-speculative clones its samplers with llama_sampler_dry_clone, which builds a DRY
        # sampler from a null vocabulary: SIGSEGV before the first draft, whatever the options
        process_crash="killed by SIGSEGV",
    ),  # fmt: skip
    Tree("pin", "pinned tree (specbench's default)", "2026-10", None, True, step_log=True, order=4),
]

# The ik_llama.cpp sdist leaves out common/cmake/build-info-gen-cpp.cmake, which its
# common/CMakeLists.txt runs: put back as a git clone of the fork has it (upstream llama.cpp's
# generator of mid-2024, which the fork kept; specbench.builder.workarea holds the same text and
# writes it into its build copy where a tree lacks it). Its mtime is the template's, so every
# extraction fingerprints alike (the fork's build is cached by that fingerprint).
RESTORED = {"ik_llama.cpp": ("common/cmake/build-info-gen-cpp.cmake", "common/build-info.cpp.in")}


def sdist(package: str) -> Path:
    """The sdist from the cache, else from PyPI (pip download); skipped only when neither has it."""
    cache = paths.sources_dir() / "sdists"
    name, version = package.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    archive = cache / f"{stem}.tar.gz"
    if archive.is_file():
        return archive
    cache.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(cache)]
    got = subprocess.run([*pip, package], capture_output=True, text=True, timeout=600)
    if got.returncode != 0 or not archive.is_file():
        why = got.stderr.strip()[-300:]
        pytest.skip(f"{package}'s sdist is not cached in {cache} and PyPI is unreachable: {why}")
    return archive


def vendored_tree(package: str, vendor: str = "llama.cpp") -> Path:
    """The sdist's vendor/``vendor``, extracted once with the submodule's git folder (its commit)
    where the sdist has one, and the files it left out put back (``RESTORED``)."""
    archive = sdist(package)
    top = archive.name.removesuffix(".tar.gz")
    root = paths.sources_dir() / "trees"
    tree = root / top / "vendor" / vendor
    done = root / f"{top}.extracted"
    if not done.is_file():
        keep = (f"{top}/vendor/{vendor}/", f"{top}/.git/modules/vendor/{vendor}/")
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(keep)]
            tar.extractall(root, members=members, filter="tar")
        if vendor in RESTORED:
            rel, like = RESTORED[vendor]
            restored = tree / rel
            restored.parent.mkdir(parents=True, exist_ok=True)
            restored.write_text(BUILD_INFO_GENERATOR_TEXT)
            mtime = (tree / like).stat().st_mtime_ns
            os.utime(restored, ns=(mtime, mtime))
        done.write_text("ok\n")
    return tree


def build(tree: Path | None) -> BuildInfo:
    args = ["build", "--backend", "cpu"] + (["--source", str(tree)] if tree else [])
    result = cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    info_path = next(ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("build.json:"))
    return BuildInfo.load(Path(info_path))


def run_config(
    tmp: Path, tree: Path | None, runner: str, target, draft, method: str = "draft", **sweep
) -> Path:
    llama_cpp = {"backend": "cpu", **({"source": str(tree)} if tree else {})}
    return write_config(
        tmp / f"{runner}-{method}.yaml",
        name=f"trees-{runner}",
        llama_cpp=llama_cpp,
        models={"target": {"path": str(target.path)}, "draft": {"path": str(draft.path)}},
        pairs={"smol": {"target": "target", "draft": "draft"}},
        prompts={"file": str(short_prompt(tmp))},
        sweep={"method": [method], "draft_max": [8], **sweep},
        generation={"n_predict": 16, "threads": threads()},
        repetitions=1,
        warmup=0,
        runner=runner,
        timeout_s=300,
    )


def speculative_outcome(run_dir: Path, step_log: bool = True) -> tuple[int, int, str]:
    """(drafted, accepted, caveat) of the run's one speculative sample, checked valid, speculating
    and timed over the baseline's tokens: by its step log (asked for with its times), or cut from its
    stdout where its program has none (the caveat says which)."""
    samples = load_samples(run_dir)
    spec = [s for s in samples if s.role == "speculative"]
    base = [s for s in samples if s.role == "baseline"]
    assert len(spec) == 1 and len(base) == 1, [(s.role, s.status) for s in samples]
    s = spec[0]
    assert s.status == "ok" and s.valid, s.invalid_reason
    drafted, accepted = s.metrics.n_drafted, s.metrics.n_accept
    if drafted is None and s.timings is not None:  # a server sample: its response's timings
        drafted, accepted = s.timings.draft_n, s.timings.draft_n_accepted
    assert drafted and drafted > 0 and accepted and accepted > 0, (drafted, accepted)
    assert s.outputs_match is not False, s.first_diff  # temperature 0: the baseline's text
    assert s.timed_tokens == base[0].timed_tokens and s.timed_tokens, (s.timed_tokens, base[0].timed_tokens)
    assert unequal_work(spec, base) is None
    if s.timings is not None or step_log:
        assert s.timings is not None or "--log-timestamps" in s.cmd
        return drafted, accepted, ""
    cut = f"; no step log: timed over the baseline's {s.timed_tokens} tokens, cut from its stdout"
    return drafted, accepted, cut


@pytest.mark.parametrize("spec", TREES, ids=[t.id for t in TREES])
def test_tree_builds_and_runs_the_quickstart_pair(
    spec: Tree, tmp_path, monkeypatch, llama_build, smol_target, smol_q4
):
    # older programs (ik_llama.cpp's) write main.log / speculative.log into the working folder
    monkeypatch.chdir(tmp_path)
    tree = vendored_tree(spec.package, spec.vendor) if spec.package else None
    info = build(tree)
    if spec.has_commit:
        assert info.commit, "a tree with its git folder is identified by its commit (the build cache's key)"
    works: list[str] = []
    refused: list[str] = []
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}

    process_dir = tmp_path / "results" / "process"
    config = run_config(tmp_path, tree, "process", smol_target, smol_q4)
    result = cli("run", str(config), "--out", str(process_dir), env=env)
    if spec.process_crash:  # the fork's llama_sampler_dry_clone builds a DRY sampler from a null vocabulary
        line = assert_one_line_error(result, "crashed when its self-test ran it", spec.process_crash)
        assert "runner: server" in line and not (process_dir / "samples.jsonl").exists()  # nothing ran
        assert info.selftest is not None and info.spec_crash("speculative") is not None
        refused.append(f"draft, process runner: {line.removeprefix('error: ')}")
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        program = Path(next(s for s in load_samples(process_dir) if s.role == "speculative").cmd[0]).name
        drafted, accepted, caveat = speculative_outcome(process_dir, spec.step_log)
        works.append(f"draft, process runner ({program}: {drafted} drafted, {accepted} accepted{caveat})")

    server_dir = tmp_path / "results" / "server"
    config = run_config(tmp_path, tree, "server", smol_target, smol_q4)
    result = cli("run", str(config), "--out", str(server_dir), env=env)
    if spec.server_speculates:
        assert result.returncode == 0, result.stderr[-3000:]
        drafted, accepted, _ = speculative_outcome(server_dir)
        # what the server kept between requests, in every sample: its RAM prompt cache off, or none
        samples = load_samples(server_dir)
        kept = {s.server_ram_cache for s in samples}
        assert kept == {"off" if spec.ram_cache else "absent"}, kept
        sent = {s.role: s.server_cache_prompt for s in samples}
        assert sent == {
            "baseline": False,
            "baseline-after": False,
            "draft": False,
            "speculative": spec.keeps_prompt,
        }
        cache = "" if spec.ram_cache else "; no --cache-ram: no prompt cache in RAM"
        if spec.keeps_prompt:
            cache += "; it drafts only for requests with cache_prompt: true, which its requests then send"
        works.append(f"draft, server runner ({drafted} drafted, {accepted} accepted{cache})")
    else:
        line = assert_one_line_error(result, "does not speculate")
        assert not (server_dir / "samples.jsonl").exists()  # refused before anything ran
        refused.append(f"server runner: {line.removeprefix('error: ')}")

    if spec.package:  # the process runner's n-gram methods came with llama-speculative-simple's --spec-type
        config = run_config(tmp_path, tree, "process", smol_target, smol_q4, method="ngram-simple")
        result = cli("run", str(config), "--out", str(tmp_path / "results" / "ngram"), env=env)
        line = assert_one_line_error(result, "ngram-simple")
        assert not (tmp_path / "results" / "ngram" / "samples.jsonl").exists()  # refused before running
        refused.append(f"ngram-simple: {line.removeprefix('error: ')}")
    if spec.ngram_server:  # a fork's llama-server runs its n-gram methods from --spec-type
        ngram_dir = tmp_path / "results" / "ngram-server"
        config = run_config(
            tmp_path, tree, "server", smol_target, smol_q4, method=spec.ngram_server, ngram_size_n=[3]
        )
        result = cli("run", str(config), "--out", str(ngram_dir), env=env)
        ngram = [s for s in load_samples(ngram_dir) if s.role == "speculative"]
        assert len(ngram) == 1 and "--spec-type" in ngram[0].cmd and spec.ngram_server in ngram[0].cmd
        drafted = ngram[0].timings.draft_n if ngram[0].timings else None
        if drafted:
            assert result.returncode == 0 and ngram[0].valid, result.stderr[-3000:]
            what = f"{drafted} drafted, {ngram[0].timings.draft_n_accepted} accepted"
        else:  # ran, and found no n-gram to draft from in 16 tokens: said so, not a failure of the tree
            assert ngram[0].status == "invalid" and "never engaged" in ngram[0].invalid_reason, (
                ngram[0].status,
                ngram[0].invalid_reason,
            )
            what = "ran; nothing drafted in 16 tokens"
        works.append(f"{spec.ngram_server}, server runner ({what})")

    # tune's calibration: llama-bench over passes of 1 and 2 tokens, at the run's depth where its
    # llama-bench has -d, else at depth 0, which the calibration records and tune says
    got = calibrate(info, [("draft", str(smol_q4.path), smol_q4.sha256, 0)], max_draft=1, depth=64,
                    threads=threads(), reps=1)  # fmt: skip
    cal = got.calibration
    costs = cal.costs("draft", 0)
    assert (
        got.fresh and costs is not None and costs.decode_s > 0 and all(v > 0 for v in costs.pass_s.values())
    )
    assert cal.depth == (64 if has_depth(info) else 0)
    assert (depth_note(info, 64) is None) == has_depth(info)
    works.append(
        "tune calibration (llama-bench" + (" at depth 64)" if has_depth(info) else ", no -d: at depth 0)")
    )

    if os.environ.get("SPECBENCH_RECORD_COMPAT") == "1":
        record_row({
            "id": spec.id, "order": spec.order, "tree": spec.tree, "era": spec.era,
            "source": spec.package or "pinned", "commit": info.commit or "",
            "programs": {role: b.name for role, b in info.binaries.items()},
            "works": works, "refused": refused,
        })  # fmt: skip


def test_a_build_whose_programs_are_llama_commands_only(tmp_path, unified_history, smol_target, smol_q4):
    """The pinned tree changed to build its programs as `llama <command>` only (app/, target
    llama-app; tests/fixtures/llama_history.unified_only), built from a git ref as a bisect step
    builds it (cached; it relinks the pinned build's objects): every role is a `llama` command,
    probed and self-tested; the server runner speculates through `llama serve`; the process runner
    is refused in one line naming what the tree lacks; `ab` (what each bisect step runs) measures
    across the change."""
    h = unified_history
    result = cli("build", "--backend", "cpu", "--source", str(h.repo), "--ref", h.shas[1])
    assert result.returncode == 0, result.stderr[-3000:]
    path = next(
        ln.split(":", 1)[1].strip() for ln in result.stdout.splitlines() if ln.startswith("build.json:")
    )
    info = BuildInfo.load(Path(path))
    commands = {role: b.command for role, b in info.binaries.items()}
    assert commands == {"completion": ["completion"], "server": ["serve"], "bench": ["bench"],
                        "quantize": ["quantize"]}, commands  # fmt: skip
    assert {Path(b.path).name for b in info.binaries.values()} == {"llama"}
    assert info.programs is not None and not {"llama-completion", "llama-server", "llama-speculative"} & set(
        info.programs
    )
    assert info.binary("server").flags.model_draft and info.binary("bench").flags.options
    assert info.selftest is not None and info.selftest.checks
    assert all("ok" in (c.outcome, c.workaround_outcome) for c in info.selftest.checks), (
        info.selftest.summary()
    )

    llama_cpp = {"backend": "cpu", "source": str(h.repo), "ref": h.shas[1]}
    env = {"SPECBENCH_RESULTS": str(tmp_path / "results")}
    works: list[str] = []
    refused: list[str] = []

    process = run_config(tmp_path, None, "process", smol_target, smol_q4)
    cfg = yaml.safe_load(process.read_text())
    process.write_text(yaml.safe_dump({**cfg, "llama_cpp": llama_cpp}, sort_keys=False))
    result = cli("run", str(process), "--out", str(tmp_path / "results" / "process"), env=env)
    line = assert_one_line_error(result, "no speculative program", "runner: server")
    assert not (tmp_path / "results" / "process" / "samples.jsonl").exists()  # refused before anything ran
    refused.append(f"process runner: {line.removeprefix('error: ').replace(info.source, 'TREE')}")

    server = run_config(tmp_path, None, "server", smol_target, smol_q4)
    cfg = yaml.safe_load(server.read_text())
    server.write_text(yaml.safe_dump({**cfg, "llama_cpp": llama_cpp}, sort_keys=False))
    server_dir = tmp_path / "results" / "server"
    result = cli("run", str(server), "--out", str(server_dir), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    drafted, accepted, _ = speculative_outcome(server_dir)
    spec = next(s for s in load_samples(server_dir) if s.role == "speculative")
    assert spec.cmd[:2] == [info.binary("server").path, "serve"], spec.cmd[:4]
    works.append(f"draft, server runner (llama serve: {drafted} drafted, {accepted} accepted)")

    # across the change: the pinned tree's llama-server (base) against the unified `llama serve` (head)
    cfg.pop("llama_cpp")
    server.write_text(yaml.safe_dump(cfg, sort_keys=False))
    ab_dir = tmp_path / "results" / "ab"
    base, head = (f"{h.repo}@{sha}" for sha in h.shas)
    result = cli("ab", str(server), "--base", base, "--head", head, "--metric", "spec_tps",
                 "--budget", "1", "--out", str(ab_dir), "--quiet", env=env)  # fmt: skip
    assert result.returncode in (0, 1, 3), result.stderr[-3000:]  # a verdict (which one: this VM's noise)
    samples = load_samples(ab_dir)
    heads = {s.build: Path(s.cmd[0]).name for s in samples if s.role == "speculative" and s.valid}
    assert heads == {"base": "llama-server", "head": "llama"}, heads

    if os.environ.get("SPECBENCH_RECORD_COMPAT") == "1":
        record_row({
            "id": "unified", "order": 10, "tree": "pinned tree with `llama <command>` programs only",
            "era": "2026-10", "source": "pinned, changed (tests/fixtures/llama_history.unified_only)",
            "commit": info.commit or "", "programs": {role: b.name for role, b in info.binaries.items()},
            "works": [*works, "ab across the change (llama-server against llama serve)"], "refused": refused,
        })  # fmt: skip
