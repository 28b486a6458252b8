"""Model-facing payloads: message shapes, content, the text table, and never a missing result."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from toolwire import Assembler, ExecutionResult, Executor, MisuseError, ToolCall
from toolwire.execution import Call as Run
from toolwire.payloads import (
    MESSAGES,
    STYLES,
    Style,
    call_id_for,
    jsonable_result,
    text,
    tool_messages,
)
from toolwire.repair import Escalation, Proceed, RepairPolicy
from toolwire.toolset import Toolset
from toolwire.validation import BusinessRuleError, Outcome


class Lookup(BaseModel):
    """Look up an order."""

    order_id: int


TOOLS = Toolset([Lookup])


def calls(*specs: tuple[str | None, str, str]) -> list[ToolCall]:
    """Calls assembled by the core from (id, name, arguments)."""
    asm = Assembler()
    for index, (call_id, name, arguments) in enumerate(specs):
        asm.feed(index, id=call_id, name=name, arguments=arguments)
    return asm.finish()


def content_of(message: dict[str, Any]) -> str:
    if "functionResponse" in message:
        (content,) = message["functionResponse"]["response"].values()
        return content
    if "toolResult" in message:
        (block,) = message["toolResult"]["content"]
        return block["text"] if "text" in block else block["json"]["output"]
    for key in ("content", "output"):
        if key in message:
            return message[key]
    raise AssertionError(message)


def id_of(message: dict[str, Any]) -> str:
    if "functionResponse" in message:
        # Gemini gets no id that toolwire made up; the call is answered by name.
        return message["functionResponse"].get("id", "toolwire_?")
    if "toolResult" in message:
        return message["toolResult"]["toolUseId"]
    for key in ("tool_call_id", "call_id", "tool_use_id"):
        if key in message:
            return message[key]
    raise AssertionError(message)


def is_error(message: dict[str, Any]) -> bool:
    """Whether a message reports a failure, in the ways the shapes that tell it say it."""
    if "functionResponse" in message:
        return "error" in message["functionResponse"]["response"]
    if "toolResult" in message:
        return message["toolResult"]["status"] == "error"
    return message.get("is_error", False)


def test_failure_message_shapes() -> None:
    (bad,) = calls(("call_7", "lookup", '{"order_id": "abc"}'))
    outcome = TOOLS.validate(bad)
    chat = outcome.to_message(bad, "openai-chat", attempt=2)
    assert set(chat) == {"role", "tool_call_id", "content"}
    assert chat["role"] == "tool" and chat["tool_call_id"] == "call_7"
    responses = outcome.to_message(bad, "openai-responses")
    assert responses["type"] == "function_call_output" and responses["call_id"] == "call_7"
    anthropic = outcome.to_message(bad, "anthropic")
    assert anthropic["type"] == "tool_result" and anthropic["tool_use_id"] == "call_7"
    assert anthropic["is_error"] is True
    payload = json.loads(chat["content"])
    assert list(payload) == [
        "ok",
        "error_type",
        "message",
        "errors",
        "retryable",
        "attempt",
        "instruction",
    ]
    assert payload["ok"] is False and payload["retryable"] is True and payload["attempt"] == 2
    assert payload["errors"] == [
        {"path": "/order_id", "code": "type", "expected": "an integer", "got": '"abc"'}
    ]
    assert payload["instruction"] == (
        'Call "lookup" again with corrected arguments. Do not explain or apologise.'
    )
    # Compact JSON: no spaces after separators.
    assert '": ' not in chat["content"]


def test_success_message_takes_the_result() -> None:
    (good,) = calls(("call_1", "lookup", '{"order_id": 5}'))
    outcome = TOOLS.validate(good)
    with pytest.raises(ValueError, match="result"):
        outcome.to_message(good)
    assert outcome.to_message(good, result="shipped") == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "shipped",
    }
    anthropic = outcome.to_message(good, "anthropic", result={"total": Decimal("19.99")})
    assert anthropic == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": '{"total":"19.99"}',
    }
    assert "is_error" not in anthropic


def test_unknown_style_is_misuse() -> None:
    (bad,) = calls(("c", "lookup", "{}"))
    with pytest.raises(ValueError, match="style must be one of"):
        TOOLS.validate(bad).to_message(bad, "cohere")  # type: ignore[arg-type]


def test_every_template_has_both_languages_and_the_same_placeholders() -> None:
    for key, entry in MESSAGES.items():
        assert set(entry) == {"en", "zh"}, key
        placeholders = {lang: set(re.findall(r"{(\w+)}", t)) for lang, t in entry.items()}
        assert placeholders["en"] == placeholders["zh"], key
    assert text("expected.enum", "zh", values="1") == "以下值之一：1"  # noqa: RUF001


def test_call_without_id_gets_a_stable_synthetic_id() -> None:
    @dataclass(frozen=True)
    class NoId:
        id: str | None
        ordinal: int

    assert call_id_for(NoId(None, 3)) == "toolwire_3"
    assert call_id_for(NoId("x", 3)) == "x"


# ---------------------------------------------------------------------------------------------
# tool_messages


def test_tool_messages_mix_successes_failures_and_missing() -> None:
    batch = calls(
        ("a", "lookup", '{"order_id": 1}'),
        ("b", "lookup", '{"order_id": "x"}'),
        ("c", "lookup", '{"order_id": 3}'),
        ("d", "lookup", '{"order_id": 4}'),
        ("e", "lookup", '{"order_id": 5}'),
    )
    outcomes = TOOLS.validate_all(batch)
    results: dict[str | int, object] = {
        "a": {"status": "shipped"},
        "b": outcomes[1],
        "c": BusinessRuleError("order 3 is archived"),
        "d": RuntimeError("db password=hunter2 at /srv/app.py line 9"),
    }
    messages = tool_messages(batch, results, style="openai-chat")
    assert [m["tool_call_id"] for m in messages] == ["a", "b", "c", "d", "e"]
    payloads = [m["content"] for m in messages]
    assert payloads[0] == '{"status":"shipped"}'
    assert json.loads(payloads[1])["error_type"] == "validation"
    assert json.loads(payloads[2])["error_type"] == "business_rule"
    assert "archived" in payloads[2]
    assert json.loads(payloads[3])["error_type"] == "tool_failed"
    assert "hunter2" not in payloads[3] and "RuntimeError" not in payloads[3]
    assert json.loads(payloads[4])["error_type"] == "no_result"


class _InsufficientFunds(BusinessRuleError):
    """A rejection that calls `Exception.__init__` itself, as subclasses with their own
    arguments often do."""

    def __init__(self, balance: int) -> None:
        Exception.__init__(self, f"insufficient funds: balance {balance}")


class _Unexplained(BusinessRuleError):
    def __init__(self) -> None:
        Exception.__init__(self)


class _UnwritableRejection(BusinessRuleError):
    def __init__(self) -> None:
        Exception.__init__(self)

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_tool_messages_read_every_kind_of_business_rule_error() -> None:
    # A subclass that skipped `BusinessRuleError.__init__` had no `reasons`: the AttributeError
    # left the whole batch without messages. One str given as `reasons` was one reason a
    # character.
    one_string = BusinessRuleError("placeholder")
    one_string.reasons = "the account is frozen"  # type: ignore[assignment]
    batch = calls(*((i, "lookup", '{"order_id": 1}') for i in "abcd"))
    results: dict[str | int, object] = {
        "a": _InsufficientFunds(3),
        "b": one_string,
        "c": _Unexplained(),
        "d": {"status": "shipped"},
    }
    payloads = [json.loads(m["content"]) for m in tool_messages(batch, results)]
    assert [p.get("error_type") for p in payloads] == ["business_rule"] * 3 + [None]
    assert "insufficient funds: balance 3" in payloads[0]["message"]
    assert "the account is frozen" in payloads[1]["message"]
    assert "t; h; e" not in json.dumps(payloads[1])
    assert _InsufficientFunds(3).reasons == ["insufficient funds: balance 3"]
    assert _Unexplained().reasons == [] and one_string.reasons == ["the account is frozen"]
    assert _UnwritableRejection().reasons == []
    (broken,) = tool_messages(batch[:1], [_UnwritableRejection()])
    assert json.loads(broken["content"])["error_type"] == "business_rule"
    assert BusinessRuleError("a", 2).reasons == ["a", "2"]  # type: ignore[arg-type]


def test_tool_messages_with_a_sequence_and_ordinal_keys() -> None:
    batch = calls(("a", "lookup", "{}"), (None, "lookup", "{}"))
    by_position = tool_messages(batch, ["first"], style="openai-responses")
    assert by_position[0]["output"] == "first"
    assert json.loads(by_position[1]["output"])["error_type"] == "no_result"
    by_ordinal = tool_messages(batch, {1: "second"}, style="anthropic")
    assert by_ordinal[1]["content"] == "second"
    assert by_ordinal[1]["tool_use_id"] == call_id_for(batch[1])


def test_ok_outcome_without_a_result_is_reported_as_no_result() -> None:
    (good,) = calls(("a", "lookup", '{"order_id": 1}'))
    (message,) = tool_messages([good], {"a": TOOLS.validate(good)})
    assert json.loads(message["content"])["error_type"] == "no_result"


@dataclass(frozen=True)
class Call:
    id: str | None
    ordinal: int
    name: str | None = "lookup"


ENTRY = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(),
    st.builds(lambda: RuntimeError("boom")),
    st.builds(lambda: BusinessRuleError("no")),
    st.builds(
        lambda: Outcome(
            ok=False, kind="model_error", tool="lookup", call_id=None, error_type="validation"
        )
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"])), max_size=12),
    data=st.data(),
    style=st.sampled_from(STYLES),
)
def test_exactly_one_message_per_call_id_in_call_order(
    ids: list[str | None], data: st.DataObject, style: Style
) -> None:
    batch = [Call(call_id, ordinal) for ordinal, call_id in enumerate(ids)]
    answered = data.draw(st.sets(st.integers(0, max(len(batch) - 1, 0))))
    results: dict[str | int, object] = {
        ordinal: data.draw(ENTRY) for ordinal in sorted(answered) if ordinal < len(batch)
    }
    messages = tool_messages(batch, results, style=style)
    firsts: dict[str, Call] = {}
    for call in batch:
        firsts.setdefault(call_id_for(call), call)
    shown = [
        "toolwire_?" if style == "gemini" and re.fullmatch(r"toolwire_\d+", i) else i
        for i in firsts
    ]
    assert [id_of(m) for m in messages] == shown
    for message, call_id in zip(messages, firsts, strict=True):
        body = content_of(message)
        assert isinstance(body, str)
        owners = [c.ordinal for c in batch if call_id_for(c) == call_id]
        if not any(o in results for o in owners):
            assert json.loads(body)["error_type"] == "no_result"


class _BrokenText:
    def __str__(self) -> str:
        raise RuntimeError("boom")


_CYCLE: dict[str, Any] = {}
_CYCLE["self"] = _CYCLE
LONE = b"caf\xff".decode("utf-8", "surrogateescape")


@dataclass
class _Rows:
    counts: dict[Any, int]


@pytest.mark.parametrize(
    "result",
    [
        {1: "a", "1": "b"},
        [{"n": {None: 1, "null": 2}}],
        _Rows({2: 1, "2": 2}),
        {"items": ({1.5: "x", "1.5": "y"},)},
    ],
)
def test_a_result_whose_keys_are_one_json_key_is_not_sent_with_one_lost(result: object) -> None:
    # JSON keys are text: `{1: "a", "1": "b"}` went out as `{"1": "b"}`, one entry dropped.
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [result])
    assert json.loads(content_of(message))["error_type"] == "invalid_result"


@dataclass
class _Reading:
    level: Decimal
    drift: float


class _Gauge(BaseModel):
    level: Decimal
    drift: float


@pytest.mark.parametrize(
    ("result", "sent"),
    [
        # A non-finite number is null whatever its type: a Decimal's was `"NaN"`.
        (
            [Decimal("NaN"), float("nan"), Decimal("-Infinity"), Decimal("1.5")],
            [None] * 3 + ["1.5"],
        ),
        (Decimal("sNaN"), None),
        (_Reading(Decimal("Infinity"), 0.5), {"level": None, "drift": 0.5}),
        (
            _Gauge.model_construct(level=Decimal("NaN"), drift=math.inf),
            {"level": None, "drift": None},
        ),
        # A `None` key is JSON's `null`, as `json.dumps` writes it, not Python's `"None"`.
        ({None: 1, "a": {None: Decimal("2")}}, {"null": 1, "a": {"null": "2"}}),
        ({"None": 1, "NaN": "NaN"}, {"None": 1, "NaN": "NaN"}),
        # A range is a sequence, as a list, a tuple or an iterator is.
        (range(3), [0, 1, 2]),
        ({"pages": range(1, 4, 2)}, {"pages": [1, 3]}),
        (iter([1, 2]), [1, 2]),
        # A generator holding a NaN was read twice: sent as `[]`.
        ((x for x in (1.0, math.nan)), [1.0, None]),
        ({"gen": iter([math.inf])}, {"gen": [None]}),
    ],
)
def test_results_are_written_the_same_whatever_the_python_type(
    result: object, sent: object
) -> None:
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [result])
    assert json.loads(content_of(message)) == sent


@pytest.mark.parametrize(
    ("result", "sent"),
    [
        # Written, then written again re-spelt: the second read found the iterators spent.
        ({"rows": iter([1, 2]), "x": Decimal("NaN")}, {"rows": [1, 2], "x": None}),
        ({None: 0, "rows": (r for r in "ab")}, {"null": 0, "rows": ["a", "b"]}),
        ([map(str, [1, 2]), {"n": [iter([Decimal("Infinity")])]}], [["1", "2"], {"n": [[None]]}]),
        # Deep, beside values of many kinds, and under a mapping that is no dict.
        (
            {"a": ({"b": OrderedDict(c=iter([1]))}, [1, "x", None]), "x": Decimal("NaN")},
            {"a": [{"b": {"c": [1]}}, [1, "x", None]], "x": None},
        ),
        ([[[[[[(n for n in [7])]]]]], {"x": Decimal("NaN")}], [[[[[[[7]]]]]], {"x": None}]),
    ],
)
def test_a_result_holding_iterators_is_read_once(result: object, sent: object) -> None:
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [result])
    assert json.loads(content_of(message)) == sent


@dataclass(frozen=True)
class _Listing:
    rows: Any
    total: Any = None


class _Page(BaseModel):
    rows: Iterable[int]
    total: Any = None


class _Book(BaseModel):
    model_config = ConfigDict(extra="allow")

    title: str


def _results_holding_iterators() -> list[tuple[object, object]]:
    # Made anew for each test, as a tool makes its result: an iterator is read only once.
    return [
        (_Listing(iter([1, 2]), Decimal("NaN")), {"rows": [1, 2], "total": None}),
        (_Page(rows=iter([1, 2]), total=Decimal("Infinity")), {"rows": [1, 2], "total": None}),
        (_Page(rows=[3], total=(n for n in [4])), {"rows": [3], "total": [4]}),
        # Deep: a model in a dataclass in a list, and the iterator beside the value that makes
        # the result be written again (a lone surrogate, which pydantic-core refuses).
        (
            [_Listing(_Page(rows=iter([5]), total=iter([6])), "\udcff")],
            [{"rows": {"rows": [5], "total": [6]}, "total": "\udcff"}],
        ),
        (
            _Book(title="x", pages=iter([7]), note=Decimal("NaN")),
            {"title": "x", "pages": [7], "note": None},
        ),
    ]


@pytest.mark.parametrize("case", range(len(_results_holding_iterators())))
def test_iterators_inside_models_and_dataclasses_are_read_once(case: int) -> None:
    # A model or dataclass was written as it stood, reading its iterators, then again re-spelt
    # (a `Decimal` NaN) or by the slower writer (a lone surrogate): the second time found them
    # spent, and the model was sent `[]`.
    result, sent = _results_holding_iterators()[case]
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [result])
    assert json.loads(content_of(message)) == sent
    result, sent = _results_holding_iterators()[case]
    assert jsonable_result(result) == sent


def test_the_executor_reads_a_result_holding_iterators_once() -> None:
    assert jsonable_result({"rows": iter([1, 2]), "x": Decimal("NaN")}) == {
        "rows": [1, 2],
        "x": None,
    }
    assert jsonable_result({None: iter([3])}) == {"null": [3]}


def test_a_range_is_a_sequence_for_the_executor_too() -> None:
    assert jsonable_result(range(2)) == [0, 1]
    assert jsonable_result({"x": Decimal("NaN"), None: range(1)}) == {"x": None, "null": [0]}


def test_keys_that_stay_apart_in_json_are_sent() -> None:
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [{1: "a", 2: "b", "3": "c"}])
    assert json.loads(content_of(message)) == {"1": "a", "2": "b", "3": "c"}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("result", [_CYCLE, {"k": _BrokenText()}, {"text": LONE}, LONE, b"\xff"])
def test_a_result_that_cannot_be_sent_as_it_is_still_answers_its_call(
    style: Style, result: object
) -> None:
    made = calls(("call_a", "lookup", "{}"), ("call_b", "lookup", "{}"))
    messages = tool_messages(made, [{"hits": 3}, result], style=style)
    assert [id_of(m) for m in messages] == ["call_a", "call_b"]
    assert json.loads(content_of(messages[0])) == {"hits": 3}
    for message in messages:
        content_of(message).encode("utf-8")  # every client sends UTF-8
    second = content_of(messages[1])
    if result is _CYCLE or (isinstance(result, dict) and "k" in result):
        assert json.loads(second)["error_type"] == "invalid_result"
    elif isinstance(result, dict):
        assert json.loads(second) == result  # escaped in JSON, read back the same


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    "result", [_CYCLE, {"k": _BrokenText()}, {"text": LONE}, LONE, b"\xff", {"hits": 3}]
)
def test_an_outcome_answers_with_a_result_as_tool_messages_does(
    style: Style, result: object
) -> None:
    # The README's repair loop answers each call with `outcome.to_message(call, result=...)`:
    # a result that cannot be written raised there, and the call was left without a message.
    (call,) = calls(("call_a", "lookup", "{}"))
    outcome = Outcome.success(call, "lookup", lang="en")
    [expected] = tool_messages([call], [result], style=style)
    assert outcome.to_message(call, style, result=result) == expected


@pytest.mark.parametrize(
    "arguments, path",
    [
        ('{"to": "a", "amount": 10, "amount": 1000}', "/amount"),
        ('{"meta": {"n": 1, "n": 2}}', "/meta/n"),
    ],
)
def test_a_repeated_key_is_named_in_the_payload(arguments: str, path: str) -> None:
    class Transfer(BaseModel):
        to: str = ""
        amount: int = 0
        meta: dict[str, int] = {}

    tools = Toolset([Transfer])
    asm = Assembler(tools=tools)
    asm.feed(0, id="call_1", name="transfer", arguments=arguments)
    (call,) = asm.finish()
    outcome = tools.validate(call)
    assert outcome.error_type == "invalid_json"
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "unique")]
    (message,) = tool_messages([call], [outcome])
    assert json.loads(str(message["content"]))["errors"][0]["path"] == path


@pytest.mark.parametrize(
    "text, sent",
    [
        ("a\ud800b", "a\ufffdb"),
        ("x\udc80y", "x\ufffdy"),
        ("\ud83d\ude00", "😀"),
        (LONE, "caf\ufffd"),
    ],
)
def test_a_text_result_replaces_each_lone_surrogate_once(text: str, sent: str) -> None:
    (message,) = tool_messages(calls(("call_a", "lookup", "{}")), [text])
    assert content_of(message) == sent


# ---------------------------------------------------------------------------------------------
# tool_messages: which entry answers which call


def _executed(*specs: tuple[str, Any]) -> list[Any]:
    """`ExecutionResult`s of calls `(call_id, tool function)`, each carrying its call id."""
    tools = {f"t{i}": fn for i, (_, fn) in enumerate(specs)}
    ex = Executor(tools, breaker=False)
    return [ex.execute(Run(f"t{i}", call_id, {})) for i, (call_id, _) in enumerate(specs)]


def _fail(args: Any) -> Any:
    raise RuntimeError("boom")


@pytest.mark.parametrize("style", STYLES)
def test_results_in_completion_order_answer_their_own_calls(style: Style) -> None:
    # Results gathered as they completed were paired by position: a failed delete was
    # reported to the model as the other call's success.
    made = calls(("call_A", "get_balance", "{}"), ("call_B", "delete_account", "{}"))
    ok, failed = _executed(("call_A", lambda args: {"balance": 100}), ("call_B", _fail))
    for entries in ([failed, ok], {"call_B": failed, "call_A": ok}):
        messages = tool_messages(made, entries, style=style)
        assert [id_of(m) for m in messages] == ["call_A", "call_B"]
        assert json.loads(content_of(messages[0])) == ok.to_payload()
        assert json.loads(content_of(messages[1]))["ok"] is False
    outcomes = TOOLS.validate_all(calls(("call_A", "lookup", "{}"), ("call_B", "lookup", "1")))
    messages = tool_messages(made, [outcomes[1], outcomes[0]], style=style)
    assert [json.loads(content_of(m))["error_type"] for m in messages] == [
        outcomes[0].error_type,
        outcomes[1].error_type,
    ]


def test_results_that_name_no_call_or_the_wrong_one_are_refused() -> None:
    made = calls(("call_A", "get_balance", "{}"), ("call_B", "delete_account", "{}"))
    ok, failed = _executed(("call_A", lambda args: {"balance": 100}), ("call_B", _fail))
    with pytest.raises(MisuseError, match="call_B"):
        tool_messages(made[:1], [ok, failed])  # a result for a call not given
    with pytest.raises(MisuseError, match="call_B"):
        tool_messages(made, {"call_A": failed, "call_B": ok})  # keyed to the wrong ids
    with pytest.raises(MisuseError, match="no call"):
        tool_messages(made, ["a", "b", "c"])  # more plain results than calls
    with pytest.raises(MisuseError, match="no call"):
        tool_messages(made, {"call_A": "a", "call_Z": "z"})
    with pytest.raises(MisuseError, match="two entries"):
        tool_messages(made, [ok, ok])
    with pytest.raises(MisuseError, match="two entries"):
        tool_messages(made, ["plain", ok])  # position 0 and call_A's own id: one is dropped
    with pytest.raises(MisuseError, match="two entries"):
        tool_messages(made, {"call_A": "a", 0: "b"})


def test_results_without_their_own_id_keep_their_positions() -> None:
    # Calls without an id (answered as `toolwire_<ordinal>`) and a renamed duplicate id.
    made = calls((None, "lookup", "{}"), ("x", "lookup", "{}"), ("x", "lookup", "{}"))
    renamed = call_id_for(made[2])
    assert renamed != "x"
    ok, later = _executed(("x", lambda args: 1), (renamed, lambda args: 2))
    anonymous = ExecutionResult(call_id=None, tool="lookup", state="ok", value=0)
    messages = tool_messages(made, [anonymous, later, ok])
    assert [id_of(m) for m in messages] == [call_id_for(made[0]), "x", renamed]
    assert [json.loads(content_of(m))["result"] for m in messages] == [0, 1, 2]
    by_synthetic_id = tool_messages(made, {call_id_for(made[0]): "first"})
    assert content_of(by_synthetic_id[0]) == "first"


@pytest.mark.parametrize(
    "result",
    [
        {"when": __import__("datetime").date(2024, 3, 5), "total": Decimal("19.99")},
        Lookup(order_id=3),
        {"ids": (1, 2), "tags": frozenset({"a"})},
        __import__("uuid").UUID(int=7),
        bytearray(b"ab"),
    ],
    ids=["date-decimal", "model", "tuple-set", "uuid", "bytearray"],
)
def test_the_documented_conversions_are_sent_alike_by_executor_and_tool_messages(
    result: object,
) -> None:
    executed = Executor({"t": lambda args: result}, breaker=False).execute(Run("t", "c", {}))
    assert executed.ok
    (message,) = tool_messages(calls(("c", "t", "{}")), [result])
    assert json.loads(message["content"]) == executed.value


# ---------------------------------------------------------------------------------------------
# tool_messages: the cap on a result's size


@pytest.mark.parametrize("style", STYLES)
def test_a_result_past_the_cap_is_replaced_by_an_error_that_gives_its_size(style: Style) -> None:
    # An unpaginated dump went into the message whole (15 MB for two million numbers), which
    # the provider then refuses, or which fills the model's context.
    from toolwire.payloads import MAX_RESULT_CHARS

    made = calls(("call_a", "dump", "{}"), ("call_b", "dump", "{}"), ("call_c", "dump", "{}"))
    huge = list(range(200_000))
    text_at_cap = "x" * MAX_RESULT_CHARS
    messages = tool_messages(made, [huge, "y" * (MAX_RESULT_CHARS + 1), text_at_cap], style=style)
    size = len(json.dumps(huge, separators=(",", ":")))
    for message, shown in zip(messages[:2], (size, MAX_RESULT_CHARS + 1), strict=True):
        assert len(content_of(message)) < 1_000
        body = json.loads(content_of(message))
        assert body["error_type"] == "result_too_large" and body["retryable"] is True
        assert f"{shown} characters" in body["message"] and str(MAX_RESULT_CHARS) in body["message"]
        if style == "anthropic":
            assert message["is_error"] is True
    assert content_of(messages[2]) == text_at_cap
    (small_cap,) = tool_messages(made[:1], [{"rows": [1, 2, 3]}], max_result_chars=10)
    assert json.loads(content_of(small_cap))["error_type"] == "result_too_large"
    (uncapped,) = tool_messages(made[:1], [huge], style=style, max_result_chars=None)
    assert json.loads(content_of(uncapped)) == huge
    (lookup,) = calls(("call_a", "lookup", '{"order_id": 1}'))
    (expected,) = tool_messages([lookup], [huge], style=style)
    assert TOOLS.validate(lookup).to_message(lookup, style, result=huge) == expected
    with pytest.raises(ValueError, match="max_result_chars"):
        tool_messages(made, [], max_result_chars=0)


def test_an_execution_result_past_the_cap_tells_the_model_what_happened() -> None:
    from toolwire.execution import ToolSpec

    def dump(args: Any) -> list[int]:
        return list(range(200_000))

    ex = Executor({"dump": dump, "write": ToolSpec(dump, side_effects=True)}, breaker=False)
    read, write = ex.execute_all([Run("dump", "call_a", {}), Run("write", "call_b", {})])
    assert read.ok and write.ok and read.value == dump({})  # the program keeps the whole value
    full = len(json.dumps(read.to_payload(), separators=(",", ":")))
    for result, retryable in ((read, True), (write, False)):
        body = json.loads(result.content())
        assert body["ok"] is False and body["state"] == "ok"
        error = body["error"]
        assert error["type"] == "result_too_large" and error["retryable"] is retryable
        assert (error["size"], error["limit"]) == (full, 100_000)
    assert json.loads(read.content(max_result_chars=None)) == read.to_payload()
    made = calls(("call_a", "dump", "{}"), ("call_b", "write", "{}"))
    messages = tool_messages(made, [read, write], style="anthropic")
    assert [m["is_error"] for m in messages] == [True, True]
    assert [m["content"] for m in messages] == [read.content(), write.content()]
    loose = tool_messages(made, [read, write], max_result_chars=2_000_000)
    assert json.loads(loose[0]["content"]) == read.to_payload()


class _GatewayTimeout(Exception):
    status_code = 504  # ambiguous for a write: its outcome is unknown


@pytest.mark.parametrize("style", STYLES)
def test_an_execution_result_passed_as_a_result_gives_the_executors_payload(
    style: Style,
) -> None:
    # The README's loop with the executor behind it passes `result=executor.execute(...)`: the
    # whole dataclass (ledger key, hashes, timings) went to the model, as a success even for a
    # write whose outcome is unknown.
    from toolwire.repair import RepairPolicy

    def refund(args: Any) -> None:
        raise _GatewayTimeout("upstream 504")

    ex = Executor({"lookup": _ok_tool}, breaker=False)
    ex.register("refund", refund, side_effects=True)
    (lookup, refund_call) = calls(
        ("call_a", "lookup", '{"order_id": 1}'), ("call_b", "refund", '{"order_id": 1}')
    )
    for call in (lookup, refund_call):
        outcome = Outcome.success(call, call.name or "", lang="en")
        result = ex.execute(Run(call.name or "", call.id, {"order_id": 1}))
        [expected] = tool_messages([call], [result], style=style)
        assert outcome.to_message(call, style, result=result) == expected
        (decision,) = RepairPolicy().decide_turn([outcome], lineage="conv")
        assert decision.to_message(call, style, result=result) == expected
        assert result.idempotency_key is None or result.idempotency_key not in content_of(expected)
    failed = ex.execute(Run("refund", "call_b", {"order_id": 1}))
    assert failed.state == "unknown_outcome"
    message = Outcome.success(refund_call, "refund").to_message(refund_call, style, result=failed)
    assert json.loads(content_of(message))["ok"] is False
    if style == "anthropic":
        assert message["is_error"] is True
    with pytest.raises(MisuseError, match="call_b"):
        Outcome.success(lookup, "lookup").to_message(lookup, style, result=failed)


def _ok_tool(args: Any) -> dict[str, int]:
    return {"hits": 3}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("result", [_CYCLE, {"k": _BrokenText()}, "y" * 100_001, {"hits": 3}])
def test_a_proceed_decision_answers_with_a_result_as_the_outcome_does(
    style: Style, result: object
) -> None:
    # `Proceed.to_message` sent a result of any size and raised on one it could not write, so
    # its call got no message at all.
    from toolwire.repair import Proceed, RepairPolicy

    (call,) = calls(("call_a", "lookup", '{"order_id": 1}'))
    outcome = TOOLS.validate(call)
    (decision,) = RepairPolicy().decide_turn([outcome], lineage="conv")
    assert isinstance(decision, Proceed)
    expected = outcome.to_message(call, style, attempt=decision.attempt, result=result)
    assert decision.to_message(call, style, result=result) == expected
    assert len(content_of(expected)) < 1_000 or result == {"hits": 3}
    loose = decision.to_message(call, style, result="y" * 100_001, max_result_chars=None)
    assert content_of(loose) == "y" * 100_001


def _one_call() -> ToolCall:
    assembler = Assembler()
    assembler.feed(0, id="c1", name="f", arguments="{}")
    return assembler.finish()[0]


@pytest.mark.parametrize("call", ["c1", None, {"id": "c1", "ordinal": 0}])
def test_something_that_is_no_call_is_a_type_error_saying_what_to_pass(call: Any) -> None:
    # Each raised AttributeError ('str' object has no attribute 'id') from inside.
    with pytest.raises(TypeError, match=r"must be a ToolCall \(from Assembler.finish\)"):
        call_id_for(call)
    with pytest.raises(TypeError, match=r"calls\[1\] must be a ToolCall"):
        tool_messages([_one_call(), call], ["ok", "ok"])


@pytest.mark.parametrize("calls", ["c1", b"c1", {"c1": 1}, 5])
def test_tool_messages_refuses_what_is_no_list_of_calls(calls: Any) -> None:
    # A string was read character by character, each an AttributeError.
    with pytest.raises(TypeError, match="calls must be a list of ToolCalls"):
        tool_messages(calls, [])


@pytest.mark.parametrize("lang", ["fr", "EN", None])
def test_tool_messages_refuses_a_language_it_has_no_texts_in(lang: Any) -> None:
    # It wrote English without a word, where `Toolset` and `Executor` refuse the setting.
    with pytest.raises(ValueError, match="lang must be 'en' or 'zh', not"):
        tool_messages([_one_call()], ["ok"], lang=lang)


@pytest.mark.parametrize("cap", [True, 1.5, "100", -5])
def test_a_result_cap_that_is_no_positive_int_is_refused_everywhere(cap: Any) -> None:
    # `True` was a cap of one character (every result refused as too large), and a failed
    # outcome's `to_message` took any cap, a negative one too, without a word.
    call = _one_call()
    failed = Outcome.failure(call, "f", "validation", retryable=True)
    with pytest.raises(ValueError, match="max_result_chars must be"):
        tool_messages([call], ["ok"], max_result_chars=cap)
    with pytest.raises(ValueError, match="max_result_chars must be"):
        failed.to_message(call, max_result_chars=cap)


@pytest.mark.parametrize("style", STYLES)
def test_an_outcome_answers_only_its_own_call(style: Style) -> None:
    # Without the call, a call that had no id was answered with the id "" (refused by every
    # provider, so the call went unanswered); with another call, that call got this one's
    # verdict, where `tool_messages` refuses exactly that.
    no_id, a, b = calls(
        (None, "lookup", '{"order_id": "x"}'),
        ("A", "lookup", '{"order_id": "x"}'),
        ("B", "lookup", "{}"),
    )
    outcome = TOOLS.validate(no_id)
    # An outcome of `Toolset.validate` knows the id its call is answered with; one built
    # without the call's ordinal does not.
    unknown = dataclasses.replace(outcome, synthetic_id=None)
    with pytest.raises(MisuseError, match=r"pass the call, to_message\(call, \.\.\.\)"):
        unknown.to_message(style=style)
    assert id_of(outcome.to_message(no_id, style)).startswith("toolwire_")
    assert outcome.to_message(style=style) == outcome.to_message(no_id, style)
    assert id_of(TOOLS.validate(a).to_message(style=style)) == "A"
    with pytest.raises(MisuseError, match="the outcome of call 'A' does not answer call 'B'"):
        TOOLS.validate(a).to_message(b, style)
    escalation = RepairPolicy(max_rounds=0).decide(TOOLS.validate(a))
    assert isinstance(escalation, Escalation)
    with pytest.raises(MisuseError, match="the outcome of call 'A' does not answer call 'B'"):
        escalation.to_message(b, style)
    assert id_of(escalation.to_message(a, style)) == "A"


def test_gemini_and_bedrock_results_are_what_their_apis_take() -> None:
    # There was no shape for them: `style="gemini"` raised, though the assembler reads both.
    from botocore.session import get_session
    from botocore.validate import ParamValidator
    from google.genai import types

    no_id, bad, empty, unknown, alike = calls(
        (None, "lookup", '{"order_id": 1}'),
        ("g1", "lookup", '{"order_id": "x"}'),
        ("g2", "lookup", '{"order_id": 2}'),
        ("g3", "looküp", "{}"),
        ("toolwire_9", "lookup", '{"order_id": 3}'),  # sent by the model, though it looks ours
    )
    batch = [no_id, bad, empty, unknown, alike]
    entries = [{"r": 1}, TOOLS.validate(bad), "", TOOLS.validate(unknown), 3]

    parts = tool_messages(batch, entries, style="gemini")
    content = types.Content.model_validate({"role": "user", "parts": parts})
    responses = [part.function_response for part in content.parts or []]
    assert [(r.id, r.name) for r in responses if r] == [
        (None, "lookup"),  # toolwire's own id is not Gemini's: answered by name alone
        ("g1", "lookup"),
        ("g2", "lookup"),
        ("g3", "looküp"),  # the name as the model sent it
        ("toolwire_9", "lookup"),
    ]
    assert [is_error(m) for m in parts] == [False, True, False, True, False]
    assert json.loads(content_of(parts[1]))["error_type"] == "validation"

    blocks = tool_messages(batch, entries, style="bedrock-converse")
    shape = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    request = {"modelId": "m", "messages": [{"role": "user", "content": blocks}]}
    assert not ParamValidator().validate(request, shape.input_shape).has_errors()
    ids = [m["toolResult"]["toolUseId"] for m in blocks]
    assert ids == ["toolwire_0", "g1", "g2", "g3", "toolwire_9"]
    statuses = [m["toolResult"]["status"] for m in blocks]
    assert statuses == ["success", "error", "success", "error", "success"]
    # Bedrock refuses a blank text block: an empty result goes as JSON.
    assert blocks[2]["toolResult"]["content"] == [{"json": {"output": ""}}]

    # The repair loop's messages take the same shapes.
    escalation = RepairPolicy(max_rounds=0).decide(TOOLS.validate(bad))
    gemini = escalation.to_message(bad, "gemini")["functionResponse"]
    assert (gemini["id"], gemini["name"], list(gemini["response"])) == ("g1", "lookup", ["error"])
    bedrock = TOOLS.validate(no_id).to_message(no_id, "bedrock-converse", result=7)
    assert bedrock["toolResult"] == {
        "toolUseId": "toolwire_0",
        "content": [{"text": "7"}],
        "status": "success",
    }


def test_an_unknown_tool_payload_lists_the_closest_names_not_every_tool() -> None:
    # Every name was listed: 300 tools made a 20 KB payload, sent again in every round.
    specs: list[dict[str, Any]] = [
        {"name": f"get_{word}_{i}", "description": "d", "parameters": {"type": "object"}}
        for word in ("order", "user", "ticket")
        for i in range(100)
    ]
    (call,) = calls(("c", "get_ticket_42x", "{}"))
    message = Toolset(specs).validate(call).to_message(call)
    payload = json.loads(message["content"])
    assert payload["error_type"] == "unknown_tool" and len(message["content"]) < 1_000
    listed = re.findall(r'"(get_\w+)"', payload["message"].split("Available tools:")[1])
    assert len(listed) == 20 and listed[0] == "get_ticket_42"
    assert payload["message"].endswith(" (and 280 more).")
    (nameless,) = calls(("c", "", "{}"))
    outcome = Toolset(specs, lang="zh").validate(nameless)
    assert outcome.error_type == "missing_name"
    assert outcome.message and outcome.message.endswith(text("list.more", "zh", count=280) + "。")


@pytest.mark.parametrize(
    ("raised", "error_type"),
    [(BusinessRuleError("order is closed"), "business_rule"), (OSError("pw=x"), "tool_failed")],
)
def test_an_exception_given_as_result_answers_as_tool_messages_does(
    raised: Exception, error_type: str
) -> None:
    # `to_message(result=exc)` wrote "returned a value that cannot be sent as JSON"
    # (`invalid_result`), and a business rule's reasons were lost.
    (call,) = calls(("c", "lookup", '{"order_id": 1}'))
    outcome = TOOLS.validate(call)
    proceed = RepairPolicy().decide(outcome)
    assert isinstance(proceed, Proceed)
    for style in STYLES:
        (expected,) = tool_messages([call], [raised], style=style)
        assert json.loads(content_of(expected))["error_type"] == error_type
        assert outcome.to_message(call, style, result=raised) == expected
        assert proceed.to_message(call, style, result=raised) == expected
    assert "pw=x" not in json.dumps(outcome.to_message(call, result=raised))
