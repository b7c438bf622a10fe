"""The config's JSON Schema as pydantic writes it: every default shown, list defaults included."""

from specbench.plan.schema import config_schema


def test_list_defaults_are_shown_with_their_keys_in_pydantics_sorted_order():
    """A list default (draft_max's [8], cmake_args' []) is a plain default that pydantic copies per
    instance, so the schema shows it where it shows every other default: keys sorted in each property
    (a factory's default was written after pydantic's keys, out of that order)."""
    schema = config_schema()
    defs = schema["$defs"]
    assert defs["SweepConfig"]["properties"]["draft_max"]["default"] == [8]
    assert defs["LlamaCppConfig"]["properties"]["cmake_args"]["default"] == []
    assert defs["RunsOnConfig"]["properties"]["ngl"]["default"] == {}
    for props in [schema["properties"], *(d.get("properties", {}) for d in defs.values())]:
        for name, prop in props.items():
            assert list(prop) == sorted(prop), name
