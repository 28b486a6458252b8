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

Assembler = _CoreAssembler

__all__ = [
    "NO_VALUE",
    "Assembler",
    "CallError",
    "JsonError",
    "MisuseError",
    "Scanner",
    "ToolCall",
    "ToolRegistry",
    "ToolwireError",
    "__version__",
]
