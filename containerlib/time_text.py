"""Dates and times written as text, read as seconds: what a Parquet or DataFrame date-time already becomes
(:mod:`containerlib.tables.parquet_types`), so ``2013-01-01 05:00:00`` in a CSV file is an ordered number too,
never text hashed into buckets.

Two kinds, each decided per column by the schema from its sample (:func:`text_kind`) and applied the same by
Preprocess and the serving featurizer (:func:`to_seconds`):

- ``datetime``: an ISO 8601 date (``2013-01-01``) or date and time (``2013-01-01 05:00:00``, ``T`` or a space
  between, seconds and fractions optional), with an optional time zone (``Z``, ``+01:00``, ``-0500``): seconds
  since 1970-01-01 UTC; without a zone the time is read as UTC, as a naive DataFrame datetime is.
- ``time``: a time of day (``05:00``, ``05:00:00``, ``23:59:59.5``): seconds since midnight.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterable
from typing import Any, Callable

DATETIME = "datetime"
TIME = "time"
KINDS = (DATETIME, TIME)
MOSTLY = 0.1  # at most this share of a column's values not of its kind: typos to name, not a text column

_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?")
FORMS = {
    DATETIME: "an ISO 8601 date or date and time (2013-01-01, 2013-01-01 05:00:00, 2013-01-01T05:00:00+01:00)",
    TIME: "a time of day (05:00, 05:00:00, 05:00:00.5)",
}


def _fraction(digits: str | None) -> float:
    return int(digits) / 10 ** len(digits) if digits else 0.0


def datetime_seconds(text: str) -> float | None:
    """Seconds since 1970-01-01 UTC of an ISO 8601 date or date and time; None when the text is not one."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    hour_, minute_, second_ = int(hour or 0), int(minute or 0), int(second or 0)
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= calendar.monthrange(int(year), int(month))[1]):
        return None
    if hour_ > 23 or minute_ > 59 or second_ > 60:  # 60: a leap second, as ISO 8601 allows
        return None
    seconds = calendar.timegm((int(year), int(month), int(day), hour_, minute_, second_, 0, 0, 0))
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
        if int(digits[:2]) > 23 or int(digits[2:4] or 0) > 59:
            return None
        seconds -= sign * offset
    return seconds + _fraction(fraction)


def time_seconds(text: str) -> float | None:
    """Seconds since midnight of a time of day; None when the text is not one."""
    match = _TIME.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute, second, fraction = match.groups()
    if int(hour) > 23 or int(minute) > 59 or int(second or 0) > 60:
        return None
    return int(hour) * 3600 + int(minute) * 60 + int(second or 0) + _fraction(fraction)


PARSERS: dict[str, Callable[[str], float | None]] = {DATETIME: datetime_seconds, TIME: time_seconds}


def text_kind(texts: Iterable[str]) -> tuple[str | None, list[str]]:
    """The kind every one of ``texts`` (present values) is, with the texts that are not of it: ``(kind, [])`` when
    all are; ``(kind, bad)`` when all but a :data:`MOSTLY` share are and ``bad`` are not (a column meant as dates,
    with a few typos); ``(None, [])`` when the column is not dates or times."""
    values = [text.strip() for text in texts if text.strip()]
    if not values:
        return None, []
    for kind in KINDS:
        parse = PARSERS[kind]
        bad = [text for text in values if parse(text) is None]
        if len(bad) <= MOSTLY * len(values):
            return kind, bad
    return None, []


def to_seconds(cells: Iterable[Any], kind: str, bad_value: Callable[[int, Any], Exception]) -> list[float]:
    """Each cell as seconds (``kind``: :data:`DATETIME` or :data:`TIME`): text parsed, a number taken as seconds
    already, None, NaN or empty text as missing (NaN); other text raises ``bad_value(row, cell)``."""
    parse = PARSERS[kind]
    known: dict[str, float | None] = {}  # a column repeats its values: each text parsed once per call
    values = []
    for row, cell in enumerate(cells):
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            values.append(math.nan)
        elif isinstance(cell, (int, float)) and not isinstance(cell, bool):
            values.append(float(cell))
        else:
            text = str(cell).strip()
            if not text:
                values.append(math.nan)
                continue
            if text not in known:
                known[text] = parse(text)
            seconds = known[text]
            if seconds is None:
                raise bad_value(row, cell)
            values.append(seconds)
    return values
