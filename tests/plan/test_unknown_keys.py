"""A misspelt key names the key it most likely meant (difflib), wherever it stands: top level,
nested sections, mappings of models and pairs, --set paths and prompt files. One line."""

from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.config import Config, load_config
from specbench.plan.configtext import unknown_key
from specbench.plan.prompts import _parse_lines

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


def _error(tmp_path: Path, text: str, overrides: list[str] | None = None) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path, overrides or [])
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("repetitions: ", "repetitons: ", "repetitons: unknown key (did you mean `repetitions`?)"),
        ("  draft_max:", "  draft_maxx:", "sweep.draft_maxx: unknown key (did you mean `draft_max`?)"),
        (
            "llama_cpp:\n  backend:",
            "llama_cpp:\n  backnd:",
            "llama_cpp.backnd: unknown key (did you mean `backend`?)",
        ),
        ("derive: {", "dervie: {", "models.smol_f32.dervie: unknown key (did you mean `derive`?)"),
        # a required key misspelt: the misspelling is the error shown, not the key it left missing
        (
            "    target: smol_f32",
            "    targt: smol_f32",
            "pairs.smol.targt: unknown key (did you mean `target`?)",
        ),
    ],
)
def test_a_misspelt_key_suggests_the_closest_one(tmp_path, old, new, expected):
    text = QUICKSTART.read_text()
    assert old in text
    assert expected in _error(tmp_path, text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("repetitons=2", "--set repetitons: repetitons: unknown key (did you mean `repetitions`?)"),
        ("generation.n_predictt=8", "generation.n_predictt: unknown key (did you mean `n_predict`?)"),
        ("sweep.flash_atn=[on]", "sweep.flash_atn: unknown key (did you mean `flash_attn`?)"),
        ("flash_atn=on", "--set flash_atn: flash_atn: unknown key (did you mean `flash_attn`?)"),
    ],
)
def test_a_misspelt_set_path_suggests_the_closest_key(tmp_path, override, expected):
    assert expected in _error(tmp_path, QUICKSTART.read_text(), [override])


def test_a_key_close_to_nothing_gets_no_guess(tmp_path):
    message = _error(tmp_path, QUICKSTART.read_text() + "zzqqxx: 1\n")
    assert message.endswith("zzqqxx: unknown key")
    assert unknown_key(Config, ("colour",)) == "unknown key"
    # the loader's own fields (the file's folder and path) are never suggested
    assert _error(tmp_path, QUICKSTART.read_text() + "pth: x\n").endswith("pth: unknown key")


def test_a_misspelt_key_in_a_prompt_file_suggests_the_closest_one():
    lines = ['{"id": "a", "category": "code", "messages": [{"role": "user", "contnet": "x"}]}']
    with pytest.raises(ConfigError, match=r"messages\.0\.contnet: unknown key \(did you mean `content`\?\)"):
        _parse_lines(lines, "p.jsonl")
