"""The architecture page, generated from the code at docs build time: the packages in their import
layers (pyproject.toml's import-linter contracts), each module with its docstring's first line. A
page written by hand named modules that no longer existed; this one cannot drift."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "specbench"


def first_line(path: Path) -> str:
    """The module docstring's first sentence-line, or a dash when the module has none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        return "-"
    para = doc.strip().split("\n\n", 1)[0]
    return " ".join(para.split()).replace("|", "\\|")


def contracts() -> list[dict]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["tool"]["importlinter"]["contracts"]


def layers() -> list[str]:
    return next(c["layers"] for c in contracts() if c["id"] == "layers")


def modules(package: str) -> list[Path]:
    folder = PACKAGE / package
    if not folder.is_dir():
        return [PACKAGE / f"{package}.py"]
    return sorted(p for p in folder.glob("*.py"))


def architecture_page() -> str:
    """Markdown: the contracts in words, then one table per layer, top (the CLI) to bottom (base)."""
    order = layers()
    lines = [
        "# Architecture",
        "",
        "Generated from the code when the docs are built (`docs/_hooks/architecture.py`): the",
        "packages in their import layers and each module's first docstring line. `make lint` checks",
        "the contracts with import-linter:",
        "",
    ]
    for c in contracts():
        lines.append(f"- **{c['name']}** (`{c['id']}`, {c['type']})")
    lines += [
        "",
        "Layers from the top; a module imports only from the layers below its own: "
        + " -> ".join(f"`{name}`" for name in order)
        + ".",
        "",
    ]
    for name in order:
        paths = modules(name)
        count = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)
        lines += [f"## `{name}`", "", f"{len(paths)} modules, {count} lines.", ""]
        lines += ["| module | what it is for |", "| --- | --- |"]
        for path in paths:
            rel = path.relative_to(PACKAGE).as_posix()
            lines.append(f"| `{rel}` | {first_line(path)} |")
        lines.append("")
    return "\n".join(lines)
