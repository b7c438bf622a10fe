"""The one judge, on what real processes and a real llama-server gave (recorded in tests/logs/real):
both runners' results become samples by the same rules, and both explain a cell that never drafted."""

from __future__ import annotations

import json
from pathlib import Path

from specbench.execute.executor import _parse
from specbench.execute.judge import Outcome, judge
from specbench.execute.server_executor import SOURCE, timings_log
from specbench.results.records import Generation, ServerTimings
from tests.execute.test_runner import inv

LOGS = Path(__file__).parents[1] / "logs" / "real"
PROMPT = "Write a Python function that returns the sum of a list of numbers."


def process(name: str, **kw) -> Outcome:
    """A process run as ProcessExecutor reports it (exit 0)."""
    stderr, stdout = (LOGS / f"{name}.stderr").read_text(), (LOGS / f"{name}.stdout").read_text()
    return Outcome(wall_s=1.0, output=stdout, log=_parse(stderr, stdout, name), exit_code=0, **kw)


def server(name: str, role: str) -> Outcome:
    """A response as ServerExecutor reports it."""
    data = json.loads((LOGS / f"{name}.json").read_text())
    timings = ServerTimings.model_validate(data["timings"])
    return Outcome(wall_s=1.0, output=data["content"], echoed=False, source=SOURCE,
                   log=timings_log(role, timings), timings=timings, batch_wall_s=1.0)  # fmt: skip


def spec(method: str = "draft", runner: str = "process", **kw):
    ngram = method != "draft"
    fields = dict(method=method, prompt_text=PROMPT, runner=runner)
    if ngram:
        fields.update(draft=None, draft_max=None, draft_min=None, p_min=None, ngld=None)
    return inv("x", **fields, **kw)


def test_a_draft_run_gives_the_same_metrics_whichever_runner_measured_it():
    p = judge(spec(), process("spec-simple-draft"), "r", "now").sample
    log = p.metrics
    assert p.status == "ok" and p.valid and p.exit_code == 0
    assert p.acceptance == log.n_accept / log.n_drafted
    assert p.tokens_per_pass == log.n_predict / (log.n_predict - log.n_accept)
    assert p.tps == log.decoded.tps and p.n_generated == log.n_predict

    s = judge(spec(runner="server"), server("server-draft", "speculative"), "r", "now").sample
    t = s.timings
    assert s.status == "ok" and s.valid and s.exit_code is None
    assert (t.draft_n, t.draft_n_accepted, t.predicted_n) == (57, 55, 64)
    assert s.acceptance == 55 / 57 and s.tokens_per_pass == 64 / (64 - 55)
    assert s.tps == t.predicted_per_second and s.n_generated == 64 and s.ttft_ms == t.prompt_ms
    assert s.metrics.encoded.tokens == t.prompt_n + t.cache_n  # the prompt, for the n-gram explanation
    assert s.output_sha256 is not None and s.batch_wall_s == 1.0


def test_a_baseline_gives_its_eval_speed_and_tokens_on_both_runners():
    p = judge(inv("x", role="baseline", prompt_text=PROMPT), process("completion-f32"), "r", "now").sample
    assert p.status == "ok" and p.tps == p.metrics.perf.target.eval_tps
    assert p.n_generated == p.metrics.perf.target.eval_runs + 1
    base = inv("x", role="baseline", prompt_text=PROMPT, runner="server")
    s = judge(base, server("server-baseline", "baseline"), "r", "now").sample
    assert (
        s.status == "ok"
        and s.tps == s.timings.predicted_per_second
        and s.n_generated == s.timings.predicted_n
    )
    assert s.acceptance is None and s.tokens_per_pass is None


def test_never_drafted_is_explained_the_same_on_both_runners():
    p = judge(spec("ngram-simple"), process("spec-simple-ngram"), "r", "now").sample
    s = judge(spec("ngram-simple", runner="server"), server("server-ngram", "speculative"), "r", "now").sample
    for sample in (p, s):
        assert sample.status == "invalid" and not sample.valid
        assert sample.invalid_reason.startswith(
            "speculation never engaged (n_drafted = 0): ngram-simple drafts"
        )
        assert "try --set sweep.ngram_size_n=[3,4]" in sample.invalid_reason
        assert sample.output_sha256 is not None  # an invalid sample's output is still compared
    # the server's prompt (14 tokens) and output are the history the lookup searched: 78 > 12 + 48 + 1
    assert "no earlier occurrence of the last 12 tokens" in s.invalid_reason
    short = server("server-ngram", "speculative")
    short.log = timings_log("speculative", short.timings.model_copy(update={"predicted_n": 16}))
    reason = judge(spec("ngram-simple", runner="server"), short, "r", "now").sample.invalid_reason
    assert "only 30 tokens of history, it needs more than size_n + size_m + 1 = 61" in reason


def test_what_left_nothing_to_judge_is_failed_or_timeout_with_its_reason():
    gone = judge(spec(), Outcome(wall_s=2.0, error="exit code 1: boom", exit_code=1), "r", "now").sample
    assert (gone.status, gone.valid, gone.invalid_reason, gone.tps) == (
        "failed",
        False,
        "exit code 1: boom",
        None,
    )
    late = judge(spec(), Outcome(wall_s=9.0, error="no answer in 9 s", timed_out=True), "r", "now").sample
    assert late.status == "timeout" and late.wall_s == 9.0 and late.output_sha256 is None
    empty = server("server-draft", "speculative")
    empty.output = None
    assert judge(spec(runner="server"), empty, "r", "now").sample.invalid_reason == (
        "no generated text in the response"
    )


def test_an_infinite_speed_is_no_measurement():
    out = server("server-baseline", "baseline")
    out.log.perf.target.eval_tps = float("inf")
    sample = judge(inv("x", role="baseline", prompt_text=PROMPT, runner="server"), out, "r", "now").sample
    assert sample.status == "failed" and sample.tps is None
    assert sample.invalid_reason == "no decode speed in the response"


def test_a_prompt_over_ctx_size_fails_on_the_server_as_it_does_in_a_process():
    """The recorded prompt is 14 tokens: at ctx_size 8 the process runner's binaries fail it, and the
    judge fails the server's answer the same way (llama-server rounds each slot's context up)."""
    small = spec(runner="server", generation=Generation(n_predict=32, ctx_size=8))
    sample = judge(small, server("server-draft", "speculative"), "r", "now").sample
    assert sample.status == "failed" and sample.invalid_reason.startswith(
        "prompt longer than the context (14 tokens, ctx_size 8"
    )
    assert sample.output_sha256 is None
    default = spec(runner="server", generation=Generation(n_predict=32, ctx_size=0))  # the model's own
    assert judge(default, server("server-draft", "speculative"), "r", "now").sample.status == "ok"
