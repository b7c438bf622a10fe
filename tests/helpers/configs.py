"""Config texts and files for the config loader's tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.config import load_config

GOOD = """\
name: t
models:
  big: {path: big.gguf}
  small: {path: sub/small.gguf}
pairs:
  p: {target: big, draft: small}
sweep:
  method: [draft, ngram-simple]
  draft_max: [4, 8]
generation:
  n_predict: 32
  threads: 2
"""


def write(folder: Path, text: str, name: str = "config.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(path: Path, overrides: list[str] = ()) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    message = str(info.value)
    assert "\n" not in message, message
    return message
