"""The log corpus (tests/logs/) and what the parser must read from each log, read off by eye."""

from __future__ import annotations

import math
from pathlib import Path

INF, NAN = float("inf"), float("nan")


LOGS = Path(__file__).parents[1] / "logs"


PERF_KEYS = ("load_ms", "sample_ms", "sample_runs", "prompt_eval_ms", "prompt_eval_tokens", "prompt_eval_tps",
             "eval_ms", "eval_runs", "eval_tps", "total_ms", "total_tokens")  # fmt: skip


def perf(*values) -> dict:
    """A perf block in PERF_KEYS order; None = not in the log."""
    assert len(values) == len(PERF_KEYS)
    return {k: v for k, v in zip(PERF_KEYS, values, strict=True) if v is not None}


def spec(enc, dec, n_draft, n_predict, n_drafted, n_accept, accept, target=None, draft=None) -> dict:
    out = {"kind": "speculative"}
    for name, tp in (("encoded", enc), ("decoded", dec)):
        if tp is not None:
            out[name] = {
                k: v for k, v in zip(("tokens", "seconds", "tps"), tp, strict=False) if v is not None
            }
    for k, v in (("n_draft", n_draft), ("n_predict", n_predict), ("n_drafted", n_drafted),
                 ("n_accept", n_accept), ("accept", accept)):  # fmt: skip
        if v is not None:
            out[k] = v
    blocks = {k: v for k, v in (("target", target), ("draft", draft)) if v}
    if blocks:
        out["perf"] = blocks
    return out


def completion(target: dict) -> dict:
    return {"kind": "completion", "perf": {"target": target}}


def nan_safe(value):
    """NaN != NaN: make it comparable."""
    if isinstance(value, dict):
        return {k: nan_safe(v) for k, v in value.items()}
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


SPEC_2024 = spec(
    (12, 0.247, 48.638), (265, 7.909, 33.507), 16, 265, 317, 195, 0.61514,
    target=perf(1218.05, 23.79, 265, 5373.40, 385, 71.65, 0.00, 1, INF, 9378.12, 386),
    draft=perf(238.79, None, None, 3868.88, 364, 94.08, 1366.97, 304, 222.39, 8155.64, 668),
)  # fmt: skip


SPEC_2023 = spec(
    (25, 0.847, 29.523), (108, 3.930, 27.481), 16, 108, 126, 98, 0.77778,
    target=perf(21520.44, 36.41, 108, 2117.03, 167, 78.88, 44.15, 1, 22.65, 4777.59, None),
    draft=perf(334.20, 43.08, 126, 155.19, 143, 921.46, 1496.78, 126, 84.18, 4777.58, None),
)  # fmt: skip


SIMPLE_DRAFT_STDERR = spec(
    (14, 0.107, 130.485), (73, 1.685, 43.311), 8, 73, 65, 64, 0.98462,
    target=perf(202.74, 6.74, 73, 1018.51, 89, 87.38, 0.00, 1, INF, 2067.52, 90),
)  # fmt: skip


SIMPLE_DRAFT_MIXED = spec(
    (14, 0.111, 126.067), (73, 1.501, 48.628), 8, 73, 65, 64, 0.98462,
    target=perf(238.89, 8.23, 73, 1033.12, 89, 86.15, 0.00, 1, INF, 2030.30, 90),
)  # fmt: skip


COMMA_PREFIXED = spec(
    (15, 0.081, 185.185), (131, 4.402, 29.759), 8, 131, 120, 99, 0.825,
    target=perf(377.02, 10.97, 131, 2954.12, 164, 55.52, 40.70, 1, 24.57, 4859.55, 165),
    draft=perf(101.07, None, None, 890.34, 150, 168.48, 991.20, 105, 105.93, 4479.03, 255),
)  # fmt: skip


SPEC_2024_SUMMARY = dict(enc=(12, 0.247, 48.638), dec=(265, 7.909, 33.507), n_draft=16, n_predict=265)


EXPECTED: dict[str, dict] = {
    # --- real: pinned build (0c1e570), SmolLM2-135M F32 target / Q4_1 draft, -n 64 --temp 0 -t 2 ---
    "real/spec-simple-draft.stderr": SIMPLE_DRAFT_STDERR,
    "real/spec-simple-draft.mixed.log": SIMPLE_DRAFT_MIXED,
    "real/spec-simple-ngram.stderr": spec(
        (14, 0.094, 148.360), (65, 8.302, 7.829), 3, 65, 0, 0, NAN,  # `accept = -nan%`: nothing drafted
        target=perf(274.88, 19.96, 65, 239.91, 16, 66.69, 8219.38, 64, 7.79, 8488.92, 80)),
    "real/spec-simple-ngram.mixed.log": spec(
        (14, 0.124, 112.725), (65, 1.422, 45.724), 3, 65, 0, 0, NAN,
        target=perf(1660.47, 7.80, 65, 233.87, 16, 68.41, 1389.52, 64, 46.06, 1653.52, 80)),
    "real/spec-simple-ngram-repeat.stderr": spec(
        (52, 0.114, 454.820), (68, 1.404, 48.423), 3, 68, 80, 17, 0.2125,
        target=perf(165.63, 6.93, 68, 222.82, 138, 619.34, 1043.08, 46, 44.10, 1553.85, 184)),
    # -lv 5: the step log (D accepted A/D draft tokens) goes to ParsedLog.steps, not to to_json()
    "real/spec-simple-ngram-steps.stderr": spec(
        (53, 4.401, 12.043), (79, 19.842, 3.981), 3, 79, 93, 68, 0.73118,
        target=perf(1985.62, 9.04, 79, 12430.35, 154, 12.39, 9878.36, 4, 0.40, 24427.31, 158)),
    "real/speculative-draft.stderr": spec(
        (14, 0.144, 97.132), (71, 1.629, 43.588), 8, 71, 64, 62, 0.96875,
        target=perf(125.27, 6.29, 71, 656.67, 86, 130.96, 0.00, 1, INF, 2141.05, 87)),
    "real/speculative-draft.mixed.log": spec(
        (14, 0.154, 90.621), (71, 1.320, 53.797), 8, 71, 64, 62, 0.96875,
        target=perf(153.90, 9.99, 71, 569.43, 86, 151.03, 0.00, 1, INF, 1845.19, 87)),
    # -v: the draft block is printed (llama_perf_context_print) and debug lines are glued to stdout text
    "real/speculative-draft-verbose.mixed.log": spec(
        (14, 0.127, 110.575), (71, 1.067, 66.514), 8, 71, 64, 62, 0.96875,
        target=perf(307.38, 6.54, 71, 478.45, 86, 179.75, 0.00, 1, INF, 1533.05, 87),
        draft=perf(105.94, None, None, 545.97, 29, 53.12, 493.07, 56, 113.57, 1194.94, 85)),
    "real/completion-f32.stderr": completion(
        perf(136.35, 8.76, 78, 49.18, 14, 284.65, 2229.23, 63, 28.26, 2293.54, 77)),
    "real/completion-f32.mixed.log": completion(
        perf(456.81, 8.78, 78, 410.92, 14, 34.07, 2663.49, 63, 23.65, 3094.24, 77)),
    "real/completion-q4-colors.mixed.log": completion(  # --log-colors on: ANSI escapes around prefixes
        perf(448.03, 8.26, 78, 433.48, 14, 32.30, 635.44, 63, 99.14, 1089.14, 77)),
    # --- real: the 2024 tree of llama-cpp-python 0.2.90 (1d1ccce6), run by specbench on a loaded machine ---
    "real/2024-0290-speculative-draft.stderr": spec(
        (192, 7.012, 27.382), (55, 36.675, 1.500), 8, 55, 48, 48, 1.0,
        target=perf(519.20, 2.90, 55, 18639.85, 246, 13.20, 0.00, 1, INF, 43792.28, 247),
        draft=perf(39.75, 506.39, 1, 19673.25, 203, 10.32, 17497.76, 42, 2.40, 43688.25, 245)),
    "real/2024-0290-cli-f32.stderr": completion(
        perf(8846.51, 2.52, 48, 7384.96, 192, 26.00, 102591.55, 47, 0.46, 110028.03, 239)),
    # --- real: the ik_llama.cpp fork of ik-llama-cpp-python 0.1.5, run by specbench (llama_print_timings) ---
    "real/ik-015-cli-q8.stderr": completion(
        perf(981.96, 0.87, 16, 401.51, 44, 109.59, 5091.94, 15, 2.95, 5544.27, 59)),
    "real/ik-015-cli-q4-ends-at-once.stderr": completion(  # its first token ended the answer
        perf(85.52, 0.05, 1, 40.91, 44, 1075.64, 0.00, 1, INF, 43.89, 45)),
    # --- hand-written: older eras and the variants ---
    "synthetic/2023-speculative.log": SPEC_2023,
    "synthetic/2023-speculative-pid.log": SPEC_2023,
    "synthetic/2023-main.log": completion(
        perf(691.21, 22.17, 64, 372.67, 14, 37.57, 3251.80, 63, 19.37, 3668.32, None)),
    "synthetic/2023-main-glued.log": completion(
        perf(100.00, None, None, None, None, None, 2000.00, 100, 50.00, None, None)),
    "synthetic/2024-speculative.log": SPEC_2024,
    "synthetic/2024-cli-decimal-comma.log": completion(
        perf(3868.88, 12.45, 64, 152.31, 11, 72.22, 2210.06, 63, 28.51, 2391.77, 74)),
    "synthetic/2024-speculative-simple-comma-prefixed.log": COMMA_PREFIXED,
    "synthetic/2024-inf-nan.log": spec(
        (1, 0.000, INF), (1, 0.020, 50.000), 4, 1, 0, 0, NAN,
        target=perf(310.52, 0.05, 1, 45.18, 2, 44.27, 0.00, 1, INF, 120.40, 3),
        draft=perf(80.11, None, None, 0.00, 0, NAN, 0.00, 0, NAN, 95.35, 0)),
    # killed: only what was printed; a cut final line gives only numbers followed by their unit
    "synthetic/2024-speculative-killed-in-summary.log": spec(
        **SPEC_2024_SUMMARY, n_drafted=317, n_accept=None, accept=None),
    "synthetic/2024-speculative-cut-count.log": spec(  # ends `n_accept  = 19` (of 195)
        **SPEC_2024_SUMMARY, n_drafted=317, n_accept=None, accept=None),
    "synthetic/2024-speculative-cut-accept.log": spec(  # ends `accept    = 61.51` (no %)
        **SPEC_2024_SUMMARY, n_drafted=317, n_accept=195, accept=None),
    "synthetic/2024-speculative-cut-midnumber.log": spec(
        **SPEC_2024_SUMMARY, n_drafted=317, n_accept=195, accept=0.61514,
        target=perf(1218.05, 23.79, 265, None, None, None, None, None, None, None, None),
        draft=SPEC_2024["perf"]["draft"]),
    "synthetic/2024-speculative-cut-after-ms.log": spec(
        **SPEC_2024_SUMMARY, n_drafted=317, n_accept=195, accept=0.61514,
        target=perf(1218.05, 23.79, 265, 5373.40, None, None, None, None, None, None, None),
        draft=SPEC_2024["perf"]["draft"]),
    # look-alike statistics in generated text are ignored; the real line is glued to the text
    "synthetic/stamped-fake-stats-glued.log": SIMPLE_DRAFT_MIXED,
    "synthetic/bare-prose-completion.log": completion(
        perf(922.10, 31.62, 128, 210.55, 17, 80.74, 5460.85, 127, 23.26, 5742.33, 144)),
    "synthetic/level-prefix-only.log": SIMPLE_DRAFT_STDERR,
    "synthetic/two-runs.log": COMMA_PREFIXED,  # the last run counts
}  # fmt: skip
