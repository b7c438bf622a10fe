"""Every pointer a message gives to the docs resolves: it names its page through ``docs_page``
(the page this install ships), the page and its anchor exist, and no message spells a ``docs/``
path of its own (an install has no docs/ folder where it runs)."""

import ast
import re
from pathlib import Path

from markdown.extensions.toc import slugify

from specbench.base.docs import docs_dir, docs_page

PACKAGE = Path(__file__).resolve().parents[2] / "specbench"
DOCS_PATH = re.compile(r"\bdocs/[\w./-]*\.md")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "docs" not in path.relative_to(PACKAGE).parts:  # the link to docs/: its build hooks
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _docstrings(tree: ast.AST) -> set[int]:
    """Bare string statements (docstrings, attribute docstrings): documentation, not messages."""
    return {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }


def _anchors(page: Path) -> set[str]:
    heads = [
        ln.lstrip("#").strip() for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("#")
    ]
    return {slugify(h.replace("`", ""), "-") for h in heads}


def test_no_message_spells_a_docs_path_of_its_own():
    found = []
    for path, tree in _modules():
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                found += [f"{path.name}: {m}" for m in DOCS_PATH.findall(node.value)]
    assert not found, found


def test_every_docs_page_pointer_names_a_page_and_anchor_that_exist():
    calls, modules = [], list(_modules())
    consts = {t.id: n.value for _, tree in modules for n in ast.walk(tree) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name)}  # fmt: skip
    for path, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "docs_page":
                args = node.args
                if len(args) == 1 and isinstance(args[0], ast.Starred):  # docs_page(*NAME)
                    args = consts[args[0].value.id].elts
                calls.append((path.name, *(a.value for a in args)))
    assert len(calls) >= 4
    for where, page, *anchor in calls:
        shipped = docs_dir() / page
        assert shipped.is_file(), (where, page)
        assert not anchor or anchor[0] in _anchors(shipped), (where, page, anchor)
    assert docs_page("timing.md", "x").endswith("specbench/docs/timing.md#x")
