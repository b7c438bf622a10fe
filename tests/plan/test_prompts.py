"""Prompts: the built-in suite's shape, user JSONL files, and rendering with real chat templates."""

from __future__ import annotations

import collections
import json

import pytest

from specbench.base.errors import ConfigError, ModelError
from specbench.plan.prompts import (
    CATEGORIES,
    ChatFormat,
    Message,
    Prompt,
    builtin_prompts,
    chat_format,
    load_prompt_file,
    render,
    render_all,
    select,
)
from tests.models.tiny_gguf import write_tiny_gguf

# A Llama-3-style template: starts with the BOS text, which llama.cpp also adds itself.
LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def chat(text: str, pid: str = "p1") -> Prompt:
    return Prompt(id=pid, category="chat", messages=[Message(role="user", content=text)])


def test_builtin_suite_has_six_categories_of_at_least_four():
    prompts = builtin_prompts()
    counts = collections.Counter(p.category for p in prompts)
    assert len(prompts) >= 24
    assert set(counts) == set(CATEGORIES)
    assert min(counts.values()) >= 4
    assert len({p.id for p in prompts}) == len(prompts)
    # summarization and extraction carry their source text in the prompt
    for p in prompts:
        if p.category in ("summarization", "extraction"):
            body = p.messages[-1].content if p.messages else p.text
            assert len(body) > 300, p.id
    assert any(p.text is not None for p in prompts) and any(p.messages for p in prompts)


def test_select_filters_in_suite_order():
    prompts = builtin_prompts()
    chosen = select(prompts, categories=["code", "math"], limit_per_category=2)
    assert [p.category for p in chosen] == ["code", "code", "math", "math"]
    assert [p.id for p in select(prompts, ids=["math-02", "code-03"])] == ["code-03", "math-02"]
    with pytest.raises(ConfigError, match="unknown category 'poetry'"):
        select(prompts, categories=["poetry"])
    with pytest.raises(ConfigError, match="unknown prompt id 'x-1'"):
        select(prompts, ids=["x-1"])
    with pytest.raises(ConfigError, match="selection .* is empty"):
        select(prompts, categories=["code"], ids=["math-01"])


def test_user_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    lines = [
        {"id": "q1", "category": "legal", "text": "Clause 1:"},
        {
            "id": "q2",
            "category": "legal",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    prompts = load_prompt_file(path)
    assert [p.id for p in prompts] == ["q1", "q2"] and prompts[1].messages[0].role == "system"


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("{not json", ":2: not valid JSON"),
        ('{"id": "b", "text": "x"}', ":2: category: Field required"),
        ('{"id": "b", "category": "c", "text": "x", "messages": [{"role": "user", "content": "y"}]}', ":2: "),
        ('{"id": "b", "category": "c"}', "exactly one of `messages` or `text`"),
        (
            '{"id": "b", "category": "c", "messages": [{"role": "robot", "content": "y"}]}',
            ":2: messages.0.role",
        ),
        ('{"id": "a", "category": "c", "text": "again"}', ":2: duplicate prompt id 'a' (first on line 1)"),
        ('{"id": "b c", "category": "c", "text": "x"}', ":2: id: "),
        ("[1, 2]", ":2: "),
        (
            '{"id": "b", "category": "c", "messages": [{"role": "user", "content": ""}]}',
            ":2: messages.0.content",
        ),
    ],
)
def test_user_file_bad_line_names_file_and_line(tmp_path, bad_line, expected):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"id": "a", "category": "c", "text": "fine"}\n' + bad_line + "\n")
    with pytest.raises(ConfigError) as info:
        load_prompt_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:2: ") and expected in message and "\n" not in message


def test_user_file_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "category": "c", "text": "fine"}\n')
    assert [p.id for p in load_prompt_file(path)] == ["a"]


def test_user_file_missing_or_empty(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_prompt_file(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="no prompts"):
        load_prompt_file(tmp_path / "empty.jsonl")


def test_render_chatml_from_real_smollm2(smol_q4):
    fmt = chat_format(smol_q4.path)
    assert fmt.template and "<|im_start|>" in fmt.template
    assert fmt.bos_token == "<|im_start|>" and fmt.add_bos is False
    prompt = chat("Name three rivers.")
    out = render(prompt, "smol", fmt)
    assert out.rendering == "template" and out.model == "smol"
    assert out.text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nName three rivers.<|im_end|>\n<|im_start|>assistant\n"
    )
    rendered = render_all(
        [prompt, Prompt(id="t", category="code", text="def f(x):\n")], {"smol": smol_q4.path}
    )
    assert [r.rendering for r in rendered] == ["template", "raw"]
    assert rendered[1].text == "def f(x):\n"


def test_render_strips_bos_when_llama_cpp_adds_it(tmp_path):
    path = write_tiny_gguf(tmp_path / "l3.gguf", bos=1, add_bos=True, chat_template=LLAMA3_TEMPLATE)
    fmt = chat_format(path)
    assert fmt.bos_token == "<s>" and fmt.add_bos is True
    out = render(chat("Hi"), "l3", fmt)
    assert out.text.startswith("<|start_header_id|>user") and "<s>" not in out.text
    assert out.text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    # a model that does not add BOS itself keeps the template's BOS text
    keep = render(chat("Hi"), "l3", ChatFormat(template=LLAMA3_TEMPLATE, bos_token="<s>", add_bos=False))
    assert keep.text.startswith("<s><|start_header_id|>")


def test_render_fallback_without_template(tmp_path):
    path = write_tiny_gguf(tmp_path / "bare.gguf", chat_template=None)
    fmt = chat_format(path)
    assert fmt.template is None
    prompt = Prompt(
        id="p",
        category="chat",
        messages=[Message(role="system", content="Be brief."), Message(role="user", content="Hi")],
    )
    out = render(prompt, "bare", fmt)
    assert out.rendering == "fallback"
    assert out.text == "System: Be brief.\nUser: Hi\nAssistant:"


def test_template_errors_and_sandbox():
    raising = ChatFormat(template="{{ raise_exception('only user/assistant roles are supported') }}")
    with pytest.raises(ModelError, match="only user/assistant roles are supported"):
        render(chat("x"), "m", raising)
    escape = ChatFormat(template="{{ messages.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(ModelError, match="failed on prompt 'p1'"):
        render(chat("x"), "m", escape)


def test_render_not_a_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ModelError, match="not a GGUF"):
        chat_format(bad)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "nul", "category": "chat", "text": "hello \u0000 world"}, "text"),
        ({"id": "nul2", "category": "chat", "messages": [{"role": "user", "content": "ok"},
          {"role": "assistant", "content": "a\u0000"}]}, "messages.1.content"),
    ],
)  # fmt: skip
def test_a_prompt_no_command_line_can_carry_is_refused_where_it_is_loaded(tmp_path, line, field):
    """A NUL passed the loader and the dry run, then the run ended in Popen's `embedded null byte`
    traceback: the loader names the file, line, prompt and field instead."""
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "fine", "category": "chat", "text": "hi"}\n' + json.dumps(line) + "\n")
    with pytest.raises(ConfigError) as exc:
        load_prompt_file(path)
    assert str(exc.value) == (
        f"{path}:2: prompt {line['id']!r}: {field} holds a NUL character (\\u0000) at character "
        f"{7 if field == 'text' else 2}, which no command line or request can carry; remove it"
    )
