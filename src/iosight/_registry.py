"""A tiny name -> implementation registry, one per family (readers, models, policies)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from iosight._errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Implementations of one family, registered by name where they are defined."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.family} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return add

    def get(self, name: str) -> T:
        if name not in self._items:
            raise UnknownNameError(self.family, name, self.names())
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())
