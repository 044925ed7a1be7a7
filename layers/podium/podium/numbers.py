"""Exact decimal scores and the JSON that carries them.

Scores are ``decimal.Decimal`` from the request body to DynamoDB and back. The
standard library's JSON encoder can only write floats, so this module has its own
small encoder that writes a Decimal as the JSON number it is.
"""

from __future__ import annotations

import json
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from podium.errors import ValidationError

MAX_SIGNIFICANT_DIGITS = 38
MAX_MAGNITUDE = Decimal("1e30")
# DynamoDB's Number type goes no smaller than 1e-130, and no larger than 9.99...e125.
MIN_EXPONENT = -130
MAX_EXPONENT = 125

# Wide enough that no sum or comparison of two valid scores is ever rounded; the
# result is then checked against the 38-digit limit instead of silently losing digits.
EXACT = Context(prec=200, Emin=-999999, Emax=999999, traps=[InvalidOperation])


def significant_digits(value: Decimal) -> int:
    if value.is_zero():
        return 1
    return len(value.normalize(EXACT).as_tuple().digits)


def check_score(value: Any, field: str) -> Decimal:
    """Return ``value`` as a score, or raise a ValidationError naming ``field`` and the limit."""
    if isinstance(value, bool) or not isinstance(value, Decimal):
        raise ValidationError(f"{field} must be a JSON number")
    if not value.is_finite():
        raise ValidationError(f"{field} must be a finite number")
    if significant_digits(value) > MAX_SIGNIFICANT_DIGITS:
        raise ValidationError(f"{field} has more than {MAX_SIGNIFICANT_DIGITS} significant digits")
    if value.copy_abs() >= MAX_MAGNITUDE:  # exact: abs() would round to 28 digits
        raise ValidationError(f"{field} must satisfy abs({field}) < 1e30")
    if not value.is_zero() and value.adjusted() < MIN_EXPONENT:
        raise ValidationError(f"{field} is too small: the smallest non-zero magnitude is 1e-130")
    return value.normalize(EXACT) if not value.is_zero() else Decimal(0)


def storable(value: Decimal) -> bool:
    """Whether DynamoDB's Number type holds ``value`` exactly: at most 38 significant digits,
    a magnitude from 1e-130 to below 1e126 (or zero). The exponent is checked first, so that
    a value like ``1E999999999`` is refused without being normalised."""
    if value.is_zero():
        return True
    if not value.is_finite() or not MIN_EXPONENT <= value.adjusted() <= MAX_EXPONENT:
        return False
    return significant_digits(value) <= MAX_SIGNIFICANT_DIGITS


def add(a: Decimal, b: Decimal) -> Decimal:
    return EXACT.add(a, b)


def format_number(value: Decimal) -> str:
    """The JSON text of a score: ``42`` for an integral value, ``82.3`` otherwise."""
    if value.is_zero():
        return "0"
    normal = value.normalize(EXACT)
    if normal == normal.to_integral_value():
        return format(normal.quantize(Decimal(1), context=EXACT), "f")
    return format(normal, "f")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number here")


def loads(text: str | bytes) -> Any:
    """Parse JSON, reading every number as an exact Decimal and refusing NaN and Infinity."""
    return json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=_reject_constant)


def dumps(value: Any) -> str:
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, Decimal):
        out.append(format_number(value))
    elif isinstance(value, (int, float)):
        out.append(json.dumps(value))
    elif isinstance(value, dict):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as JSON")
