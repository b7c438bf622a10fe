"""What each speculative method is, declared once for every layer (pure data, no I/O).

``METHODS`` holds, per llama.cpp ``--spec-type``, what the config needs, what a run does with it
and which binaries run it; a method llama.cpp adds is one entry. A name the table lacks runs as a
draft-free method when the build's ``--help`` lists it (``method_of``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DRAFT_METHOD = "draft"  # specbench's name for llama.cpp's draft-simple (cells keep one name)
SEPARATOR = "+"  # a combination: draft+ngram-mod
SPEC_TYPE_BINARIES = ("speculative_simple", "server")  # the binaries that take --spec-type


@dataclass(frozen=True)
class Method:
    """One speculative method: its llama.cpp name and what each layer needs to know about it."""

    spec_type: str  # its --spec-type value
    draft_context: bool = False  # runs a draft context (llama.cpp runs one per process)
    draft_model: bool = False  # drafts with a model given as -md (a pair's draft:)
    draft_arch: str | None = None  # the GGUF architecture that model must have (None: a complete model)
    head: str | None = None  # what such a model is called, for messages ("an EAGLE-3 head")
    markov_head: bool = False  # the model needs a markov_w1 head as well (a DSpark drafter)
    target_layers: bool = False  # drafts with the target's (or a sidecar's) next-token layers (MTP)
    vocab_check: bool = False  # llama.cpp compares the target's and the draft's vocabularies
    runs_alone: bool = False  # its draft model runs alone (llama-completion) to give the cost ratio
    lookup: bool = False  # an n-gram lookup: sized by --spec-<name>-size-n/-m, one cell per target
    ngram_sizes: tuple[int, int] | None = None  # (size_n, size_m) defaults of a lookup that needs a repeat
    server_state: bool = False  # its state outlives a request in llama-server (a server per sample)
    binaries: tuple[str, ...] = SPEC_TYPE_BINARIES  # the BuildInfo roles that run it


# In the order the parts of a combination are written (``ngram-mod+draft`` is ``draft+ngram-mod``).
# Read from the pinned tree: architectures (src/llama-arch.cpp), n-gram defaults (common/ngram-map.cpp),
# the state each lookup keeps between llama-server requests (common/speculative.cpp).
METHODS: dict[str, Method] = {
    DRAFT_METHOD: Method(
        "draft-simple", draft_context=True, draft_model=True, vocab_check=True, runs_alone=True,
        binaries=(*SPEC_TYPE_BINARIES, "speculative"),
    ),
    "draft-eagle3": Method("draft-eagle3", draft_context=True, draft_model=True, draft_arch="eagle3",
                           head="an EAGLE-3 head"),
    "draft-mtp": Method("draft-mtp", draft_context=True, target_layers=True),
    "draft-dflash": Method("draft-dflash", draft_context=True, draft_model=True, draft_arch="dflash",
                           head="a DFlash drafter"),
    "draft-dspark": Method("draft-dspark", draft_context=True, draft_model=True, draft_arch="dflash",
                           head="a DSpark drafter", markov_head=True),
    "ngram-simple": Method("ngram-simple", lookup=True, ngram_sizes=(12, 48)),
    "ngram-map-k": Method("ngram-map-k", lookup=True, ngram_sizes=(12, 48), server_state=True),
    "ngram-map-k4v": Method("ngram-map-k4v", lookup=True, ngram_sizes=(12, 48), server_state=True),
    "ngram-mod": Method("ngram-mod", lookup=True, server_state=True),
    "ngram-cache": Method("ngram-cache", lookup=True, server_state=True),
}  # fmt: skip
DRAFT_SIMPLE = METHODS[DRAFT_METHOD].spec_type  # llama.cpp's name of `draft`


LOOKUPS: tuple[str, ...] = tuple(n for n, m in METHODS.items() if m.lookup)  # sized per method


def method_of(name: str) -> Method:
    """One method by specbench's or llama.cpp's name; one the table lacks is draft-free."""
    found = METHODS.get(name) or next((m for m in METHODS.values() if m.spec_type == name), None)
    return found or Method(name, lookup=name.startswith("ngram-"))


def parts(method: str) -> list[str]:
    """``draft+ngram-mod`` -> ``["draft", "ngram-mod"]``."""
    return method.split(SEPARATOR)


def runs_draft_alone(method: str) -> bool:
    """Its draft model can run alone (llama-completion) for the cost ratio: a head cannot."""
    return any(method_of(p).runs_alone for p in parts(method))


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


def head_archs() -> set[str]:
    """The GGUF architectures of drafts that are heads, not models (they cannot generate alone)."""
    return {m.draft_arch for m in METHODS.values() if m.draft_arch}


def method_for_arch(arch: str) -> str | None:
    """The method a head of GGUF architecture ``arch`` fits (without a Markov head), if any."""
    return next((n for n, m in METHODS.items() if m.draft_arch == arch and not m.markov_head), None)


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
