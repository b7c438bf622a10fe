"""No test module imports another test module: what two test files share lives in tests/helpers/
(a fixture in tests/fixtures/). Importing a test module runs its module code again under the
importer, ties the two files' edits together, and is how 35 such imports once grew."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_test_module(dotted: str) -> bool:
    return dotted.split(".")[0] == "tests" and dotted.rsplit(".", 1)[-1].startswith("test_")


def imported_test_modules(path: Path) -> list[str]:
    """The test modules ``path`` imports (at the top or inside a function)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _is_test_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _is_test_module(node.module):
                found.append(node.module)
            else:  # `from tests.cli import test_run`
                names = (f"{node.module}.{a.name}" for a in node.names)
                found += [n for n in names if _is_test_module(n)]
    return found


def test_no_test_module_imports_another_test_module():
    offenders = {
        f"{p.relative_to(TESTS.parent)}: {m}"
        for p in sorted(TESTS.rglob("*.py"))
        for m in imported_test_modules(p)
    }
    assert not offenders, "move what they share to tests/helpers/: " + "; ".join(sorted(offenders))


def test_the_check_sees_each_form_of_import(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(
        "import tests.cli.test_run\n"
        "from tests.gate.test_compare import make_run\n"
        "from tests.cli import test_tune\n"
        "from tests.helpers.runs import make_run\n"
        "def f():\n    from tests.plan.test_sweep import MODELS\n"
    )
    assert sorted(imported_test_modules(path)) == [
        "tests.cli.test_run", "tests.cli.test_tune", "tests.gate.test_compare", "tests.plan.test_sweep",
    ]  # fmt: skip
