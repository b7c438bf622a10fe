"""How a config names a speculative method (pure functions over ``specbench.base.methods``, no I/O).

A method is one of llama.cpp's ``--spec-type`` values, or several joined by ``+``
(``draft+ngram-mod``: passed as ``--spec-type draft-simple,ngram-mod``). ``draft`` is specbench's
name for llama.cpp's ``draft-simple`` (``draft-simple`` is accepted and read as ``draft``, so
cells and their history ids keep one name). The parts of a combination are put in one order
(the table's, then unknown names as written), so ``ngram-mod+draft`` is the same cell.
Which names a build takes is read from its ``--help`` at plan time (``plan.cells.sweep_cells``);
here only the spelling is checked, so a config loads without a build.
"""

from __future__ import annotations

import re

from specbench.base.methods import DRAFT_SIMPLE, METHODS, SEPARATOR, method_of, parts

__all__ = ["DRAFT_SIMPLE"]  # llama.cpp's name of `draft`, for the plan's modules
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def parse_method(text: str) -> str:
    """A config's method in its one spelling; ValueError (one line) for a malformed one."""
    if not isinstance(text, str):
        raise ValueError(f"a method is a name such as draft or ngram-mod, not {text!r}")
    ours = {m.spec_type: name for name, m in METHODS.items()}  # draft-simple -> draft
    names = [ours.get(p.strip(), p.strip()) for p in text.split(SEPARATOR)]
    for name in names:
        if not _NAME.match(name):
            raise ValueError(
                f"{text!r}: {name!r} is no method name; write llama.cpp --spec-type names joined by "
                "'+', e.g. draft, draft-eagle3, ngram-mod or draft+ngram-mod"
            )
        if name == "none":
            raise ValueError("none is no speculative method (the baseline runs anyway); remove it")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{text!r} names {', '.join(dupes)} twice")
    models = [n for n in names if method_of(n).draft_context]
    if len(models) > 1:
        raise ValueError(
            f"{text!r} combines {' and '.join(models)}: llama.cpp runs one draft context at a time; "
            "combine one of them with n-gram methods only"
        )
    order = list(METHODS)
    known = sorted((n for n in names if n in METHODS), key=order.index)
    return SEPARATOR.join(known + [n for n in names if n not in METHODS])


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
