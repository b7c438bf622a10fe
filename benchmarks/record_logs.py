"""(Re)record the real llama.cpp outcomes that the replayed runs play back (tests/fixtures/replay.py).

Usage, on a quiet machine, after `specbench build --backend cpu` and with the quickstart models cached
(`specbench models fetch configs/quickstart.yaml` or one `make demo`)::

    .venv/bin/python benchmarks/record_logs.py  # writes tests/logs/real/<name>.{stdout,stderr,times}
    .venv/bin/python benchmarks/record_logs.py --out DIR  # elsewhere, to compare first

It runs the commands tests/logs/README.md lists for ``completion-f32`` (quiet, unstamped),
``completion-f32-stamped`` (stdout time-stamped, as the process runner reads it) and
``spec-simple-draft``, and llama-bench's JSON (``tests/data/llama_bench/q4-d64.json``), with the
pinned CPU build,
SmolLM2-135M F32 (derived from the PyPI Q4_1) as target and Q4_1 as draft. The replay scales the
stamped run's clock to the quiet run's decode time
(``tests.fixtures.replay._stamps``): after re-recording, update the two eval times passed there
(the stderr's ``eval time = ... ms``). The parsers' tests read the same files: run them too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from specbench.builder.builder import ensure_build
from specbench.execute.preparation import load
from specbench.execute.process import Command, run_together
from specbench.parse.span import format_stamps

REPO = Path(__file__).resolve().parents[1]
PROMPT = "Write a Python function that returns the sum of a list of numbers."  # replay.RECORDED_PROMPT
COMMON = ["-n", "64", "--temp", "0", "-t", "2", "-c", "1024", "--seed", "42", "-p", PROMPT]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "logs" / "real")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    from specbench.models.resolve import resolve_models

    build = ensure_build(backend="cpu")
    config = load(REPO / "configs" / "quickstart.yaml")
    models = resolve_models(config.models, config.base_dir, build)
    target, draft = (models[name].path for name in ("smol_f32", "smol_q4"))
    completion = build.binary("completion").path
    speculative = build.binary("speculative_simple").path
    runs = {
        "completion-f32": ([completion, "-m", target, "-no-cnv", *COMMON], False),
        "completion-f32-stamped": ([completion, "-m", target, "-no-cnv", *COMMON], True),
        "spec-simple-draft": ([speculative, "-m", target, "-md", draft, "--spec-type", "draft-simple",
                               "--spec-draft-n-max", "8", *COMMON], False),
    }  # fmt: skip
    bench = [build.binary("bench").path, "-m", draft, "-p", ",".join(map(str, range(1, 10))), "-n", "16",
             "-d", "64", "-r", "1", "-ngl", "0", "-o", "json", "-t", "2"]  # fmt: skip
    (res,) = run_together([Command(bench, out / "bench-q4-d64.json", out / "bench-q4-d64.stderr", 600)])
    if res.exit_code != 0:  # on a CPU whose self-test needs a workaround (AMX), add it: --repack 0
        raise SystemExit(
            f"llama-bench: exit {res.exit_code} {res.signal or ''}; see {out}/bench-q4-d64.stderr"
        )
    (out / "bench-q4-d64.stderr").unlink()
    for name, (argv, stamped) in runs.items():
        (res,) = run_together([Command(argv, out / f"{name}.stdout", out / f"{name}.stderr", 300, stamped)])
        if res.exit_code != 0:
            raise SystemExit(f"{name}: exit {res.exit_code} {res.signal or ''}; see {out / name}.stderr")
        if stamped and res.stdout_times is not None:
            (out / f"{name}.times").write_text(format_stamps(res.stdout_times))
        print(f"{name}: {res.wall_s:.2f} s")


if __name__ == "__main__":
    main()
