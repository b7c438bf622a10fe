"""compare's refusal when no cell is on both sides names the axes whose values differ, from the
cell's declared fields (specbench/results/cell.py), on copies of a recorded run folder."""

import json
from pathlib import Path

import pytest

from specbench.gate.baseline import load_run
from specbench.gate.comparable import NotComparable
from specbench.gate.compare import compare


def _recorded_copy(tmp_path: Path, name: str, edit) -> Path:
    """A copy of the recorded quick-cpu run with ``edit`` applied to every sample's record."""
    src = Path(__file__).resolve().parents[1] / "data" / "runs" / "quick-cpu"
    dst = tmp_path / name
    dst.mkdir()
    (dst / "manifest.json").write_text((src / "manifest.json").read_text())
    lines = [json.loads(line) for line in (src / "samples.jsonl").read_text().splitlines() if line]
    (dst / "samples.jsonl").write_text("".join(json.dumps(edit(d)) + "\n" for d in lines))
    return dst


def test_no_common_cell_names_the_axes_whose_values_differ(tmp_path):
    """A baseline with flash_attn unset against a run with flash_attn on (and another draft_max):
    the refusal names each differing axis, its values on both sides, from the cell's fields."""
    base = _recorded_copy(tmp_path, "base", lambda d: d)

    def flash_on(d):
        d["flash_attn"] = "on"
        if d["role"] == "speculative":
            d["draft_max"] = 16
        return d

    cur = _recorded_copy(tmp_path, "cur", flash_on)
    with pytest.raises(NotComparable) as exc:
        compare(load_run(base), load_run(cur))
    msg = str(exc.value)
    assert exc.value.exit_code == 2 and "\n" not in msg
    # every speculative cell was moved to 16 (the recorded ones: 4, 8 and an n-gram cell's unset)
    assert "(draft_max: 4, 8, unset -> 16; flash_attn: unset -> on)" in msg
    assert "threads" not in msg and "cache_type" not in msg  # only what differs


def test_a_differing_axis_of_the_baselines_alone_is_named_too(tmp_path):
    """No speculative sample on one side: the baselines' axes are compared (cache_type_k here)."""
    base = _recorded_copy(tmp_path, "base", lambda d: d)
    cur = _recorded_copy(tmp_path, "cur", lambda d: {**d, "cache_type_k": "q8_0", "cache_type_v": "q8_0"})
    with pytest.raises(NotComparable, match=r"cache_type_k: unset -> q8_0; cache_type_v: unset -> q8_0"):
        compare(load_run(base), load_run(cur), metrics=["baseline_tps"])
