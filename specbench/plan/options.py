"""The config keys of the llama.cpp options a user tunes, the speculation's axes, and free arguments.

Each option of ``base.llamaopts`` is a key of the config, of a pair (pinning it) and a ``sweep:`` axis
(an axis: a ``sweep:`` list only); ``args:`` passes what has no key, one specbench sets is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator

from specbench.base.llamaopts import AXES, OPTIONS, TUNED, LlamaOption
from specbench.base.methods import LOOKUPS
from specbench.base.paths import Name

if TYPE_CHECKING:
    from pydantic import ValidationInfo

# Flags specbench sets itself, by every spelling llama.cpp has had, with the key that sets them.
RESERVED: dict[str, str] = {
    **dict.fromkeys(("-m", "--model", "-hf", "--hf-repo", "-mu", "--model-url"), "models and pairs.*.target"),
    **dict.fromkeys(("-md", "--model-draft", "--spec-draft-model", "-hfd", "--hf-repo-draft"),
                    "pairs.*.draft"),
    **dict.fromkeys(("-n", "--n-predict", "--predict"), "generation.n_predict"),
    **dict.fromkeys(("-p", "--prompt", "-f", "--file", "-sys", "--system-prompt"), "prompts"),
    **dict.fromkeys(("--port", "--host"), "nothing (specbench picks the server's address)"),
    **dict.fromkeys(("-c", "--ctx-size"), "generation.ctx_size"),
    **dict.fromkeys(("-t", "--threads"), "generation.threads"),
    **dict.fromkeys(("-s", "--seed"), "generation.seed"),
    **dict.fromkeys(("--temp", "--temperature"), "generation.temperature"),
    **dict.fromkeys(("--top-k",), "generation.top_k"),
    **{s.format(method=m): f"sweep.{o.key}" for o in AXES for s in o.spellings for m in LOOKUPS},
    **dict.fromkeys(("--cache-ram", "-cram", "--metrics", "--no-cache-prompt", "--cache-prompt"),
                    "nothing (the server runner sets it to measure each request alone)"),
    **dict.fromkeys(("-no-cnv", "--no-conversation", "-cnv", "--conversation", "--no-display-prompt",
                     "--no-escape", "-e", "--escape"),
                    "nothing (specbench sets it so the output can be read)"),
}  # fmt: skip


# llama.cpp flags whose value is a file or folder (common/arg.cpp's FNAME, FILE, PATH, DIR hints): a
# shared config's `args` may not name one (`--log-file /home/me/notes.txt` writes anywhere).
FILE_FLAGS = frozenset((
    "--api-key-file", "--chat-template-file", "--context-file", "--control-vector",
    "--control-vector-scaled", "--grammar-file", "--image", "--audio", "--video", "--in-file",
    "--log-file", "--log-prompts-dir", "--logits-output-dir", "--lora", "--lora-scaled",
    "--mcp-servers-config", "--media-path", "--models-dir",
    "--models-preset", "--negative-file", "--path", "--positive-file", "--prompt-cache",
    "--save-all-logits", "--kl-divergence-base", "--slot-save-path", "--ssl-cert-file",
    "--ssl-key-file", "--tts-lang", "--tts-speaker-file", "--ui-config-file", "--webui-config-file",
    "--video-ffmpeg-dir", "-bf", "--binary-file", "-hff", "--hf-file", "-jf", "--json-schema-file",
    "-lcd", "--lookup-cache-dynamic", "-lcs", "--lookup-cache-static", "-mm", "--mmproj",
    "-o", "--output", "--output-file", "-sysf", "--system-prompt-file",
    "-mmu", "--mmproj-url",
))  # fmt: skip


def _arg(v: Any) -> Any:
    if not isinstance(v, str):
        if isinstance(v, bool):  # YAML read on/off/yes/no/true/false as a boolean
            raise ValueError(
                f"must be a string, not {str(v).lower()}; quote it ('on', 'off', ...) so YAML "
                "keeps it as text"
            )
        raise ValueError(f"must be a string, not {v!r}; quote it ('{v}') so YAML keeps it as text")
    return v


Arg = Annotated[str, BeforeValidator(_arg)]

# Each spelling of an option of the table (a toggle's off switch too), with its config key.
FLAG_KEYS = {s: o.key for o in OPTIONS for s in (*o.spellings, *o.off)}
# key -> (type, description): the config keys of the options (a scalar here, a list in sweep:)
OPTION_KEYS: dict[str, tuple[Any, str]] = {
    o.key: (o.type, f"{o.description.rstrip('.')} ({o.spellings[0]}: {o.values}).") for o in TUNED
}
ARGS_DESCRIPTION = "Extra arguments for every llama.cpp invocation (for what has no key); one string each."
SWEEP_ARGS_DESCRIPTION = "Sweep axis of named argument sets: [{label, args}, ...]."


def _numeric(annotation: Any) -> bool:
    """int, float, or either of them or None."""
    args = set(get_args(annotation)) - {type(None)} if get_args(annotation) else {annotation}
    return bool(args) and args <= {int, float}


def no_bool(value: Any, what: str = "a number") -> Any:
    """A boolean for a number is refused: YAML reads yes/no/on/off as booleans, pydantic true as 1."""
    if isinstance(value, bool):
        raise ValueError(
            f"must be {what}, not {str(value).lower()} (YAML reads yes/no/on/off/true/false as booleans)"
        )
    return value


def refuse_bool_number(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """Every strict section's ``no_bool`` on its numeric fields."""
    field = cls.model_fields.get(info.field_name or "")
    return no_bool(value) if field is not None and _numeric(field.annotation) else value


class Strict(BaseModel):
    # a field's docstring is its description: the config reference and `specbench schema` show it
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    _no_bool_numbers = field_validator("*", mode="before")(classmethod(refuse_bool_number))


if TYPE_CHECKING:  # made from OPTION_KEYS at import (create_model); to the type checker:

    class OptionValues(Strict):
        args: list[str] = []

        def __getattr__(self, key: str) -> Any: ...  # an OPTION_KEYS field

else:
    OptionValues = create_model(
        "OptionValues",
        __base__=Strict,
        __doc__="llama.cpp options set once.",
        **{k: (t | None, Field(default=None, description=d)) for k, (t, d) in OPTION_KEYS.items()},
        args=(list[Arg], Field(default=[], description=ARGS_DESCRIPTION)),
    )


class NamedArgs(Strict):
    """One value of the ``sweep.args`` axis: a name (the cell's label) and its arguments."""

    label: Name = Field(description="The set's name, shown in the report's args column.")
    args: list[Arg] = Field(min_length=1, description="The set's extra llama.cpp arguments, one string each.")


def unique_items(cls: type[BaseModel], v: list[Any]) -> list[Any]:
    """A swept list names each value (an argument set by its label) once."""
    keys = [x.label if isinstance(x, NamedArgs) else x for x in v]
    dupes = sorted({str(x) for x in keys if keys.count(x) > 1})
    if dupes:
        raise ValueError(f"lists {', '.join(dupes)} more than once")
    return v


def _axis_field(o: LlamaOption) -> tuple[Any, Any]:
    """A speculation axis of the table as a ``sweep:`` list of its type (null where its default holds
    one), at least one value unless its default is none."""
    item = o.type | None if None in o.sweep else o.type
    return list[item], Field(  # type: ignore[valid-type]
        default=list(o.sweep), min_length=1 if o.sweep else None, description=o.description
    )


if TYPE_CHECKING:  # made from OPTION_KEYS and the axes at import (create_model); to the type checker:

    class SweepOptions(Strict):
        args: list[NamedArgs] = []

        def __getattr__(self, key: str) -> list[Any]: ...  # an OPTION_KEYS or AXES list

else:
    SweepOptions = create_model(
        "SweepOptions",
        __base__=Strict,
        __doc__="llama.cpp options swept: [] is not swept.",
        __validators__={"unique_options": field_validator(*OPTION_KEYS, "args")(unique_items)},
        **{
            k: (list[t], Field(default=[], description=f"Sweep axis (one cell per value): {d}"))
            for k, (t, d) in OPTION_KEYS.items()
        },
        args=(list[NamedArgs], Field(default=[], description=SWEEP_ARGS_DESCRIPTION)),
        **{o.key: _axis_field(o) for o in AXES},
    )


def check_args(args: list[str], where: str, keys_set: set[str]) -> None:
    """Refuse an argument specbench sets itself, or one of an option key the config sets."""
    for i, arg in enumerate(args):
        if not arg.startswith("-") or arg.lstrip("-")[:1].isdigit():
            continue  # a value, or a negative number
        name = arg.split("=", 1)[0]
        if name in RESERVED:
            raise ValueError(f"{where}[{i}]: {name} is set by specbench; use {RESERVED[name]} instead")
        if name in FILE_FLAGS:
            raise ValueError(
                f"{where}[{i}]: {name} names a file or folder for llama.cpp to read or write, which a config "
                "may not (nothing it names may reach outside specbench's folders): models and prompts "
                "have their keys; run llama.cpp by hand for the rest"
            )
        key = FLAG_KEYS.get(name)
        if key is not None and key in keys_set:
            raise ValueError(f"{where}[{i}]: {name} is also set by the key {key}; give it once, as {key}")


def check_options(config: Any) -> None:
    """A key set once and swept is ambiguous; free arguments must not collide (see ``check_args``)."""
    for key in OPTION_KEYS:
        if getattr(config, key) is not None and getattr(config.sweep, key):
            raise ValueError(f"{key} is set for the whole config and swept (sweep.{key}); keep one of them")
    given = {k for k in OPTION_KEYS if getattr(config, k) is not None or getattr(config.sweep, k)}
    given |= {k for p in config.pairs.values() for k in OPTION_KEYS if getattr(p, k) is not None}
    check_args(config.args, "args", given)
    for name, pair in config.pairs.items():
        check_args(pair.args, f"pairs.{name}.args", given)
    for i, build in enumerate(config.builds):
        check_args(build.args, f"llama_cpp[{i}].args" if len(config.builds) > 1 else "llama_cpp.args", given)
    for i, named in enumerate(config.sweep.args):
        check_args(named.args, f"sweep.args[{i}].args", given)
