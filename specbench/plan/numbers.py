"""YAML reads ``yes``/``no``/``on``/``off``/``true``/``false`` as booleans, and pydantic takes a
boolean for a number (true -> 1): ``--set repetitions=true`` would silently mean one repetition.
The config models refuse a boolean wherever a number is expected."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ValidationInfo


def _numeric(annotation: Any) -> bool:
    """int, float, or either of them or None."""
    args = set(get_args(annotation)) - {type(None)} if get_args(annotation) else {annotation}
    return bool(args) and args <= {int, float}


def refuse_bool_number(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """pydantic reads true as 1; a YAML ``yes``/``true`` given for a number is a mistake, not 1."""
    field = cls.model_fields.get(info.field_name or "")
    if isinstance(value, bool) and field is not None and _numeric(field.annotation):
        raise ValueError(
            f"must be a number, not {str(value).lower()} (YAML reads yes/no/on/off/true/false as booleans)"
        )
    return value
