"""How a config names a speculative method, and what each method needs (pure functions, no I/O).

A method is one of llama.cpp's ``--spec-type`` values, or several joined by ``+``
(``draft+ngram-mod``: passed as ``--spec-type draft-simple,ngram-mod``). ``draft`` is specbench's
name for llama.cpp's ``draft-simple`` (``draft-simple`` is accepted and read as ``draft``, so
cells and their history ids keep one name). The parts of a combination are put in one order
(``METHOD_ORDER``, then unknown names as written), so ``ngram-mod+draft`` is the same cell.
Which names a build takes is read from its ``--help`` at plan time (``plan.cells.sweep_cells``);
here only the spelling is checked, so a config loads without a build.
"""

from __future__ import annotations

import re

DRAFT_METHOD = "draft"
DRAFT_SIMPLE = "draft-simple"  # llama.cpp's name of `draft`
NGRAM_METHODS = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
MTP_METHOD = "draft-mtp"
# The GGUF architecture a method's `-md` model must have (pinned src/llama-arch.cpp; a DSpark
# drafter is a `dflash` GGUF with a Markov head, common/speculative.cpp types_from_gguf).
DRAFT_ARCH = {"draft-eagle3": "eagle3", "draft-dflash": "dflash", "draft-dspark": "dflash"}
# Methods that run a draft context (one per llama.cpp process: a combination has at most one).
MODEL_METHODS = (DRAFT_METHOD, "draft-eagle3", MTP_METHOD, "draft-dflash", "draft-dspark")
# Methods whose draft is a model given with -md (MTP uses the target's own layers, or a sidecar).
DRAFT_MODEL_METHODS = (DRAFT_METHOD, "draft-eagle3", "draft-dflash", "draft-dspark")
METHOD_ORDER = (*MODEL_METHODS, *NGRAM_METHODS)
SEPARATOR = "+"

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def parts(method: str) -> list[str]:
    """``draft+ngram-mod`` -> ``["draft", "ngram-mod"]``."""
    return method.split(SEPARATOR)


def parse_method(text: str) -> str:
    """A config's method in its one spelling; ValueError (one line) for a malformed one."""
    if not isinstance(text, str):
        raise ValueError(f"a method is a name such as draft or ngram-mod, not {text!r}")
    names = [DRAFT_METHOD if p.strip() == DRAFT_SIMPLE else p.strip() for p in text.split(SEPARATOR)]
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
    models = [n for n in names if n in MODEL_METHODS]
    if len(models) > 1:
        raise ValueError(
            f"{text!r} combines {' and '.join(models)}: llama.cpp runs one draft context at a time; "
            "combine one of them with n-gram methods only"
        )
    known = sorted((n for n in names if n in METHOD_ORDER), key=METHOD_ORDER.index)
    return SEPARATOR.join(known + [n for n in names if n not in METHOD_ORDER])


def spec_type_names(method: str) -> list[str]:
    """The ``--spec-type`` values of a method (``draft`` -> ``draft-simple``)."""
    return [DRAFT_SIMPLE if p == DRAFT_METHOD else p for p in parts(method)]


def needs_draft_model(method: str) -> bool:
    """The method drafts with a model given as ``-md`` (a pair's ``draft:``)."""
    return any(p in DRAFT_MODEL_METHODS for p in parts(method))


def is_mtp(method: str) -> bool:
    return MTP_METHOD in parts(method)


def draft_free(method: str) -> bool:
    """Only n-gram (or unknown, draft-free) parts: no draft context, no draft_* options."""
    return not any(p in MODEL_METHODS for p in parts(method))


def runs_draft_alone(method: str) -> bool:
    """Its draft model can run alone (llama-completion) to give the cost ratio: draft-simple's can;
    an EAGLE-3 head or a DFlash drafter needs the target's features and cannot."""
    return DRAFT_METHOD in parts(method)


def ngram_parts(method: str) -> list[str]:
    return [p for p in parts(method) if p.startswith("ngram-")]
