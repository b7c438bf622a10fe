"""Does this build work on this machine? Decode a few tokens with a tiny model of each weight type.

A build can compile code paths per weight type and CPU that crash on a given machine (on AMX CPUs the
pinned llama.cpp dies of SIGSEGV in ``ggml_backend_amx_mul_mat``, llama.cpp issue 20824). A tiny random
model is decoded for 8 tokens per type as a sweep would run it; a type that crashes is tried again with
repacking off, and where that cures every crash the build gets the ``Workaround``.
Each speculative program then runs once with a draft model: one that crashes there crashes on every
sample (ik_llama.cpp 0.1.5's llama-speculative), and the plan refuses it (``BuildInfo.spec_crash``).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

import numpy as np

from specbench.base.childenv import child_env
from specbench.base.errors import ParseError
from specbench.base.files import atomic_path
from specbench.base.formats import now_iso
from specbench.base.llamaopts import GPU_LAYERS
from specbench.base.methods import DRAFT_SIMPLE
from specbench.base.paths import models_dir
from specbench.builder import buildinfo
from specbench.builder.buildinfo import BinaryInfo, BuildInfo, SelfTest, TypeCheck, Workaround
from specbench.builder.workaround import REPACK_OFF, spelled
from specbench.machine import envinfo
from specbench.parse.crash import CrashFacts, classify, error_line, exit_status, last_line
from specbench.parse.process import parse_text

WEIGHT_TYPES = ("F16", "Q4_0", "Q4_1", "Q8_0", "Q4_K", "IQ4_NL")  # each has its own CPU/GPU code paths
LAYOUT = 1  # bump when the tiny model changes: cached copies are rewritten
DECODE_TIMEOUT_S = 60
QUANTIZE_TIMEOUT_S = 120
N_EMBD, N_HEAD, N_FF, N_LAYER = 256, 4, 256, 1  # rows of 256: Q4_K's block, so every type is used as asked
PIECES = ["▁Hello", "▁world", "▁the", "▁a", "▁is", "▁of"]

Say = Callable[[str], None]


def _vocab() -> tuple[list[str], list[float], list[int]]:
    """A SentencePiece vocabulary: specials, the 256 byte tokens (byte fallback), a few words."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *PIECES]
    types = [2, 3, 3, *([6] * 256), *([1] * len(PIECES))]  # unknown, control, byte, normal
    scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(PIECES))]
    return tokens, scores, types


def write_tiny_llama(out: Path, seed: int = 0) -> Path:
    """A 1-layer llama GGUF in F32 with random weights (about 1 MB): loads and decodes anywhere."""
    from gguf import GGUFWriter

    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab()

    def mat(n_in: int, n_out: int) -> np.ndarray:
        return (rng.standard_normal((n_out, n_in)) * 0.05).astype(np.float32)

    with atomic_path(out) as tmp:
        w = GGUFWriter(tmp, "llama")
        w.add_name("specbench self-test model")
        w.add_context_length(256)
        w.add_embedding_length(N_EMBD)
        w.add_block_count(N_LAYER)
        w.add_feed_forward_length(N_FF)
        w.add_head_count(N_HEAD)
        w.add_head_count_kv(N_HEAD)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_rope_dimension_count(N_EMBD // N_HEAD)
        w.add_vocab_size(len(tokens))
        w.add_file_type(0)  # ALL_F32
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_tensor("token_embd.weight", mat(N_EMBD, len(tokens)))
        w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor("output.weight", mat(N_EMBD, len(tokens)))
        for i in range(N_LAYER):
            b = f"blk.{i}"
            w.add_tensor(f"{b}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
            for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
                w.add_tensor(f"{b}.{name}.weight", mat(N_EMBD, N_EMBD))
            w.add_tensor(f"{b}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
            w.add_tensor(f"{b}.ffn_gate.weight", mat(N_EMBD, N_FF))
            w.add_tensor(f"{b}.ffn_up.weight", mat(N_EMBD, N_FF))
            w.add_tensor(f"{b}.ffn_down.weight", mat(N_FF, N_EMBD))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    return out


def tiny_models_dir() -> Path:
    return models_dir() / "selftest" / f"v{LAYOUT}"


def tiny_f32() -> Path:
    """The cached tiny model in F32 (written now when missing; no llama-quantize needed)."""
    f32 = tiny_models_dir() / "tiny-F32.gguf"
    if not f32.is_file():
        write_tiny_llama(f32)  # atomic_path makes its folder
    return f32


def tiny_model(wtype: str, quantize: BinaryInfo | None) -> tuple[Path | None, str | None]:
    """The cached tiny model of ``wtype`` (written/quantized now when missing), or why there is none."""
    f32 = tiny_f32()
    out = f32.parent / f"tiny-{wtype}.gguf"
    if out.is_file():
        return out, None
    if quantize is None:
        return None, "the build has no llama-quantize to make it"
    with atomic_path(out) as tmp:
        try:
            res = subprocess.run(
                [*quantize.argv0, str(f32), str(tmp), wtype], stdin=subprocess.DEVNULL, capture_output=True,
                text=True, errors="replace", timeout=QUANTIZE_TIMEOUT_S, env=child_env(),
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"llama-quantize failed: {exc}"
        if res.returncode != 0 or not tmp.is_file():
            last = (last_line(res.stderr) or f"rc {res.returncode}")[:200]
            return None, f"llama-quantize to {wtype} failed: {last}"
    return out, None


def decode_argv(binary: BinaryInfo, model: Path, ngl: int, extra: list[str]) -> list[str]:
    """The command a sweep would run for the model alone, 8 tokens (flags as the binary spells them)."""
    f = binary.flags
    argv = [*binary.argv0, "-m", str(model), "-p", "Hello world", "-n", "8", "--temp", "0", "-s", "1"]
    argv += ["-c", "256", GPU_LAYERS.spellings[0], str(ngl)]
    argv += [x for x in (f.no_escape, f.no_conversation, f.no_display_prompt) if x]
    return argv + extra


def speculative_argv(binary: BinaryInfo, model: Path, ngl: int, extra: list[str]) -> list[str]:
    """The draft method, 4 drafted, as the plan spells it for this program (``FlagSpelling``'s)."""
    spec = binary.flags.speculative_argv(str(model), [DRAFT_SIMPLE], [(binary.flags.draft_max, 4)])
    return decode_argv(binary, model, ngl, extra) + spec


CUT_SHORT = "exit 0; llama.cpp's log ended before its statistics (a run this short often exits first)"


def decode(binary: BinaryInfo, argv: list[str], wtype: str, facts: CrashFacts) -> TypeCheck:
    """Run ``argv``, a few tokens decoded; ok is exit 0 (a crash is a signal, a refusal an exit code)."""
    start = time.monotonic()
    # in a folder of its own: an older llama.cpp writes main.log where it runs, never the user's folder
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as cwd,
    ):
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=DECODE_TIMEOUT_S,
                env=child_env(), start_new_session=True, cwd=cwd,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return TypeCheck(wtype=wtype, outcome="failed", reason=f"no answer in {DECODE_TIMEOUT_S} s")
        except OSError as exc:
            return TypeCheck(wtype=wtype, outcome="failed", reason=f"cannot run {binary.name}: {exc}")
        err.seek(0)
        stderr = err.read().decode("utf-8", errors="replace")
    wall = round(time.monotonic() - start, 2)
    code, sig = exit_status(proc.returncode)
    last = last_line(stderr)
    if sig is not None:
        known = classify(stderr, None, sig, facts)
        said = known.line if known else f"after its log's last line {last[:200]!r}" if last else ""
        reason = f"killed by {sig}" + (f": {said}" if said else "")
        return TypeCheck(wtype=wtype, outcome="crashed", signal=sig, reason=reason, wall_s=wall)
    if code != 0:
        known = classify(stderr, code, None, facts)
        reason = f"exit code {code}: {known.line if known else error_line(stderr) or last[:200]}"
        return TypeCheck(wtype=wtype, outcome="failed", rc=code, reason=reason, wall_s=wall)
    log = None
    with suppress(ParseError):
        log = parse_text(stderr, file=f"self-test {wtype}")
    perf = log.perf.target if log is not None and log.perf else None
    # llama.cpp logs from a thread the main one does not wait for at exit, so a run this short often
    # ends before its statistics; exit 0 still says what this check asks: the decode did not crash.
    cut_short = perf is None or not perf.eval_runs
    return TypeCheck(wtype=wtype, outcome="ok", rc=0, reason=CUT_SHORT if cut_short else None, wall_s=wall)


def run_selftest(info: BuildInfo, say: Say | None = None, types: tuple[str, ...] = WEIGHT_TYPES) -> SelfTest:
    """Check ``info`` on this machine: each weight type decoded; crashes retried with repacking off."""
    isa = envinfo.cpu_isa()
    gpus = envinfo.gpus()
    facts = CrashFacts(cpu_flags=frozenset(isa), backend=info.backend)
    ngl = 0 if info.backend == "cpu" else 99
    completion = info.binaries.get("completion")
    record = SelfTest(
        fingerprint=envinfo.fingerprint(isa, gpus),
        machine=f"{envinfo.cpu_model()} / {', '.join(g.name for g in gpus) or 'no GPU'}",
        checked_at=now_iso(),
    )
    if completion is None or not Path(completion.path).is_file():
        record.checks = [TypeCheck(wtype=t, outcome="skipped", reason="no llama-completion") for t in types]
        record.speculative = speculative_checks(info, ngl, False, facts, say)
        return record
    quantize = info.binaries.get("quantize")
    for wtype in types:
        model, why = tiny_model(wtype, quantize)
        if model is None:
            record.checks.append(TypeCheck(wtype=wtype, outcome="skipped", reason=why))
            continue
        record.command = decode_argv(completion, model, ngl, [])
        check = decode(completion, record.command, wtype, facts)
        if say:
            say(f"{wtype}: {_said(check)}")
        record.checks.append(check)
    cure = spelled(REPACK_OFF, completion)  # as every launch site spells it (builder.workaround)
    flag = " ".join(cure)
    broken = [c for c in record.checks if c.outcome == "crashed"]
    if broken and cure:
        for c in broken:
            argv = decode_argv(completion, tiny_models_dir() / f"tiny-{c.wtype}.gguf", ngl, cure)
            c.workaround_outcome = decode(completion, argv, c.wtype, facts).outcome
            if say:
                say(f"{c.wtype} with {flag}: {c.workaround_outcome}")
        if all(c.workaround_outcome == "ok" for c in broken):
            sig = ", ".join(sorted({c.signal or "crash" for c in broken}))
            _name_the_class(broken, facts)
            record.workaround = Workaround(
                name=REPACK_OFF,
                flag=flag,
                reason=f"the build's self-test crashed ({sig}) on {', '.join(c.wtype for c in broken)} "
                f"and decoded with {flag}"
                + (" (llama.cpp's AMX repack crash, issue 20824)" if "amx_int8" in isa else ""),
            )
    record.speculative = speculative_checks(info, ngl, record.workaround is not None, facts, say)
    return record


def speculative_checks(
    info: BuildInfo, ngl: int, cure: bool, facts: CrashFacts, say: Say | None
) -> dict[str, TypeCheck]:
    """Each speculative program run once with a draft model (with the workaround when ``cure``)."""
    checks: dict[str, TypeCheck] = {}
    for role in (r for r in buildinfo.SPECULATIVE_ROLES if r in info.binaries):
        spec = info.binaries[role]
        extra = spelled(REPACK_OFF, spec) if cure else []  # as every run of the build gets it
        checks[role] = decode(spec, speculative_argv(spec, tiny_f32(), ngl, extra), "F32", facts)
        if say:
            say(f"{spec.name} with a draft model: {_said(checks[role])}")
    return checks


def _said(check: TypeCheck) -> str:
    return check.outcome + (f" ({check.reason})" if check.reason else "")


def _name_the_class(broken: list[TypeCheck], facts: CrashFacts) -> None:
    """Crashes that repacking off cured: their reason names the class now that the self-test has
    seen it (``parse.crash`` names the AMX crash only where a self-test recorded it or the log shows AMX)."""
    seen = replace(facts, selftest_crashed=tuple(c.wtype for c in broken))
    for c in broken:
        known = classify("", None, c.signal, seen)
        if known is not None and c.reason and known.line not in c.reason:
            c.reason = f"killed by {c.signal}: {known.line}"


def needs_selftest(info: BuildInfo) -> bool:
    """No record, one made on a machine whose CPU or GPUs differ from this one's, or one made before
    the self-test ran the speculative programs (re-tested: an unknown is never taken as a pass)."""
    if info.selftest is None or info.selftest.speculative is None:
        return True
    return info.selftest.fingerprint != envinfo.fingerprint(envinfo.cpu_isa(), envinfo.gpus())
