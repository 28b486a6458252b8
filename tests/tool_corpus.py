"""A corpus of realistic tool definitions for the differential test (`test_tool_corpus.py`).

Written in the style of real tools: MCP servers (filesystem, GitHub, Slack, Postgres, browser
automation), OpenAPI-generated tools (payments, issue trackers, shops) and Pydantic models as
people write them. `MODELS` holds Pydantic model classes and `PLAIN` plain tool dicts; both are
plain data, so a new tool is one more entry.
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AliasChoices,
    AnyUrl,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    EmailStr,
    Field,
    HttpUrl,
    IPvAnyAddress,
    Json,
    NaiveDatetime,
    RootModel,
    SecretStr,
    Tag,
    conint,
    constr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from typing_extensions import TypedDict

try:
    from enum import StrEnum
except ImportError:  # Python 3.10

    class StrEnum(str, Enum):  # type: ignore[no-redef]
        pass


# --- enums -----------------------------------------------------------------------------------


class Priority(str, Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Severity(IntEnum):
    INFO = 1
    WARNING = 2
    ERROR = 3


class Color(StrEnum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Sort(str, Enum):
    CREATED = "created"
    UPDATED = "updated"
    COMMENTS = "comments"


class Mixed(Enum):
    ONE = 1
    TWO = "two"


# --- filesystem MCP --------------------------------------------------------------------------


class ReadFile(BaseModel):
    """Read the complete contents of a file from the file system."""

    path: str = Field(description="Absolute path")
    head: int | None = Field(default=None, ge=1, description="First N lines")
    tail: int | None = Field(default=None, ge=1)


class EditOperation(BaseModel):
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText")


class EditFile(BaseModel):
    """Make line-based edits to a text file."""

    path: str
    edits: list[EditOperation] = Field(min_length=1)
    dry_run: bool = Field(default=False, alias="dryRun")


class WriteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    content: str
    encoding: Literal["utf-8", "latin-1", "ascii"] = "utf-8"
    mode: Annotated[str, Field(pattern=r"^0?[0-7]{3}$")] | None = None


class ListDirectory(BaseModel):
    path: str
    pattern: str | None = None
    exclude_patterns: list[str] = Field(default_factory=list, alias="excludePatterns")
    max_depth: conint(ge=0, le=10) = 2  # type: ignore[valid-type]


class MoveFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    source: str
    destination: str
    overwrite: bool = False


class SearchFiles(BaseModel):
    path: str
    pattern: constr(min_length=1, max_length=200)  # type: ignore[valid-type]
    include_hidden: bool = False
    file_types: set[Literal["py", "rs", "md", "txt", "json"]] = set()


class FileInfo(BaseModel):
    paths: frozenset[str] = Field(min_length=1, max_length=20)


# --- GitHub MCP ------------------------------------------------------------------------------


class CreateIssue(BaseModel):
    """Create a new issue in a GitHub repository."""

    owner: str
    repo: str
    title: str = Field(min_length=1, max_length=256)
    body: str | None = None
    assignees: list[str] = []
    labels: list[str] | None = None
    milestone: int | None = Field(default=None, gt=0)


class ListIssues(BaseModel):
    owner: str
    repo: str
    state: Literal["open", "closed", "all"] = "open"
    sort: Sort = Sort.CREATED
    direction: Literal["asc", "desc"] | None = None
    since: datetime | None = None
    page: int = Field(default=1, ge=1)
    per_page: int = Field(default=30, ge=1, le=100)


class FileChange(BaseModel):
    path: str
    content: str


class PushFiles(BaseModel):
    owner: str
    repo: str
    branch: str = Field(pattern=r"^[A-Za-z0-9._/-]+$")
    files: list[FileChange]
    message: str


class ReviewComment(BaseModel):
    path: str
    line: int = Field(ge=1)
    side: Literal["LEFT", "RIGHT"] = "RIGHT"
    body: str


class CreatePullRequestReview(BaseModel):
    owner: str
    repo: str
    pull_number: int
    event: Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"]
    body: str | None = None
    comments: list[ReviewComment] | None = None
    commit_id: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] | None = None


class SearchCode(BaseModel):
    q: str = Field(max_length=256)
    order: Literal["asc", "desc"] | None = None
    per_page: Annotated[int, Field(ge=1, le=100)] = 30


class MergePullRequest(BaseModel):
    owner: str
    repo: str
    pull_number: int
    merge_method: Literal["merge", "squash", "rebase"] = "merge"
    commit_title: str | None = None


# --- Slack -----------------------------------------------------------------------------------


class Block(BaseModel):
    type: Literal["section", "divider", "header"]
    text: str | None = None


class PostMessage(BaseModel):
    channel_id: str = Field(pattern=r"^[CDG][A-Z0-9]{8,}$")
    text: str = Field(max_length=4000)
    thread_ts: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    blocks: list[Block] | None = None
    unfurl_links: bool = True


class AddReaction(BaseModel):
    channel_id: str
    timestamp: str
    reaction: str = Field(pattern=r"^[a-z0-9_+-]+$", description="Emoji name without colons")


class GetChannelHistory(BaseModel):
    channel_id: str
    limit: int = Field(default=10, ge=1, le=1000)
    oldest: float | None = None
    inclusive: bool | None = None


class SetStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")
    status_text: str = Field(max_length=100)
    status_emoji: str | None = None
    expiration: datetime | None = None


# --- Postgres --------------------------------------------------------------------------------


class Query(BaseModel):
    """Run a read-only SQL query."""

    sql: str
    params: list[str | int | float | bool | None] = []
    timeout_ms: int = Field(default=5000, ge=100, le=60000, multiple_of=100)


class DescribeTable(BaseModel):
    schema_name: str = Field(default="public", alias="schema")
    table: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class InsertRows(BaseModel):
    table: str
    rows: list[dict[str, str | int | float | bool | None]] = Field(min_length=1, max_length=500)
    on_conflict: Literal["error", "ignore", "update"] = "error"


class ExplainQuery(BaseModel):
    sql: str
    analyze: bool = False
    format: Literal["text", "json", "yaml", "xml"] = "text"


# --- browser automation ----------------------------------------------------------------------


class Navigate(BaseModel):
    url: HttpUrl
    wait_until: Literal["load", "domcontentloaded", "networkidle"] = "load"
    timeout: float = Field(default=30.0, gt=0, le=300)


class Click(BaseModel):
    selector: str
    button: Literal["left", "right", "middle"] = "left"
    click_count: Annotated[int, Field(ge=1, le=3)] = 1
    modifiers: list[Literal["Alt", "Control", "Meta", "Shift"]] = []


class Screenshot(BaseModel):
    name: str
    selector: str | None = None
    width: int = Field(default=800, ge=1, le=4096)
    height: int = Field(default=600, ge=1, le=4096)
    full_page: bool = False


class Fill(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    selector: str
    value: str
    press_enter: bool = False
    delay_ms: int | None = None


class Viewport(BaseModel):
    width: int = Field(ge=320)
    height: int = Field(ge=240)


class NewPage(BaseModel):
    url: AnyUrl | None = None
    viewport: tuple[int, int] | None = None
    user_agent: str | None = None
    extra_headers: dict[str, str] = {}


class Evaluate(BaseModel):
    script: str = Field(max_length=10000)
    args: list[Any] = []


class Scroll(BaseModel):
    direction: Literal["up", "down", "left", "right"]
    amount: int = Field(default=300, multiple_of=50)


# --- payments (Stripe-like) ------------------------------------------------------------------


class Address(BaseModel):
    line1: str
    line2: str | None = None
    city: str
    postal_code: str
    country: str = Field(pattern=r"^[A-Z]{2}$")


class CreateCustomer(BaseModel):
    email: EmailStr
    name: str | None = None
    address: Address | None = None
    metadata: dict[str, str] = Field(default_factory=dict, max_length=50)
    tax_exempt: Literal["none", "exempt", "reverse"] = "none"


class CreateCharge(BaseModel):
    amount: int = Field(gt=0, le=99999999, description="In cents")
    currency: str = Field(min_length=3, max_length=3)
    customer: str | None = Field(default=None, pattern=r"^cus_[A-Za-z0-9]+$")
    capture: bool = True
    description: str | None = None


class Refund(BaseModel):
    charge: str
    amount: Decimal | None = Field(default=None, gt=0, decimal_places=2)
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = None


class PriceTier(BaseModel):
    up_to: int | Literal["inf"]
    unit_amount: Decimal


class CreatePrice(BaseModel):
    product: str
    currency: str
    tiers: list[PriceTier] = Field(min_length=1)
    billing_scheme: Literal["per_unit", "tiered"] = "tiered"
    interval: Literal["day", "week", "month", "year"] | None = None


class Invoice(BaseModel):
    customer_id: str
    due: date
    lines: list[tuple[str, Decimal]]
    memo: str | None = None


class CardPayment(BaseModel):
    method: Literal["card"]
    card_token: str
    save: bool = False


class BankPayment(BaseModel):
    method: Literal["bank"]
    iban: str = Field(pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")


class WalletPayment(BaseModel):
    method: Literal["wallet"]
    provider: Literal["apple_pay", "google_pay"]


class Pay(BaseModel):
    amount: Decimal = Field(gt=0)
    payment: CardPayment | BankPayment | WalletPayment = Field(discriminator="method")


class ApiKeyAuth(BaseModel):
    api_key: SecretStr
    region: Literal["us", "eu"] = "us"


class Connect(BaseModel):
    account: str
    auth: ApiKeyAuth
    webhook: HttpUrl | None = None


# --- issue tracker (Jira-like) ---------------------------------------------------------------


class JiraIssue(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    project_key: str = Field(pattern=r"^[A-Z][A-Z0-9]{1,9}$")
    summary: str = Field(max_length=255)
    issue_type: Literal["Bug", "Task", "Story", "Epic"]
    priority: Priority = Priority.MEDIUM
    story_points: float | None = Field(default=None, ge=0, le=100)
    due_date: date | None = None
    labels: set[str] = set()


class Transition(BaseModel):
    issue_key: str = Field(pattern=r"^[A-Z][A-Z0-9]+-\d+$")
    transition_id: int
    comment: str | None = None
    resolution: Literal["Fixed", "Won't Fix", "Duplicate"] | None = None


class LogWork(BaseModel):
    issue_key: str
    time_spent: timedelta
    started: datetime
    comment: str = ""


class JqlSearch(BaseModel):
    jql: str
    start_at: int = Field(default=0, ge=0)
    max_results: int = Field(default=50, ge=0, le=100)
    fields: list[str] = ["summary", "status"]
    expand: list[Literal["renderedFields", "names", "changelog"]] | None = None


class SprintUpdate(BaseModel):
    sprint_id: int
    state: Literal["future", "active", "closed"]
    start: datetime | None = None
    end: datetime | None = None
    goal: str | None = None


class Alert(BaseModel):
    severity: Severity
    message: str
    color: Color = Color.RED


# --- shop (Shopify-like) ---------------------------------------------------------------------


class Variant(BaseModel):
    sku: str
    price: Decimal = Field(ge=0, max_digits=10, decimal_places=2)
    inventory: int = Field(default=0, ge=0)
    options: dict[str, str] = {}


class CreateProduct(BaseModel):
    title: str
    body_html: str | None = None
    vendor: str | None = None
    status: Literal["active", "draft", "archived"] = "draft"
    tags: list[str] = []
    variants: list[Variant] = Field(min_length=1, max_length=100)


class OrderLine(BaseModel):
    variant_id: int
    quantity: int = Field(ge=1)


class CreateOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: EmailStr | None = None
    line_items: list[OrderLine]
    shipping_address: Address | None = None
    financial_status: Literal["pending", "paid", "refunded"] = "pending"
    note_attributes: dict[str, str] | None = None


class AdjustInventory(BaseModel):
    inventory_item_id: int
    location_id: int
    available_adjustment: int = Field(ge=-10000, le=10000)


class Discount(BaseModel):
    code: constr(pattern=r"^[A-Z0-9]{4,16}$")  # type: ignore[valid-type]
    percent: Annotated[Decimal, Field(gt=0, le=100)] | None = None
    fixed: Annotated[Decimal, Field(gt=0)] | None = None
    starts_at: datetime
    ends_at: datetime | None = None
    once_per_customer: bool = False


# --- scheduling, misc ------------------------------------------------------------------------


class CreateEvent(BaseModel):
    title: str
    day: date
    start: time
    duration: timedelta = timedelta(hours=1)
    attendees: list[EmailStr] = []
    location: str | None = None
    reminders: list[Annotated[int, Field(ge=0, le=40320)]] = [10]


class SetAlarm(BaseModel):
    at: time
    label: str | None = Field(default=None, max_length=30)
    repeat: set[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = set()


class GetWeather(BaseModel):
    """Current weather for a place."""

    city: str
    unit: Literal["celsius", "fahrenheit"] = "celsius"
    days: int = Field(default=1, ge=1, le=14)


class Geo(BaseModel):
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class NearbySearch(BaseModel):
    center: Geo
    radius_m: int = Field(default=1000, gt=0, le=50000)
    kinds: list[Literal["restaurant", "cafe", "bar", "museum"]] = []
    open_now: bool | None = None


class FirewallRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: IPvAnyAddress
    port: int = Field(ge=1, le=65535)
    protocol: Literal["tcp", "udp", "icmp"] = "tcp"
    action: Literal["allow", "deny"]


class DnsRecord(BaseModel):
    name: str
    type: Literal["A", "AAAA", "CNAME", "MX", "TXT"]
    value: str
    ttl: int = Field(default=3600, ge=60, le=86400)
    priority: int | None = Field(default=None, ge=0, le=65535)


class Track(BaseModel):
    id: str
    user_id: str | None = None
    props: Json[dict[str, int]] | None = None


class RunJob(BaseModel):
    job_id: str
    config: Json[Any]


class SendEmail(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=False)
    to: list[EmailStr] = Field(min_length=1, max_length=50)
    cc: list[EmailStr] = []
    subject: str = Field(max_length=200)
    body: str
    html: bool = False
    send_at: datetime | None = None


class Login(BaseModel):
    username: str
    password: SecretStr
    otp: Annotated[str, Field(pattern=r"^\d{6}$")] | None = None


class StoreSecret(BaseModel):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    value: SecretStr = Field(min_length=8)
    ttl: timedelta | None = None


class Lookup(BaseModel):
    id: Annotated[str, Field(min_length=36, max_length=36)]


class UuidLookup(BaseModel):
    request_id: Any = None
    record_id: Annotated[str, Field(pattern=r"^[0-9a-f-]{36}$")]


class TreeNode(BaseModel):
    name: str
    children: list[TreeNode] = []


class CreateTree(BaseModel):
    root: TreeNode
    max_depth: int = Field(default=5, le=20)


class Comment(BaseModel):
    author: str
    text: str
    replies: list[Comment] | None = None


class PostThread(BaseModel):
    thread: Comment


class Expr(BaseModel):
    op: Literal["and", "or", "not", "eq"]
    args: list[Expr | str | int]


class FilterRows(BaseModel):
    table: str
    where: Expr | None = None
    limit: int = 100


class Circle(BaseModel):
    kind: Literal["circle"] = "circle"
    radius: float = Field(gt=0)


class Rect(BaseModel):
    kind: Literal["rect"] = "rect"
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class Draw(BaseModel):
    shapes: list[Annotated[Circle | Rect, Field(discriminator="kind")]]
    canvas: Literal["a4", "letter"] = "a4"


def _shape_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return "c" if "radius" in value else "r"
    return "c" if hasattr(value, "radius") else "r"


class DrawCallable(BaseModel):
    shape: Annotated[
        Annotated[Circle, Tag("c")] | Annotated[Rect, Tag("r")], Discriminator(_shape_tag)
    ]


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImagePart(BaseModel):
    type: Literal["image"]
    url: HttpUrl
    detail: Literal["low", "high", "auto"] = "auto"


class Compose(BaseModel):
    parts: list[TextPart | ImagePart] = Field(min_length=1)


class Tagged(BaseModel):
    value: Literal[1, 2, 3] | Literal["auto"]
    mixed: Mixed = Mixed.ONE


class Settings(BaseModel):
    model_config = ConfigDict(extra="allow")
    theme: Literal["light", "dark"] = "light"
    font_size: int = Field(default=14, ge=8, le=72)


class StrictFields(BaseModel):
    count: int = Field(strict=True)
    ratio: float = Field(strict=True, ge=0, le=1)
    name: str


class StrictModel(BaseModel):
    model_config = ConfigDict(strict=True)
    amount: int
    flag: bool


class LaxModel(BaseModel):
    model_config = ConfigDict(strict=False)
    amount: int
    ratio: float
    flag: bool
    when: date | None = None


class Matrix(BaseModel):
    rows: list[list[float]] = Field(min_length=1, max_length=10)
    name: str | None = None


class Point3(BaseModel):
    xyz: tuple[float, float, float]
    label: str | None = None


class VarTuple(BaseModel):
    ids: tuple[int, ...]
    pair: tuple[str, int] | None = None


class Counts(BaseModel):
    by_day: dict[date, int] = {}
    by_name: dict[str, Annotated[int, Field(ge=0)]]


class NestedMaps(BaseModel):
    groups: dict[str, list[Address]]


class Tags(RootModel[list[str]]):
    pass


class Labeled(BaseModel):
    tags: Tags
    primary: str | None = None


class Money(RootModel[Decimal]):
    pass


class Transfer(BaseModel):
    amount: Money
    to_account: str


class MovieTD(TypedDict):
    title: str
    year: int


class AddMovies(BaseModel):
    movies: list[MovieTD]


class ConfigTD(TypedDict, total=False):
    verbose: bool
    level: Literal["debug", "info"]


class RunWithConfig(BaseModel):
    cmd: str
    config: ConfigTD = {}


@dataclasses.dataclass
class Coord:
    x: int
    y: int


class MoveTo(BaseModel):
    target: Coord
    speed: float = 1.0


class Hours(BaseModel):
    opens: time
    closes: time
    weekdays: list[conint(ge=0, le=6)]  # type: ignore[valid-type]


class Measure(BaseModel):
    value: float = Field(allow_inf_nan=False)
    unit: Literal["mm", "cm", "m", "km"]
    precision: int = Field(default=2, ge=0, le=10)


class BigNumbers(BaseModel):
    account: int = Field(ge=0)
    balance: Decimal
    ratio: float | None = None


class PageRequest(BaseModel):
    cursor: str | None = None
    limit: int = Field(default=20, ge=1, le=200)
    order_by: list[Literal["name", "-name", "created", "-created"]] = ["-created"]


class Translate(BaseModel):
    text: str = Field(min_length=1, max_length=5000)
    source: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[A-Z]{2})?$")
    target: str = Field(pattern=r"^[a-z]{2}(-[A-Z]{2})?$")
    formality: Literal["default", "more", "less"] = "default"


class Upload(BaseModel):
    filename: str = Field(pattern=r"^[^/\\]+$")
    content_base64: str
    content_type: str = "application/octet-stream"
    size: int = Field(ge=0, le=10_485_760)


class Deploy(BaseModel):
    service: str
    image: str = Field(pattern=r"^[a-z0-9./-]+:[A-Za-z0-9._-]+$")
    replicas: int = Field(default=1, ge=0, le=50)
    env: dict[str, str] = {}
    canary: float | None = Field(default=None, ge=0, le=1)


class ScaleTo(BaseModel):
    service: str
    replicas: Annotated[int, Field(ge=0, le=100, multiple_of=1)]
    reason: str | None = None


class EmptyTool(BaseModel):
    """A tool without parameters."""


class OnlyOptional(BaseModel):
    verbose: bool | None = None
    format: Literal["json", "text"] | None = None


class AnyPayload(BaseModel):
    payload: Any
    meta: dict[str, Any] = {}


class OptionalNoDefault(BaseModel):
    note: str | None
    count: int | None


class Survey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rating: conint(ge=1, le=5)  # type: ignore[valid-type]
    nps: int = Field(ge=0, le=10)
    answers: dict[str, Literal["yes", "no", "maybe"]]
    comment: str | None = Field(default=None, max_length=500)


class Reminder(BaseModel):
    text: str
    when: datetime
    repeat_every: timedelta | None = None
    channel: Literal["sms", "email", "push"] = Field(default="push", alias="via")


class MoveItem(BaseModel):
    """Pydantic's own schema names one key per field; these read several."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)
    item_id: int = Field(ge=1)
    target_folder: str
    keep_copy: bool = False
    label: str | None = Field(default=None, validation_alias=AliasChoices("label", "title"))


def _csv(value: Any) -> Any:
    return value.split(",") if isinstance(value, str) else value


class TagItems(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: Annotated[list[int], BeforeValidator(_csv)]
    tags: set[str] = Field(default=set(), max_length=3)
    mode: Literal["add", "remove"] = "add"

    @field_validator("mode", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class LegacyPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    count: int = 1

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, value: Any) -> Any:
        if isinstance(value, dict) and "title" in value:
            value = {**value, "name": value["title"]}
            del value["title"]
        return value


class EmailChannel(BaseModel):
    channel_type: Literal["email"] = Field(alias="channelType")
    address: EmailStr


class SmsChannel(BaseModel):
    channel_type: Literal["sms"] = Field(alias="channelType")
    number: str = Field(pattern=r"^\+\d{7,15}$")


class Subscribe(BaseModel):
    channels: list[Annotated[EmailChannel | SmsChannel, Field(discriminator="channel_type")]]
    token: SecretStr


class ClockIn(BaseModel):
    """Local wall-clock times, as a time-tracking tool keeps them."""

    employee_id: int
    at: NaiveDatetime
    breaks: list[NaiveDatetime] = []


Entry = TypeVar("Entry")


class Paged(BaseModel, Generic[Entry]):
    entries: list[Entry] = Field(max_length=50)
    next_cursor: str | None = None


MODELS: list[type[BaseModel]] = [
    ClockIn,
    Paged[Address],
    MoveItem,
    TagItems,
    LegacyPayload,
    Subscribe,
    ReadFile,
    EditFile,
    WriteFile,
    ListDirectory,
    MoveFile,
    SearchFiles,
    FileInfo,
    CreateIssue,
    ListIssues,
    PushFiles,
    CreatePullRequestReview,
    SearchCode,
    MergePullRequest,
    PostMessage,
    AddReaction,
    GetChannelHistory,
    SetStatus,
    Query,
    DescribeTable,
    InsertRows,
    ExplainQuery,
    Navigate,
    Click,
    Screenshot,
    Fill,
    NewPage,
    Evaluate,
    Scroll,
    CreateCustomer,
    CreateCharge,
    Refund,
    CreatePrice,
    Invoice,
    Pay,
    Connect,
    JiraIssue,
    Transition,
    LogWork,
    JqlSearch,
    SprintUpdate,
    Alert,
    CreateProduct,
    CreateOrder,
    AdjustInventory,
    Discount,
    CreateEvent,
    SetAlarm,
    GetWeather,
    NearbySearch,
    FirewallRule,
    DnsRecord,
    Track,
    RunJob,
    SendEmail,
    Login,
    StoreSecret,
    Lookup,
    UuidLookup,
    CreateTree,
    PostThread,
    FilterRows,
    Draw,
    DrawCallable,
    Compose,
    Tagged,
    Settings,
    StrictFields,
    StrictModel,
    LaxModel,
    Matrix,
    Point3,
    VarTuple,
    Counts,
    NestedMaps,
    Labeled,
    Transfer,
    AddMovies,
    RunWithConfig,
    MoveTo,
    Hours,
    Measure,
    BigNumbers,
    PageRequest,
    Translate,
    Upload,
    Deploy,
    ScaleTo,
    EmptyTool,
    OnlyOptional,
    AnyPayload,
    OptionalNoDefault,
    Survey,
    Reminder,
    Viewport,
]


# --- plain JSON-Schema tools -----------------------------------------------------------------


def _tool(name: str, parameters: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "description": description or name.replace("_", " "),
        "parameters": parameters,
    }


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        node["required"] = required
    node.update(extra)
    return node


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}
B = {"type": "boolean"}

PLAIN: list[dict[str, Any]] = [
    # MCP filesystem / git servers, as they publish them (zod-to-json-schema output).
    _tool(
        "fs_read_multiple",
        _obj(
            {"paths": {"type": "array", "items": S, "minItems": 1}},
            ["paths"],
            additionalProperties=False,
            **{"$schema": "http://json-schema.org/draft-07/schema#"},
        ),
    ),
    _tool(
        "fs_tree",
        _obj(
            {
                "path": S,
                "depth": {"type": "integer", "minimum": 0, "maximum": 8, "default": 3},
                "exclude": {"type": "array", "items": S, "default": []},
            },
            ["path"],
            additionalProperties=False,
        ),
    ),
    _tool("fs_list_allowed", {"type": "object", "properties": {}}),
    _tool("fs_noop", {"type": "object"}),
    _tool("git_status", _obj({"repo_path": S}, ["repo_path"])),
    _tool(
        "git_log",
        _obj(
            {
                "repo_path": S,
                "max_count": {"type": "integer", "default": 10, "exclusiveMinimum": 0},
                "since": {"type": "string", "format": "date-time"},
                "author": {"type": ["string", "null"]},
            },
            ["repo_path"],
        ),
    ),
    _tool(
        "git_commit",
        _obj(
            {
                "repo_path": S,
                "message": {"type": "string", "minLength": 1, "maxLength": 72},
                "amend": {"type": "boolean", "default": False},
                "files": {"type": "array", "items": S, "uniqueItems": True},
            },
            ["repo_path", "message"],
            additionalProperties=False,
        ),
    ),
    _tool(
        "gh_create_branch",
        _obj(
            {
                "owner": S,
                "repo": S,
                "branch": {"type": "string", "pattern": "^(?!/)[\\w./-]+$"},
                "from_branch": {"type": "string", "description": "Source branch"},
            },
            ["owner", "repo", "branch"],
        ),
    ),
    _tool(
        "gh_search_repos",
        _obj(
            {
                "query": S,
                "page": {"type": "number", "minimum": 1},
                "perPage": {"type": "number", "minimum": 1, "maximum": 100},
                "sort": {"enum": ["stars", "forks", "help-wanted-issues", "updated"]},
            },
            ["query"],
        ),
    ),
    _tool(
        "gh_update_issue",
        _obj(
            {
                "owner": S,
                "repo": S,
                "issue_number": {"type": "integer"},
                "state": {"type": "string", "enum": ["open", "closed"]},
                "labels": {"type": "array", "items": {"type": "string"}},
                "milestone": {"type": ["integer", "null"]},
            },
            ["owner", "repo", "issue_number"],
            additionalProperties=False,
        ),
    ),
    # Slack
    _tool(
        "slack_list_channels",
        _obj(
            {
                "limit": {"type": "integer", "default": 100, "minimum": 1, "maximum": 200},
                "cursor": {"type": "string"},
                "types": {
                    "type": "array",
                    "items": {"enum": ["public_channel", "private_channel", "mpim", "im"]},
                    "uniqueItems": True,
                },
            }
        ),
    ),
    _tool(
        "slack_reply",
        _obj(
            {
                "channel_id": {"type": "string", "pattern": "^[CG][A-Z0-9]+$"},
                "thread_ts": {"type": "string", "pattern": "^[0-9]+\\.[0-9]{6}$"},
                "text": {"type": "string", "maxLength": 4000},
            },
            ["channel_id", "thread_ts", "text"],
        ),
    ),
    _tool(
        "slack_schedule",
        _obj(
            {
                "channel": S,
                "text": S,
                "post_at": {"type": "integer", "minimum": 0, "x-unit": "unix-seconds"},
            },
            ["channel", "text", "post_at"],
        ),
    ),
    # Postgres / SQL
    _tool(
        "pg_query",
        _obj({"sql": {"type": "string", "minLength": 1}}, ["sql"], additionalProperties=False),
    ),
    _tool(
        "pg_insert",
        _obj(
            {
                "table": {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$"},
                "row": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                    "minProperties": 1,
                },
            },
            ["table", "row"],
        ),
    ),
    _tool(
        "pg_bulk",
        _obj(
            {
                "statements": {
                    "type": "array",
                    "items": _obj(
                        {"sql": S, "params": {"type": "array"}},
                        ["sql"],
                        additionalProperties=False,
                    ),
                    "maxItems": 20,
                },
                "transaction": {"type": "boolean"},
            },
            ["statements"],
        ),
    ),
    _tool(
        "sqlite_create_table",
        _obj(
            {
                "name": S,
                "columns": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": S,
                            "type": {"enum": ["TEXT", "INTEGER", "REAL", "BLOB"]},
                            "nullable": {"type": "boolean"},
                        },
                        "required": ["name", "type"],
                    },
                    "minItems": 1,
                },
            },
            ["name", "columns"],
        ),
    ),
    # Browser automation (puppeteer / playwright MCP)
    _tool(
        "browser_navigate",
        _obj({"url": {"type": "string", "format": "uri"}}, ["url"], additionalProperties=False),
    ),
    _tool(
        "browser_select",
        _obj({"selector": S, "values": {"type": "array", "items": S}}, ["selector", "values"]),
    ),
    _tool(
        "browser_wait",
        _obj(
            {
                "time": {"type": "number", "minimum": 0, "maximum": 60},
                "text": S,
                "textGone": S,
            }
        ),
    ),
    _tool(
        "browser_press_key",
        _obj(
            {
                "key": {"type": "string", "minLength": 1},
                "modifiers": {
                    "type": "array",
                    "items": {"enum": ["Alt", "Control", "Meta", "Shift"]},
                },
            },
            ["key"],
        ),
    ),
    _tool(
        "browser_resize",
        _obj(
            {
                "size": {
                    "type": "array",
                    "prefixItems": [
                        {"type": "integer", "minimum": 1},
                        {"type": "integer", "minimum": 1},
                    ],
                    "items": False,
                    "minItems": 2,
                }
            },
            ["size"],
        ),
    ),
    # Stripe-like, generated from OpenAPI 3.0 (nullable, anyOf with empty-string enum)
    _tool(
        "stripe_create_payment_intent",
        _obj(
            {
                "amount": {"type": "integer", "minimum": 1},
                "currency": {"type": "string", "maxLength": 3, "minLength": 3},
                "customer": {"type": "string", "maxLength": 5000},
                "description": {"type": "string", "maxLength": 1000, "nullable": True},
                "metadata": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"type": "string"}},
                        {"type": "string", "enum": [""]},
                    ]
                },
                "capture_method": {
                    "type": "string",
                    "enum": ["automatic", "automatic_async", "manual"],
                },
                "payment_method_types": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 5000},
                },
            },
            ["amount", "currency"],
        ),
    ),
    _tool(
        "stripe_update_subscription",
        _obj(
            {
                "subscription": S,
                "cancel_at_period_end": B,
                "proration_behavior": {"enum": ["always_invoice", "create_prorations", "none"]},
                "trial_end": {"anyOf": [{"type": "string", "enum": ["now"]}, {"type": "integer"}]},
                "items": {
                    "type": "array",
                    "items": _obj(
                        {"price": S, "quantity": {"type": "integer", "minimum": 0}, "deleted": B},
                        additionalProperties=False,
                    ),
                },
            },
            ["subscription"],
        ),
    ),
    _tool(
        "stripe_list_charges",
        _obj(
            {
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "created": {
                    "anyOf": [
                        _obj({"gt": I, "gte": I, "lt": I, "lte": I}, additionalProperties=False),
                        {"type": "integer"},
                    ]
                },
                "starting_after": {"type": "string", "nullable": True},
            }
        ),
    ),
    _tool(
        "stripe_refund",
        _obj(
            {
                "charge": {"type": "string", "pattern": "^ch_"},
                "amount": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0},
                "reason": {
                    "type": "string",
                    "enum": ["duplicate", "fraudulent", "requested_by_customer"],
                    "nullable": True,
                },
            },
            ["charge"],
        ),
    ),
    # Jira-like
    _tool(
        "jira_create_issue",
        _obj(
            {
                "fields": _obj(
                    {
                        "project": _obj({"key": S}, ["key"]),
                        "summary": {"type": "string", "maxLength": 255},
                        "issuetype": _obj({"name": {"enum": ["Bug", "Task", "Story"]}}, ["name"]),
                        "priority": _obj({"id": {"type": "string", "pattern": "^[1-5]$"}}),
                        "duedate": {"type": "string", "format": "date"},
                        "labels": {
                            "type": "array",
                            "items": {"type": "string", "pattern": "^\\S+$"},
                        },
                    },
                    ["project", "summary", "issuetype"],
                )
            },
            ["fields"],
        ),
    ),
    _tool(
        "jira_add_worklog",
        _obj(
            {
                "issueIdOrKey": S,
                "timeSpentSeconds": {"type": "integer", "minimum": 60},
                "started": {"type": "string", "format": "date-time"},
                "comment": S,
            },
            ["issueIdOrKey", "timeSpentSeconds"],
            dependentRequired={"started": ["timeSpentSeconds"]},
        ),
    ),
    _tool(
        "jira_search",
        _obj(
            {
                "jql": S,
                "startAt": {"type": "integer", "minimum": 0},
                "maxResults": {"type": "integer", "minimum": 0, "maximum": 100},
                "validateQuery": {"enum": ["strict", "warn", "none", True, False]},
                "fields": {"type": "array", "items": S, "contains": {"const": "summary"}},
            },
            ["jql"],
        ),
    ),
    # Shopify-like
    _tool(
        "shop_update_variant",
        _obj(
            {
                "id": {"type": "integer", "minimum": 1},
                "price": {"type": "string", "pattern": "^\\d+\\.\\d{2}$"},
                "compare_at_price": {"type": ["string", "null"], "pattern": "^\\d+\\.\\d{2}$"},
                "inventory_policy": {"enum": ["deny", "continue"]},
                "weight": {"type": "number", "minimum": 0},
                "weight_unit": {"enum": ["g", "kg", "oz", "lb"]},
            },
            ["id"],
        ),
    ),
    _tool(
        "shop_create_fulfillment",
        _obj(
            {
                "order_id": I,
                "tracking": _obj(
                    {
                        "number": S,
                        "company": S,
                        "url": {"type": "string", "format": "uri"},
                    },
                    ["number"],
                ),
                "notify_customer": {"type": "boolean", "default": True},
                "line_items": {
                    "type": "array",
                    "items": _obj({"id": I, "quantity": {"type": "integer", "minimum": 1}}, ["id"]),
                    "minItems": 1,
                },
            },
            ["order_id"],
        ),
    ),
    _tool(
        "shop_metafield",
        _obj(
            {
                "namespace": {"type": "string", "minLength": 3, "maxLength": 255},
                "key": {"type": "string", "pattern": "^[a-z0-9_]+$"},
                "type": {"enum": ["single_line_text_field", "number_integer", "boolean", "json"]},
                "value": {},
            },
            ["namespace", "key", "type", "value"],
            additionalProperties=False,
        ),
    ),
    # $defs / definitions with $ref
    _tool(
        "crm_create_contact",
        {
            "type": "object",
            "$defs": {
                "phone": _obj(
                    {
                        "number": {"type": "string", "pattern": "^\\+[1-9]\\d{6,14}$"},
                        "kind": {"enum": ["mobile", "work", "home"]},
                    },
                    ["number"],
                    additionalProperties=False,
                ),
            },
            "properties": {
                "name": S,
                "email": {"type": "string", "format": "email"},
                "phones": {"type": "array", "items": {"$ref": "#/$defs/phone"}, "maxItems": 5},
            },
            "required": ["name"],
        },
    ),
    _tool(
        "crm_link",
        {
            "type": "object",
            "definitions": {
                "ref": _obj(
                    {
                        "type": {"enum": ["contact", "deal", "company"]},
                        "id": {"type": "string", "format": "uuid"},
                    },
                    ["type", "id"],
                ),
            },
            "properties": {
                "from": {"$ref": "#/definitions/ref"},
                "to": {"$ref": "#/definitions/ref"},
            },
            "required": ["from", "to"],
            "additionalProperties": False,
        },
    ),
    _tool(
        "fs_tree_write",
        {
            "type": "object",
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "name": S,
                        "kind": {"enum": ["file", "dir"]},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    },
                    "required": ["name", "kind"],
                }
            },
            "properties": {"root": {"$ref": "#/$defs/node"}},
            "required": ["root"],
        },
    ),
    # oneOf / anyOf with const tags
    _tool(
        "notify",
        _obj(
            {
                "target": {
                    "oneOf": [
                        _obj(
                            {
                                "kind": {"const": "email"},
                                "address": {"type": "string", "format": "email"},
                            },
                            ["kind", "address"],
                            additionalProperties=False,
                        ),
                        _obj(
                            {
                                "kind": {"const": "sms"},
                                "phone": {"type": "string", "pattern": "^\\+\\d+$"},
                            },
                            ["kind", "phone"],
                            additionalProperties=False,
                        ),
                        _obj(
                            {
                                "kind": {"const": "webhook"},
                                "url": {"type": "string", "format": "uri"},
                            },
                            ["kind", "url"],
                            additionalProperties=False,
                        ),
                    ]
                },
                "message": S,
            },
            ["target", "message"],
        ),
    ),
    _tool(
        "search_docs",
        _obj(
            {
                "query": S,
                "filter": {
                    "anyOf": [
                        _obj({"field": {"const": "author"}, "value": S}, ["field", "value"]),
                        _obj(
                            {
                                "field": {"const": "year"},
                                "value": {"type": "integer", "minimum": 1900},
                            },
                            ["field", "value"],
                        ),
                        {"type": "null"},
                    ]
                },
            },
            ["query"],
        ),
    ),
    _tool(
        "shape_area",
        _obj(
            {
                "shape": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "type": {"const": "circle"},
                                "r": {"type": "number", "exclusiveMinimum": 0},
                            },
                            "required": ["type", "r"],
                        },
                        {
                            "type": "object",
                            "properties": {
                                "type": {"const": "square"},
                                "side": {"type": "number", "exclusiveMinimum": 0},
                            },
                            "required": ["type", "side"],
                        },
                    ],
                    "discriminator": {"propertyName": "type"},
                }
            },
            ["shape"],
        ),
    ),
    # enum with mixed types and null, type arrays
    _tool(
        "set_option",
        _obj(
            {
                "key": S,
                "value": {"enum": ["on", "off", 0, 1, True, None, 2.5]},
                "scope": {"type": ["string", "null"], "enum": ["user", "global", None]},
            },
            ["key", "value"],
        ),
    ),
    _tool(
        "set_limit",
        _obj(
            {
                "limit": {"type": ["integer", "string"], "minimum": 0, "pattern": "^unlimited$"},
                "soft": {"type": ["number", "null"], "maximum": 1e6},
            },
            ["limit"],
        ),
    ),
    _tool("echo", _obj({"value": {}}, ["value"])),
    _tool("echo_true", _obj({"value": True, "other": {"type": ["array", "object"]}})),
    # formats
    _tool(
        "schedule_meeting",
        _obj(
            {
                "title": S,
                "start": {"type": "string", "format": "date-time"},
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "time"},
                "length": {"type": "string", "format": "duration"},
                "organizer": {"type": "string", "format": "email"},
                "room_id": {"type": "string", "format": "uuid"},
            },
            ["title", "start"],
        ),
    ),
    _tool(
        "ping_host",
        _obj(
            {
                "host": {
                    "anyOf": [
                        {"type": "string", "format": "hostname"},
                        {"type": "string", "format": "ipv4"},
                        {"type": "string", "format": "ipv6"},
                    ]
                },
                "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 4},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 30},
            },
            ["host"],
            additionalProperties=False,
        ),
    ),
    _tool(
        "fetch_url",
        _obj(
            {
                "url": {"type": "string", "format": "uri", "pattern": "^https?://"},
                "method": {
                    "enum": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"],
                    "default": "GET",
                },
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "maxProperties": 20,
                },
                "body": {"type": ["string", "object", "null"]},
                "max_length": {
                    "type": "integer",
                    "exclusiveMinimum": 0,
                    "exclusiveMaximum": 1000000,
                    "default": 5000,
                },
                "raw": {"type": "boolean", "default": False},
            },
            ["url"],
        ),
    ),
    # pattern / propertyNames / patternProperties
    _tool(
        "set_labels",
        _obj(
            {
                "labels": {
                    "type": "object",
                    "propertyNames": {"pattern": "^[a-z][a-z0-9-]{0,62}$"},
                    "additionalProperties": {"type": "string", "maxLength": 63},
                }
            },
            ["labels"],
        ),
    ),
    _tool(
        "set_env",
        _obj(
            {
                "vars": {
                    "type": "object",
                    "patternProperties": {"^[A-Z_][A-Z0-9_]*$": {"type": "string"}},
                    "additionalProperties": False,
                }
            },
            ["vars"],
        ),
    ),
    _tool(
        "translations",
        _obj(
            {
                "strings": {
                    "type": "object",
                    "patternProperties": {"^[a-z]{2}$": {"type": "string"}, "^x-": {}},
                    "minProperties": 1,
                    "maxProperties": 10,
                }
            }
        ),
    ),
    # dependentRequired, if/then/else
    _tool(
        "ship_package",
        _obj(
            {
                "carrier": {"enum": ["ups", "fedex", "dhl", "usps"]},
                "service": S,
                "signature": B,
                "signature_name": S,
                "weight_kg": {"type": "number", "exclusiveMinimum": 0, "maximum": 70},
            },
            ["carrier", "weight_kg"],
            dependentRequired={"signature_name": ["signature"]},
        ),
    ),
    _tool(
        "create_user",
        _obj(
            {
                "kind": {"enum": ["person", "bot"]},
                "name": S,
                "email": {"type": "string", "format": "email"},
                "owner": S,
            },
            ["kind", "name"],
            **{
                "if": {"properties": {"kind": {"const": "bot"}}},
                "then": {"required": ["owner"]},
                "else": {"required": ["email"]},
            },
        ),
    ),
    # arrays: uniqueItems, contains, prefixItems, tuples
    _tool(
        "vote",
        _obj(
            {
                "choices": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1, "maximum": 9},
                    "uniqueItems": True,
                    "minItems": 1,
                    "maxItems": 3,
                },
            },
            ["choices"],
        ),
    ),
    _tool(
        "set_range",
        _obj(
            {
                "range": {
                    "type": "array",
                    "prefixItems": [
                        {"type": "string", "format": "date"},
                        {"type": "string", "format": "date"},
                    ],
                    "items": False,
                },
                "tz": {"type": "string", "default": "UTC"},
            },
            ["range"],
        ),
    ),
    _tool(
        "roles",
        _obj(
            {
                "roles": {
                    "type": "array",
                    "items": S,
                    "contains": {"enum": ["admin", "owner"]},
                    "minContains": 1,
                },
            }
        ),
    ),
    _tool(
        "rgb",
        _obj(
            {
                "color": {
                    "type": "array",
                    "items": [{"type": "integer", "minimum": 0, "maximum": 255}] * 3,
                    "additionalItems": False,
                    "minItems": 3,
                }
            },
            ["color"],
            **{"$schema": "http://json-schema.org/draft-07/schema#"},
        ),
    ),
    # additionalProperties as a schema, min/maxProperties
    _tool(
        "set_quotas",
        _obj(
            {"default": {"type": "integer", "minimum": 0}},
            ["default"],
            additionalProperties={"type": "integer", "minimum": 0, "maximum": 1000},
            maxProperties=8,
        ),
    ),
    _tool(
        "tag_resources",
        _obj(
            {
                "resource_ids": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^arn:"},
                    "minItems": 1,
                    "maxItems": 20,
                },
                "tags": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 256},
                    "minProperties": 1,
                    "maxProperties": 50,
                },
            },
            ["resource_ids", "tags"],
        ),
    ),
    # OpenAI strict-style (every property required, null unions)
    _tool(
        "strict_weather",
        _obj(
            {
                "location": {"type": "string", "description": "City and country"},
                "units": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]},
            },
            ["location", "units"],
            additionalProperties=False,
        ),
    ),
    _tool(
        "strict_lookup",
        _obj(
            {
                "ids": {"type": "array", "items": {"type": "integer"}},
                "include": {
                    "anyOf": [
                        {"type": "array", "items": {"enum": ["owner", "tags"]}},
                        {"type": "null"},
                    ]
                },
            },
            ["ids", "include"],
            additionalProperties=False,
        ),
    ),
    # Gemini style (OpenAPI subset, nullable, format enum)
    _tool(
        "gemini_book_flight",
        {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "minLength": 3, "maxLength": 3},
                "destination": {"type": "string", "minLength": 3, "maxLength": 3},
                "date": {"type": "string", "format": "date-time"},
                "cabin": {
                    "type": "string",
                    "format": "enum",
                    "enum": ["economy", "business", "first"],
                },
                "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
                "return_date": {"type": "string", "nullable": True},
            },
            "required": ["origin", "destination", "date"],
            "propertyOrdering": ["origin", "destination", "date"],
        },
    ),
    _tool(
        "gemini_set_thermostat",
        {
            "type": "object",
            "properties": {
                "temperature": {"type": "number", "minimum": 10, "maximum": 30},
                "mode": {"type": "string", "enum": ["heat", "cool", "auto"], "nullable": True},
            },
            "required": ["temperature"],
        },
    ),
    # Anthropic-docs style
    _tool(
        "get_stock_price",
        _obj(
            {"ticker": {"type": "string", "pattern": "^[A-Z]{1,5}$", "description": "e.g. AAPL"}},
            ["ticker"],
        ),
    ),
    _tool(
        "record_summary",
        _obj(
            {
                "key_colors": {
                    "type": "array",
                    "items": _obj(
                        {
                            "r": {"type": "number"},
                            "g": {"type": "number"},
                            "b": {"type": "number"},
                            "name": S,
                        },
                        ["r", "g", "b", "name"],
                    ),
                },
                "description": S,
                "estimated_year": {"type": "integer"},
            },
            ["key_colors", "description"],
        ),
    ),
    # misc real-world oddities
    _tool(
        "calculator",
        _obj(
            {
                "a": N,
                "b": N,
                "op": {"type": "string", "enum": ["+", "-", "*", "/", "^"]},
                "precision": {"type": "integer", "minimum": 0, "maximum": 20, "multipleOf": 1},
            },
            ["a", "b", "op"],
            additionalProperties=False,
        ),
    ),
    _tool(
        "convert_currency",
        _obj(
            {
                "amount": {"type": "number", "minimum": 0, "multipleOf": 0.01},
                "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
            },
            ["amount", "from", "to"],
        ),
    ),
    _tool(
        "unicode_names",
        _obj(
            {
                "name": {"type": "string", "pattern": "^\\p{L}[\\p{L} '-]*$", "maxLength": 40},
                "nickname": {"type": "string", "maxLength": 5},
            },
            ["name"],
        ),
    ),
    _tool(
        "memory_store",
        _obj(
            {
                "entities": {
                    "type": "array",
                    "items": _obj(
                        {
                            "name": S,
                            "entityType": S,
                            "observations": {"type": "array", "items": S},
                        },
                        ["name", "entityType", "observations"],
                    ),
                }
            },
            ["entities"],
        ),
    ),
    _tool(
        "kv_set",
        _obj(
            {
                "key": {"type": "string", "minLength": 1, "maxLength": 250},
                "value": {"type": ["string", "number", "boolean", "object", "array", "null"]},
                "ttl_seconds": {"type": ["integer", "null"], "minimum": 1},
                "nx": {"type": "boolean"},
            },
            ["key", "value"],
        ),
    ),
    _tool(
        "time_convert",
        _obj(
            {
                "source_timezone": {"type": "string", "description": "IANA name"},
                "time": {"type": "string", "pattern": "^([01]\\d|2[0-3]):[0-5]\\d$"},
                "target_timezone": S,
            },
            ["source_timezone", "time", "target_timezone"],
        ),
    ),
    _tool(
        "sequential_thinking",
        _obj(
            {
                "thought": S,
                "nextThoughtNeeded": B,
                "thoughtNumber": {"type": "integer", "minimum": 1},
                "totalThoughts": {"type": "integer", "minimum": 1},
                "isRevision": B,
                "revisesThought": {"type": "integer", "minimum": 1},
                "branchId": S,
            },
            ["thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"],
        ),
    ),
    _tool(
        "big_bounds",
        _obj(
            {
                "id": {"type": "integer", "minimum": 0, "maximum": 9007199254740991},
                "score": {"type": "number", "minimum": -1e308, "maximum": 1e308},
                "small": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e-6},
            },
            ["id"],
        ),
    ),
    _tool(
        "draft4_tool",
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
                "name": S,
            },
            "required": ["count"],
        },
    ),
    _tool(
        "const_version",
        _obj({"version": {"const": 2}, "payload": {"type": "object"}}, ["version", "payload"]),
    ),
    _tool(
        "const_null",
        _obj({"x": {"const": None}, "y": {"enum": [[1, 2], {"a": 1}, "s"]}}),
    ),
    _tool(
        "nested_nullable_array",
        _obj(
            {
                "matrix": {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "items": {"type": ["number", "null"]},
                        "maxItems": 4,
                    },
                    "maxItems": 4,
                },
            },
            ["matrix"],
        ),
    ),
    _tool(
        "ref_to_root_sibling",
        {
            "type": "object",
            "properties": {
                "primary": {"$ref": "#/properties/secondary"},
                "secondary": {"type": "string", "enum": ["a", "b"]},
            },
        },
    ),
    _tool(
        "title_only_props",
        _obj(
            {
                "limit": {"title": "Limit", "description": "How many"},
                "q": {"title": "Q", "type": "string"},
            }
        ),
    ),
    _tool(
        "examples_and_defaults",
        _obj(
            {
                "sort": {
                    "type": "string",
                    "enum": ["asc", "desc"],
                    "default": "asc",
                    "examples": ["asc"],
                },
                "fields": {"type": "array", "items": S, "default": ["id"], "deprecated": True},
                "readonly": {"type": "string", "readOnly": True},
            }
        ),
    ),
    _tool(
        "not_keyword",
        _obj({"name": {"type": "string", "not": {"enum": ["root", "admin"]}}}, ["name"]),
    ),
    _tool(
        "one_of_scalars",
        _obj(
            {
                "id": {
                    "oneOf": [
                        {"type": "integer", "minimum": 1},
                        {"type": "string", "pattern": "^[a-z]+-\\d+$"},
                    ]
                },
                "size": {
                    "oneOf": [
                        {"type": "integer", "multipleOf": 2},
                        {"type": "integer", "multipleOf": 3},
                    ]
                },
            },
            ["id"],
        ),
    ),
    _tool(
        "any_of_overlap",
        _obj(
            {
                "value": {
                    "anyOf": [
                        {"type": "string", "maxLength": 3},
                        {"type": "string", "pattern": "^x"},
                    ]
                },
                "n": {
                    "anyOf": [{"type": "integer", "maximum": 5}, {"type": "number", "minimum": 100}]
                },
            }
        ),
    ),
    _tool(
        "items_false",
        _obj(
            {
                "empty": {"type": "array", "items": False},
                "pair": {"type": "array", "prefixItems": [S, I]},
            }
        ),
    ),
    _tool(
        "deep_config",
        _obj(
            {
                "server": _obj(
                    {
                        "host": {"type": "string", "format": "hostname"},
                        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                        "tls": _obj(
                            {"enabled": B, "cert": S, "min_version": {"enum": ["1.2", "1.3"]}},
                            ["enabled"],
                            additionalProperties=False,
                        ),
                    },
                    ["host", "port"],
                    additionalProperties=False,
                ),
                "workers": {"type": "integer", "minimum": 1, "maximum": 64},
            },
            ["server"],
            additionalProperties=False,
        ),
    ),
    # A Jira issue type given by id or by name, and a search filter as a recursive union of a
    # comparison and `and` / `not` groups (error payloads used to read "expected an object").
    _tool(
        "jira_set_issue_type",
        _obj(
            {
                "issue": {"type": "string", "pattern": "^[A-Z][A-Z0-9]+-\\d+$"},
                "issuetype": {
                    "oneOf": [
                        _obj(
                            {"id": {"type": "string", "pattern": "^\\d+$"}},
                            ["id"],
                            additionalProperties=False,
                        ),
                        _obj({"name": S}, ["name"], additionalProperties=False),
                    ]
                },
            },
            ["issue", "issuetype"],
        ),
    ),
    _tool(
        "search_records",
        {
            "type": "object",
            "properties": {
                "filter": {"$ref": "#/$defs/expr"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["filter"],
            "$defs": {
                "expr": {
                    "oneOf": [
                        {"$ref": "#/$defs/cmp"},
                        _obj(
                            {"and": {"type": "array", "items": {"$ref": "#/$defs/expr"}}},
                            ["and"],
                            additionalProperties=False,
                        ),
                        _obj(
                            {"not": {"$ref": "#/$defs/expr"}}, ["not"], additionalProperties=False
                        ),
                    ]
                },
                "cmp": _obj(
                    {
                        "field": S,
                        "op": {"enum": ["=", "!=", "<", "<=", ">", ">=", "in"]},
                        "value": {
                            "type": ["string", "number", "boolean", "null", "array"],
                            "items": {"type": ["string", "number"]},
                        },
                    },
                    ["field", "op", "value"],
                    additionalProperties=False,
                ),
            },
        },
    ),
    _tool(
        "geocode_batch",
        _obj(
            {
                "points": {
                    "type": "array",
                    "maxItems": 50,
                    "items": {
                        "anyOf": [
                            {
                                "type": "array",
                                "prefixItems": [
                                    {"type": "number", "minimum": -90, "maximum": 90},
                                    {"type": "number", "minimum": -180, "maximum": 180},
                                ],
                                "items": False,
                                "minItems": 2,
                            },
                            {"type": "string", "minLength": 1},
                        ]
                    },
                }
            },
            ["points"],
        ),
    ),
]
