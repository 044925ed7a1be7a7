"""Lambda's filter criteria for an event source mapping, the subset the template uses:
which stream records a consumer is handed. The local event source mapping
(``devstack.streams``) and the redrive (``podium.redrive``) filter with it, as Lambda does."""

from __future__ import annotations

from typing import Any


def matches(pattern: Any, value: Any) -> bool:
    """EventBridge-style pattern matching, the subset Lambda filter criteria use here:
    nested objects, lists of allowed literals, ``{"prefix": ...}`` and ``{"exists": ...}``."""
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return False
        for key, sub in pattern.items():
            if isinstance(sub, list) and any(isinstance(o, dict) and "exists" in o for o in sub):
                wanted = next(o["exists"] for o in sub if isinstance(o, dict) and "exists" in o)
                if (key in value) != wanted:
                    return False
                continue
            if key not in value or not matches(sub, value[key]):
                return False
        return True
    if isinstance(pattern, list):
        for option in pattern:
            if isinstance(option, dict) and "prefix" in option:
                if isinstance(value, str) and value.startswith(option["prefix"]):
                    return True
            elif option == value:
                return True
        return False
    return bool(pattern == value)


def wanted(patterns: list[Any], record: dict[str, Any]) -> bool:
    """Whether a consumer with these filter patterns is handed ``record`` (every record when
    it has none)."""
    return not patterns or any(matches(pattern, record) for pattern in patterns)
