"""Pickling: exceptions whose `__init__` takes other arguments than their `args`, and objects
that refuse it.

`BaseException.__reduce__` rebuilds an exception as `cls(*args)`, its message alone: an
`__init__` that takes the parts the message is written from then fails for missing arguments
(concurrent.futures and multiprocessing cannot hand it from a worker to the parent), or
writes its message around the message again.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn, SupportsIndex


class RebuiltWhole(BaseException):
    """Base of the exceptions whose `__init__` takes the parts their message is written from:
    pickled and copied, one is rebuilt without calling it, with its `args` (and so its `str`)
    and its attributes as they were."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_new_exception, (type(self), *self.args), self.__dict__)


def _new_exception(cls: type[BaseException], *args: object) -> BaseException:
    return cls.__new__(cls, *args)


class LiveState:
    """Base of the objects that hold live state (locks, threads, a store's connection, a
    stream's native state, counts shared by the calls of a request): a copy or another
    process's unpickled one could not share it, and would silently diverge.

    Pickling or copying one (`copy.copy` too, which would share half of it) raises a
    `TypeError` that says what to do instead, given by the subclass's `_not_copied`.
    """

    __slots__ = ()
    _not_copied: ClassVar[str]

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError(f"cannot pickle or copy {type(self).__name__}: {self._not_copied}")
