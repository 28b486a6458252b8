"""toolwire: split-proof assembly, pre-checking and validation of streamed LLM tool calls.

The hot path (fragment routing, incremental JSON, schema pre-check) is native; this package adds
policy: the tool registry, Pydantic validation, model-facing error payloads, provider adapters
and safe execution.
"""

from toolwire._core import (
    NO_VALUE,
    CallError,
    JsonError,
    LosslessFloat,
    MisuseError,
    PartialNode,
    Scanner,
    ToolCall,
    ToolRegistry,
    ToolwireError,
    __version__,
)
from toolwire.assembler import Assembler
from toolwire.coercion import Coercion
from toolwire.events import (
    ArgumentsProgress,
    CallCompleted,
    CallStarted,
    Event,
    PrecheckError,
    StreamEnded,
    StreamEvent,
    TextDelta,
)
from toolwire.execution import (
    BreakerConfig,
    CircuitBreaker,
    ExecutionRecord,
    ExecutionResult,
    Executor,
    IdempotencyConflict,
    IdempotencyInProgress,
    Ledger,
    LedgerUnavailable,
    MemoryLedger,
    RequestContext,
    RetryPolicy,
    SqliteLedger,
)
from toolwire.formats import ChunkInfo, WireFormat
from toolwire.payloads import assistant_turn, call_id_for, tool_messages
from toolwire.recorder import Recorder
from toolwire.repair import Escalation, Proceed, RepairPolicy, Retry
from toolwire.replay import Report, compare, load_corpus, replay
from toolwire.schema_export import (
    InvalidSchemaError,
    Relaxation,
    SchemaExportError,
    SchemaTooLargeError,
)
from toolwire.stream import AssemblerLimits, AsyncToolStream, ToolStream, aassemble, assemble
from toolwire.toolset import ToolDefinition, Toolset, UnknownToolError
from toolwire.validation import BusinessRuleError, FieldError, Outcome

__all__ = [
    "NO_VALUE",
    "ArgumentsProgress",
    "Assembler",
    "AssemblerLimits",
    "AsyncToolStream",
    "BreakerConfig",
    "BusinessRuleError",
    "CallCompleted",
    "CallError",
    "CallStarted",
    "ChunkInfo",
    "CircuitBreaker",
    "Coercion",
    "Escalation",
    "Event",
    "ExecutionRecord",
    "ExecutionResult",
    "Executor",
    "FieldError",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "InvalidSchemaError",
    "JsonError",
    "Ledger",
    "LedgerUnavailable",
    "LosslessFloat",
    "MemoryLedger",
    "MisuseError",
    "Outcome",
    "PartialNode",
    "PrecheckError",
    "Proceed",
    "Recorder",
    "Relaxation",
    "RepairPolicy",
    "Report",
    "RequestContext",
    "Retry",
    "RetryPolicy",
    "Scanner",
    "SchemaExportError",
    "SchemaTooLargeError",
    "SqliteLedger",
    "StreamEnded",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolDefinition",
    "ToolRegistry",
    "ToolStream",
    "Toolset",
    "ToolwireError",
    "UnknownToolError",
    "WireFormat",
    "__version__",
    "aassemble",
    "assemble",
    "assistant_turn",
    "call_id_for",
    "compare",
    "load_corpus",
    "replay",
    "tool_messages",
]
