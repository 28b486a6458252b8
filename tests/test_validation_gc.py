"""Large arguments are validated with the cyclic garbage collector paused, and only when no
Python code can run inside the validation."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from toolwire import Assembler, ToolCall
from toolwire.toolset import Toolset
from toolwire.validation import GC_PAUSE_MIN_BYTES, Outcome, runs_python


class Item(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    items: list[Item]


class CheckedItem(BaseModel):
    sku: str
    qty: int

    @field_validator("qty")
    @classmethod
    def record_collector_state(cls, qty: int) -> int:
        SEEN_ENABLED.append(gc.isenabled())
        return qty


class CheckedOrder(BaseModel):
    items: list[CheckedItem]


SEEN_ENABLED: list[bool] = []

# Enough items that building the models allocates far more containers than a collection
# threshold: without the pause, collections run inside the validation.
ARGUMENTS = json.dumps({"items": [{"sku": f"s{i}", "qty": i} for i in range(3000)]})


def assembled(name: str, arguments: str) -> ToolCall:
    asm = Assembler()
    asm.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = asm.finish()
    return done


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs."""
    started: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield started
    finally:
        gc.callbacks.remove(record)


def test_model_building_alone_triggers_collections(collections: list[int]) -> None:
    # The control: what the pause spares.
    assert gc.isenabled()
    Order.model_validate_json(ARGUMENTS)
    assert len(collections) > 2


def test_large_arguments_validate_with_no_collection(collections: list[int]) -> None:
    tools, done = Toolset([Order]), assembled("order", ARGUMENTS)
    collections.clear()
    outcome = tools.validate(done)
    assert outcome.ok
    assert isinstance(outcome.model, Order) and len(outcome.model.items) == 3000
    # At most the one collection the paused allocations leave due, once the collector is back.
    assert len(collections) <= 1
    assert gc.isenabled()


def test_general_path_pauses_too(collections: list[int]) -> None:
    # A business check takes the validator's own path rather than the toolset's inline one.
    def check(order: BaseModel) -> None:
        assert gc.isenabled()

    tools, done = Toolset([Order], checks={"order": check}), assembled("order", ARGUMENTS)
    collections.clear()
    outcome = tools.validate(done)
    assert outcome.ok
    assert len(collections) <= 1
    assert gc.isenabled()


def test_collector_restored_when_validation_fails(collections: list[int]) -> None:
    bad = ARGUMENTS.replace('"qty": 2999', '"qty": "many"')
    assert bad != ARGUMENTS
    outcome: Outcome = Toolset([Order]).validate(assembled("order", bad))
    assert not outcome.ok
    assert outcome.errors[0].path == "/items/2999/qty"
    assert gc.isenabled()


def test_caller_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        assert Toolset([Order]).validate(assembled("order", ARGUMENTS)).ok
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_user_code_never_runs_with_the_collector_paused() -> None:
    SEEN_ENABLED.clear()
    arguments = ARGUMENTS.replace('"items"', '"items"', 1)
    assert len(arguments) >= GC_PAUSE_MIN_BYTES
    assert Toolset([CheckedOrder]).validate(assembled("checked_order", arguments)).ok
    assert len(SEEN_ENABLED) == 3000 and all(SEEN_ENABLED)


def test_small_arguments_are_not_paused(collections: list[int]) -> None:
    # Below the threshold the pause would cost more than the collections it could spare; the
    # collector stays on (nothing here forces a collection, so only its state is checked).
    small = json.dumps({"items": [{"sku": "a", "qty": 1}]})
    assert len(small) < GC_PAUSE_MIN_BYTES
    assert Toolset([Order]).validate(assembled("order", small)).ok
    assert gc.isenabled()


class WithFactory(BaseModel):
    tags: list[str] = Field(default_factory=lambda: ["x"])


class WithBuiltinFactory(BaseModel):
    tags: list[str] = Field(default_factory=list)


class WithPostInit(BaseModel):
    x: int

    def model_post_init(self, context: Any, /) -> None:
        del context


class WithInit(BaseModel):
    x: int

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)


class Nested(BaseModel):
    order: CheckedOrder


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (Order, False),
        (WithBuiltinFactory, False),
        (CheckedOrder, True),
        (Nested, True),
        (WithFactory, True),
        (WithPostInit, True),
        (WithInit, True),
    ],
)
def test_runs_python(model: type[BaseModel], expected: bool) -> None:
    assert runs_python(model.__pydantic_core_schema__) is expected
