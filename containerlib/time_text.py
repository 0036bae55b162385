"""Dates and times written as text, read as seconds: what a Parquet or DataFrame date-time already becomes
(:mod:`containerlib.tables.parquet_types`), so ``2013-01-01 05:00:00`` or ``01/02/2013 5:00 PM`` in a CSV file is an
ordered number too, never text hashed into buckets.

Kinds, each decided per column by the schema from its sample (:func:`text_kind`) and applied the same by Preprocess
and the serving featurizer (:func:`to_seconds`):

- ``datetime``: a year-first date (``2013-01-01``, ``2013/01/01``, ``2013.01.01``) or date and time
  (``2013-01-01 05:00:00``, ``T`` or a space between, seconds and fractions optional, ``AM``/``PM`` allowed), with an
  optional time zone (``Z``, ``+01:00``, ``-0500``): seconds since 1970-01-01 UTC; without a zone the time is read
  as UTC, as a naive DataFrame datetime is.
- ``datetime-mdy`` and ``datetime-dmy``: the same with the date month first (``01/31/2013``) or day first
  (``31.01.2013``), separated by ``/``, ``.`` or ``-``; the sample decides which (a first part above 12 is a day).
- ``datetime-named``: a date whose month is a name, month or day first (``Jan 5, 2013``, ``January 5 2013``,
  ``5 Jan 2013``, ``05-Jan-2013``, ``Sat, 5 Jan 2013 17:00``), English names or their three-letter (or ``Sept``)
  abbreviations, any case, a leading weekday name ignored, with a time and zone as above or not.
- ``time``: a time of day (``05:00``, ``05:00:00``, ``23:59:59.5``, ``5:00 PM``): seconds since midnight.

A column whose day and month cannot be told apart in the sample, or whose years have two digits, is refused by the
schema (:data:`REFUSED`) rather than read one way by guess or hashed as text.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterable
from typing import Any, Callable

DATETIME = "datetime"
DATETIME_MDY = "datetime-mdy"
DATETIME_DMY = "datetime-dmy"
DATETIME_NAMED = "datetime-named"
TIME = "time"
KINDS = (DATETIME, DATETIME_MDY, DATETIME_DMY, DATETIME_NAMED, TIME)
MOSTLY = 0.1  # at most this share of a column's values not of its kind: typos to name, not a text column

_CLOCK = r"(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*([ap]\.?m\.?)?"
_ZONE = r"\s*(z|[+-]\d{2}(?::?\d{2})?)?"
_YEAR_FIRST = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?:(?:t|\s+)" + _CLOCK + r")?" + _ZONE, re.IGNORECASE)
_YEAR_LAST = re.compile(r"(\d{1,2})([-/.])(\d{1,2})\2(\d{4})(?:(?:t|\s+)" + _CLOCK + r")?" + _ZONE, re.IGNORECASE)
_SHORT_YEAR = re.compile(r"\d{1,2}([-/.])\d{1,2}\1\d{2}(?:(?:t|\s+)" + _CLOCK + r")?" + _ZONE, re.IGNORECASE)
_TIME = re.compile(_CLOCK, re.IGNORECASE)
# English names whatever the locale (calendar.month_name follows it)
_MONTH_NAMES = "january february march april may june july august september october november december".split()
MONTHS = {name: number for number, full in enumerate(_MONTH_NAMES, 1) for name in (full, full[:3])} | {"sept": 9}
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]{0,6}\.?,?\s+)?"
_NAMED_TAIL = r"(?:(?:,?\s+|t)" + _CLOCK + r")?" + _ZONE
_MONTH_DAY_YEAR = re.compile(  # Jan 5, 2013; January 5 2013; Jan. 5th, 2013 5:00 PM
    _WEEKDAY + r"([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})" + _NAMED_TAIL, re.IGNORECASE
)
_DAY_MONTH_YEAR = re.compile(  # 5 Jan 2013; 05-Jan-2013; 5 January, 2013; Sat, 05 Jan 2013 17:00:00 +0000
    _WEEKDAY + r"(\d{1,2})(?:st|nd|rd|th)?([-/ ])\s*([a-z]{3,9})\.?(?:\2|,?\s+)(\d{4})" + _NAMED_TAIL, re.IGNORECASE
)
FORMS = {
    DATETIME: "a year-first date or date and time (2013-01-01, 2013/01/01, 2013-01-01 05:00:00, "
    "2013-01-01T05:00:00+01:00)",
    DATETIME_MDY: "a month-first date or date and time (01/31/2013, 01/31/2013 05:00 PM)",
    DATETIME_DMY: "a day-first date or date and time (31/01/2013, 31.01.2013 17:00)",
    DATETIME_NAMED: "a date with its month named, or date and time (Jan 5, 2013, 5 Jan 2013, 05-Jan-2013 17:00)",
    TIME: "a time of day (05:00, 05:00:00, 05:00:00.5, 5:00 PM)",
}
LABELS = {
    DATETIME: "date-time",
    DATETIME_MDY: "date-time, month first",
    DATETIME_DMY: "date-time, day first",
    DATETIME_NAMED: "date-time, month named",
}
AMBIGUOUS = "ambiguous-day-month"
SHORT_YEAR = "two-digit-year"
REFUSED = {
    AMBIGUOUS: "dates whose day and month cannot be told apart (both are 12 or less in every sampled value)",
    SHORT_YEAR: "dates with two-digit years",
}


def _fraction(digits: str | None) -> float:
    return int(digits) / 10 ** len(digits) if digits else 0.0


def _clock(hour: str | None, minute: str | None, second: str | None, half: str | None) -> int | None:
    """Seconds since midnight of a clock's parts (``half``: AM or PM, any case and dots); None when out of range."""
    hour_, minute_, second_ = int(hour or 0), int(minute or 0), int(second or 0)
    if half:
        if hour_ > 12:
            return None
        hour_ = hour_ % 12 + (12 if half.lower().startswith("p") else 0)
    if hour_ > 23 or minute_ > 59 or second_ > 60:  # 60: a leap second, as ISO 8601 allows
        return None
    return hour_ * 3600 + minute_ * 60 + second_


def _date_seconds(year: int, month: int, day: int, clock: tuple[str | None, ...]) -> float | None:
    """Seconds since 1970-01-01 UTC of a date, its clock's parts (hour, minute, second, fraction, AM/PM) and zone."""
    hour, minute, second, fraction, half, zone = clock
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]):
        return None
    since_midnight = _clock(hour, minute, second, half)
    if since_midnight is None:
        return None
    seconds = calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0)) + since_midnight
    if zone and zone.upper() != "Z":
        digits = zone[1:].replace(":", "")
        if int(digits[:2]) > 23 or int(digits[2:4] or 0) > 59:
            return None
        seconds -= (-1 if zone[0] == "-" else 1) * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    return seconds + _fraction(fraction)


def datetime_seconds(text: str) -> float | None:
    """Seconds since 1970-01-01 UTC of a year-first date or date and time; None when the text is not one."""
    match = _YEAR_FIRST.fullmatch(text.strip())
    if match is None:
        return None
    year, _, month, day, *clock = match.groups()
    return _date_seconds(int(year), int(month), int(day), tuple(clock))


def month_first_seconds(text: str) -> float | None:
    """Seconds since 1970-01-01 UTC of a month-first date (01/31/2013), with a time or not; None if not one."""
    match = _YEAR_LAST.fullmatch(text.strip())
    if match is None:
        return None
    month, _, day, year, *clock = match.groups()
    return _date_seconds(int(year), int(month), int(day), tuple(clock))


def day_first_seconds(text: str) -> float | None:
    """Seconds since 1970-01-01 UTC of a day-first date (31.01.2013), with a time or not; None if not one."""
    match = _YEAR_LAST.fullmatch(text.strip())
    if match is None:
        return None
    day, _, month, year, *clock = match.groups()
    return _date_seconds(int(year), int(month), int(day), tuple(clock))


def named_month_seconds(text: str) -> float | None:
    """Seconds since 1970-01-01 UTC of a date whose month is a name, month or day first (``Jan 5, 2013``,
    ``05-Jan-2013``), with a time or not; None if not one."""
    text = text.strip()
    match = _MONTH_DAY_YEAR.fullmatch(text)
    if match is not None:
        name, day, year, *clock = match.groups()
    else:
        match = _DAY_MONTH_YEAR.fullmatch(text)
        if match is None:
            return None
        day, _, name, year, *clock = match.groups()
    month = MONTHS.get(name.lower())
    return None if month is None else _date_seconds(int(year), month, int(day), tuple(clock))


def time_seconds(text: str) -> float | None:
    """Seconds since midnight of a time of day; None when the text is not one."""
    match = _TIME.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute, second, fraction, half = match.groups()
    since_midnight = _clock(hour, minute, second, half)
    return None if since_midnight is None else since_midnight + _fraction(fraction)


PARSERS: dict[str, Callable[[str], float | None]] = {
    DATETIME: datetime_seconds,
    DATETIME_MDY: month_first_seconds,
    DATETIME_DMY: day_first_seconds,
    DATETIME_NAMED: named_month_seconds,
    TIME: time_seconds,
}


def text_kind(texts: Iterable[str]) -> tuple[str | None, list[str]]:
    """The kind every one of ``texts`` (present values) is, with the texts that are not of it: ``(kind, [])`` when
    all are; ``(kind, bad)`` when all but a :data:`MOSTLY` share are and ``bad`` are not (a column meant as dates,
    with a few typos); ``(None, [])`` when the column is not dates or times. A kind of :data:`REFUSED` comes with
    a few of its values: dates that are not read one way by guess."""
    values = [text.strip() for text in texts if text.strip()]
    if not values:
        return None, []
    for kind in (DATETIME, DATETIME_NAMED, TIME):
        parse = PARSERS[kind]
        bad = [text for text in values if parse(text) is None]
        if len(bad) <= MOSTLY * len(values):
            return kind, bad
    fits = {kind: [text for text in values if PARSERS[kind](text) is None] for kind in (DATETIME_MDY, DATETIME_DMY)}
    kind = min(fits, key=lambda name: len(fits[name]))
    if len(fits[kind]) <= MOSTLY * len(values):
        if not fits[DATETIME_MDY] and not fits[DATETIME_DMY]:
            return AMBIGUOUS, values[:3]
        return kind, fits[kind]
    if sum(_SHORT_YEAR.fullmatch(text) is not None for text in values) >= (1 - MOSTLY) * len(values):
        return SHORT_YEAR, values[:3]
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
