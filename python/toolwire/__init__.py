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
from toolwire._core import Assembler as _CoreAssembler
from toolwire.coercion import Coercion
from toolwire.payloads import call_id_for, tool_messages
from toolwire.repair import Escalation, Proceed, RepairPolicy, Retry
from toolwire.schema_export import Relaxation, SchemaExportError
from toolwire.toolset import ToolDefinition, Toolset
from toolwire.validation import BusinessRuleError, FieldError, Outcome

Assembler = _CoreAssembler

__all__ = [
    "NO_VALUE",
    "Assembler",
    "BusinessRuleError",
    "CallError",
    "Coercion",
    "Escalation",
    "FieldError",
    "JsonError",
    "MisuseError",
    "Outcome",
    "Proceed",
    "Relaxation",
    "RepairPolicy",
    "Retry",
    "Scanner",
    "SchemaExportError",
    "ToolCall",
    "ToolDefinition",
    "ToolRegistry",
    "Toolset",
    "ToolwireError",
    "__version__",
    "call_id_for",
    "tool_messages",
]
