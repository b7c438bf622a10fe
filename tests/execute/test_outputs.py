"""Continuations, output comparison and failure reasons, on output shaped as the pinned build prints it.

The stdout strings are what llama-speculative-simple and llama-completion printed for the same
ChatML prompt on SmolLM2 (temperature 0); the real-binary check is in tests/test_runner.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.execute.outputs import compare, continuation, echoed_on_stdout, failure_reason, sha256_text

PROMPT = "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n"
ANSWER = "The sea is a mirror that reflects the soul."
# llama-speculative-simple: "\n\n", the prompt tokens with special tokens, the text, "\n\n" twice.
SPEC_STDOUT = f"\n\n{PROMPT}{ANSWER}\n\n\n\n"
# llama-completion (-no-cnv): the prompt without special tokens, the text, " [end of text]" at EOS.
COMPLETION_STDOUT = f"user\nWrite a haiku about the sea.\nassistant\n{ANSWER} [end of text]\n\n"


def test_speculative_echo_is_stripped():
    assert continuation(SPEC_STDOUT, PROMPT) == ANSWER


def test_completion_echo_without_special_tokens_is_stripped():
    assert continuation(COMPLETION_STDOUT, PROMPT) == ANSWER


def test_no_display_prompt_keeps_all_of_stdout():
    assert continuation(f"{ANSWER} [end of text]\n", PROMPT, echoed=False) == ANSWER
    # without EOS (stopped at -n) nothing but trailing newlines is removed
    assert continuation("```python\ndef f():\n    return 1\n\n", PROMPT, echoed=False) == (
        "```python\ndef f():\n    return 1"
    )


def test_echo_with_bos_and_other_templates():
    gemma = "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"
    assert continuation(f"\n\n<bos>{gemma}Hello!\n\n", gemma) == "Hello!"
    assert continuation("user\nHi there\nmodel\nHello! [end of text]\n", gemma) == "Hello!"
    llama3 = (
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert continuation(f"<|begin_of_text|>{llama3}Yes.", llama3) == "Yes."
    assert continuation("user\n\nHiassistant\n\nYes.", llama3) == "Yes."


def test_unknown_special_tokens_fall_back_to_visible_pieces():
    prompt = "<|im_start|>user\nList three colours.<|im_end|>\n<|im_start|>assistant\n"
    # a display that keeps some specials and drops others still locates the prompt's pieces in order
    stdout = "<|im_start|>user\nList three colours.\nassistant\nRed, green, blue."
    assert continuation(stdout, prompt) == "Red, green, blue."


def test_prompt_not_found_gives_none():
    assert continuation("something else entirely", PROMPT) is None
    assert continuation("", PROMPT) is None


def test_compare_over_the_shorter_continuation():
    base = "The sea is a mirror that reflects the soul."
    assert compare(base + " It is calm.", base) == compare(base, base + " It is calm.")
    same = compare(base + " And more (overshoot).", base)
    assert same.match and same.first_diff is None
    diff = compare("The sea is a window", base)
    assert not diff.match and diff.first_diff == len("The sea is a ")


def test_sha256_of_the_continuation():
    assert sha256_text(ANSWER) == sha256_text(continuation(SPEC_STDOUT, PROMPT))
    assert sha256_text(ANSWER) != sha256_text(ANSWER + ".")


def test_failure_reason_prompt_too_long_messages_of_the_pinned_build():
    # the messages llama.cpp 0c1e570 prints (found with a long prompt and a small -c)
    comp = "0.01.971.905 E llama_completion: prompt is too long (369 tokens, max 252)\n"
    spec = "0.02.849.163 E main: the prompt exceeds the context size (369 tokens, ctx 256)\n"
    tiny = (
        "/src/common/common.cpp:2158: get_sub_batch: failed to add token 520 at index 32 (error -1, n = 35)\n"
    )
    assert "prompt is too long (369 tokens, max 252)" in failure_reason(comp, 1, None)
    assert failure_reason(spec, 1, None).startswith("prompt longer than the context")
    assert failure_reason(tiny, None, "SIGABRT", ctx_size=32).startswith("prompt longer than the context")


_ASSERT = "GGML_ASSERT(n_tokens_all <= cparams.n_batch) failed"
_SUB_BATCH = "failed to add token 351 at index 16 (error -1, n = 21)"


@pytest.mark.parametrize(
    ("log", "signal", "said", "least"),
    [
        ("spec-simple-over-batch.stderr", None, "prompt exceeds the batch size (22 tokens, batch 16)", " 22"),
        ("speculative-over-batch.stderr", "SIGABRT", _SUB_BATCH, ""),
        ("2024-0290-speculative-over-batch.stderr", "SIGABRT", _ASSERT, ""),
    ],
)
def test_a_prompt_over_the_batch_is_named_with_the_batch_size_cure_not_the_contexts(log, signal, said, least):
    """Recorded: the pinned llama-speculative-simple and llama-speculative, and the 2024
    llama-speculative, given a prompt of 22 tokens at ``-c 256 -b 16`` (32 in 2024). On an H200 the
    first was reported as "prompt longer than the context ...; raise generation.ctx_size" with ctx 8192."""
    stderr = (REAL / log).read_text()
    reason = failure_reason(stderr, None if signal else 1, signal, ctx_size=256)
    head = f"prompt longer than the batch ({said}): the speculative program takes the whole prompt"
    assert reason.startswith(f"{head} in one batch; raise batch_size"), reason
    assert "ctx_size" not in reason
    cure = f"raise batch_size to at least{least}," if least else "raise batch_size to the prompt's tokens,"
    assert cure in reason
    capped = failure_reason(stderr, 1, signal, ctx_size=16)  # -c 16 capped the batch: the context's limit
    assert capped.startswith("prompt longer than the context (")


def test_failure_reason_names_signal_or_exit_code_and_last_error():
    stderr = "0.00.000.001 I loading\n0.00.000.002 E main: error: failed to load model 'x.gguf'\n"
    assert failure_reason(stderr, 1, None) == "exit code 1: main: error: failed to load model 'x.gguf'"
    assert failure_reason("", None, "SIGSEGV") == "killed by SIGSEGV"


def test_baseline_cut_inside_a_character_is_a_prefix(tmp_path):
    """A baseline stopped at -n inside an emoji's bytes matches a run whose bytes go on (issue 16)."""
    from specbench.execute.executor import read_output

    whole = f"{PROMPT}Waves \N{WATER WAVE} roll".encode()
    cut = whole[: whole.index("\N{WATER WAVE}".encode()) + 2]  # 2 of the emoji's 4 bytes
    (tmp_path / "base.stdout").write_bytes(cut)
    (tmp_path / "spec.stdout").write_bytes(b"\n\n" + whole + b"\n\n")
    base = continuation(read_output(tmp_path / "base.stdout"), PROMPT)
    spec = continuation(read_output(tmp_path / "spec.stdout"), PROMPT)
    assert compare(spec, base).match
    assert sha256_text(base) != sha256_text(spec)
    other = compare("Waves \N{OCTOPUS}", base.replace("Waves ", "Waves"))  # a real difference
    assert not other.match and other.first_diff == len("Waves")


def test_a_model_that_does_not_load_names_the_cause_not_only_the_last_line():
    """Recorded stderr of both runners' binaries on a model of an unknown architecture: the reason
    is llama.cpp's line that says why, not 'exiting due to model loading error'."""
    from pathlib import Path

    folder = Path(__file__).parents[1] / "data" / "load_errors"
    for name in ("unknown-arch.completion.stderr", "unknown-arch.server.stderr"):
        reason = failure_reason((folder / name).read_text(), 1, None)
        assert reason == "exit code 1: the model did not load: unknown model architecture: 'llamx'", reason
    # a file that is no GGUF: the reader's own words come before the generic loader line
    stderr = (
        "gguf_init_from_file_impl: invalid magic characters: 'abcd', expected 'GGUF'\n"
        "llama_model_load: error loading model: llama_model_loader: failed to load model from /m/x.gguf\n"
        "main: error: unable to load model\n"
    )
    assert failure_reason(stderr, 1, None) == (
        "exit code 1: the model did not load: invalid magic characters: 'abcd', expected 'GGUF': "
        "failed to load model from /m/x.gguf"
    )


def test_a_context_no_memory_holds_names_the_allocation_not_the_last_line():
    """Recorded stderr of both runners' binaries asked for a 50M-token context: the reason is the
    allocation that failed, not 'unable to create context' or 'exiting due to model loading error'."""
    from pathlib import Path

    folder = Path(__file__).parents[1] / "data" / "load_errors"
    for name in ("ctx-too-large.completion.stderr", "ctx-too-large.server.stderr"):
        reason = failure_reason((folder / name).read_text(), 1, None)
        assert reason.startswith("exit code 1: out of memory: ggml_aligned_malloc: insufficient memory "
                                 "(attempted to allocate 1098635.62 MB)"), reason  # fmt: skip
        assert "generation.ctx_size" in reason
    crash = "E ggml_cuda_init: found 1 CUDA devices\nCUDA error: out of memory\n  current device: 0\n"
    assert failure_reason(crash, None, "SIGABRT").startswith("killed by SIGABRT: out of memory: CUDA error")


def test_prompt_over_context_is_the_process_runners_limit():
    from specbench.execute.outputs import prompt_over_context

    assert prompt_over_context(64, 64) is None and prompt_over_context(None, 64) is None
    reason = prompt_over_context(192, 64)
    assert reason.startswith("prompt longer than the context (192 tokens, ctx_size 64")
    assert reason.endswith("raise generation.ctx_size")


REAL = Path(__file__).parents[1] / "logs" / "real"
# the prompt of tests/logs/real/2024-0290-* (built-in prompt code-02, SmolLM2's ChatML template)
CODE_02 = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nHere is a small Python class. Add type hints to every method, and add a method "
    "`total_weight(self)` that returns the sum of the weights of all items. Return the whole class.\n\n"
    "```python\nclass Crate:\n    def __init__(self, label):\n        self.label = label\n"
    "        self.items = []\n\n    def add(self, name, weight):\n        if weight <= 0:\n"
    '            raise ValueError("weight must be positive")\n        self.items.append((name, weight))\n\n'
    "    def heaviest(self):\n        if not self.items:\n            return None\n"
    "        return max(self.items, key=lambda item: item[1])\n\n    def names(self):\n"
    "        return [name for name, _ in self.items]\n```<|im_end|>\n<|im_start|>assistant\n"
)


def test_a_2024_speculative_binary_echoes_on_stderr_so_its_stdout_is_the_continuation():
    """llama-speculative of llama-cpp-python 0.2.90's tree (recorded): no echo on stdout; its
    continuation is all of it, and matches the baseline's (llama-cli --no-display-prompt)."""
    out, err = ((REAL / f"2024-0290-speculative-draft.{s}").read_text() for s in ("stdout", "stderr"))
    assert continuation(out, CODE_02) is None  # where the pinned binaries' echo would be: not there
    echoed = echoed_on_stdout(out, err, CODE_02)
    spec = continuation(out, CODE_02, echoed=echoed)
    base = continuation((REAL / "2024-0290-cli-f32.stdout").read_text(), CODE_02, echoed=False)
    assert not echoed and spec is not None and spec.startswith("```python\nclass Crate:")
    assert compare(base, spec).match
    pinned = (REAL / "spec-simple-draft.stdout").read_text(), (REAL / "spec-simple-draft.stderr").read_text()
    asked = "Write a Python function that returns the sum of a list of numbers."  # tests/logs/README.md
    assert echoed_on_stdout(*pinned, asked)  # the pin echoes on stdout
    assert echoed_on_stdout("no echo", "", CODE_02)  # no evidence either way: as expected
    assert not echoed_on_stdout(out, err, CODE_02, expected=False)
