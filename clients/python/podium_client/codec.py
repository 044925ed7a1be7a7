"""Exact JSON for scores: Decimals in, Decimals out, never a binary float.

The standard library's encoder writes only floats for non-integers, so requests are
written by the small encoder here, which writes a Decimal as the JSON number it is. A
float is refused outright: by the time it reaches the client its digits are already
binary, and sending it would quietly send a score the caller did not mean.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number the service sends")


def loads(text: str | bytes) -> Any:
    """Parse a response body; every non-integral number becomes an exact Decimal (an
    integral one stays an int, which a score field turns into a Decimal exactly)."""
    return json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)


def number_text(value: Decimal) -> str:
    """A finite Decimal as a JSON number: ``82.3``, ``42``, ``1E+29`` (valid JSON)."""
    if not value.is_finite():
        raise ValueError(f"{value} is not a finite number; scores must be finite")
    return str(value)


def dumps(value: Any) -> str:
    """``value`` as compact JSON, with Decimals written digit for digit."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: Any, parts: list[str]) -> None:
    if value is None or isinstance(value, bool | str):
        parts.append(json.dumps(value))
    elif isinstance(value, Decimal):
        parts.append(number_text(value))
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        raise TypeError(f"{value!r} is a float; pass scores and numbers as decimal.Decimal (or int)")
    elif isinstance(value, dict):
        _write_object(value, parts)
    elif isinstance(value, list | tuple):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    else:
        raise TypeError(f"{type(value).__name__} cannot be sent as JSON")


def _write_object(value: dict[Any, Any], parts: list[str]) -> None:
    parts.append("{")
    for index, (key, item) in enumerate(value.items()):
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
        if index:
            parts.append(",")
        parts.append(json.dumps(key))
        parts.append(":")
        _write(item, parts)
    parts.append("}")


def score(value: Any) -> Decimal:
    """A score field of a response as a Decimal (an integral JSON number parses as int)."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ValueError(f"expected a number, got {value!r}")
    return Decimal(value)


def optional_score(value: Any) -> Decimal | None:
    return None if value is None else score(value)
