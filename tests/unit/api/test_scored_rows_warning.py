"""compare()'s warning when two executions were scored on different test rows (issue 40)."""

from __future__ import annotations

from pipeline.api.comparison import scored_rows_label, scored_rows_warning

ROWS = {"count": 460, "fingerprint": "619985008875f6b9"}


def test_the_same_rows_say_nothing_and_other_rows_are_not_comparable() -> None:
    assert scored_rows_warning("a", ROWS, "b", dict(ROWS)) is None
    other = {"count": 460, "fingerprint": "0000000000000001"}
    warning = scored_rows_warning("a", ROWS, "b", other)
    assert warning is not None and warning.startswith("scored on different test rows: a on 460 rows, fingerprint")
    assert warning.endswith("their metrics are not comparable")
    assert "b on 460 rows, fingerprint 0000000000000001" in warning


def test_a_report_without_test_rows_cannot_tell_and_two_say_nothing() -> None:
    warning = scored_rows_warning("a", ROWS, "b", None)
    assert warning is not None and warning.startswith("cannot tell whether a and b were scored on the same test rows")
    assert scored_rows_warning("a", None, "b", None) is None
    assert scored_rows_label(None) == "" and scored_rows_label(ROWS) == "460 rows, fingerprint 619985008875f6b9"
