"""How a config names a speculative method (pure functions over ``specbench.base.methods``, no I/O).

A method is one of llama.cpp's ``--spec-type`` values, or several joined by ``+``
(``draft+ngram-mod``: passed as ``--spec-type draft-simple,ngram-mod``). ``draft`` is specbench's
name for llama.cpp's ``draft-simple`` (``draft-simple`` is accepted and read as ``draft``, so
cells and their history ids keep one name). The parts of a combination are put in one order
(the table's, then unknown names as written), so ``ngram-mod+draft`` is the same cell.
Which names a build takes is read from its ``--help`` at plan time (``plan.cells.sweep_cells``);
a config's spelling is checked by ``base.methods.parse_method``, so a config loads without a build.
"""

from __future__ import annotations

from specbench.base.methods import DRAFT_SIMPLE, METHODS, method_of, parse_method, parts

__all__ = ["DRAFT_SIMPLE", "parse_method"]  # llama.cpp's name of `draft`, and a config's spelling


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
    """Whether a llama-server speculating with ``method`` carries state from one request to the
    next (``Method.server_state``); an unknown part counts as stateful, the safe side."""
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
