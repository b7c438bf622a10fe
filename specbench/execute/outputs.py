"""What a sample's output means: the generated continuation, its match with the baseline, and
why a run failed. Pure functions over the captured text.

The binaries echo the prompt before the continuation, differently: ``llama-speculative(-simple)``
with special tokens (the 2024 llama-speculative on stderr), ``llama-completion`` without them (none
with ``--no-display-prompt``), ending with `` [end of text]`` when the model stopped.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from specbench.parse.crash import CrashFacts, classify, error_line

END_OF_TEXT = " [end of text]"

# Special/control tokens as chat templates spell them: <|im_start|>, <|eot_id|>, <start_of_turn>,
# <bos>, <s>, </s>, [INST], <｜Assistant｜> (DeepSeek's full-width bars).
_SPECIAL = re.compile(
    r"<\|[^<>|\s]{1,64}\|>|<｜[^<>｜]{1,64}｜>|</?s>|<(?:bos|eos|pad|unk)>|<(?:start|end)_of_turn>"
    r"|\[/?INST\]|\[/?(?:SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_RESULTS)\]"
)

# llama.cpp's messages when the prompt does not fit the context, every binary and era
_PROMPT_TOO_LONG = re.compile(
    r"prompt is too long[^\n]*|prompt too long[^\n]*|prompt exceeds the context size[^\n]*"
)
# ... and the batch, which the speculative programs need it in whole (tests/logs/real/*over-batch*;
# in "failed to add token N at index I" the index is the batch's size)
_PROMPT_OVER_BATCH = re.compile(
    r"prompt exceeds the batch size \((?P<tokens>\d+) tokens, batch (?P<batch>\d+)\)"
    r"|failed to add token \d+ at index (?P<index>\d+)[^\n]*"
    r"|GGML_ASSERT\(n_tokens_all <= cparams\.n_batch\) failed"
)
_N_BATCH = re.compile(r"n_batch\s+= (\d+)")


def _segments(prompt: str) -> list[str]:
    """The prompt's visible text pieces, split at special tokens, whitespace-only pieces dropped."""
    return [s for s in _SPECIAL.split(prompt) if s.strip()]


def continuation(stdout: str, prompt: str, echoed: bool = True) -> str | None:
    """The generated text in ``stdout``, without the echoed prompt; None when the echo is not found.

    Tried in order: the exact prompt (speculative binaries print it with special tokens), the prompt
    without special tokens (llama-completion), its visible pieces in order (a template whose tokens
    the pattern does not know). ``echoed=False`` (``--no-display-prompt``): all of stdout.
    Trailing whitespace and the `` [end of text]`` marker are removed: binaries append newlines.
    """
    rest = generated_text(stdout, prompt, echoed)
    if rest is None:
        return None
    rest = (rest.lstrip("\n") if echoed and not prompt else rest).rstrip()
    return rest.removesuffix(END_OF_TEXT.strip()).rstrip()


def generated_text(stdout: str, prompt: str, echoed: bool = True) -> str | None:
    """stdout after the prompt's echo, as printed (``continuation`` trims it); None: no echo found."""
    return _after_prompt(stdout, prompt) if echoed and prompt else stdout


def echoed_on_stdout(stdout: str, stderr: str, prompt: str, expected: bool = True) -> bool:
    """Whether the prompt's echo is on stdout: as ``expected`` (``Invocation.prompt_echoed``), unless
    stdout holds none of it and stderr does (the 2024 llama-speculative echoes on stderr: its
    stdout is the continuation alone)."""
    pieces = _segments(prompt)
    if not expected or not pieces:
        return expected
    first = pieces[0].strip()
    return not (first not in stdout and first in stderr)


def generation_offset(stdout: str, prompt: str, echoed: bool = True) -> int | None:
    """The stdout byte where the generated text begins (after the prompt's echo); None when the
    echo is not found. Used to time generation from the first generated token."""
    rest = generated_text(stdout, prompt, echoed)
    return None if rest is None else len(output_bytes(stdout)) - len(output_bytes(rest))


def _after_prompt(stdout: str, prompt: str) -> str | None:
    for candidate in (prompt, _SPECIAL.sub("", prompt)):
        idx = stdout.find(candidate) if candidate else -1
        if idx >= 0:
            return stdout[idx + len(candidate) :]
    pos = 0
    pieces = _segments(prompt)
    if not pieces:
        return None
    for piece in pieces:
        found = stdout.find(piece, pos)
        if found < 0:
            piece = piece.strip()
            found = stdout.find(piece, pos)
            if found < 0:
                return None
        pos = found + len(piece)
    rest = stdout[pos:]
    tail = _SPECIAL.sub("", prompt[prompt.rindex(pieces[-1].strip()) + len(pieces[-1].strip()) :])
    return rest[len(tail) :] if tail and rest.startswith(tail) else rest


def decode_output(data: bytes) -> str:
    """Generated text as printed. A run stopped at ``-n`` can end inside a multi-byte character
    (one token of an emoji); ``surrogateescape`` keeps those bytes exactly (``output_bytes`` gets
    them back), where a replacement character would make a true prefix look different."""
    return data.decode("utf-8", errors="surrogateescape")


def output_bytes(text: str) -> bytes:
    """The bytes ``decode_output`` read (text from elsewhere, e.g. JSON, is plain UTF-8)."""
    return text.encode("utf-8", errors="surrogateescape")


def sha256_text(text: str) -> str:
    return hashlib.sha256(output_bytes(text)).hexdigest()


@dataclass(frozen=True)
class Comparison:
    """A speculative continuation against the baseline's, over the shorter of the two."""

    match: bool
    first_diff: int | None  # character index of the first difference; None when they match


def compare(speculative: str, baseline: str) -> Comparison:
    """Compare over the shorter length: a speculative run may overshoot ``-n`` by a draft's length,
    and at EOS one of them may stop earlier; only the common span says anything. Compared as
    bytes: a baseline cut inside a character is a prefix of the speculative run's whole one."""
    spec, base = output_bytes(speculative), output_bytes(baseline)
    for i in range(min(len(spec), len(base))):
        if spec[i] != base[i]:
            return Comparison(False, len(spec[:i].decode("utf-8", errors="ignore")))  # characters
    return Comparison(True, None)


def prompt_over_context(prompt_tokens: int | None, ctx_size: int) -> str | None:
    """A prompt over ``ctx_size`` fails the process runner's binaries; llama-server would round the
    context up and run it. Both runners get the process runner's rule: such a sample fails."""
    if prompt_tokens is None or prompt_tokens <= ctx_size:
        return None
    return (
        f"prompt longer than the context ({prompt_tokens} tokens, ctx_size {ctx_size}; the process "
        "runner fails it, llama-server would round the context up); raise generation.ctx_size"
    )


def failure_reason(
    stderr: str, exit_code: int | None, signal_name: str | None, facts: CrashFacts | None = None,
    ctx_size: int | None = None,
) -> str:  # fmt: skip
    """One line saying why a run failed: a prompt too long for the context or the batch, a model
    that did not load, a known crash class (``parse.crash``, with its cure), else the signal or exit
    code with llama.cpp's own error line. ``ctx_size``: the run's ``-c`` (it caps the batch)."""
    how = f"killed by {signal_name}" if signal_name else f"exit code {exit_code}"
    if too_long := _PROMPT_TOO_LONG.search(stderr):
        return f"prompt longer than the context ({too_long.group(0).strip()}); raise generation.ctx_size"
    if over_batch := _PROMPT_OVER_BATCH.search(stderr):
        return _over_batch(over_batch, stderr, ctx_size)
    if cause := load_cause(stderr):  # the last line only says "exiting due to model loading error"
        return f"{how}: the model did not load: {cause}"
    if (known := classify(stderr, exit_code, signal_name, facts)) is not None:
        return f"{how}: {known.line}"
    said = error_line(stderr)  # llama.cpp's cause, not the "failed to create context" after it
    return f"{how}: {said}" if said else how


def _over_batch(found: re.Match[str], stderr: str, ctx_size: int | None) -> str:
    """The batch the prompt had to fit was too small: the context's limit where llama.cpp capped the
    batch at ``-c`` (``ctx_size``), else the batch's, with ``batch_size``'s cure."""
    said = found.group(0).strip()
    sizes = _N_BATCH.findall(stderr[: found.start()])
    batch = found.group("batch") or found.group("index") or (sizes[-1] if sizes else None)
    if ctx_size and batch is not None and int(batch) >= ctx_size:
        return f"prompt longer than the context ({said}); raise generation.ctx_size"
    least = f" to at least {found.group('tokens')}" if found.group("tokens") else " to the prompt's tokens"
    return (
        f"prompt longer than the batch ({said}): the speculative program takes the whole prompt in one "
        f"batch; raise batch_size{least}, or leave it unset (specbench then sizes -b to the prompt)"
    )


# llama.cpp says why a model did not load once, early ("error loading model: ..."; a GGUF it cannot
# read: "gguf_init_from_file_impl: ..."), and ends with a line that does not.
_LOAD_ERROR = re.compile(r"error loading model: (.*)")
_LOAD_PREFIX = re.compile(r"^(?:error loading model [^:]*: |llama_model_loader: )")
_GGUF_ERROR = re.compile(r"gguf_init_from_file\w*: (.*)")


def load_cause(stderr: str) -> str | None:
    """Why llama.cpp could not load a model, from its own words; None when it loaded (or said nothing)."""
    found = _LOAD_ERROR.search(stderr)
    if found is None:
        return None
    cause = found.group(1).strip()
    while (stripped := _LOAD_PREFIX.sub("", cause)) != cause:
        cause = stripped
    gguf = _GGUF_ERROR.search(stderr[: found.start()])
    if gguf and cause.startswith("failed to load model from"):
        cause = f"{gguf.group(1).strip()}: {cause}"  # the generic line: the GGUF reader said why
    return cause[:300]
