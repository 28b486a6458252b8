"""The repair loop: how many times a model may fix a call before a person is asked.

`RepairPolicy.decide` turns each validated `Outcome` into one of three decisions:

* `Proceed`: the arguments are valid, run the tool;
* `Retry`: send the error payload back and let the model call again (at most `max_rounds`
  times per logical call, within `time_budget_s`);
* `Escalation`: stop retrying and ask the user or a human (budget spent, a value only the user
  can give, a business rule said no, or the failure cannot be fixed by retrying).

**What counts as the same logical call.** Attempts are counted per key
`(lineage, tool, slot)`. `lineage` is a string the caller chooses for the chain of turns that
repair each other, typically the conversation id plus the id of the user message that started
the exchange; a new user message should start a new lineage. `tool` is the tool name (calls that
name no registered tool share the key `"<unknown>"`, so a model that keeps inventing names is
still stopped). `slot` tells apart parallel calls to the same tool in one turn. `decide_turn`
numbers them: the k-th call to a tool in a turn continues the k-th logical call still open for
that tool (in the order they were first made), and calls beyond those start new logical calls.
A model re-issues only the calls that failed (the others have their results), in the same
order; a success or an escalation ends the logical call and forgets its count.

Every attempt is validated from scratch by `Toolset.validate`; the policy keeps only counts and
start times, never earlier arguments or errors, so the payload for a retry carries the latest
errors only.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from toolwire._pickling import LiveState
from toolwire.execution._checks import check_count, check_seconds
from toolwire.payloads import (
    MAX_RESULT_CHARS,
    Style,
    check_cap,
    failure_content,
    text,
    wrap_message,
)
from toolwire.validation import CallLike, FieldError, Outcome, answered_call, shown_text

__all__ = [
    "Escalation",
    "EscalationReason",
    "Proceed",
    "RepairDecision",
    "RepairPolicy",
    "Retry",
]

EscalationReason = Literal[
    "max_rounds", "time_budget", "needs_clarification", "business_error", "not_retryable"
]
UNKNOWN_TOOL_KEY = "<unknown>"
MAX_TRACKED = 10_000


@dataclass(frozen=True, slots=True)
class Proceed:
    """The arguments are valid: run the tool.

    Attributes:
        outcome: The successful outcome (its `model` or `value` holds the arguments).
        attempt: Which attempt succeeded (1 for the first).
    """

    outcome: Outcome
    attempt: int

    def to_message(
        self,
        call: CallLike | None = None,
        style: Style = "openai-chat",
        *,
        result: object,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        bedrock_status: bool = True,
        stateful: bool = False,
    ) -> dict[str, Any]:
        """The tool-result message carrying what the tool returned, as
        `Outcome.to_message` writes it: an `ExecutionResult` gives the executor's payload, an
        exception the tool raised a failure (`BusinessRuleError` with its reasons), a result
        that cannot be written an `invalid_result` error and one longer than
        `max_result_chars` (None: no cap) a `result_too_large` error. `call`,
        `bedrock_status` and `stateful` as in `Outcome.to_message`."""
        return self.outcome.to_message(
            call,
            style,
            attempt=self.attempt,
            result=result,
            max_result_chars=max_result_chars,
            bedrock_status=bedrock_status,
            stateful=stateful,
        )


@dataclass(frozen=True, slots=True)
class Retry:
    """The model should call again with corrected arguments.

    Attributes:
        outcome: The failed outcome of this attempt (only its errors are sent).
        attempt: Which attempt failed (1 for the first).
        rounds_left: Repair rounds still allowed after this one.
    """

    outcome: Outcome
    attempt: int
    rounds_left: int

    def to_message(
        self,
        call: CallLike | None = None,
        style: Style = "openai-chat",
        *,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        bedrock_status: bool = True,
        stateful: bool = False,
    ) -> dict[str, Any]:
        """The error payload for this attempt, in the provider's message shape, as
        `tool_messages` sends it: one longer than `max_result_chars` (None: no cap) without
        its details. `call`, `bedrock_status` and `stateful` as in `Outcome.to_message`."""
        return self.outcome.to_message(
            call,
            style,
            attempt=self.attempt,
            max_result_chars=max_result_chars,
            bedrock_status=bedrock_status,
            stateful=stateful,
        )


@dataclass(frozen=True, slots=True)
class Escalation:
    """Stop retrying: the user or a human has to decide.

    Attributes:
        tool: The tool name.
        lineage: The lineage the attempts were counted in.
        reason: Why the loop stopped.
        attempts: How many attempts were made.
        outcome: The latest outcome.
        question: A question to put to the user, in the outcome's language.
    """

    tool: str
    lineage: str
    reason: EscalationReason
    attempts: int
    outcome: Outcome
    question: str

    @property
    def errors(self) -> list[FieldError]:
        """The latest attempt's errors."""
        return self.outcome.errors

    def to_message(
        self,
        call: CallLike | None = None,
        style: Style = "openai-chat",
        *,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        bedrock_status: bool = True,
        stateful: bool = False,
    ) -> dict[str, Any]:
        """The final tool-result message: what went wrong and that the model must stop, as
        `tool_messages` sends it (`content`). `call`, `bedrock_status` and `stateful` as in
        `Outcome.to_message`."""
        call_id, answered = answered_call(self.outcome, call)
        content = self.content(max_result_chars=max_result_chars)
        return wrap_message(
            style,
            call_id,
            content,
            is_error=True,
            call=answered,
            bedrock_status=bedrock_status,
            stateful=stateful,
        )

    def content(self, *, max_result_chars: int | None = MAX_RESULT_CHARS) -> str:
        """The payload text of `to_message`; one longer than `max_result_chars` (None: no
        cap) without the field errors and the hint, as any failure payload past the cap."""
        check_cap(max_result_chars)
        outcome = self.outcome
        lang = outcome.lang
        # The name may be the model's own (an unknown tool): cut like any text it sent.
        tool = f'"{shown_text(outcome.tool or self.tool)}"'
        if self.reason == "needs_clarification":
            instruction = outcome.instruction()
            error_type = "needs_clarification"
            message = outcome.message
        elif self.reason in ("max_rounds", "time_budget"):
            instruction = text("instruction.escalate", lang, tool=tool)
            error_type = "escalated"
            message = (
                text("msg.escalated", lang, attempts=self.attempts)
                if self.reason == "max_rounds"
                else text("msg.time_budget", lang)
            )
        else:
            instruction = text("instruction.stop", lang, tool=tool)
            error_type = outcome.error_type
            message = outcome.message
        return failure_content(
            error_type=error_type,
            message=message,
            errors=outcome.errors,
            hint=outcome.hint,
            retryable=False,
            attempt=self.attempts,
            instruction=instruction,
            max_result_chars=max_result_chars,
        )


RepairDecision = Proceed | Retry | Escalation
"""What `RepairPolicy.decide` returns."""


@dataclass(slots=True)
class _Track:
    attempts: int
    started: float


class RepairPolicy(LiveState):
    """Counts repair rounds per logical call and decides retry or escalation.

    Args:
        max_rounds: Repair rounds allowed per logical call (default 2, so at most three
            attempts: the SRE-book figure of at most three tries).
        time_budget_s: Seconds from the first failed attempt after which no new round starts;
            None for no time limit.
        retry_business_errors: If true, a `business_error` is retried like a model error
            (for checks the model can satisfy, such as "date must be in the future").
        clock: A monotonic clock in seconds (injectable for tests).

    Raises:
        ValueError: If `max_rounds` is not a whole number >= 0 (a NaN or a fraction compared
            as no bound: the model was retried forever), or `time_budget_s` is not a finite
            number above zero.
    """

    _not_copied = "it counts each conversation's retries under a lock. Build one in each process"

    def __init__(
        self,
        max_rounds: int = 2,
        time_budget_s: float | None = None,
        *,
        retry_business_errors: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_count("max_rounds", max_rounds, low=0)
        check_seconds("time_budget_s", time_budget_s)
        self.max_rounds = max_rounds
        self.time_budget_s = time_budget_s
        self.retry_business_errors = retry_business_errors
        self._clock = clock
        self._tracks: dict[tuple[str, str, int], _Track] = {}
        # Agents run tool calls from several threads; the counts must not race.
        self._lock = threading.Lock()

    def _key(self, outcome: Outcome, lineage: str, slot: int) -> tuple[str, str, int]:
        unknown = outcome.error_type in ("unknown_tool", "missing_name") or not outcome.tool
        return (lineage, UNKNOWN_TOOL_KEY if unknown else outcome.tool, slot)

    def attempts(self, tool: str, *, lineage: str = "", slot: int = 0) -> int:
        """Failed attempts counted so far for a logical call (0 if none is open)."""
        with self._lock:
            track = self._tracks.get((lineage, tool, slot))
            return track.attempts if track else 0

    def reset(self, lineage: str | None = None) -> None:
        """Forget counts for one lineage, or for all of them."""
        with self._lock:
            if lineage is None:
                self._tracks.clear()
            else:
                for key in [k for k in self._tracks if k[0] == lineage]:
                    del self._tracks[key]

    def decide(self, outcome: Outcome, *, lineage: str = "", slot: int = 0) -> RepairDecision:
        """Decide what to do with one validated attempt.

        Args:
            outcome: The outcome of `Toolset.validate` for this attempt.
            lineage: The chain of turns this call belongs to (see the module docs).
            slot: Which call to this tool in the turn (0 for the first).

        Returns:
            `Proceed`, `Retry` or `Escalation`.
        """
        if not isinstance(cast(object, outcome), Outcome):
            raise TypeError(
                f"decide takes the Outcome of Toolset.validate, not {type(outcome).__name__}"
            )
        key = self._key(outcome, lineage, slot)
        now = self._clock()
        with self._lock:
            track = self._tracks.get(key)
            attempt = (track.attempts if track else 0) + 1
            if outcome.ok:
                self._tracks.pop(key, None)
                return Proceed(outcome, attempt)
            reason = self._stop_reason(outcome, attempt, track, now)
            if reason is not None:
                self._tracks.pop(key, None)
                return self._escalation(outcome, key, reason, attempt)
            if track is None:
                if len(self._tracks) >= MAX_TRACKED:
                    # Abandoned lineages must not grow memory without bound: drop the oldest.
                    del self._tracks[next(iter(self._tracks))]
                track = self._tracks[key] = _Track(0, now)
            track.attempts = attempt
            if not outcome.retryable:
                # A business error the policy retries (`retry_business_errors`): the model is
                # told to call again, not to give up.
                outcome = dataclasses.replace(outcome, retryable=True)
            return Retry(outcome, attempt, self.max_rounds - attempt)

    def decide_turn(
        self, outcomes: Sequence[Outcome], *, lineage: str = ""
    ) -> list[RepairDecision]:
        """`decide` for every outcome of one assistant turn, numbering slots per tool.

        A call to a tool that starts a new logical call continues an open call to a name that
        did not exist, if one is left over: the model corrected the name, and the attempts it
        spent on the wrong one count. Likewise a new call to a name that does not exist
        continues an open call to a tool that this turn does not call (the model misspelt it).

        Args:
            outcomes: The turn's outcomes, in call order.
            lineage: The chain of turns.

        Returns:
            One decision per outcome, in the same order.
        """
        given = cast(object, outcomes)
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
            raise TypeError(
                f"decide_turn takes the list of the turn's Outcomes, not {type(outcomes).__name__}"
            )
        for index, outcome in enumerate(outcomes):
            if not isinstance(cast(object, outcome), Outcome):
                raise TypeError(
                    f"outcomes[{index}] must be the Outcome of Toolset.validate, not "
                    f"{type(outcome).__name__}"
                )
        tools = [self._key(outcome, lineage, 0)[1] for outcome in outcomes]
        with self._lock:
            open_slots: dict[str, list[int]] = {tool: [] for tool in [*tools, UNKNOWN_TOOL_KEY]}
            for key_lineage, tool, slot in self._tracks:
                if key_lineage == lineage:
                    open_slots.setdefault(tool, []).append(slot)
        # Calls to a name that did not exist, which no such call of this turn continues: the
        # model may have corrected the name, and a new call to a tool then continues one of
        # them, so that renaming the tool does not start the count again.
        misnamed = sorted(open_slots[UNKNOWN_TOOL_KEY])[tools.count(UNKNOWN_TOOL_KEY) :]
        # Open calls to tools this turn does not continue: a new call to a name that does not
        # exist may be the same call misnamed (`ping`, then `pign`).
        orphans = [
            (tool, slot)
            for tool, slots in open_slots.items()
            if tool != UNKNOWN_TOOL_KEY
            for slot in sorted(slots)[tools.count(tool) :]
        ]
        seen: dict[str, int] = {}
        decisions: list[RepairDecision] = []
        for outcome, tool in zip(outcomes, tools, strict=True):
            k = seen.get(tool, 0)
            seen[tool] = k + 1
            slots = sorted(open_slots[tool])
            # The k-th call continues the k-th logical call still open for the tool; calls
            # beyond those are new logical calls, numbered after them.
            slot = slots[k] if k < len(slots) else (slots[-1] + 1 if slots else 0) + k - len(slots)
            if k >= len(slots) and tool != UNKNOWN_TOOL_KEY and misnamed:
                self._move(lineage, (UNKNOWN_TOOL_KEY, misnamed.pop(0)), (tool, slot))
            elif k >= len(slots) and tool == UNKNOWN_TOOL_KEY and orphans:
                self._move(lineage, orphans.pop(0), (tool, slot))
            decisions.append(self.decide(outcome, lineage=lineage, slot=slot))
        return decisions

    def _move(self, lineage: str, source: tuple[str, int], target: tuple[str, int]) -> None:
        """Continue the open logical call at `source` (tool, slot) under `target`."""
        with self._lock:
            track = self._tracks.pop((lineage, *source), None)
            if track is not None:
                self._tracks[(lineage, *target)] = track

    def _stop_reason(
        self, outcome: Outcome, attempt: int, track: _Track | None, now: float
    ) -> EscalationReason | None:
        if outcome.kind == "needs_clarification":
            return "needs_clarification"
        if outcome.kind == "business_error" and not self.retry_business_errors:
            return "business_error"
        if not outcome.retryable and outcome.kind != "business_error":
            return "not_retryable"
        if attempt > self.max_rounds:
            return "max_rounds"
        budget = self.time_budget_s
        if budget is not None and track is not None and now - track.started >= budget:
            return "time_budget"
        return None

    @staticmethod
    def _escalation(
        outcome: Outcome, key: tuple[str, str, int], reason: EscalationReason, attempt: int
    ) -> Escalation:
        lang = outcome.lang
        tool = shown_text(outcome.tool or key[1])
        if reason == "needs_clarification":
            question = text("question.clarify", lang, fields=", ".join(outcome.ask_user))
        else:
            # Paths and hints may hold the model's own keys: each cut like any text it sent.
            problems = "; ".join(
                shown_text(f"{e.path or '/'} {e.expected}" if e.expected else (e.hint or e.code))
                for e in outcome.errors[:3]
            ) or shown_text(outcome.message or outcome.error_type)
            question = text("question.escalate", lang, tool=tool, problems=problems)
        return Escalation(tool, key[0], reason, attempt, outcome, question)
