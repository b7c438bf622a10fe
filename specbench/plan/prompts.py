"""Prompts: the built-in suite, user JSONL files, and rendering them for a target model.

Chat ``messages`` are rendered with the target's own chat template (what it was trained on), raw
``text`` passed as is. The built-in suite follows Spec-Bench's six categories: speculation pays very
differently on code than on translation or open chat."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import BaseModel, Field, ValidationError, model_validator

from specbench.base.errors import ConfigError, ModelError
from specbench.base.formats import json_text
from specbench.base.paths import Name
from specbench.plan.configtext import first_error, refuse_unpassable, unknown_key
from specbench.plan.options import Strict
from specbench.results.cell import group_by

CATEGORIES = ("code", "chat", "summarization", "translation", "math", "extraction")


class Message(Strict):
    role: Literal["system", "user", "assistant"]
    content: str = Field(min_length=1)  # like an empty `text`: a prompt of nothing measures nothing


class Prompt(Strict):
    """One line of a prompts JSONL file: ``{id, category, messages | text}``."""

    id: Name  # in the raw logs' file names
    category: Name
    messages: list[Message] | None = Field(default=None, min_length=1)
    text: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> Prompt:
        if (self.messages is None) == (self.text is None):
            raise ValueError("needs exactly one of `messages` or `text`")
        return self


class RenderedPrompt(BaseModel):
    """A prompt as one target model will see it (the exact string passed to llama.cpp); ``fallback``:
    messages for a model without a chat template, as plain ``User: ...`` / ``Assistant:`` lines."""

    id: str
    category: str
    model: str
    text: str
    rendering: Literal["raw", "template", "fallback"]
    depth: int = 0  # tokens of context in front of the prompt (specbench.plan.depth)
    # its tokens by the target's own tokenizer (no BOS/EOS); None where nothing counted them
    tokens: int | None = None


def _parse_lines(lines: Iterable[str], origin: str) -> list[Prompt]:
    prompts: list[Prompt] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            prompt = Prompt.model_validate_json(line)
        except ValidationError as exc:
            err = first_error(exc.errors())
            where = ".".join(str(p) for p in err["loc"])
            what = f"{where}: {err['msg']}" if where else err["msg"]
            if err["type"] == "json_invalid":
                what = "not valid JSON"
            elif err["type"] == "extra_forbidden":  # a misspelt key: name the one it likely meant
                what = f"{where}: {unknown_key(Prompt, tuple(err['loc']))}"
            raise ConfigError(
                f"{origin}:{lineno}: {what}; each line must be a JSON object "
                '{"id": ..., "category": ..., "messages": [{"role": "user", "content": ...}] or "text": ...}'
            ) from exc
        texts = [("text", prompt.text)] if prompt.text is not None else []
        texts += [(f"messages.{i}.content", m.content) for i, m in enumerate(prompt.messages or [])]
        for field, text in texts:
            refuse_unpassable(text, f"{origin}:{lineno}: prompt {prompt.id!r}: {field}")
        if prompt.id in seen:
            first = seen[prompt.id]
            raise ConfigError(f"{origin}:{lineno}: duplicate prompt id {prompt.id!r} (first on line {first})")
        seen[prompt.id] = lineno
        prompts.append(prompt)
    if not prompts:
        raise ConfigError(f"{origin}: no prompts in the file; add one JSON object per line")
    return prompts


def builtin_prompts() -> list[Prompt]:
    """The suite shipped with specbench (package data ``prompts/builtin.jsonl``)."""
    text = resources.files("specbench.plan").joinpath("builtin.jsonl").read_text(encoding="utf-8")
    return _parse_lines(text.splitlines(), "builtin.jsonl")


def load_prompt_file(path: Path) -> list[Prompt]:
    """A user's JSONL file of prompts; a bad line is a ConfigError naming the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not text
    except FileNotFoundError as exc:
        raise ConfigError(f"prompts file {path} does not exist; fix `prompts.file` in the config") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read prompts file {path}: {exc}") from exc
    return _parse_lines(text.splitlines(), str(path))


def select(
    prompts: list[Prompt],
    categories: list[str] | None = None,
    ids: list[str] | None = None,
    limit_per_category: int | None = None,
    origin: str = "prompts",
) -> list[Prompt]:
    """Filter by category and id, then keep the first ``limit_per_category`` of each category."""
    known_cats = sorted({p.category for p in prompts})
    for cat in categories or []:
        if cat not in known_cats:
            known = ", ".join(known_cats)
            raise ConfigError(f"prompts.categories: unknown category {cat!r} (known: {known})")
    known_ids = {p.id for p in prompts}
    for pid in ids or []:
        if pid not in known_ids:
            raise ConfigError(f"prompts.ids: unknown prompt id {pid!r} in {origin}")
    chosen = [p for p in prompts if (not categories or p.category in categories) and (not ids or p.id in ids)]
    if limit_per_category is not None:  # the first of each category, kept in the file's order
        by_category = group_by(chosen, lambda p: p.category)
        kept = {id(p) for ps in by_category.values() for p in ps[:limit_per_category]}
        chosen = [p for p in chosen if id(p) in kept]
    if not chosen:
        raise ConfigError(f"prompts: the selection from {origin} is empty; relax `categories`/`ids`")
    return chosen


# ---------------------------------------------------------------- rendering for a target model


@dataclass(frozen=True)
class ChatFormat:
    """What rendering needs from a model's GGUF metadata."""

    template: str | None  # tokenizer.chat_template
    bos_token: str = ""
    eos_token: str = ""
    add_bos: bool = False  # llama.cpp adds BOS itself when tokenizing the prompt


def chat_format(path: Path) -> ChatFormat:
    """Read the chat template and the BOS/EOS token texts from a GGUF file."""
    from specbench.models.ggufheader import read_local_header

    header = read_local_header(Path(path))

    def token_text(key: str) -> str:
        tid = header.kv.get(key)
        if tid is None or not 0 <= int(tid) < len(header.tokens):
            return ""
        return header.tokens[int(tid)].decode()

    template = header.kv.get("tokenizer.chat_template")
    return ChatFormat(
        template=str(template) if template else None,
        bos_token=token_text("tokenizer.ggml.bos_token_id"),
        eos_token=token_text("tokenizer.ggml.eos_token_id"),
        add_bos=bool(header.kv.get("tokenizer.ggml.add_bos_token", False)),
    )


def _raise_exception(message: str):
    raise TemplateError(message)


@lru_cache(maxsize=16)
def _compile(template: str) -> jinja2.Template:
    """Compile a chat template the way Hugging Face transformers does (sandboxed, trimmed blocks)."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.filters["tojson"] = lambda x, indent=None, **_: json_text(
        x, indent, ensure_ascii=False, redacted=False
    )
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def render(prompt: Prompt, model: str, fmt: ChatFormat | None) -> RenderedPrompt:
    """The exact string llama.cpp gets for ``prompt`` on ``model``, without a leading BOS text where the
    model adds BOS itself (as llama.cpp's own chat path does)."""

    def out(text: str, rendering: str) -> RenderedPrompt:
        return RenderedPrompt(
            id=prompt.id, category=prompt.category, model=model, text=text, rendering=rendering
        )

    if prompt.text is not None:
        return out(prompt.text, "raw")
    messages = prompt.messages or []
    if fmt is None or not fmt.template:  # role-labelled lines, ending where the answer starts
        return out(
            "\n".join(f"{m.role.capitalize()}: {m.content}" for m in messages) + "\nAssistant:", "fallback"
        )
    try:
        text = _compile(fmt.template).render(
            messages=[m.model_dump() for m in messages],
            add_generation_prompt=True,
            bos_token=fmt.bos_token,
            eos_token=fmt.eos_token,
        )
    except (TemplateError, TypeError, ValueError) as exc:
        raise ModelError(
            f"the chat template of model {model!r} failed on prompt {prompt.id!r}: {exc}; "
            "use `text` prompts for this model"
        ) from exc
    if fmt.add_bos and fmt.bos_token and text.startswith(fmt.bos_token):
        text = text[len(fmt.bos_token) :]
    return out(text, "template")


def render_all(prompts: list[Prompt], targets: dict[str, Path]) -> list[RenderedPrompt]:
    """Render every prompt for every target model (name -> GGUF path), in prompt order."""
    formats = {name: chat_format(path) for name, path in targets.items()}
    return [render(p, name, formats[name]) for name in targets for p in prompts]
