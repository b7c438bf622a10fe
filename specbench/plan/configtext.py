"""Config text: YAML with one-line errors (duplicate keys, non-mappings), ``--set`` overrides, and
pydantic's validation errors turned into ``origin: key.path: message``."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Set as AbstractSet
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from specbench.base.childenv import unpassable
from specbench.base.errors import ConfigError


class _NoDuplicatesLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping key given twice (PyYAML silently keeps the last one)."""


def _check_duplicates(node: yaml.Node, path: str, origin: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key != "<<":
                if key in seen:
                    where = f"{path}: " if path else ""
                    raise ConfigError(
                        f"{origin}:{line}: {where}duplicate key {key!r} (first on line {seen[key]}); "
                        "each name may appear once"
                    )
                seen[key] = line
            _check_duplicates(value_node, f"{path}.{key}" if path else str(key), origin)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, f"{path}[{i}]", origin)


# A config's size after its aliases (``*name``) expand, counted on the node graph before they do:
# real ones hold hundreds of values, ten lines of nested aliases ("billion laughs") 9**9.
MAX_VALUES = 100_000
MAX_DEPTH = 100


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_size(
    node: yaml.Node, origin: str, sizes: dict[int, int], holding: frozenset[int] = frozenset()
) -> int:
    """A node's size once its aliases expand (``sizes``: by node, each counted once); refused past
    MAX_VALUES, nested past MAX_DEPTH (so this recursion stays shallow), or an alias that refers to a
    node that holds it (a loop). Children are visited last first: the first error found is the one
    the loader has always named."""
    if id(node) in sizes:
        return sizes[id(node)]
    line = node.start_mark.line + 1
    if id(node) in holding:
        raise ConfigError(f"{origin}:{line}: an alias refers to a value that holds it (a loop); remove it")
    if len(holding) > MAX_DEPTH:
        raise ConfigError(f"{origin}:{line}: nested over {MAX_DEPTH} levels deep; a config needs far fewer")
    inner = holding | {id(node)}
    size = sizes[id(node)] = 1 + sum(_check_size(c, origin, sizes, inner) for c in reversed(_children(node)))
    if size > MAX_VALUES:
        raise ConfigError(
            f"{origin}: its aliases (*name) expand to over {MAX_VALUES:,} values; a config needs "
            "far fewer: write the repeated part out, or use fewer nested aliases"
        )
    return size


def _load(text: str, origin: str, check: bool = False) -> Any:
    """YAML text -> data (None for an empty document), its expanded size bounded before it is built."""
    loader = _NoDuplicatesLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node, origin, {})
        if check:
            _check_duplicates(node, "", origin)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{origin}{where}: not valid YAML ({problem})") from exc
    except RecursionError:  # the parser's own recursion, before any node could be counted
        raise ConfigError(
            f"{origin}: nested too deeply for a config; a config needs far fewer levels"
        ) from None
    finally:
        loader.dispose()


def parse_yaml(text: str, origin: str) -> dict:
    """YAML text -> a mapping, with one-line errors (aliases bounded before they expand)."""
    data = _load(text, origin, check=True)
    if data is None:
        raise ConfigError(
            f"{origin}: the file is empty; `specbench configs copy quickstart` writes an example"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{origin}: the config must be a YAML mapping (name:, models:, pairs:, ...), "
            f"not a {type(data).__name__}"
        )
    return data


def apply_override(data: dict, override: str) -> str:
    """Apply one ``--set a.b.c=VALUE`` (VALUE parsed as YAML) to the raw mapping; returns the key path."""
    key, sep, raw = override.partition("=")
    key = key.strip()
    parts = key.split(".")
    if not sep or not key or any(not p for p in parts):
        raise ConfigError(
            f"--set {override!r}: expected KEY=VALUE with a dotted KEY, e.g. generation.threads=1"
        )
    try:
        value = _load(raw, f"--set {override!r}") if raw.strip() else ""
    except ConfigError as exc:
        if "not valid YAML" in str(exc):
            raise ConfigError(f"--set {override!r}: the value is not valid YAML") from exc
        raise
    node = data
    for i, part in enumerate(parts[:-1]):
        if part not in node or node[part] is None:
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            prefix = ".".join(parts[: i + 1])
            raise ConfigError(
                f"--set {override!r}: {prefix} is not a mapping, so it has no key {parts[i + 1]!r}"
            )
    node[parts[-1]] = value
    return key


def refuse_unpassable(text: str, where: str) -> None:
    """Refuse a text no command line or request can carry (``base.childenv``), named where it is
    written (a config's key, a prompt file's line), before anything runs."""
    problem = unpassable(text)
    if problem is not None:
        raise ConfigError(f"{where} holds {problem}, which no command line or request can carry; remove it")


# Parts of a pydantic error location that are no keys: validator names and union tags.
_HIDDEN = ("function-", "@")


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if part == "[key]":  # a mapping's key was refused: the key itself ends the location
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_OPS = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}


def _message(err: dict) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    given = repr(err.get("input"))
    given = given if len(given) <= 60 else given[:57] + "..."
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required but missing"
    if kind in _OPS:
        bound = next(iter(ctx.values()), "?")
        return f"must be {_OPS[kind]} {bound} (got {given})"
    if kind == "too_short":
        return "must not be empty"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')} (got {given})"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    msg = err["msg"]
    return f"{msg[0].lower()}{msg[1:]} (got {given})"


def _expand(tp: Any) -> list[Any]:
    """A type with its Optional/Union/Annotated wrappers taken off: the types a value may be."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(tp) for t in _expand(arg)]
    if origin is typing.Annotated:
        return _expand(typing.get_args(tp)[0])
    return [tp]


def keys_at(model: type[BaseModel], loc: tuple) -> set[str]:
    """The keys allowed at ``loc`` (a pydantic error location) in ``model``: the fields of every model
    that can stand there, through unions, lists and mappings. Empty when ``loc`` leads to no model."""
    here: list[Any] = [model]
    for part in loc:
        if isinstance(part, str) and part.startswith(_HIDDEN):
            continue
        nxt: list[Any] = []
        for tp in (t for h in here for t in _expand(h)):
            origin, args = typing.get_origin(tp), typing.get_args(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
                nxt += [f.annotation for n, f in tp.model_fields.items() if part in (n, f.alias)]
            elif origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
                nxt.append(args[0])
            elif origin is dict and isinstance(part, str) and len(args) == 2:
                nxt.append(args[1])
        here = nxt
    models = [tp for h in here for tp in _expand(h) if isinstance(tp, type) and issubclass(tp, BaseModel)]
    # their fields' names and aliases, not the loader's own (excluded) fields
    return {k for m in models for n, f in m.model_fields.items() if not f.exclude for k in (f.alias or n, n)}


def unknown_key(model: type[BaseModel], loc: tuple) -> str:
    """``unknown key`` for the key at ``loc`` in ``model``, with the key allowed there that it most
    likely meant when one is close (difflib): ``did you mean `repetitions`?``."""
    near = difflib.get_close_matches(str(loc[-1]), sorted(keys_at(model, loc[:-1])), n=1, cutoff=0.6)
    return f"unknown key (did you mean `{near[0]}`?)" if near else "unknown key"


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith((outer + ".", outer + "["))


def first_error(errors: list) -> Any:
    """The first error, but a misspelt key before the required key it misses."""
    if errors[0]["type"] == "missing":
        parent = errors[0]["loc"][:-1]
        for err in errors:
            if err["type"] == "extra_forbidden" and err["loc"][:-1] == parent:
                return err
    return errors[0]


def format_validation_error(
    exc: ValidationError,
    origin: str,
    overridden: AbstractSet[str] = frozenset(),
    model: type[BaseModel] | None = None,
) -> str:
    """pydantic's errors -> ``origin: a.b[2]: message`` (an unknown key with its nearest)."""
    errors = exc.errors()
    first = first_error(errors)
    loc = _loc(tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith(_HIDDEN))))
    sources = sorted(k for k in overridden if _within(loc, k) or _within(k, loc))
    head = ", ".join(f"--set {k}" for k in sources) if sources else origin  # every key that may be at fault
    message = _message(first)
    if first["type"] == "extra_forbidden" and model is not None and first["loc"]:
        message = unknown_key(model, tuple(first["loc"]))
    text = f"{head}: {loc}: {message}" if loc else f"{head}: {message}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text
