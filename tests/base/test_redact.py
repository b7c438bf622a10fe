"""The one redaction (specbench.base.redact): a credential inside a value is replaced, the rest of
the value kept, so a recorded URL still says which host and file it was."""

from __future__ import annotations

import pytest

from specbench.base.childenv import provenance_env
from specbench.base.formats import csv_text, json_text, md_table
from specbench.base.redact import REDACTED, SECRET_FLAGS, redact, redact_argv, redact_data

HF = "hf_" + "a1B2c3D4e5" * 3 + "abcd"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("https://host/m.gguf?token=s3cret&x=1", "https://host/m.gguf?token=REDACTED&x=1"),
        ("https://user:s3cret@host/p?a=b", "https://REDACTED@host/p?a=b"),
        ("git+https://oauth2:s3cret@gitlab.example/x.git", "git+https://REDACTED@gitlab.example/x.git"),
        (
            "https://b.s3.amazonaws.com/m.gguf?X-Amz-Credential=AKIA%2F1&X-Amz-Date=2026&X-Amz-Signature=ab12",
            "https://b.s3.amazonaws.com/m.gguf?X-Amz-Credential=REDACTED&X-Amz-Date=2026&X-Amz-Signature=REDACTED",
        ),
        (
            "https://a.blob.core.windows.net/c/m?sv=2020&sig=ab%2Bc",
            "https://a.blob.core.windows.net/c/m?sv=2020&sig=REDACTED",
        ),
        (
            "u?api_key=k1&access_token=k2&password=k3&key=k4&auth=k5",
            "u?api_key=REDACTED&access_token=REDACTED&password=REDACTED&key=REDACTED&auth=REDACTED",
        ),
        ('<a href="https://h/x?a=1&amp;token=s3cret">', '<a href="https://h/x?a=1&amp;token=REDACTED">'),
        (f"HF_TOKEN is {HF}.", "HF_TOKEN is REDACTED."),
        ("ghp_" + "x" * 36, "REDACTED"),
        ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer REDACTED"),
        ("llama-server --api-key s3cret -m a.gguf", "llama-server --api-key REDACTED -m a.gguf"),
        ("llama-cli --hf-token='s 3' -m a", "llama-cli --hf-token=REDACTED -m a"),
        # what holds no credential is left as it is
        (
            "https://huggingface.co/a/b/resolve/main/x.gguf?download=true",
            "https://huggingface.co/a/b/resolve/main/x.gguf?download=true",
        ),
        (
            "?author=me&sort=asc; key=value in prose, the bearer of news",
            "?author=me&sort=asc; key=value in prose, the bearer of news",
        ),
        ("git@github.com:ggml-org/llama.cpp.git", "git@github.com:ggml-org/llama.cpp.git"),
    ],
)
def test_redact(text, want):
    assert redact(text) == want
    assert redact(want) == want  # redacting again changes nothing


def test_a_command_line_loses_the_value_after_a_secret_flag_whatever_it_is():
    argv = ["llama-cli", "--hf-token", "plainword", "-m", "x.gguf", "-mu", "https://h/m?token=t", "-n", 4]
    assert redact_argv(argv) == [
        "llama-cli",
        "--hf-token",
        REDACTED,
        "-m",
        "x.gguf",
        "-mu",
        "https://h/m?token=REDACTED",
        "-n",
        4,
    ]
    assert redact_data({"cmd": argv[:3], "n": 1.5})["cmd"] == ["llama-cli", "--hf-token", REDACTED]


@pytest.mark.parametrize("flag", SECRET_FLAGS)
def test_every_secret_flag_loses_its_value_in_a_list_and_in_text(flag):
    assert redact_argv(["llama-cli", flag, "plainword"])[2] == REDACTED
    assert redact(f"llama-cli {flag} plainword -m a") == f"llama-cli {flag} {REDACTED} -m a"
    assert redact(f"llama-cli {flag}=plainword") == f"llama-cli {flag}={REDACTED}"


def test_every_text_writer_of_base_redacts():
    url = "https://u:pw@h/m.gguf?token=s3cret"
    assert "s3cret" not in json_text({"url": url, url: [url]}) and "pw" not in json_text({"url": url})
    assert "s3cret" not in "\n".join(md_table(["a"], [[url]])) and "s3cret" not in csv_text([{"a": url}])
    # what is used, not recorded (a request's body): as it is
    assert "s3cret" in json_text({"url": url}, redacted=False)


def test_provenance_redacts_a_credential_inside_a_value_and_drops_secret_names():
    env = {"LLAMA_ARG_MODEL_URL": "https://h/m.gguf?token=s3cret", "LLAMA_ARG_HF_TOKEN": "x", "HF_TOKEN": "y",
           "LLAMA_ARG_THREADS": "2", "PATH": "/bin"}  # fmt: skip
    assert provenance_env(env) == {
        "LLAMA_ARG_MODEL_URL": "https://h/m.gguf?token=REDACTED",
        "LLAMA_ARG_THREADS": "2",
    }
