# The classes below are made dataclasses by the test itself (``both``), out of mypy's sight.
# mypy: disable-error-code="type-var,attr-defined"
"""podium.values.frozen makes the same class as dataclass(frozen=True): each class below is
built by both, and every method is compared on the same instances."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, field
from decimal import Decimal
from typing import Any, ClassVar

import pytest

from podium.values import frozen


class Plain:
    a: int
    b: str


class Defaults:
    key: str
    score: Decimal = Decimal("1.5")
    tags: tuple[str, ...] = ()
    seen: Mapping[str, int] = field(default_factory=dict)
    note: str = field(default="", compare=False, repr=False)
    kind: ClassVar[str] = "shared"


class Empty:
    """No fields at all."""


class WithMethods:
    x: int

    @property
    def double(self) -> int:
        return 2 * self.x

    def plus(self, n: int) -> WithMethods:
        return dataclasses.replace(self, x=self.x + n)


class Unhashed:
    key: str
    cache: dict[str, int] = field(default_factory=dict, compare=False)


def both(cls: type) -> tuple[type, type]:
    """The class made by frozen and by dataclass(frozen=True), each from its own copy."""
    body = {name: v for name, v in cls.__dict__.items() if name not in ("__dict__", "__weakref__")}
    return frozen(type(cls.__name__, (), dict(body))), dataclasses.dataclass(frozen=True)(
        type(cls.__name__, (), body)
    )


Call = tuple[tuple[Any, ...], dict[str, Any]]  # positional and keyword arguments
CASES: list[tuple[type, list[Call]]] = [
    (Plain, [((1, "x"), {}), ((), {"a": 2, "b": "y"}), ((1, "x"), {})]),
    (
        Defaults,
        [
            (("k",), {}),
            (("k", Decimal("2")), {"tags": ("a",)}),
            (("k",), {"seen": {"m": 1}, "note": "ignored by eq and repr"}),
            (("k",), {"note": "other"}),
        ],
    ),
    (Empty, [((), {}), ((), {})]),
    (WithMethods, [((3,), {}), ((4,), {})]),
    (Unhashed, [(("a",), {}), (("a",), {"cache": {"z": 1}})]),
]


@pytest.mark.parametrize(("cls", "calls"), CASES, ids=[cls.__name__ for cls, _ in CASES])
def test_frozen_behaves_as_dataclass_frozen(
    cls: type, calls: list[tuple[tuple[Any, ...], dict[str, Any]]]
) -> None:
    ours, theirs = both(cls)
    made = [(ours(*args, **kwargs), theirs(*args, **kwargs)) for args, kwargs in calls]
    for mine, reference in made:
        assert repr(mine) == repr(reference)
        assert dataclasses.asdict(mine) == dataclasses.asdict(reference)
        assert dataclasses.astuple(mine) == dataclasses.astuple(reference)
        assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(reference)]
        assert dataclasses.is_dataclass(mine)
        assert ours.__match_args__ == theirs.__match_args__
        assert dataclasses.replace(mine) == mine
        assert copy.deepcopy(mine) == mine
        name = dataclasses.fields(mine)[0].name if dataclasses.fields(mine) else "anything"
        for target in (mine, reference):
            with pytest.raises(FrozenInstanceError):
                setattr(target, name, None)
            with pytest.raises(FrozenInstanceError):
                delattr(target, name)
        hashable = all(not isinstance(v, dict) for v in dataclasses.astuple(reference))
        if hashable:
            assert hash(mine) == hash(reference)
    for (a, ra), (b, rb) in ((x, y) for x in made for y in made):
        assert (a == b) == (ra == rb)
        assert (a != b) == (ra != rb)
    mine, reference = made[0]
    assert (mine == reference) is False  # another class: NotImplemented both ways
    params = vars(ours)["__dataclass_params__"]
    assert params.frozen
    assert params.eq
    assert vars(ours)["__init__"].__qualname__ == f"{cls.__name__}.__init__"


def test_arguments_are_checked_as_dataclass_checks_them() -> None:
    ours, theirs = both(Plain)
    for cls in (ours, theirs):
        with pytest.raises(TypeError):
            cls(1)
        with pytest.raises(TypeError):
            cls(1, "x", 3)
        with pytest.raises(TypeError):
            cls(1, b="x", c=3)


def test_default_factories_make_a_new_value_each_time() -> None:
    ours, _ = both(Defaults)
    one, two = ours("a"), ours("b")
    assert one.seen == {}
    assert one.seen is not two.seen


def test_methods_of_the_class_are_kept() -> None:
    ours, _ = both(WithMethods)
    assert ours(3).double == 6
    assert ours(3).plus(2) == ours(5)


@frozen
class Pickled:  # at module level: pickle finds a class by its name
    a: int
    b: tuple[str, ...] = ()


def test_instances_pickle() -> None:
    assert pickle.loads(pickle.dumps(Pickled(1, ("x",)))) == Pickled(1, ("x",))


def test_a_class_it_does_not_build_itself_is_left_to_dataclass() -> None:
    @frozen
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    assert Checked(1) == Checked(1)


def test_recursive_reprs_stop() -> None:
    ours, theirs = both(Unhashed)
    mine, reference = ours("a"), theirs("a")
    mine.cache["me"] = mine
    reference.cache["me"] = reference
    assert repr(mine) == repr(reference) == "Unhashed(key='a', cache={'me': ...})"


def test_what_it_does_not_write_itself_is_refused_when_the_class_is_defined() -> None:
    class Hidden:
        n: int
        seen: int = field(default=0, init=False)

    class KeywordOnly:
        n: int = field(kw_only=True)

    for cls in (Hidden, KeywordOnly):
        with pytest.raises(TypeError, match="use dataclass"):
            frozen(cls)
