"""The exit-code table is declared once (``ExitCode``) and the docs show exactly it."""

from pathlib import Path

from specbench.base.errors import ExitCode, exit_code_rows

DOCS = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def test_the_docs_exit_code_table_is_the_code_s():
    text = DOCS.read_text(encoding="utf-8")
    assert "\n".join(exit_code_rows()) in text
    assert text.count("| exit | meaning |") == 1  # one table, not a second one drifting from it


def test_every_exit_code_has_a_meaning_and_the_gate_uses_the_same_codes():
    from specbench.gate.decision import EXIT_CODES, Verdict

    assert all(code.meaning for code in ExitCode)
    assert EXIT_CODES[Verdict.FAIL] == ExitCode.FAILED and EXIT_CODES[Verdict.NOTHING] == ExitCode.NOTHING
