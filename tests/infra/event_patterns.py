"""A small matcher of EventBridge event patterns, the syntax Lambda's event filtering uses.

https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html: a pattern is
a JSON object whose leaves are arrays of rules; every key of the pattern must match (AND),
any rule of a leaf may match (OR); a leaf matches an array value if it matches one of its
elements.  Rules implemented: a literal (string, number, null), ``{"exists": bool}``,
``{"prefix": s}``, ``{"anything-but": [...]}``, ``{"numeric": [op, n, ...]}``.  A pattern
using anything else fails the test that meets it (no silent approximation).
"""

from __future__ import annotations

import operator
from typing import Any

_MISSING = object()
_OPS = {"<": operator.lt, "<=": operator.le, "=": operator.eq, ">": operator.gt, ">=": operator.ge}


def matches(pattern: dict[str, Any], event: Any) -> bool:
    if not isinstance(pattern, dict):
        raise ValueError(f"a pattern level must be an object, not {pattern!r}")
    for key, sub in pattern.items():
        value = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(sub, dict):
            if not matches(sub, value if isinstance(value, dict) else {}):
                return False
        elif isinstance(sub, list):
            if not any(_rule(rule, value) for rule in sub):
                return False
        else:
            raise ValueError(f"a pattern leaf must be an array of rules, not {sub!r}")
    return True


def _values(value: Any) -> list[Any]:
    if value is _MISSING:
        return []
    return value if isinstance(value, list) else [value]


def _rule(rule: Any, value: Any) -> bool:
    if not isinstance(rule, dict):
        return any(v == rule and type(v) is type(rule) for v in _values(value))
    if len(rule) != 1:
        raise ValueError(f"one operator per rule: {rule!r}")
    ((op, arg),) = rule.items()
    if op == "exists":
        return (value is not _MISSING and not isinstance(value, dict)) is bool(arg)
    if op == "prefix":
        return any(isinstance(v, str) and v.startswith(arg) for v in _values(value))
    if op == "anything-but":
        excluded = arg if isinstance(arg, list) else [arg]
        return any(v not in excluded for v in _values(value))
    if op == "numeric":
        pairs = list(zip(arg[::2], arg[1::2], strict=True))
        return any(
            isinstance(v, (int, float)) and all(_OPS[o](v, n) for o, n in pairs)
            for v in _values(value)
        )
    raise ValueError(f"rule {op!r} is not implemented by this matcher")
