"""JSON as Model Monitor's analyzer writes it: Jackson's default pretty printer and Java's number format.

Objects put one member per line, ``"key" : value``, indented two spaces per enclosing object; arrays stay on the
line (``[ 1.0, 2.0 ]``, ``[ {`` for objects); doubles print as Java's ``Double.toString`` (``231.0``, ``1.0E-4``), NaN
and infinities as strings (Jackson's default). Python floats are doubles and ints stay ints, so a document read with
:func:`json.loads` is written back byte for byte.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any


def dumps(value: Any) -> str:
    """``value`` (dicts, lists, str, int, float, bool, None) as the analyzer's files hold it."""
    return _write(value, 0)


def java_double(number: float) -> str:
    """Java's ``Double.toString``: plain between 10^-3 and 10^7 (always with a fraction), else ``d.dddE<n>``."""
    if math.isnan(number):
        return '"NaN"'
    if math.isinf(number):
        return '"Infinity"' if number > 0 else '"-Infinity"'
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    if 1e-3 <= abs(number) < 1e7:
        text = repr(number)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(number)).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{power}"


def _write(value: Any, depth: int) -> str:
    if hasattr(value, "dtype") and hasattr(value, "item"):  # a numpy scalar: its Python value
        value = value.item()
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = " " * (2 * (depth + 1))
        members = [f"{inner}{_key(key)} : {_write(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + " " * (2 * depth) + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_write(item, depth) for item in value) + " ]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def _key(key: Any) -> str:
    return json.dumps(str(key), ensure_ascii=False)
