"""The best setting's command line pins every axis the cell has, in a form --set reads back."""

import shlex
from pathlib import Path

from specbench.plan.config import load_config
from specbench.publish.folders import reproduce

ROOT = Path(__file__).resolve().parents[2]


def test_the_reproduce_command_reads_back_as_the_cells_settings() -> None:
    key = {
        "method": "draft", "draft_max": 8, "ngl": 0, "flash_attn": "on", "cache_type_k": "q8_0",
        "tensor_split": "3,1", "override_tensor": "exps=CPU", "kv_offload": False, "prio": 1,
        "runner": "server",
    }  # fmt: skip
    argv = shlex.split(reproduce(None, "smol", key))
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    config = load_config(ROOT / "configs" / "quickstart.yaml", sets)
    sweep = config.sweep
    assert sweep.method == ["draft"] and sweep.draft_max == [8] and sweep.ngl == [0]
    assert sweep.flash_attn == ["on"] and sweep.cache_type_k == ["q8_0"] and sweep.prio == [1]
    assert sweep.tensor_split == ["3,1"]  # one value, not two
    assert sweep.override_tensor == ["exps=CPU"] and sweep.kv_offload == [False]
    assert config.runner == "server"


def test_a_strangers_manifest_with_a_config_that_is_no_mapping_is_read_not_a_traceback(tmp_path) -> None:
    """The site reads every run folder it is pointed at: a hand-edited manifest's `config` and
    `builds` entries that are not objects give no pairs and an unknown commit, not an AttributeError."""
    import json
    import shutil

    from specbench.publish.folders import scan

    run = shutil.copytree(Path(__file__).resolve().parents[1] / "data/runs/quick-cpu", tmp_path / "r")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest |= {"config": ["not", "a", "mapping"], "builds": {"only": "a string"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    found = scan([tmp_path], [])
    assert [(r.pairs, r.builds) for r in found.runs.values()] == [({}, {"only": "?"})]
