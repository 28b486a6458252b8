"""The bundled demo toolset: four tools from a support desk, as Pydantic models.

`toolwire demo` replays the bundled corpus (`toolwire/samples/`) against this toolset, and
`--tools toolwire.demo_tools:demo_toolset` names it on the command line. The tools are small on
purpose; each one exists to show one kind of check:

* `create_ticket`: an enum (`low` / `high`) and an optional id with a pattern.
* `query_events`: Unix-seconds fields and a business check across two fields (`end > start`).
* `refund_order`: a `Decimal` amount with at most two decimal places.
* `lookup_order`: a pattern on the only field.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from toolwire.coercion import UNIT_KEY, UNIX_SECONDS
from toolwire.toolset import Toolset

__all__ = ["CreateTicket", "LookupOrder", "QueryEvents", "RefundOrder", "demo_toolset"]

_UNIX: dict[str, JsonValue] = {UNIT_KEY: UNIX_SECONDS}


class CreateTicket(BaseModel):
    """Open a support ticket."""

    # extra="forbid" so calls that bypass the Rust pre-check reject unknown fields too.
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200, description="One-line summary.")
    priority: Literal["low", "high"] = Field(description="How urgent the ticket is.")
    assignee: str | None = Field(
        default=None, pattern=r"^u_[0-9a-f]{8}$", description="User id of the assignee."
    )


class QueryEvents(BaseModel):
    """List the audit events between two instants."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=0, description="Start, in Unix seconds.", json_schema_extra=_UNIX)
    end: int = Field(ge=0, description="End (exclusive), in Unix seconds.", json_schema_extra=_UNIX)


class RefundOrder(BaseModel):
    """Refund part or all of an order."""

    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(pattern=r"^ORD-\d+$", description="The order, e.g. ORD-1042.")
    amount: Decimal = Field(gt=0, decimal_places=2, description="Amount to refund.")


class LookupOrder(BaseModel):
    """Fetch an order's status."""

    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(pattern=r"^ORD-\d+$", description="The order, e.g. ORD-1042.")


def _end_after_start(args: object) -> str | None:
    if isinstance(args, QueryEvents) and args.end <= args.start:
        return "end must be later than start"
    return None


def demo_toolset() -> Toolset:
    """A fresh `Toolset` of the four demo tools, with the `query_events` business check.

    Returns:
        The toolset (`create_ticket`, `query_events`, `refund_order`, `lookup_order`).
    """
    return Toolset(
        [CreateTicket, QueryEvents, RefundOrder, LookupOrder],
        checks={"query_events": _end_after_start},
    )
