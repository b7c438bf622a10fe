"""A speculative method is one entry of ``specbench.base.methods.METHODS``: a method added there
(and nowhere else) reaches the probe, the plan, the pre-flight, the preparation, the cell and the judge."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from specbench.base.errors import ConfigError
from specbench.base.methods import (
    METHODS,
    Method,
    draft_free,
    keeps_server_state,
    needs_draft_model,
    ngram_parts,
    parse_method,
)
from specbench.builder.buildinfo import BinaryInfo
from specbench.builder.probe import flags_from_help
from specbench.execute.judge import never_drafted_reason
from specbench.execute.preparation import check_pairs
from specbench.models.meta import SpecFacts
from specbench.plan import cells as plan_cells
from specbench.plan.preflight import misfit
from specbench.plan.sections import PairConfig
from specbench.results.cell import Cell, draft_alone_of

HYDRA = Method("draft-hydra", draft_context=True, draft_model=True, draft_arch="hydra", head="a Hydra head")
SUFFIX = Method("suffix-tree", lookup=True, ngram_sizes=(5, 20))
HELP = """
--spec-draft-model, -md, --model-draft FNAME
                                        draft model for speculative decoding (default: unused)
--spec-type none,draft-simple,draft-hydra,suffix-tree
                                        comma-separated list of types of speculative decoding to use
--spec-suffix-tree-size-n N             suffix tree lookup length (default: 5)
"""


@pytest.fixture
def added(monkeypatch):
    """The two methods, declared in the table only."""
    monkeypatch.setitem(METHODS, "draft-hydra", HYDRA)
    monkeypatch.setitem(METHODS, "suffix-tree", SUFFIX)


def test_an_added_method_reaches_the_probe_and_the_command_line(added):
    flags = flags_from_help(HELP)  # the probe reads the lookup's size option because the table says so
    assert flags.ngram_sizes["suffix-tree"].n == "--spec-suffix-tree-size-n"
    argv = plan_cells.speculative_flags(flags, Cell(model="t", method="suffix-tree", ngram_size_n=3), None)
    assert argv[-4:] == ["--spec-type", "suffix-tree", "--spec-suffix-tree-size-n", "3"]


def test_an_added_method_reaches_the_config_spelling(added):
    assert parse_method("suffix-tree+draft-hydra") == "draft-hydra+suffix-tree"  # the table's order
    with pytest.raises(ValueError, match="combines draft and draft-hydra: llama.cpp runs one draft context"):
        parse_method("draft+draft-hydra")
    assert needs_draft_model("draft-hydra") and not draft_free("draft-hydra")
    assert ngram_parts("draft+suffix-tree") == ["suffix-tree"]
    assert not keeps_server_state("suffix-tree")  # declared stateless (a name the table lacks is not)
    assert keeps_server_state("suffix-tree+ngram-mod") and keeps_server_state("ngram-future")
    with pytest.raises(ValueError, match="method draft-hydra drafts with a model given as `draft:`"):
        PairConfig(target="t", method="draft-hydra")  # a draft-model method needs the pair's draft


def test_an_added_method_reaches_the_binaries_that_run_it(added):
    spec = BinaryInfo(role="speculative", name="llama-speculative", path="x", flags=flags_from_help(HELP))
    with pytest.raises(ConfigError, match=r"method draft; it ignores --spec-type\), not draft-hydra"):
        plan_cells._require_method(spec, "draft-hydra")
    plan_cells._require_method(spec.model_copy(update={"role": "speculative_simple"}), "draft-hydra")


def test_an_added_head_reaches_the_preflight(added):
    llama, hydra = SpecFacts(architecture="llama"), SpecFacts(architecture="hydra")
    wrong = misfit("draft-hydra", PairConfig(target="t", draft="d"), {"d": llama})
    assert wrong is not None and "draft-hydra needs a Hydra head (GGUF architecture hydra)" in wrong
    head = misfit("draft", PairConfig(target="t", draft="d"), {"d": hydra})
    assert head is not None and "is architecture hydra (a Hydra head" in head and "use draft-hydra" in head
    assert misfit("draft-hydra", PairConfig(target="t", draft="d"), {"d": hydra}) is None


def test_an_added_head_is_not_vocabulary_checked_in_preparation(added, tmp_path, monkeypatch):
    files = {name: SimpleNamespace(path=str(tmp_path / f"{name}.gguf")) for name in ("t", "d")}
    for m in files.values():
        Path(m.path).write_bytes(b"")
    monkeypatch.setattr("specbench.models.meta.read_spec_facts", lambda path: SpecFacts(architecture="hydra"))
    compared = []
    ok = SimpleNamespace(ok=True)
    monkeypatch.setattr("specbench.models.paircheck.check_pair", lambda t, d: compared.append(d) or ok)
    config = SimpleNamespace(pairs={"p": PairConfig(target="t", draft="d")})
    assert check_pairs(config, files) == {} and compared == []  # a head: its method's pre-flight decides
    monkeypatch.setitem(METHODS, "draft-hydra", replace(HYDRA, draft_arch=None, vocab_check=True))
    monkeypatch.setattr("specbench.models.meta.read_spec_facts", lambda path: SpecFacts(architecture="llama"))
    config = SimpleNamespace(pairs={"p": PairConfig(target="t", draft="d", method="draft-hydra")})
    assert check_pairs(config, files) == {"p": ok} and compared == [Path(files["d"].path)]


def test_an_added_method_reaches_the_cell_and_the_judge(added, monkeypatch):
    hydra = Cell(model="t", draft="d", method="draft-hydra", ngld=2)
    assert draft_alone_of(hydra) is None  # a head cannot run alone: no cost ratio
    monkeypatch.setitem(METHODS, "draft-hydra", replace(HYDRA, runs_alone=True))
    assert draft_alone_of(hydra)[:4] == ("draft", None, "d", 2)
    inv = SimpleNamespace(method="suffix-tree", ngram_size_n=None, ngram_size_m=None)
    log = SimpleNamespace(encoded=SimpleNamespace(tokens=10), n_predict=8)
    reason = never_drafted_reason(inv, log)
    assert "suffix-tree drafts only after a repeat of the last size_n=5 tokens" in reason
    assert "size_n + size_m + 1 = 26" in reason
