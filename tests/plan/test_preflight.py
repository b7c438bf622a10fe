"""Which methods a pair's files fit (plan.preflight), from GGUF facts given by hand."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.models.meta import SpecFacts
from specbench.plan.preflight import misfit, pair_methods
from specbench.plan.sections import PairConfig
from tests.helpers.sweeps import make_config

LLAMA = SpecFacts(architecture="llama")
EAGLE = SpecFacts(architecture="eagle3")
DFLASH = SpecFacts(architecture="dflash")
DSPARK = SpecFacts(architecture="dflash", markov_head=True)
GLM = SpecFacts(architecture="glm4moe", nextn_layers=1)


def pair(**kw) -> PairConfig:
    return PairConfig(target="t", **kw)


@pytest.mark.parametrize(
    ("method", "draft", "target", "words"),
    [
        ("draft-eagle3", LLAMA, LLAMA, ["draft-eagle3 needs an EAGLE-3 head (GGUF architecture eagle3)",
                                         "d is architecture llama"]),
        ("draft-dflash", EAGLE, LLAMA, ["dflash", "d is architecture eagle3 (for it: draft-eagle3)"]),
        ("draft-dspark", DFLASH, LLAMA, ["markov_w1", "use draft-dflash"]),
        ("draft", EAGLE, LLAMA, ["needs a complete draft model", "architecture eagle3", "use draft-eagle3"]),
        ("draft+ngram-mod", DFLASH, LLAMA, ["architecture dflash", "use draft-dflash"]),
        ("draft-mtp", None, LLAMA, ["draft-mtp needs a target with next-token-prediction (MTP) layers",
                                    "llama.nextn_predict_layers > 0", "llama and has none"]),
    ],
)  # fmt: skip
def test_misfits_name_the_files_architecture_and_what_the_method_needs(method, draft, target, words):
    p = pair(draft="d" if draft else None, method=method)
    reason = misfit(method, p, {"d": draft, "t": target} if draft else {"t": target})
    assert reason is not None and "\n" not in reason
    for w in words:
        assert w in reason


@pytest.mark.parametrize(
    ("method", "draft"), [("draft-eagle3", EAGLE), ("draft-dflash", DFLASH), ("draft-dflash", DSPARK),
                          ("draft-dspark", DSPARK), ("draft", LLAMA), ("draft+ngram-mod", LLAMA)],
)  # fmt: skip
def test_fits(method, draft):
    assert misfit(method, pair(draft="d", method=method), {"d": draft, "t": LLAMA}) is None


def test_mtp_on_a_target_with_nextn_layers_or_a_sidecar():
    assert misfit("draft-mtp", pair(method="draft-mtp"), {"t": GLM}) is None
    sidecar = pair(draft="d", method="draft-mtp")
    assert misfit("draft-mtp", sidecar, {"t": LLAMA, "d": GLM}) is None
    assert "sidecar draft d is architecture llama" in misfit("draft-mtp", sidecar, {"t": GLM, "d": LLAMA})
    assert misfit("draft-mtp", pair(method="draft-mtp"), {}) is None  # not fetched (dry run): not checked


def test_a_sweep_method_runs_on_the_pairs_it_fits(tmp_path):
    config = make_config(
        tmp_path,
        pairs={"simple": {"target": "big", "draft": "small"}, "eagle": {"target": "big", "draft": "mid"}},
        sweep={"method": ["draft", "draft-eagle3", "ngram-mod"]},
    )
    notes: list[str] = []
    runs = pair_methods(config, {"big": LLAMA, "small": LLAMA, "mid": EAGLE}, notes)
    assert runs == {"simple": ["draft", "ngram-mod"], "eagle": ["draft-eagle3", "ngram-mod"]}
    assert any(n.startswith("pair eagle does not run draft: ") for n in notes)


def test_a_sweep_method_that_fits_no_pair_and_a_pinned_misfit_are_refused(tmp_path):
    config = make_config(tmp_path, sweep={"method": ["draft", "draft-mtp"]})
    with pytest.raises(
        ConfigError, match="sweep.method draft-mtp fits no pair; pair 'p': draft-mtp needs a target"
    ):
        pair_methods(config, {"big": LLAMA, "small": LLAMA}, [])
    config = make_config(tmp_path, pairs={"e": {"target": "big", "draft": "small", "method": "draft-eagle3"}})
    with pytest.raises(
        ConfigError, match="pair 'e': draft-eagle3 needs an EAGLE-3 head .* small is architecture llama"
    ):
        pair_methods(config, {"big": LLAMA, "small": LLAMA}, [])


def test_a_dry_run_without_the_files_says_the_methods_are_chosen_at_run_time(tmp_path):
    config = make_config(tmp_path, sweep={"method": ["draft", "draft-eagle3"]})
    notes: list[str] = []
    assert pair_methods(config, {}, notes) == {"p": ["draft", "draft-eagle3"]}
    assert notes and notes[0].startswith(
        "not cached: big, small; every pair is shown with every sweep.method"
    )
