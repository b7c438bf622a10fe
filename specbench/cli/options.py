"""The options several commands share, each declared once as an ``Annotated`` type (as
huggingface_hub's ``cli/_cli_utils.py``); ``--format`` is ``specbench.cli.output``'s."""

from __future__ import annotations

from typing import Annotated, Any

import typer


def _budget(text: Any) -> float:
    """``--budget``: seconds, or a duration (600, 10m, 1.5h), by the gate's parser (imported only then)."""
    from specbench.gate.regression import parse_budget

    return parse_budget(text)


def budget_option(help: str) -> Any:
    """``--budget``, one form for every command; each says in ``help`` what it bounds."""
    return typer.Option("--budget", metavar="SECONDS", parser=_budget, help=help)


Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a config value: KEY=VALUE with a dotted key (repeatable).",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
AllowNoisy = Annotated[bool, typer.Option(help="Pass cells too noisy to decide (default: exit 3).")]
Threshold = Annotated[str, typer.Option(metavar="CHANGE", help="Relative slowdown that counts: 5% or 0.05.")]
Budget = Annotated[
    float | None,
    budget_option(
        "Stop adding rounds to undecided cells after this long (600, 10m, 1h; bisect: per step); "
        "it replaces max_repetitions unless the config sets it. Default: until decided or max_repetitions."
    ),
]
