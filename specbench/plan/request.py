"""What one llama-server request asks for: the server runner's counterpart of a command line."""

from __future__ import annotations

from pydantic import BaseModel


class CompletionRequest(BaseModel):
    """The ``POST /completion`` body, without the prompt cache (a repeat would skip prompt eval)."""

    prompt: str  # the rendered prompt text, as passed with -p (/completion applies no chat template)
    n_predict: int
    temperature: float
    seed: int
    top_k: int | None = None
    cache_prompt: bool = False
    return_tokens: bool = True
    n_probs: int = 0
    ignore_eos: bool | None = None  # not set by the plan (a run stops at EOS like the process runner)

    def body(self) -> dict:
        return self.model_dump(exclude_none=True)
