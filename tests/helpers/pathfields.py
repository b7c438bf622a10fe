"""Every config field whose value becomes a path, found from the pydantic models themselves (the
``PathRole`` its type carries), so a new field of such a type is tested without being listed."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specbench.base.paths import PathRole

Loc = tuple[str | int, ...]


def _role(tp: Any) -> PathRole | None:
    if typing.get_origin(tp) is typing.Annotated:
        found = [m for m in typing.get_args(tp)[1:] if isinstance(m, PathRole)]
        return found[0] if found else _role(typing.get_args(tp)[0])
    return None


def _strip(tp: Any) -> Any:
    return _strip(typing.get_args(tp)[0]) if typing.get_origin(tp) is typing.Annotated else tp


def _options(tp: Any) -> list[Any]:
    """The types a value of ``tp`` may have (unions taken apart, Annotated kept when it has a role)."""
    base = _strip(tp)
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(base) for t in _options(arg)]
    return [tp]


def _field_types(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """field name -> (the key a config writes, the annotation with its metadata)."""
    out = {}
    for name, f in model.model_fields.items():
        if f.exclude:
            continue
        ann = typing.Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation
        out[name] = (f.alias or name, ann)
    return out


def leaves(model: type[BaseModel], seen: frozenset = frozenset()) -> dict[str, PathRole | None]:
    """Every text-valued field (str or Path; dict keys as ``KEY``) reachable from ``model``, by
    ``Model.field``, with its role (None: the value never becomes a path)."""
    found: dict[str, PathRole | None] = {}

    def visit(tp: Any, where: str) -> None:
        for opt in _options(tp):
            base, role = _strip(opt), _role(opt)
            origin, args = typing.get_origin(base), typing.get_args(base)
            if isinstance(base, type) and issubclass(base, BaseModel):
                if base not in seen:
                    found.update(leaves(base, seen | {model}))
            elif origin in (list, tuple, set, frozenset) and args:
                visit(args[0], where)
            elif origin is dict and len(args) == 2:
                visit(args[0], f"{where} KEY")
                visit(args[1], where)
            elif base in (str, Path):
                found[where] = role

    for name, (_key, ann) in _field_types(model).items():
        visit(ann, f"{model.__name__}.{name}")
    return found


class Located(typing.NamedTuple):
    loc: Loc  # where in the data
    role: PathRole
    is_key: bool  # the location is a mapping's key, not a value
    field: str  # ``Model.field`` (``Config.models KEY``), as ``leaves`` names it


def path_locations(model: type[BaseModel], data: Any) -> list[Located]:
    """Where in ``data`` (a valid config of ``model``) a value becomes a path."""
    out: list[Located] = []

    def visit(tp: Any, value: Any, loc: Loc, field: str = "") -> None:
        for opt in _options(tp):
            base, role = _strip(opt), _role(opt)
            origin, args = typing.get_origin(base), typing.get_args(base)
            if role is not None and isinstance(value, str | Path):
                out.append(Located(loc, role, False, field))
                return
            if isinstance(base, type) and issubclass(base, BaseModel) and isinstance(value, dict):
                fields = _field_types(base)
                by_key = {key: (name, ann) for name, (key, ann) in fields.items()}
                if set(value) <= set(by_key):
                    for key, item in value.items():
                        name, ann = by_key[key]
                        visit(ann, item, (*loc, key), f"{base.__name__}.{name}")
                    return
            elif origin in (list, tuple) and args and isinstance(value, list):
                for i, item in enumerate(value):
                    visit(args[0], item, (*loc, i), field)
                return
            elif origin is dict and len(args) == 2 and isinstance(value, dict):
                key_role = _role(args[0])
                for key, item in value.items():
                    if key_role is not None:
                        out.append(Located((*loc, key), key_role, True, f"{field} KEY"))
                    visit(args[1], item, (*loc, key), field)
                return

    visit(model, data, ())
    return out
