"""``frozen``: ``@dataclass(frozen=True)`` built with one ``compile`` instead of six.

Python 3.11's ``dataclasses`` compiles each method it writes on its own: ``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` of a frozen class,
about 0.1 ms each. The layer defines some 80 frozen dataclasses, and a cold start imports
the 50 to 60 its route needs, so those compiles were a third of what importing a
handler cost on top of boto3 (docs/cold-start.md). ``frozen`` lets ``dataclasses`` do
everything but writing the methods (fields, defaults, ``__match_args__``, the class's
``__dataclass_fields__``, so ``fields``, ``replace``, ``asdict`` and ``is_dataclass``
work as before) and writes the same six methods, with the same semantics, in one
``compile`` (what Python 3.13's ``dataclasses`` does itself). tests/unit/test_values.py
compares each method with ``dataclass(frozen=True)``'s on the same classes.

What it takes: plain fields with or without ``default`` or ``default_factory``, and
``field(compare=False)`` / ``field(repr=False)`` / ``field(hash=...)``. A class with
``__post_init__``, a dataclass base or any of the six methods of its own is built by
``dataclass(frozen=True)`` itself, unchanged; one with ``InitVar``, keyword-only fields or
``field(init=False)`` is refused when it is defined (a TypeError at import, which every
test run meets): make it with ``dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

# What ``dataclass(frozen=True)`` says of a class it made (``__dataclass_params__``), taken
# from one, as the constructor of these parameters is private and changes between versions.
_FROZEN_PARAMS = dataclasses.dataclass(frozen=True)(type("_Params", (), {})).__dataclass_params__  # type: ignore[attr-defined]
_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T]) -> type[T]:
    """The class as ``@dataclass(frozen=True)`` would make it (the module's docstring)."""
    if (
        "__post_init__" in cls.__dict__
        or any(name in cls.__dict__ for name in _METHODS)
        or any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:])
    ):
        return dataclasses.dataclass(frozen=True)(cls)
    built = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(built)  # type: ignore[arg-type]  # the fields proper (no ClassVar)
    pseudo = [f for f in built.__dataclass_fields__.values() if f not in fields]  # type: ignore[attr-defined]
    if any("InitVar" in str(f.type) for f in pseudo) or any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"{cls.__qualname__} has InitVar, init=False or kw_only: use dataclass(frozen=True)")
    _write_methods(built, fields)
    built.__dataclass_params__ = _FROZEN_PARAMS  # type: ignore[attr-defined]
    return built


def _write_methods(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    compared = [f.name for f in fields if f.compare]
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    shown = [f.name for f in fields if f.repr]
    scope: dict[str, Any] = {
        "_object": object,
        "_MISSING": dataclasses.MISSING,
        "_FrozenInstanceError": dataclasses.FrozenInstanceError,
        "_cls": cls,
        "_fields": tuple(f.name for f in fields),
    }
    params = []
    assigns = []
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            assigns.append(
                f"  _object.__setattr__(self,{f.name!r},"
                f"_factory_{f.name}() if {f.name} is _MISSING else {f.name})"
            )
        else:
            if f.default is not dataclasses.MISSING:
                scope[f"_default_{f.name}"] = f.default
                params.append(f"{f.name}=_default_{f.name}")
            else:
                params.append(f.name)
            assigns.append(f"  _object.__setattr__(self,{f.name!r},{f.name})")

    def fields_of(who: str, of: list[str]) -> str:
        return "(" + "".join(f"{who}.{name}," for name in of) + ")"

    shown_text = ", ".join(f"{name}={{self.{name}!r}}" for name in shown)
    source = "\n".join(
        [
            "def __init__(self," + ",".join(params) + "):",
            *(assigns or ["  pass"]),
            "def __repr__(self):",
            f"  return f'{{self.__class__.__qualname__}}({shown_text})'",
            "def __eq__(self,other):",
            "  if other.__class__ is self.__class__:",
            f"    return {fields_of('self', compared)}=={fields_of('other', compared)}",
            "  return NotImplemented",
            "def __hash__(self):",
            f"  return hash({fields_of('self', hashed)})",
            "def __setattr__(self,name,value):",
            "  if type(self) is _cls or name in _fields:",
            "    raise _FrozenInstanceError(f'cannot assign to field {name!r}')",
            "  super(_cls,self).__setattr__(name,value)",
            "def __delattr__(self,name):",
            "  if type(self) is _cls or name in _fields:",
            "    raise _FrozenInstanceError(f'cannot delete field {name!r}')",
            "  super(_cls,self).__delattr__(name)",
        ]
    )
    exec(compile(source, f"<podium.values {cls.__qualname__}>", "exec"), scope)  # noqa: S102 - our own text
    for name in _METHODS:
        method: Callable[..., Any] = scope[name]
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        if name == "__repr__":
            method = reprlib.recursive_repr()(method)
        setattr(cls, name, method)
