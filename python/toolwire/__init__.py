"""toolwire: split-proof assembly, pre-checking and validation of streamed LLM tool calls.

The hot path (fragment routing, incremental JSON, schema pre-check) is native; this package adds
policy: the tool registry, Pydantic validation, model-facing error payloads, provider adapters
and safe execution.
"""

from toolwire._core import (
    NO_VALUE,
    CallError,
    JsonError,
    MisuseError,
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
from toolwire.formats import ChunkInfo, WireFormat
from toolwire.payloads import call_id_for, tool_messages
from toolwire.repair import Escalation, Proceed, RepairPolicy, Retry
from toolwire.schema_export import Relaxation, SchemaExportError
from toolwire.stream import AsyncToolStream, ToolStream, aassemble, assemble
from toolwire.toolset import ToolDefinition, Toolset
from toolwire.validation import BusinessRuleError, FieldError, Outcome

__all__ = [
    "NO_VALUE",
    "ArgumentsProgress",
    "Assembler",
    "AsyncToolStream",
    "BusinessRuleError",
    "CallCompleted",
    "CallError",
    "CallStarted",
    "ChunkInfo",
    "Coercion",
    "Escalation",
    "Event",
    "FieldError",
    "JsonError",
    "MisuseError",
    "Outcome",
    "PrecheckError",
    "Proceed",
    "Relaxation",
    "RepairPolicy",
    "Retry",
    "Scanner",
    "SchemaExportError",
    "StreamEnded",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolDefinition",
    "ToolRegistry",
    "ToolStream",
    "Toolset",
    "ToolwireError",
    "WireFormat",
    "__version__",
    "aassemble",
    "assemble",
    "call_id_for",
    "tool_messages",
]
