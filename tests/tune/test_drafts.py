"""`drafts` against the local Hub server holding real small GGUFs, priced by a stand-in llama-bench.

The stand-in times a model from its file size (a set rule: 1 ms + 0.05 ns per byte, a pass over k
tokens 1 + 0.25 (k - 1) decodes), so the cost curve, the break-even acceptance and the ranking follow
from the files alone and never from this VM's speed. The cost curve and the break-even acceptance are
also checked alone, on set pass costs.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from specbench.analysis.speedmodel import expected_tokens, model_speedup
from specbench.builder.buildinfo import BinaryInfo, BuildInfo, FlagSpelling
from specbench.models.meta import read_token_texts
from specbench.results.calibration import PassCosts
from specbench.tune.draftmodels import Request
from specbench.tune.drafts import CurvePoint, alpha_for_speedup, break_even, fit_curve, free_draft, rank
from tests.helpers.hub import requested_ranges
from tests.models.tiny_gguf import write_tiny_gguf

MB = 1 << 20
FAKE_BENCH = """#!{python}
import json, os, sys
args = sys.argv[1:]
m = args[args.index("-m") + 1]
ks = [int(k) for k in args[args.index("-p") + 1].split(",")]
n = int(args[args.index("-n") + 1])
with open(os.environ["FAKE_BENCH_LOG"], "a") as log:
    log.write(m + "\\n")
decode = 1e6 + 0.05 * os.path.getsize(m)
tests = [{{"n_prompt": k, "n_gen": 0, "avg_ns": decode * (1 + 0.25 * (k - 1))}} for k in ks]
tests.append({{"n_prompt": 0, "n_gen": n, "avg_ns": decode * n}})
print(json.dumps(tests))
"""


@pytest.fixture
def fake_build(tmp_path, monkeypatch) -> BuildInfo:
    bench = tmp_path / "bin" / "llama-bench"
    bench.parent.mkdir()
    bench.write_text(FAKE_BENCH.format(python=sys.executable))
    bench.chmod(bench.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FAKE_BENCH_LOG", str(tmp_path / "bench.log"))
    monkeypatch.setenv("SPECBENCH_CALIBRATION", str(tmp_path / "cal"))
    flags = FlagSpelling(draft_max="--spec-draft-n-max", spec_type="--spec-type", model_draft="-md",
                         spec_types=["draft-simple", "ngram-simple", "ngram-mod"])  # fmt: skip
    return BuildInfo(key="fake", source="test", backend="cpu", cmake_args=[], bin_dir=str(bench.parent),
                     binaries={"bench": BinaryInfo(role="bench", name="llama-bench", path=str(bench)),
                               "server": BinaryInfo(role="server", name="llama-server", path="llama-server",
                                                    flags=flags)})  # fmt: skip


@pytest.fixture
def smol_vocab_tiny(tmp_path, smol_q4) -> Path:
    """A 1 MB model with SmolLM2's vocabulary: compatible, and far cheaper than SmolLM2 itself."""
    tokens = [t.decode("utf-8") for t in read_token_texts(smol_q4.path)]
    write_tiny_gguf(
        tmp_path / "local" / "smol-vocab-mid.gguf", tokens=tokens, n_tensors=4, tensor_shape=(1024, 1024)
    )  # 16 MB
    return write_tiny_gguf(
        tmp_path / "local" / "smol-vocab-tiny.gguf", tokens=tokens, n_tensors=4, tensor_shape=(256, 256)
    )


def test_ranks_hub_and_local_candidates_reading_only_headers(
    hub, fake_build, smol_q4, gemma_q4, smol_vocab_tiny
):
    data = smol_q4.path.read_bytes()
    hub.add_commit("org/smol", {"SmolLM2-135M-Instruct.Q4_1.gguf": smol_q4.path})
    hub.add_commit("org/gemma", {"gemma-3-270m-q4_k_m.gguf": gemma_q4.path})
    hub.add_commit("org/cut", {"SmolLM2-cut-Q4_1.gguf": data[: 30 * MB]})
    hub.add_commit("bartowski/SmolLM2-135M-Instruct-GGUF", {"SmolLM2-135M-Instruct-Q8_0.gguf": smol_q4.path})
    req = Request(target=str(smol_q4.path),
                  candidates=["org/smol", "org/gemma/gemma-3-270m-q4_k_m.gguf", "org/cut", "org/none",
                              str(smol_vocab_tiny.parent)],  # a folder: each GGUF in it
                  families=["smollm2"], max_draft=8)  # fmt: skip
    result = rank(req, fake_build)
    rows = {r.candidate: r for r in result.rows}

    # every candidate is listed; the incompatible ones with their reason
    assert "vocabulary type differs" in rows["org/gemma/gemma-3-270m-q4_k_m.gguf"].reason
    assert not rows["org/gemma/gemma-3-270m-q4_k_m.gguf"].compatible
    assert "truncated" in rows["org/cut/SmolLM2-cut-Q4_1.gguf"].reason
    assert "org/none not found" in rows["org/none"].reason
    missing = rows[
        "bartowski/SmolLM2-360M-Instruct-GGUF (*-Q8_0.gguf)"
    ]  # in the family list, not on this Hub
    assert "not found" in missing.reason and not missing.compatible
    fam = rows["bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q8_0.gguf"]
    assert fam.family == "smollm2" and fam.listed_params == 0.135e9 and fam.compatible

    # nothing large was downloaded: only header ranges, a few MB per file
    read = requested_ranges(hub)
    assert read and all(n <= 10 * MB for n in read.values())
    assert max(n for p, n in read.items() if "gemma" not in p) <= 4 * MB
    hub_rows = [r for r in result.rows if r.kind in ("hub", "family") and r.header_bytes_read]
    assert all(r.header_bytes_read < r.size_bytes / 10 for r in hub_rows if r.size_bytes)

    # priced and ranked: the cheaper a compatible draft, the less acceptance it needs
    smol, tiny, mid = (rows["org/smol/SmolLM2-135M-Instruct.Q4_1.gguf"], rows["smol-vocab-tiny.gguf"],
                       rows["smol-vocab-mid.gguf"])  # fmt: skip
    assert smol.compatible and tiny.compatible and mid.compatible
    assert (tiny.rank, mid.rank) == (1, 2)
    assert 0 < tiny.alpha_break_even < mid.alpha_break_even < 1.0
    assert tiny.alpha_goal < 1.0 and (mid.alpha_goal is None or tiny.alpha_goal < mid.alpha_goal)
    assert tiny.ceiling > 1.5
    assert tiny.priced_by == mid.priced_by == "measured"  # local files: timed, and priced as timed
    for r in (tiny, mid):
        assert 1 <= r.draft_max <= 8 and r.ceiling > 1.0
        assert r.decode_ms_low <= r.decode_ms <= r.decode_ms_high
    # the target itself as its draft costs as much as it saves: it never pays, and is listed unranked
    assert smol.rank is None and smol.alpha_break_even is None and smol.ceiling < 1.0
    ranked = [r for r in result.rows if r.rank]
    assert [r.rank for r in ranked] == list(range(1, len(ranked) + 1))
    assert result.target_costs == "measured" and result.curve is not None
    # the stand-in's rule is linear in file size, so the curve meets what llama-bench measured
    # the Hub file is the target's own file (the same LFS sha256): llama-bench's time of it is shown
    assert smol.decode_ms_measured == pytest.approx(1 + 0.05e-6 * smol_q4.size_bytes, rel=1e-6)
    assert smol.decode_ms_low <= smol.decode_ms_measured <= smol.decode_ms_high  # within the range shown
    assert result.target.decode_ms_measured == pytest.approx(1 + 0.05e-6 * smol_q4.size_bytes, rel=1e-6)
    target_point = next(p for p in result.curve.points if p["model"] == smol_q4.path.name)
    assert target_point["decode_ms"] == pytest.approx(result.target.decode_ms_measured)

    # the draft-free methods the build has are always listed, and cost nothing to draft
    ngram = [r for r in result.rows if r.kind == "ngram"]
    assert [r.candidate for r in ngram] == ["ngram-simple", "ngram-mod"]
    assert all(r.alpha_break_even < tiny.alpha_break_even for r in ngram)

    assert result.server_command.startswith("llama-server -m ")
    assert f"-md {smol_vocab_tiny}" in result.server_command
    assert f"--spec-draft-n-max {tiny.draft_max}" in result.server_command


def test_costs_come_from_the_cache_the_second_time(hub, fake_build, smol_q4, smol_vocab_tiny, tmp_path):
    req = Request(target=str(smol_q4.path), candidates=[str(smol_vocab_tiny)], max_draft=4)
    first = rank(req, fake_build)
    log = tmp_path / "bench.log"
    timed = log.read_text().splitlines()
    assert first.target_costs == "measured" and timed
    again = rank(req, fake_build)
    assert (
        again.target_costs == "cache" and log.read_text().splitlines() == timed
    )  # llama-bench not run again
    assert again.rows[0].alpha_break_even == first.rows[0].alpha_break_even
    # without llama-bench and an empty cache: ranked by compatibility only, and said so
    cold = rank(
        Request(target=str(smol_q4.path), candidates=[str(smol_vocab_tiny)], measure_costs=False), None
    )
    assert cold.rows[0].compatible and cold.rows[0].alpha_break_even is None
    assert any("no llama.cpp build" in n for n in cold.notes)


def test_target_must_be_one_model(hub, tmp_path, fake_build):
    from specbench.base.errors import ModelError

    hub.add_commit(
        "org/two",
        {"a.gguf": write_tiny_gguf(tmp_path / "a.gguf"), "b.gguf": write_tiny_gguf(tmp_path / "b.gguf")},
    )
    with pytest.raises(ModelError, match="target org/two is 2 models .*name one file"):
        rank(Request(target="org/two"), fake_build)
    with pytest.raises(ModelError, match="target .*missing.gguf: model file not found"):
        rank(Request(target=str(tmp_path / "missing.gguf")), fake_build)


def test_an_earlier_run_of_the_pair_gives_its_acceptance(tmp_path):
    """The quickstart's recorded run (SmolLM2 F32 target, Q4_1 draft): found by the files' sha256."""
    import json
    import shutil

    from specbench.analysis.speedmodel import alpha_for
    from specbench.tune.drafts import earlier_alpha

    run = shutil.copytree(
        Path(__file__).parents[1] / "data" / "runs" / "quickstart-3rep", tmp_path / "r" / "q"
    )
    models = json.loads((run / "manifest.json").read_text())["models"]
    f32, q4 = models["smol_f32"]["sha256"], models["smol_q4"]["sha256"]
    alpha, where = earlier_alpha(f32, q4, tmp_path / "r")
    assert where == str(run)
    assert alpha == pytest.approx(
        alpha_for(8.64, 8), abs=0.01
    )  # its one draft cell: g 8, 8.64 tokens per pass
    assert earlier_alpha(q4, f32, tmp_path / "r") is None  # the other way round is another pair
    assert earlier_alpha(f32, q4, tmp_path / "none") is None


def test_an_earlier_run_whose_manifest_lists_its_models_is_read_as_the_report_reads_it(tmp_path):
    """An older manifest holds ``models`` as a list of entries: the pair is found by sha256 all the
    same (its run folder was read as a dict's items before, and the command failed with a traceback)."""
    import json
    import shutil

    from specbench.tune.drafts import earlier_alpha

    run = shutil.copytree(
        Path(__file__).parents[1] / "data" / "runs" / "quickstart-3rep", tmp_path / "r" / "q"
    )
    manifest = json.loads((run / "manifest.json").read_text())
    models = manifest["models"]
    manifest["models"] = [{"name": name, **m} for name, m in models.items()]
    (run / "manifest.json").write_text(json.dumps(manifest))
    found = earlier_alpha(models["smol_f32"]["sha256"], models["smol_q4"]["sha256"], tmp_path / "r")
    assert found is not None and found[1] == str(run)


def test_a_hub_target_is_priced_from_the_curve_and_fetched_in_the_command(
    hub, fake_build, smol_q4, smol_vocab_tiny
):
    hub.add_commit("org/smol", {"SmolLM2-135M-Instruct.Q4_1.gguf": smol_q4.path})
    req = Request(target="org/smol/SmolLM2-135M-Instruct.Q4_1.gguf", candidates=[str(smol_vocab_tiny.parent)])
    result = rank(req, fake_build)
    assert result.target_costs == "estimated"
    assert any("estimated from its size" in n for n in result.notes)
    assert all(r.range for r in hub.requests if r.method == "GET" and "/resolve/" in r.path)
    assert result.rows[0].rank == 1
    assert '-m "$(hf download org/smol SmolLM2-135M-Instruct.Q4_1.gguf --revision ' in result.server_command


def test_the_source_trees_build_prices_before_a_newer_build_of_an_ab_commit(tmp_path, monkeypatch):
    from specbench.base import paths
    from specbench.tune.drafts import pick_build

    monkeypatch.setenv("SPECBENCH_HOME", str(tmp_path / "home"))
    assert pick_build() is None
    bench = {"bench": BinaryInfo(role="bench", name="llama-bench", path="/x/llama-bench")}
    for key, ref, at in (("tree", None, "2026-11-26T03:00:00"), ("abref", "cd7c161", "2026-11-26T04:00:00"),
                         ("nobench", None, "2026-11-26T05:00:00")):  # fmt: skip
        b = BuildInfo(key=key, source="s", backend="cpu", cmake_args=[], bin_dir="/x", ref=ref, built_at=at,
                      binaries=bench if key != "nobench" else {})  # fmt: skip
        b.save(paths.builds_dir() / key / "build.json")
    assert pick_build().key == "tree"


def _costs(name: str, decode_ms: float, slope: float = 0.25) -> PassCosts:
    d = decode_ms / 1e3
    return PassCosts(model=name, decode_s=d, pass_s={k: d * (1 + slope * (k - 1)) for k in (1, 2, 5, 9, 17)})


def _point(name: str, mb: float, ms: float) -> CurvePoint:
    return CurvePoint(name=name, sha256=name, bytes_per_token=int(mb * 1e6), costs=_costs(name, ms))


def test_a_line_is_recovered_with_no_error():
    curve = fit_curve([_point(f"m{i}", mb, 2 + 0.1 * mb) for i, mb in enumerate((10, 100, 500))])
    assert curve.a == pytest.approx(2e-3) and curve.b * 1e6 == pytest.approx(0.1e-3)
    assert curve.rel_error == pytest.approx(0, abs=1e-9)
    est = curve.estimate(200_000_000)
    assert est.decode_s == pytest.approx(22e-3) and est.low == pytest.approx(est.high)
    assert curve.pass_costs("x", 0.01).cost(9) == pytest.approx(0.01 * 3)  # the models' median ratio


def test_leave_one_out_error_is_the_range():
    curve = fit_curve([_point("a", 10, 3), _point("b", 100, 12), _point("c", 500, 40), _point("d", 300, 40)])
    assert curve.rel_error == max(abs(e) for e in curve.errors.values()) > 0.1
    est = curve.estimate(300_000_000)
    assert est.low < est.decode_s < est.high
    assert est.high / est.decode_s == pytest.approx(1 + curve.rel_error)


def test_two_points_fit_but_their_error_is_not_known():
    curve = fit_curve([_point("a", 10, 3), _point("b", 100, 12)])
    assert curve.rel_error is None and curve.estimate(50_000_000).low is None
    assert fit_curve([]) is None
    one = fit_curve([_point("a", 100, 10)])
    assert one.a == 0 and one.estimate(200_000_000).decode_s == pytest.approx(0.02)  # through the origin


def test_break_even_acceptance_is_where_the_model_crosses_one():
    target, draft = _costs("t", 20), _costs("d", 2)
    for g in (1, 4, 8):
        alpha = alpha_for_speedup(target, draft, g, 1.0)
        assert 0 < alpha < 1
        assert model_speedup(target, draft, g, expected_tokens(alpha, g)) == pytest.approx(1.0, abs=1e-6)
        goal = alpha_for_speedup(target, draft, g, 1.5)
        assert goal is None or goal > alpha  # None: not even full acceptance reaches 1.5x at this g
    best = break_even(target, draft, max_draft=16)
    per_g = [alpha_for_speedup(target, draft, g, 1.5) for g in range(1, 17)]
    assert best.alpha_target == min(a for a in per_g if a is not None)
    assert best.ceiling == pytest.approx(model_speedup(target, draft, best.g, best.g + 1.0))


def test_a_draft_as_costly_as_the_target_never_pays_and_a_free_one_always_can():
    target = _costs("t", 20)
    same = break_even(target, _costs("d", 20), max_draft=8)
    assert same.alpha_break_even is None and same.alpha_target is None and same.ceiling < 1
    free = break_even(target, free_draft("ngram-simple"), max_draft=8)
    assert free.alpha_break_even is not None and free.alpha_break_even < 0.5
    assert free.alpha_break_even < break_even(target, _costs("d", 2), max_draft=8).alpha_break_even


def test_a_noisy_fit_never_prices_a_model_below_zero():
    """Measured on a busy machine (the real numbers of a loaded 2-core VM): the least-squares line
    would start at -460 ms; a cost is never negative, so the line goes through the origin."""
    curve = fit_curve(
        [_point("f32", 538, 1663), _point("q4", 97, 91.5), _point("q8", 143, 105.8), _point("f16", 269, 502)]
    )
    assert curve.a == 0 and curve.b > 0
    assert all(curve.estimate(int(mb * 1e6)).decode_s > 0 for mb in (1, 50, 100))
    flat = fit_curve([_point("a", 100, 50), _point("b", 200, 40), _point("c", 300, 30)])
    assert flat.b == 0 and flat.a == pytest.approx(0.04)  # cost falling with size is noise: the mean
