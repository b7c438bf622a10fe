"""Pre-flight check that a draft can speculate for a target, from metadata only (nothing loaded).

The rules are llama.cpp's ``common_speculative_are_compatible`` (common/speculative.cpp), in its
order, so a pair refused here is one llama.cpp would refuse after loading both: the same vocab type,
BOS and EOS (added alike, the same ids), vocabulary sizes within 128, token texts equal from id 5 on.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from specbench.models.meta import GGUFMeta, read_metadata, read_token_texts

SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5


class PairCheck(BaseModel):
    """Result of the pair check. ``rule`` names the failed rule (None when ok)."""

    ok: bool
    rule: str | None = None  # vocab_type | bos | eos | vocab_size | token_text
    target_value: str | None = None
    draft_value: str | None = None
    message: str


def _refuse(rule: str, what: str, tv: object, dv: object) -> PairCheck:
    return PairCheck(
        ok=False,
        rule=rule,
        target_value=str(tv),
        draft_value=str(dv),
        message=f"draft cannot speculate for target: {what} differs (target {tv}, draft {dv}); "
        "use a draft from the target's model family (same tokenizer)",
    )


def check_metadata(t: GGUFMeta, d: GGUFMeta) -> PairCheck | None:
    """Rules 1-4 (metadata only); None when they pass."""
    if t.vocab_type != d.vocab_type:
        tv, dv = f"{t.vocab_type} ({t.tokenizer_model})", f"{d.vocab_type} ({d.tokenizer_model})"
        return _refuse("vocab_type", "vocabulary type", tv, dv)
    for end in ("bos", "eos"):  # the same rule for both special tokens: added alike, and the same id
        add, tid = f"add_{end}", f"{end}_token_id"
        ta, da, ti, di = getattr(t, add), getattr(d, add), getattr(t, tid), getattr(d, tid)
        if ta != da or (ta and ti != di):
            what = f"{end.upper()} token ({add}, id)"
            return _refuse(end, what, f"{add}={ta} {end}={ti}", f"{add}={da} {end}={di}")
    nt, nd = t.vocab_size or 0, d.vocab_size or 0
    if abs(nt - nd) > SPEC_VOCAB_MAX_SIZE_DIFFERENCE:
        what = f"vocabulary size by more than {SPEC_VOCAB_MAX_SIZE_DIFFERENCE} tokens"
        return _refuse("vocab_size", what, nt, nd)
    return None


def check_tokens(target_tokens: list[bytes], draft_tokens: list[bytes]) -> PairCheck | None:
    """Rule 5: token texts from id 5 on; None when they match."""
    n = min(len(target_tokens), len(draft_tokens))
    for i in range(SPEC_VOCAB_CHECK_START_TOKEN_ID, n):
        if target_tokens[i] != draft_tokens[i]:
            tv = target_tokens[i].decode("utf-8", "replace")
            dv = draft_tokens[i].decode("utf-8", "replace")
            return _refuse("token_text", f"token {i} text", repr(tv), repr(dv))
    return None


def check_pair(target: Path, draft: Path) -> PairCheck:
    """Check a target/draft pair of GGUF files (first shards); bad files raise ModelError."""
    t_meta, d_meta = read_metadata(Path(target)), read_metadata(Path(draft))
    failed = check_metadata(t_meta, d_meta) or check_tokens(read_token_texts(target), read_token_texts(draft))
    if failed is not None:
        return failed
    return PairCheck(
        ok=True,
        message=f"compatible: {t_meta.vocab_type} vocabulary of {t_meta.vocab_size} / {d_meta.vocab_size} "
        f"tokens, bos {t_meta.bos_token_id}, eos {t_meta.eos_token_id}, token texts match",
    )
