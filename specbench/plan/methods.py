"""What a config's method needs: a method is a ``--spec-type`` or several joined by ``+``, read
part by part from ``base.methods`` (pure functions, no I/O)."""

from __future__ import annotations

from specbench.base.methods import METHODS, method_of, parts


def spec_type_names(method: str) -> list[str]:
    """The ``--spec-type`` values of a method (``draft`` -> ``draft-simple``)."""
    return [method_of(p).spec_type for p in parts(method)]


def needs_draft_model(method: str) -> bool:
    """The method drafts with a model given as ``-md`` (a pair's ``draft:``)."""
    return any(method_of(p).draft_model for p in parts(method))


def is_mtp(method: str) -> bool:
    """The method drafts with the target's own next-token layers (MTP; a pair's draft is a sidecar)."""
    return any(method_of(p).target_layers for p in parts(method))


def keeps_server_state(method: str) -> bool:
    """A llama-server speculating with ``method`` keeps state between requests (unknown: yes)."""
    return any(p not in METHODS or METHODS[p].server_state for p in parts(method))


def draft_free(method: str) -> bool:
    """Only n-gram (or unknown, draft-free) parts: no draft context, no draft_* options."""
    return not any(method_of(p).draft_context for p in parts(method))


def ngram_parts(method: str) -> list[str]:
    """The n-gram lookups of a method (sized by ``--spec-<name>-size-n``/``-m``)."""
    return [p for p in parts(method) if method_of(p).lookup]


def runs_on(method: str, role: str) -> bool:
    """Every part of the method runs on the binary of BuildInfo role ``role``."""
    return all(role in method_of(p).binaries for p in parts(method))
