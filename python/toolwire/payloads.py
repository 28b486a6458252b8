# Chinese templates use fullwidth punctuation on purpose (it is correct Chinese typography).
# ruff: noqa: RUF001
"""Model-facing payloads: the text table, tool-result messages and `tool_messages`.

Every word a model reads comes from `MESSAGES`, one table with an English and a Chinese
template per key, so a translation is one column and a wording change is one line. Payload
content is compact JSON with a fixed key order (`ok`, `error_type`, `message`, `errors`, `hint`,
`retryable`, `attempt`, `instruction`), which keeps prompts cache-friendly and diffs readable.

`tool_messages` is the completeness guarantee: exactly one message per tool-call id, in call
order, whether the tool ran, failed validation, raised, or produced nothing at all.
"""

from __future__ import annotations

import copy
import dataclasses
import decimal
import enum
import functools
import hashlib
import json
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NamedTuple,
    Protocol,
    TypeAlias,
    TypeGuard,
    cast,
    get_args,
)

import pydantic
import pydantic_core

if TYPE_CHECKING:
    from toolwire.execution.errors import NeedsClarification
    from toolwire.execution.executor import ExecutionResult
    from toolwire.toolset import Toolset
    from toolwire.validation import BusinessRuleError, CallLike, Outcome

__all__ = [
    "MAX_RESULT_CHARS",
    "MESSAGES",
    "NAMELESS_CALL",
    "Lang",
    "Named",
    "Style",
    "answering_id",
    "assistant_turn",
    "call_id_for",
    "error_content",
    "failure_content",
    "finite_json",
    "jsonable_result",
    "message_for",
    "no_json_form",
    "require_call",
    "result_content",
    "sent_id",
    "text",
    "too_large_content",
    "tool_messages",
    "wrap_message",
]

Style = Literal["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse"]
"""The provider message shape: Chat Completions, Responses, Anthropic Messages, Gemini's
`functionResponse` part, or a Bedrock Converse `toolResult` block (the names of
`Assembler.feed_chunk`'s formats)."""
Lang = Literal["en", "zh"]
"""The language of model-facing text."""

STYLES: tuple[Style, ...] = get_args(Style)

MAX_RESULT_CHARS = 100_000
"""The default cap on a tool result's message content, in characters (about 25,000 tokens).

A result past it is not sent: its call is answered with a `result_too_large` error that gives
the size and the cap, since a result of megabytes (an unpaginated query) would make the next
request fail at the provider or fill the model's context."""

MESSAGES: dict[str, dict[str, str]] = {
    # Value descriptions (FieldError.expected).
    "type.string": {"en": "a string", "zh": "字符串"},
    "type.integer": {"en": "an integer", "zh": "整数"},
    "type.number": {"en": "a number", "zh": "数字"},
    "type.boolean": {"en": "true or false", "zh": "布尔值 true 或 false"},
    "type.array": {"en": "an array", "zh": "数组"},
    "type.object": {"en": "an object", "zh": "对象"},
    "type.null": {"en": "null", "zh": "null"},
    "type.any": {"en": "a valid value", "zh": "有效的值"},
    "join.or": {"en": " or ", "zh": " 或 "},
    "join.and": {"en": " and ", "zh": " 且 "},
    "expected.enum": {"en": "one of {values}", "zh": "以下值之一：{values}"},
    "expected.const": {"en": "exactly {value}", "zh": "必须为 {value}"},
    "expected.required": {"en": "required: {what}", "zh": "必填：{what}"},
    "expected.no_field": {
        "en": "no such field; allowed fields: {names}",
        "zh": "没有此字段；允许的字段：{names}",
    },
    "expected.no_fields": {"en": "no such field", "zh": "没有此字段"},
    "expected.nothing": {"en": "no value here", "zh": "此处不允许有值"},
    "expected.pattern": {"en": "a string matching {pattern}", "zh": "匹配 {pattern} 的字符串"},
    "expected.multiple_of": {"en": "a multiple of {n}", "zh": "{n} 的整数倍"},
    "expected.decimal_places": {"en": "at most {n} decimal places", "zh": "最多 {n} 位小数"},
    "expected.max_digits": {"en": "at most {n} digits", "zh": "最多 {n} 位数字"},
    "expected.whole_digits": {
        "en": "at most {n} digits before the decimal point",
        "zh": "整数部分最多 {n} 位",
    },
    "expected.min_length": {"en": "at least {n} characters", "zh": "至少 {n} 个字符"},
    "expected.max_length": {"en": "at most {n} characters", "zh": "最多 {n} 个字符"},
    "expected.min_items": {"en": "at least {n} items", "zh": "至少 {n} 项"},
    "expected.max_items": {"en": "at most {n} items", "zh": "最多 {n} 项"},
    "expected.min_bytes": {"en": "at least {n} bytes", "zh": "至少 {n} 个字节"},
    "expected.max_bytes": {"en": "at most {n} bytes", "zh": "最多 {n} 个字节"},
    "expected.encoded": {"en": "{encoding}-encoded data", "zh": "{encoding} 编码的数据"},
    "expected.date_future": {"en": "a date in the future", "zh": "将来的日期"},
    "expected.date_past": {"en": "a date in the past", "zh": "过去的日期"},
    "expected.datetime_future": {"en": "a date-time in the future", "zh": "将来的日期时间"},
    "expected.datetime_past": {"en": "a date-time in the past", "zh": "过去的日期时间"},
    "expected.finite": {"en": "a finite number", "zh": "有限数值"},
    "expected.integer_digits": {
        "en": "an integer of at most {limit} digits",
        "zh": "至多 {limit} 位的整数",
    },
    "expected.within_float": {
        "en": "{what} a float can hold (at most about 1.8e308 in size, and 0 or at least 5e-324)",
        "zh": "浮点数可表示的{what}（绝对值至多约 1.8e308，且为 0 或至少 5e-324）",
    },
    "expected.min_fields": {"en": "number of fields: at least {n}", "zh": "字段数：至少 {n}"},
    "expected.max_fields": {"en": "number of fields: at most {n}", "zh": "字段数：最多 {n}"},
    "expected.unique": {
        "en": "no repeated items; this item repeats item {index}",
        "zh": "不能有重复项；此项与第 {index} 项重复",
    },
    "expected.contains_min": {
        "en": "items that are {what}: at least {n}",
        "zh": "为{what}的项：至少 {n} 项",
    },
    "expected.contains_max": {
        "en": "items that are {what}: at most {n}",
        "zh": "为{what}的项：最多 {n} 项",
    },
    "expected.required_with": {
        "en": "required when {name} is given: {what}",
        "zh": "给出 {name} 时必填：{what}",
    },
    "expected.key": {"en": "field names must be {what}", "zh": "字段名必须是{what}"},
    # Alternatives an object must hold one of (`anyOf` of `required` lists); each is a field,
    # or fields joined by `join.and`.
    "expected.one_of_fields": {
        "en": "one of these fields: {names}",
        "zh": "以下字段之一：{names}",
    },
    # A union branch's value with the rules it holds it to ("an integer (>= 5)").
    "expected.with_rules": {"en": "{what} ({rules})", "zh": "{what}（{rules}）"},
    # A union branch told apart by the fields it requires.
    "expected.object_with": {"en": "an object with {names}", "zh": "含有 {names} 的对象"},
    "expected.exactly_one": {
        "en": "exactly one of the alternatives: {what}",
        "zh": "恰好符合以下备选项之一：{what}",
    },
    # A string whose content is JSON text (Pydantic's `Json[...]`), and what that JSON holds.
    "expected.json_text": {
        "en": "a string holding JSON text of {what}",
        "zh": "内容为 JSON 文本的字符串，JSON 为{what}",
    },
    "expected.not": {"en": "anything except {what}", "zh": "不能是{what}"},
    "expected.all_fields": {
        "en": "an object with all of: {names}",
        "zh": "同时包含以下字段的对象：{names}",
    },
    "expected.then_false": {
        "en": "not allowed when {condition}",
        "zh": "在以下条件下不允许：{condition}",
    },
    "expected.else_false": {
        "en": "only allowed when {condition}",
        "zh": "仅在以下条件下允许：{condition}",
    },
    "condition.given": {"en": "{name} is given", "zh": "给出了 {name}"},
    "condition.is": {"en": "{name} is {value}", "zh": "{name} 为 {value}"},
    "condition.schema": {
        "en": "the schema's if-condition holds",
        "zh": "模式中的 if 条件成立",
    },
    "format.date-time": {
        "en": "a date-time with a time zone offset, e.g. 2024-03-05T14:30:00+01:00",
        "zh": "带时区偏移的日期时间，例如 2024-03-05T14:30:00+01:00",
    },
    "format.naive-date-time": {
        "en": "a date-time without a time zone offset, e.g. 2024-03-05T14:30:00",
        "zh": "不带时区偏移的日期时间，例如 2024-03-05T14:30:00",
    },
    "format.date": {
        "en": "a date YYYY-MM-DD, e.g. 2024-03-05",
        "zh": "日期 YYYY-MM-DD，例如 2024-03-05",
    },
    "format.time": {
        "en": "a time HH:MM[:SS], e.g. 14:30:00",
        "zh": "时间 HH:MM[:SS]，例如 14:30:00",
    },
    # RFC 3339's full-time, which JSON Schema's `time` is: the offset is part of it.
    "format.full-time": {
        "en": "a time with a time zone offset, e.g. 14:30:00+01:00 or 14:30:00Z",
        "zh": "带时区偏移的时间，例如 14:30:00+01:00 或 14:30:00Z",
    },
    "format.duration": {
        "en": "an ISO 8601 duration, e.g. PT30M",
        "zh": "ISO 8601 时长，例如 PT30M",
    },
    "format.uuid": {"en": "a UUID", "zh": "UUID"},
    "format.uuid_version": {"en": "a version-{n} UUID", "zh": "版本 {n} 的 UUID"},
    "format.email": {"en": "an email address", "zh": "电子邮件地址"},
    "format.uri": {"en": "an absolute URL", "zh": "完整的 URL"},
    "expected.url_scheme": {
        "en": "a URL whose scheme is {schemes}",
        "zh": "协议为 {schemes} 的 URL",
    },
    "format.ipv4": {"en": "an IPv4 address", "zh": "IPv4 地址"},
    "format.ipv6": {"en": "an IPv6 address", "zh": "IPv6 地址"},
    "format.hostname": {"en": "a host name", "zh": "主机名"},
    # The formats Pydantic writes for its own string types (`IPvAnyAddress`, `NameEmail`, ...).
    "format.ipvanyaddress": {"en": "an IPv4 or IPv6 address", "zh": "IPv4 或 IPv6 地址"},
    "format.ipv4network": {
        "en": "an IPv4 network, e.g. 192.168.0.0/24",
        "zh": "IPv4 网络，例如 192.168.0.0/24",
    },
    "format.ipv6network": {
        "en": "an IPv6 network, e.g. 2001:db8::/32",
        "zh": "IPv6 网络，例如 2001:db8::/32",
    },
    "format.ipvanynetwork": {
        "en": "an IPv4 or IPv6 network, e.g. 192.168.0.0/24",
        "zh": "IPv4 或 IPv6 网络，例如 192.168.0.0/24",
    },
    "format.ipv4interface": {
        "en": "an IPv4 address with a prefix length, e.g. 192.168.0.1/24",
        "zh": "带前缀长度的 IPv4 地址，例如 192.168.0.1/24",
    },
    "format.ipv6interface": {
        "en": "an IPv6 address with a prefix length, e.g. 2001:db8::1/64",
        "zh": "带前缀长度的 IPv6 地址，例如 2001:db8::1/64",
    },
    "format.ipvanyinterface": {
        "en": "an IPv4 or IPv6 address with a prefix length, e.g. 192.168.0.1/24",
        "zh": "带前缀长度的 IPv4 或 IPv6 地址，例如 192.168.0.1/24",
    },
    "format.name-email": {
        "en": "an email address, optionally with a name, e.g. Ada <ada@example.com>",
        "zh": "电子邮件地址，可带名字，例如 Ada <ada@example.com>",
    },
    "format.multi-host-uri": {"en": "an absolute URL", "zh": "完整的 URL"},
    "format.file-path": {"en": "the path of an existing file", "zh": "已存在的文件的路径"},
    "format.directory-path": {
        "en": "the path of an existing directory",
        "zh": "已存在的目录的路径",
    },
    "format.path": {"en": "a file system path", "zh": "文件系统路径"},
    # Hints attached to single errors.
    "hint.fractional_integer": {
        "en": "this field takes a whole number; do not round, send the intended integer",
        "zh": "此字段只接受整数；不要四舍五入，请发送预期的整数",
    },
    "hint.too_many_digits": {
        "en": "this integer has more digits than the tool takes; send a shorter number",
        "zh": "此整数的位数超过工具可接受的上限；请发送更短的数字",
    },
    "hint.out_of_range": {
        "en": "this number is too large or too small to be stored; send the intended value",
        "zh": "此数字过大或过小，无法存储；请发送预期的值",
    },
    "hint.float_digits": {
        "en": "this number has more digits than can be stored and is read as {read}, which is "
        "out of range; send a value within the range with fewer digits",
        "zh": "此数字的位数超出可存储的精度，会被读作 {read}，超出范围；"
        "请发送位数更少且在范围内的值",
    },
    "hint.number_text": {
        "en": "write the number as JSON writes it, e.g. 1000 or 12.50, with no digit separators",
        "zh": "请按 JSON 数字的写法书写，例如 1000 或 12.50，不要使用数字分隔符",
    },
    "hint.whole_float": {
        "en": "send the allowed value exactly as listed, e.g. 2 rather than 2.0",
        "zh": "请按列出的写法准确发送允许的值，例如 2 而不是 2.0",
    },
    "hint.bool_number": {
        "en": "send one of the allowed values exactly: true and false are not numbers here, "
        "and numbers are not true or false",
        "zh": "请准确发送允许的值之一：此处 true 和 false 不是数字，数字也不是 true 或 false",
    },
    "hint.one_of_several": {
        "en": "the value fits more than one of the alternatives, and exactly one must fit; "
        "send a value that only one of them accepts",
        "zh": "该值符合多个备选项，但必须恰好符合一个；请发送只有其中一个接受的值",
    },
    "hint.one_of_fields": {
        "en": "the value fits more than one of the alternatives, and exactly one must fit: "
        "it has {names}, which different alternatives need; send the fields of only one of them",
        "zh": "该值符合多个备选项，但必须恰好符合一个：它含有 {names}，分别为不同备选项所需；"
        "请只发送其中一个备选项的字段",
    },
    "hint.ambiguous": {
        "en": "the value could mean more than one thing ({detail}); send exactly one allowed value",
        "zh": "该值有多种可能含义（{detail}）；请只发送一个允许的值",
    },
    "hint.inexact_milliseconds": {
        "en": "this looks like milliseconds but is not a whole number of seconds; "
        "send Unix seconds",
        "zh": "这看起来是毫秒，但不是整秒；请发送 Unix 秒",
    },
    "hint.unix_timestamp": {
        "en": "write the date as text, e.g. 2024-03-05 or 2024-03-05T14:30:00Z, "
        "not as a Unix timestamp",
        "zh": "请用文本书写日期，例如 2024-03-05 或 2024-03-05T14:30:00Z，不要使用 Unix 时间戳",
    },
    "hint.timezone_required": {
        "en": "add a time zone offset such as Z or +08:00",
        "zh": "请加上时区偏移，例如 Z 或 +08:00",
    },
    "hint.key_integer": {
        "en": "write the key as a plain integer, e.g. 7 (no leading zeros, +, spaces or _)",
        "zh": "请将键写成普通整数，例如 7（不要前导零、+、空格或 _）",
    },
    "hint.key_number": {
        "en": "write the key as a JSON number, e.g. 1.5 (no NaN, Infinity, spaces or _)",
        "zh": "请将键写成 JSON 数字，例如 1.5（不要 NaN、Infinity、空格或 _）",
    },
    "hint.key_boolean": {"en": "write the key as true or false", "zh": "请将键写成 true 或 false"},
    "hint.duplicate_key": {
        "en": "this key names the same entry as {detail}; send each entry once",
        "zh": "此键与 {detail} 指向同一条目；每个条目只发送一次",
    },
    "hint.key_date-time": {
        "en": "write the key as a date and time in text, e.g. 2024-03-05T14:30:00Z, "
        "not as a Unix timestamp",
        "zh": "请用文本将键写成日期时间，例如 2024-03-05T14:30:00Z，不要使用 Unix 时间戳",
    },
    "key.date-time": {
        "en": "a date and time, e.g. 2024-03-05T14:30:00Z",
        "zh": "日期时间，例如 2024-03-05T14:30:00Z",
    },
    "hint.duplicate_field": {
        "en": "this key names the same field as {detail}; send the field once, under one key",
        "zh": "此键与 {detail} 指向同一字段；该字段只发送一次，只用一个键",
    },
    "key.integer": {"en": "an integer", "zh": "整数"},
    "key.number": {"en": "a number", "zh": "数字"},
    "key.boolean": {"en": "true or false", "zh": "true 或 false"},
    "expected.distinct_keys": {
        "en": "field names that each name a different entry",
        "zh": "每个字段名指向不同的条目",
    },
    "hint.did_you_mean": {"en": "did you mean {name}?", "zh": "是否是指 {name}？"},
    # Where an error lies in the JSON text a `Json[...]` string holds, and what it needs there.
    "hint.json_text_at": {
        "en": "inside the string's JSON text, {place}",
        "zh": "字符串内的 JSON 文本中，{place}",
    },
    "hint.user_supplied": {
        "en": "only the user can provide this value; ask them",
        "zh": "只有用户能提供此值，请询问用户",
    },
    # Outcome messages.
    "msg.validation": {
        "en": "The arguments do not match the tool's parameters.",
        "zh": "参数与工具的参数定义不符。",
    },
    "msg.truncated": {
        "en": "The arguments were cut off before the JSON was complete.",
        "zh": "参数在 JSON 完整之前被截断。",
    },
    "hint.truncated": {
        "en": "Send shorter arguments. If this repeats, the caller should raise max_tokens or "
        "shorten the request.",
        "zh": "请发送更短的参数。如果反复发生，调用方应提高 max_tokens 或缩短请求。",
    },
    "msg.invalid_json": {
        "en": "The arguments are not valid JSON: {detail} (at byte {offset}).",
        "zh": "参数不是有效的 JSON：{detail}（位于第 {offset} 字节）。",
    },
    "msg.not_object": {
        "en": "The arguments must be one JSON object with the tool's parameters.",
        "zh": "参数必须是包含工具参数的单个 JSON 对象。",
    },
    "msg.too_large": {
        "en": "The arguments are too large or too deeply nested.",
        "zh": "参数过大或嵌套过深。",
    },
    "hint.too_large": {"en": "Send fewer or shorter values.", "zh": "请发送更少或更短的值。"},
    "msg.unknown_tool": {
        "en": "There is no tool named {name}. Available tools: {names}.",
        "zh": "没有名为 {name} 的工具。可用的工具：{names}。",
    },
    "list.more": {"en": " (and {count} more)", "zh": "（另有 {count} 个）"},
    "msg.missing_name": {
        "en": "The call has no tool name. Available tools: {names}.",
        "zh": "该调用没有工具名称。可用的工具：{names}。",
    },
    "msg.filtered": {
        "en": "The provider stopped this call before it was complete; it was not executed.",
        "zh": "服务商在调用完成前终止了它；该调用未执行。",
    },
    "msg.lost_event": {
        "en": "Part of this call was lost on the way, so it was not executed. Send the same call "
        "again.",
        "zh": "该调用的一部分在传输中丢失，因此未执行。请重新发送同一调用。",
    },
    "msg.arguments_mismatch": {
        "en": "This call's arguments reached us in two versions that disagree, so it was not "
        "executed. Send the same call again.",
        "zh": "该调用的参数在传输中出现了两个不一致的版本，因此未执行。请重新发送同一调用。",
    },
    "msg.free_form_call": {
        "en": "The tool {name} takes free-form input, which this application cannot run; it "
        "was not executed. Use another tool.",
        "zh": "工具 {name} 接受自由格式输入，本应用无法执行它；该调用未执行。请使用其他工具。",
    },
    "msg.takes_free_form": {
        "en": "The tool {name} takes free-form text input, not JSON arguments; it was not "
        "executed. Call it as a custom tool, with its input as plain text.",
        "zh": "工具 {name} 接受自由格式文本输入，而非 JSON 参数；该调用未执行。"
        "请以自定义工具的方式调用，并以纯文本作为输入。",
    },
    "msg.takes_json": {
        "en": "The tool {name} takes JSON arguments, not free-form text; it was not executed. "
        "Call it as a function, with its arguments as a JSON object.",
        "zh": "工具 {name} 接受 JSON 参数，而非自由格式文本；该调用未执行。"
        "请以函数的方式调用，并以 JSON 对象作为参数。",
    },
    "msg.business_rule": {
        "en": "The request was rejected: {reasons}",
        "zh": "请求被拒绝：{reasons}",
    },
    "msg.business_rule_unexplained": {
        "en": "The request was rejected.",
        "zh": "请求被拒绝。",
    },
    "msg.needs_clarification": {
        "en": "Information that only the user can give is missing: {fields}.",
        "zh": "缺少只有用户才能提供的信息：{fields}。",
    },
    "msg.no_result": {
        "en": "No result was produced for this call.",
        "zh": "此调用没有产生结果。",
    },
    "msg.tool_failed": {"en": "The tool failed while running.", "zh": "工具运行时出错。"},
    "msg.invalid_result": {
        "en": "The tool ran but returned a value that cannot be sent as JSON.",
        "zh": "工具已运行，但返回的值无法作为 JSON 发送。",
    },
    "msg.result_too_large": {
        "en": "The tool ran, but its result is {size} characters long, more than the {limit} "
        "that can be sent, so it is not shown.",
        "zh": "工具已运行，但其结果长 {size} 个字符，超过可发送的 {limit} 个字符，因此未显示。",
    },
    "hint.result_too_large": {
        "en": "Ask for less: a narrower query, fewer fields or a smaller page. The tool has run: "
        "a change it makes is already made.",
        "zh": "请求更少的内容：更窄的查询、更少的字段或更小的分页。工具已运行："
        "它所做的更改已经生效。",
    },
    "msg.internal_error": {
        "en": "The arguments could not be checked because of an internal error; the call was "
        "not executed.",
        "zh": "由于内部错误，无法检查参数；该调用未执行。",
    },
    "msg.escalated": {
        "en": "The arguments are still invalid after {attempts} attempts.",
        "zh": "尝试 {attempts} 次后参数仍然无效。",
    },
    "msg.time_budget": {
        "en": "The time allowed for correcting this call has run out.",
        "zh": "修正此调用的时间已用完。",
    },
    # Instructions to the model.
    "instruction.retry": {
        "en": "Call {tool} again with corrected arguments. Do not explain or apologise.",
        "zh": "请用修正后的参数再次调用 {tool}。不要解释或道歉。",
    },
    "instruction.choose_tool": {
        "en": "Call one of the available tools instead. Do not explain or apologise.",
        "zh": "请改为调用一个可用的工具。不要解释或道歉。",
    },
    "instruction.clarify": {
        "en": "Ask the user for {fields}. Do not guess these values and do not call the tool "
        "until the user answers.",
        "zh": "请向用户询问 {fields}。不要猜测这些值，在用户回答之前不要调用该工具。",
    },
    "instruction.ask_question": {
        "en": "Put the question in message to the user. Do not guess the answer and do not "
        "call the tool until the user answers.",
        "zh": "请把 message 中的问题转告用户。不要猜测答案，在用户回答之前不要调用该工具。",
    },
    "instruction.stop": {
        "en": "Do not call {tool} again for this request. Tell the user briefly what happened.",
        "zh": "不要为此请求再次调用 {tool}。请简要告诉用户发生了什么。",
    },
    "instruction.escalate": {
        "en": "Stop calling {tool}. Ask the user how to proceed.",
        "zh": "停止调用 {tool}。请询问用户如何继续。",
    },
    "question.escalate": {
        "en": "I could not complete {tool}: {problems}. How should I proceed?",
        "zh": "我无法完成 {tool}：{problems}。请问应该如何继续？",
    },
    "question.clarify": {"en": "Please provide {fields}.", "zh": "请提供{fields}。"},
    # Grammar error details (CallError.kind), for msg.invalid_json.
    "json.empty": {"en": "no JSON value", "zh": "没有 JSON 值"},
    "json.unexpected_byte": {"en": "unexpected character", "zh": "意外的字符"},
    "json.trailing_data": {"en": "text after the JSON value", "zh": "JSON 值后面有多余文本"},
    "json.concatenated_values": {
        "en": "a second JSON value follows the first",
        "zh": "第一个 JSON 值后面还有第二个值",
    },
    "json.invalid_utf8": {"en": "invalid UTF-8", "zh": "无效的 UTF-8"},
    "json.control_character_in_string": {
        "en": "a raw control character in a string (escape it)",
        "zh": "字符串中有未转义的控制字符",
    },
    "json.invalid_escape": {"en": "an invalid escape sequence", "zh": "无效的转义序列"},
    "json.invalid_unicode_escape": {"en": "an invalid \\u escape", "zh": "无效的 \\u 转义"},
    "json.lone_surrogate": {"en": "an unpaired surrogate escape", "zh": "不成对的代理项转义"},
    "json.invalid_number": {"en": "an invalid number", "zh": "无效的数字"},
    "json.number_too_long": {"en": "a number with too many digits", "zh": "数字位数过多"},
    "json.duplicate_key": {"en": "a duplicate key", "zh": "重复的键"},
    "json.mixed_arguments": {
        "en": "arguments arrived both as an object and as text",
        "zh": "参数同时以对象和文本形式到达",
    },
    "json.invalid": {"en": "malformed JSON", "zh": "格式错误的 JSON"},
    # Execution: what the model reads about a call that did not run, or did not finish.
    "exec.cancelled": {"en": "the call was cancelled", "zh": "调用已被取消"},
    "exec.internal_error": {
        "en": "the call could not be run because of an internal error",
        "zh": "由于内部错误，调用无法执行",
    },
    "exec.not_started": {
        "en": "the call could not be started because of an internal error; it did not run",
        "zh": "由于内部错误，调用未能启动；它没有运行",
    },
    "exec.invalid_arguments": {
        "en": "the arguments hold a value that cannot be read (such as a reference cycle); the "
        "call was not executed",
        "zh": "参数中含有无法读取的值（例如循环引用）；调用未执行",
    },
    "exec.bad_signature": {
        "en": "the arguments do not fit the tool's parameters ({detail}); the call was not "
        "executed",
        "zh": "参数与工具的参数列表不符（{detail}）；调用未执行",
    },
    "exec.unknown_tool": {
        "en": "no tool named {tool} is registered",
        "zh": "没有注册名为 {tool} 的工具",
    },
    "exec.ledger_unavailable": {
        "en": "the idempotency store is unavailable, so this write was not executed; it is safe "
        "to retry later",
        "zh": "幂等存储不可用，此写操作未执行；稍后重试是安全的",
    },
    "exec.idempotency_conflict": {
        "en": "this call id was already used with different arguments; the call was not executed",
        "zh": "此调用 id 已用于不同的参数；调用未执行",
    },
    "exec.unknown_outcome": {
        "en": "a previous execution of this call may or may not have taken effect; it was not "
        "executed again. Check the system before retrying.",
        "zh": "此调用之前的执行可能已生效，也可能未生效；未再次执行。重试前请先检查系统。",
    },
    "exec.in_progress_retry": {
        "en": "an identical call is still executing; it was not started again. Call again after "
        "retry_after seconds to get its result",
        "zh": "相同的调用仍在执行，未再次启动。请在 retry_after 秒后再次调用以获取其结果",
    },
    "exec.in_progress_wait": {
        "en": "an identical call is still executing; it was not started again. Do not call it "
        "again: a new call would run it a second time",
        "zh": "相同的调用仍在执行，未再次启动。请勿再次调用：新的调用会再执行一次",
    },
    "exec.result_too_large": {
        "en": "the tool ran, but its result is {size} characters long, more than the {limit} "
        "that can be sent, so it is not shown. Ask for less: a narrower query, fewer fields or "
        "a smaller page",
        "zh": "工具已运行，但其结果长 {size} 个字符，超过可发送的 {limit} 个字符，因此未显示。"
        "请求更少的内容：更窄的查询、更少的字段或更小的分页",
    },
    "exec.write_result_too_large": {
        "en": "the tool ran and made its change, but its result is {size} characters long, more "
        "than the {limit} that can be sent, so it is not shown",
        "zh": "工具已运行并完成了更改，但其结果长 {size} 个字符，超过可发送的 {limit} 个字符，"
        "因此未显示",
    },
    "exec.not_json": {
        "en": "the tool ran but returned a value that cannot be converted to JSON ({kind})",
        "zh": "工具已运行，但返回的值无法转换为 JSON（{kind}）",
    },
    "exec.breaker_open": {
        "en": "tool {tool} is temporarily unavailable after repeated failures; it was not called",
        "zh": "工具 {tool} 因多次失败暂时不可用；未调用",
    },
    "exec.unknown_write_outcome": {
        "en": "the write may or may not have taken effect ({kind}); it will not be retried "
        "automatically. Check before retrying.",
        "zh": "写操作可能已生效，也可能未生效（{kind}）；不会自动重试。重试前请先检查。",
    },
    "exec.kind.timeout": {"en": "the tool did not answer in time", "zh": "工具未能及时响应"},
    "exec.kind.rate_limited": {
        "en": "the downstream service is rate limiting requests",
        "zh": "下游服务正在限制请求速率",
    },
    "exec.kind.bad_gateway": {"en": "the downstream service failed", "zh": "下游服务出错"},
    "exec.kind.service_unavailable": {
        "en": "the downstream service is unavailable",
        "zh": "下游服务不可用",
    },
    "exec.kind.gateway_timeout": {
        "en": "the downstream service did not answer in time",
        "zh": "下游服务未能及时响应",
    },
    "exec.kind.server_error": {"en": "the downstream service failed", "zh": "下游服务出错"},
    "exec.kind.connection_error": {
        "en": "the downstream service could not be reached",
        "zh": "无法连接下游服务",
    },
    "exec.kind.bad_request": {
        "en": "the downstream service rejected the request",
        "zh": "下游服务拒绝了请求",
    },
    "exec.kind.unauthorized": {
        "en": "the tool is not authorised to make this request",
        "zh": "工具未获授权发出此请求",
    },
    "exec.kind.forbidden": {
        "en": "the tool is not allowed to make this request",
        "zh": "工具不被允许发出此请求",
    },
    "exec.kind.not_found": {
        "en": "the downstream service did not find what was asked for",
        "zh": "下游服务未找到所请求的内容",
    },
    "exec.kind.conflict": {
        "en": "the downstream service reported a conflict",
        "zh": "下游服务报告了冲突",
    },
    "exec.kind.unprocessable": {
        "en": "the downstream service rejected the request",
        "zh": "下游服务拒绝了请求",
    },
    "exec.kind.client_error": {
        "en": "the downstream service rejected the request",
        "zh": "下游服务拒绝了请求",
    },
    "exec.kind.cancelled": {"en": "the call was cancelled", "zh": "调用已被取消"},
    "exec.kind.interrupted": {"en": "the call was interrupted", "zh": "调用被中断"},
    "exec.kind.deadline_exceeded": {
        "en": "the request's deadline passed",
        "zh": "请求的截止时间已过",
    },
    "exec.kind.unexpected": {
        "en": "the tool failed with an unexpected error",
        "zh": "工具因意外错误而失败",
    },
}


def text(key: str, lang: Lang = "en", /, **values: object) -> str:
    """Render one template from `MESSAGES`.

    Args:
        key: The template key.
        lang: `"en"` or `"zh"`; a missing translation falls back to English.
        **values: Values for the template's placeholders.

    Returns:
        The rendered text.
    """
    entry = MESSAGES[key]
    template = entry.get(lang) or entry["en"]
    return template.format(**values) if values else template


class FieldErrorLike(Protocol):
    """Anything that renders as one entry of a payload's `errors` list."""

    def as_payload(self) -> dict[str, str]: ...


class Named(Protocol):
    """What `wrap_message` reads of the call it answers."""

    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...


class _Identified(Protocol):
    @property
    def id(self) -> str | None: ...
    @property
    def ordinal(self) -> int: ...


def require_call(call: object, attributes: Sequence[str], *, what: str = "call") -> None:
    """Raise `TypeError` unless `call` has `attributes`: a call of the wrong kind (a str, a
    dict, an `Outcome` where a `ToolCall` belongs) is refused where it is given, with what to
    pass, rather than failing deep inside as an `AttributeError`."""
    for name in attributes:
        if not hasattr(call, name):
            raise TypeError(
                f"{what} must be a ToolCall (from Assembler.finish) or an object with its "
                f"attributes, not {type(call).__name__} (it has no {name!r})"
            )


def call_id_for(call: _Identified) -> str:
    """The id to answer a call with: its own id, or `toolwire_<ordinal>` if it has none.

    A call without an id cannot be answered by id; the synthetic id is stable, so echo the same
    id in the assistant message you send back with the history. No other call of the turn
    answers to it: the assembler renames a wire id that repeats an earlier one or equals a
    synthetic id (warning `duplicate_id`, the wire id kept in `metadata["wire_id"]`).

    Args:
        call: A completed call.

    Returns:
        The call id.
    """
    require_call(call, ("id", "ordinal"))
    return call.id if call.id else f"toolwire_{call.ordinal}"


def answering_id(call: _Identified | None, own: str | None, synthetic: str | None = None) -> str:
    """The id a message answers: `call`'s (`call_id_for`), which must be the call `own` (the
    id an outcome carries, None for a call without one) belongs to, or for a call without an
    id the one `synthetic` (its `toolwire_<ordinal>`, when known) names; without a call,
    `own`, else `synthetic`.

    Raises:
        MisuseError: `call` is not the call `own` or `synthetic` names (the message would
            answer one call with another's verdict), or there is no call and no id: the
            synthetic `toolwire_<ordinal>` of a call without an id needs the call (or an
            outcome from `Toolset.validate`, which carries it), and an empty id is refused by
            every provider.
    """
    from toolwire._core import MisuseError

    if call is None:
        if not own and not synthetic:
            raise MisuseError(
                "this outcome's call had no id: pass the call, to_message(call, ...), so "
                "that the message answers it as toolwire_<ordinal>"
            )
        return own or cast(str, synthetic)
    require_call(call, ("id", "ordinal"))
    answer = call_id_for(call)
    if own and call.id != own:
        raise MisuseError(f"the outcome of call {own!r} does not answer call {call.id!r}")
    if not own and synthetic and answer != synthetic:
        raise MisuseError(f"the outcome of call {synthetic!r} does not answer call {answer!r}")
    return answer


def _compact(payload: Mapping[str, Any]) -> str:
    return compact_json(payload)


def compact_json(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """Compact JSON text that any provider client can send: UTF-8 kept as it is, except that
    a value holding a lone surrogate (a file name decoded with `surrogateescape`, say), which
    has no UTF-8 form, is written with `\\u` escapes, which decode back to the same string."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), default=default)
    return text


# The type the core gives a custom tool's call (a Responses `custom_tool_call`), whose
# `arguments` are its free-form input, never read as JSON.
FREE_FORM_TYPE = "custom"


def is_free_form(call: object) -> bool:
    """Whether `call` is a custom tool's call (type `custom`: a Responses `custom_tool_call`,
    whose `arguments` are its free-form input, not JSON)."""
    return getattr(call, "type", None) == FREE_FORM_TYPE


def sendable_text(text: str) -> str:
    """`text` with each lone surrogate replaced by one U+FFFD, so that it encodes as UTF-8
    (plain text, unlike JSON, has no escape that keeps it); a pair of surrogate halves is the
    character they make. Through UTF-16, whose decoder pairs halves and replaces a lone one
    once, where UTF-8's would replace each of its three bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def wrap_message(
    style: Style,
    call_id: str,
    content: str,
    *,
    is_error: bool,
    call: Named | None = None,
    bedrock_status: bool = True,
    stateful: bool = False,
) -> dict[str, Any]:
    """Wrap payload text in the provider's tool-result message shape.

    Anthropic's `tool_result` and Bedrock's `toolResult` blocks are the content of one user
    message that holds every result of the turn (put them first in it); the other shapes are
    items of the conversation themselves (Gemini's parts, too, go in one `user` content).

    On `openai-responses`, a custom tool's call (type `custom`, a `custom_tool_call` item) is
    answered with a `custom_tool_call_output` item, any other with a `function_call_output`.

    A Gemini call without a name is answered with a `text` part holding the payload (the
    `missing_name` error), not a `functionResponse` with an empty name: a response must name
    the function it answers, and Gemini pairs the responses with the calls of the model's turn
    by name and count. The model's turn sent back must not hold such a call as a
    `functionCall` either (it needs a name as well): `assistant_turn` sends it as a `text`
    part; the text here still tells the model, once, what went wrong.

    Args:
        style: The provider message shape.
        call_id: The tool-call id being answered.
        content: The payload text.
        is_error: Whether the payload reports a failure (Anthropic's `is_error`, Bedrock's
            `status`, Gemini's `error` key).
        call: The call answered: Gemini matches a response to its call by the name the model
            sent, and by the id it sent only when it sent one (a repeated id the assembler
            renamed goes back as sent, `metadata["wire_id"]`); its `type` tells a custom
            tool's call on `openai-responses`.
        bedrock_status: Whether a Bedrock `toolResult` carries `status` (`success` or
            `error`). AWS documents it for Anthropic Claude and Amazon Nova models only, and
            other models may refuse a request with it: pass False for them. A failure is
            then told by its content, toolwire's error payload (`{"ok":false,...}`).
        stateful: The result continues a response the provider stored (`openai-responses`
            with `previous_response_id`): it answers `call` by the `call_id` the provider
            sent, which for a call whose repeated id the assembler renamed is its wire id
            (`metadata["wire_id"]`), not `call_id`. The other shapes have no stored turn.

    Returns:
        The message dict.

    Raises:
        ValueError: On an unknown style, or `stateful` with a style other than
            `openai-responses`.
    """
    _check_stateful(style, stateful)
    given = call_id
    if style in _ID_RULES:
        call_id = sent_id(call_id, style)
    if style == "openai-chat":
        return {"role": "tool", "tool_call_id": call_id, "content": content}
    if style == "openai-responses":
        # A custom tool's call (free-form input) takes its own output item type: the API
        # refuses a `function_call_output` for it.
        kind = "custom_tool_call_output" if is_free_form(call) else "function_call_output"
        output = {"type": kind, "call_id": call_id, "output": content}
        # A stored turn knows its calls only by the ids the server sent, however long.
        if stateful:
            return _as_stored(output, given if call is None else _provider_id(call))
        return output
    if style == "anthropic":
        message: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": content,
        }
        if is_error:
            message["is_error"] = True
        return message
    if style == "gemini":
        # `response` must be an object; Gemini reads `output` as the result and `error` as a
        # failure. A call without an id (Gemini's own API sends none) is answered by name,
        # with no id: Gemini never saw the `toolwire_<ordinal>` toolwire made up.
        name = call.name if call else None
        if not name:
            return {"text": content}
        response: dict[str, Any] = {"name": name}
        if call is None or call.id:
            response["id"] = _provider_id(call) if call is not None else call_id
        response["response"] = {"error" if is_error else "output": content}
        return {"functionResponse": response}
    if style == "bedrock-converse":
        # Bedrock refuses a blank `text` block ("is blank"), which a tool returning "" gives.
        block = {"text": content} if content.strip() else {"json": {"output": content}}
        result: dict[str, Any] = {"toolUseId": call_id, "content": [block]}
        if bedrock_status:
            result["status"] = "error" if is_error else "success"
        return {"toolResult": result}
    raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")


_ID_RULES: dict[Style, tuple[int | None, str | None]] = {
    # The most characters an id may have, and the pattern it must match, where the provider
    # has them: Anthropic refuses a `tool_use.id` outside `^[a-zA-Z0-9_-]+$`, Bedrock a
    # `toolUseId` over 64 or outside `[a-zA-Z0-9_.:-]+` (its service model), the Responses API
    # an `input[].call_id` over 64 (`string_above_max_length`), though its Codex backend sends
    # longer ones. A result for a stored Responses turn (`stateful`) answers the `call_id` the
    # server stored instead, and Gemini pairs by the id it sent: kept as they are. So are Chat
    # ids: OpenAI's own API refuses one over 40 characters, but the servers that send longer
    # ones (vLLM's `chatcmpl-tool-` and 32 hex digits) take them back, and an application that
    # sends its own copy of the model's turn with toolwire's results must find the ids it got.
    "anthropic": (None, "a-zA-Z0-9_-"),
    "bedrock-converse": (64, "a-zA-Z0-9_.:-"),
    "openai-responses": (64, None),
}
_DIGEST_CHARS = 16


def sent_id(call_id: str, style: Style) -> str:
    """The id a call goes under in `style`'s request, in its turn and in its result alike:
    `call_id` itself when the provider takes it, else one it takes. An id can be one a
    provider refuses: longer than the 64 characters of Bedrock and the Responses API (a long
    wire id sent on from another provider, or sent by the Responses API's own Codex backend;
    the assembler's rename of a repeated id keeps within the limits its wire id was within),
    or with characters Anthropic or Bedrock refuse (an OpenAI-compatible server's
    `functions.get_weather:0`, say, when its calls are sent on to another provider). Such an
    id goes as its allowed characters (any other one `_`), cut to fit, then `_` and a digest
    of the whole id: the same id always goes the same way, and two ids go as two.

    Args:
        call_id: The id toolwire answers the call with (`call_id_for`).
        style: The provider message shape.

    Returns:
        The id to send.
    """
    rule = _ID_RULES.get(style)
    if rule is None:
        return call_id
    limit, allowed = rule
    if (limit is None or len(call_id) <= limit) and (
        allowed is None or re.fullmatch(f"[{allowed}]+", call_id)
    ):
        return call_id
    stem = call_id if allowed is None else re.sub(f"[^{allowed}]", "_", call_id)
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()
    if limit is not None:
        stem = stem[: max(0, limit - _DIGEST_CHARS - 1)]
    return f"{stem}_{digest[:_DIGEST_CHARS]}"


def _provider_id(call: Named) -> str | None:
    """The id the provider sent with a call, which Gemini's `functionCall` and
    `functionResponse` carry back, as does a result for a stored Responses turn (`stateful`):
    a wire id the assembler renamed because it repeated an earlier call's (`wire_id_of`) goes
    back as the provider sent it, since it never saw the new one, and the calls that share it
    are told apart by their order; None for a call without an id."""
    return wire_id_of(call) or call.id


RENAMED_END = frozenset("0123456789_")
"""The characters an id the assembler renamed can end with (`<wire id>_<ordinal>`, or
`..._<ordinal>_<n>`, a Mistral id's last characters the ordinal's digits; `_` in the renames
of earlier versions): an id ending otherwise was not renamed, and its call need not be
asked."""


def wire_id_of(call: object) -> str | None:
    """The id the provider sent for `call` when the assembler renamed it for repeating an
    earlier call's (warning `duplicate_id`, `metadata["wire_id"]`), else None. The one reader
    of `metadata["wire_id"]`, so that a result sent with its call and one sent with the
    outcome alone (`Outcome.wire_id`) answer the same id. Renames are rare: an id that cannot
    be one (not ending in `RENAMED_END`) is passed over without asking the call anything
    more, and the warnings are asked before the metadata, which a native call builds anew on
    each read."""
    own: object = getattr(call, "id", None)
    if not isinstance(own, str) or not own or own[-1] not in RENAMED_END:
        return None
    if "duplicate_id" not in cast(Any, getattr(call, "warnings", ())):
        return None
    wire = _metadata(call).get("wire_id")
    return wire if isinstance(wire, str) and wire and wire != own else None


def _check_stateful(style: Style, stateful: bool) -> None:
    """Refuse `stateful` for a style without stored turns.

    With `previous_response_id`, the Responses API holds the model's turn as it sent it, so a
    result must answer the `call_id` it stored: for a call whose repeated id the assembler
    renamed, the wire id, which the new id (what a turn sent back by `assistant_turn`
    pairs with) would not match. The other shapes are sent whole with every request, so
    their results answer the turn sent with them.

    Raises:
        ValueError: `stateful` for a style other than `openai-responses`.
    """
    if stateful and style != "openai-responses":
        raise ValueError(
            "stateful=True is for openai-responses (a continuation by previous_response_id), "
            f"not {style!r}: its turn is sent with the request"
        )


def _as_stored(message: dict[str, Any], wire_id: str | None) -> dict[str, Any]:
    """`message`, an `openai-responses` result, answering its call by `wire_id`, the
    `call_id` the provider stored it under (`stateful`), when there is one."""
    if wire_id:
        message["call_id"] = wire_id
    return message


def _status_kept(message: dict[str, Any], bedrock_status: bool) -> dict[str, Any]:
    """`message`, without a Bedrock `toolResult`'s `status` unless `bedrock_status`."""
    if not bedrock_status:
        block: object = message.get("toolResult")
        if isinstance(block, dict):
            cast(dict[str, Any], block).pop("status", None)
    return message


def finite_json(value: Any) -> Any:
    """`value` (JSON-compatible data) with NaN and infinite floats replaced by None.

    JSON has no NaN or Infinity; `json.dumps` and pydantic-core would write them as bare
    `NaN`/`Infinity`, which a strict reader (or a model told "this is JSON") rejects.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in cast(dict[Any, Any], value).items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in cast(Sequence[Any], value)]
    return value


def no_json_form(value: Any) -> Any:
    """pydantic-core's fallback for a tool result: a value it has no JSON form for is refused.

    Writing such a value as its `str` or `repr` would send the model whatever that text holds (a
    client's connection URL with its password, a memory address) as if the tool had returned
    it, so the call is answered with `invalid_result` instead. A `LosslessFloat` is written as
    its exact text, as it always was.

    Raises:
        TypeError: For every value but a `LosslessFloat`.
    """
    from toolwire._core import LosslessFloat

    if isinstance(value, LosslessFloat):
        return str(value)
    if isinstance(value, range):
        # A sequence, as a list or a tuple is (pydantic-core knows no `range`).
        return list(value)
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def _with_ranges(fallback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`fallback` with a `range` written as the array it is, whatever the fallback."""
    if fallback is no_json_form:
        return fallback

    def either(value: Any) -> Any:
        return list(value) if isinstance(value, range) else fallback(value)

    return either


class _Rule(NamedTuple):
    """What `_rebuilt` changes in a result: `leaf` gives a value's stand-in (the value itself
    when it has none), which is walked in turn; `key` a mapping key's; `changes` whether the
    members of a model or dataclass hold anything to change, told without using them up."""

    leaf: Callable[[object], object]
    key: Callable[[object], object]
    changes: Callable[[list[object], set[int]], bool]


def _rebuilt(value: object, seen: set[int], rule: _Rule) -> object:
    """`value` with `rule` applied wherever it is in its mappings, lists, tuples, sets, models
    and dataclasses. Containers are rebuilt only where something changed, a sequence or set
    as a list (the writer makes an array of each); a model or dataclass with anything to change
    is taken as the data pydantic-core writes it as (its Python form, with the keys the writer
    uses). A cycle is left for the writer to refuse."""
    if type(value) in _LEAVES or id(value) in seen:
        return value
    stand_in = rule.leaf(value)
    if stand_in is not value:
        return _rebuilt(stand_in, seen, rule)
    mapping = _as_mapping(value)
    listed = _as_listed(value)
    members = _members(value) if mapping is None and listed is None else None
    if mapping is None and listed is None and members is None:
        return value
    key_of = id(value)
    seen.add(key_of)
    try:
        if mapping is not None:
            items = [(rule.key(key), _rebuilt(item, seen, rule)) for key, item in mapping.items()]
            changed = any(
                new_key is not old_key or new is not old
                for (new_key, new), (old_key, old) in zip(items, mapping.items(), strict=True)
            )
            return dict(items) if changed else value
        if listed is not None:
            walked = [_rebuilt(item, seen, rule) for item in listed]
            changed = any(new is not old for new, old in zip(walked, listed, strict=True))
            return walked if changed else value
        if not rule.changes(cast(list[object], members), seen):
            return value
        return _rebuilt(_as_data(value), seen, rule)
    finally:
        seen.discard(key_of)


_SEQUENCES = (list, tuple, set, frozenset)


def _as_mapping(value: object) -> Mapping[object, object] | None:
    return cast(Mapping[object, object], value) if isinstance(value, Mapping) else None


def _as_listed(value: object) -> list[object] | None:
    """A list, tuple or set's members (None for anything else)."""
    return list(cast(Iterable[object], value)) if isinstance(value, _SEQUENCES) else None


def _as_data(value: object) -> object:
    """A model or dataclass as Python data, `Decimal`s and iterators kept (a model's iterators
    wrapped, not read), with the keys the writer uses (aliases, a model's extra fields)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="python", by_alias=True)
    return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(cast(Any, value))}


def _spelt_leaf(value: object) -> object:
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        return math.nan
    return value


def _spelt_changes(members: list[object], seen: set[int]) -> bool:
    return any(_rebuilt(item, seen, _SPELLING) is not item for item in members)


def _spelt_key(key: object) -> object:
    return "null" if key is None else key


_SPELLING = _Rule(_spelt_leaf, _spelt_key, _spelt_changes)
"""What pydantic-core writes unlike JSON's own reading, spelt as JSON spells it: a non-finite
`Decimal` (written `"NaN"`, `"Infinity"`, where a float's is null) as a NaN float, so that it
becomes null as a float does, and a `None` mapping key (written `"None"`) as `"null"`, as
`json.dumps` writes it."""


def _json_spelt(value: object) -> object:
    """`value` with `_SPELLING` applied (see `_rebuilt`)."""
    return _rebuilt(value, set(), _SPELLING)


def _read_leaf(value: object) -> object:
    return list(cast(Iterator[object], value)) if isinstance(value, Iterator) else value


def _same_key(key: object) -> object:
    return key


def _read_changes(members: list[object], _seen: set[int]) -> bool:
    return _holds_iterator(members)


_READING = _Rule(_read_leaf, _same_key, _read_changes)
"""Every iterator and generator read into a list, as the writer would make an array of it."""


def _read_once(value: object) -> object:
    """`value` with every iterator and generator in it read into a list (`_READING`): a result
    may be written more than once (re-spelt, or by the slower path), and a second read of an
    iterator finds it spent. A model or dataclass holding one is taken as its data, with its
    iterators read from the form the writer gives them."""
    if not _holds_iterator(value):
        return value
    try:
        return _rebuilt(value, set(), _READING)
    except RecursionError:  # nested past Python's stack: the writer refuses it anyway
        return value


# How deep, and over how many values, `_holds_iterator` looks before it leaves the question to
# the walk that rebuilds (which also stops at a cycle).
_SCAN_LEVELS = 64
_SCAN_VALUES = 1_000_000


def _holds_iterator(value: object) -> bool:
    """Whether `value` may hold an iterator in its lists, tuples, sets, mappings, models and
    dataclasses: read one level of nesting at a time, with the per-value work in C (`map`,
    `chain`, `set`), and the per-container work by type. A Python call per value, as the
    rebuilding walk makes, tripled the cost of writing a 20 KB result that holds none, which
    is nearly every result."""
    level: list[object] = [value]
    budget = _SCAN_VALUES
    for _ in range(_SCAN_LEVELS):
        if not level:
            return False
        kinds = set(map(type, level))
        children: list[object] = []
        for kind in kinds:
            if issubclass(kind, Iterator):
                return True
            members = level if len(kinds) == 1 else [v for v in level if type(v) is kind]
            if issubclass(kind, Mapping):
                # The type's own `values` (dict's is C), not `Mapping.values`, a Python view.
                values: Callable[[object], Iterable[object]] = cast(Any, kind).values
                children.extend(chain.from_iterable(map(values, members)))
            elif issubclass(kind, _SEQUENCES):
                children.extend(chain.from_iterable(cast("list[Iterable[object]]", members)))
            elif issubclass(kind, pydantic.BaseModel) or dataclasses.is_dataclass(
                cast(object, kind)
            ):
                children.extend(chain.from_iterable(map(_members_of, members)))
        budget -= len(children)
        if budget < 0:
            return True
        if set(map(type, children)) <= _LEAVES:
            return False
        level = [child for child in children if type(child) not in _LEAVES]
    return True


def _members_of(value: object) -> list[object]:
    return _members(value) or []


def _json_key(key: object) -> object:
    """The text JSON writes for a mapping key (pydantic-core's: `1` as `"1"`, `True` as
    `"true"`); a key it cannot write gets a marker equal to no other."""
    if key is None:
        return "null"  # as a result writes it (see `_json_spelt`)
    try:
        converted = pydantic_core.to_jsonable_python({key: None}, fallback=no_json_form)
    except Exception:
        return object()
    return next(iter(cast(dict[str, Any], converted)), object())


# Values that hold no mapping: skipped without a look (most of a large result).
_LEAVES = frozenset((str, int, float, bool, type(None), bytes))


def _members(value: object) -> list[object] | None:
    """What a model or dataclass in a result holds (None for anything else)."""
    if isinstance(value, pydantic.BaseModel):
        # A model's extra fields (`extra="allow"`) are written too, and kept beside its own.
        extra = value.__pydantic_extra__
        return [*vars(value).values(), *extra.values()] if extra else list(vars(value).values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    return None


def _check_mapping(mapping: Mapping[object, object]) -> None:
    first: dict[object, object] = {}
    for key in mapping:
        text = _json_key(key)
        if text in first:
            raise ValueError(
                f"two keys of one mapping, a {type(first[text]).__name__} and a "
                f"{type(key).__name__}, are both the JSON key {text!r}: one entry would be lost"
            )
        first[text] = key


def _check_keys(result: object) -> None:
    """Refuse a result with two keys of one mapping that JSON writes as one.

    JSON object keys are text, so `{1: "a", "1": "b"}` (or `True` and `"true"`, an enum and
    its value) would be written with one entry lost, silently. Only mappings with a key that
    is not a str can hold such a pair; lists, tuples, sets, models and dataclasses are looked
    into. Called once the result was converted, so it has no reference cycle.

    Raises:
        ValueError: Naming the JSON key two keys share.
    """
    stack: list[object] = [result]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict or isinstance(value, Mapping):
            mapping = cast(Mapping[object, object], value)
            if not all(type(k) is str for k in mapping):
                _check_mapping(mapping)
            stack.extend(v for v in mapping.values() if type(v) not in _LEAVES)
        elif kind is list or kind is tuple or isinstance(value, (list, tuple, set, frozenset)):
            items = cast(Sequence[object], value)
            stack.extend(v for v in items if type(v) not in _LEAVES)
        elif kind not in _LEAVES:
            members = _members(value)
            if members is not None:
                stack.extend(members)


def jsonable_result(result: object, *, fallback: Callable[[Any], Any] = no_json_form) -> Any:
    """A tool result as JSON-compatible data, checked to be writable as JSON text.

    The conversions are pydantic-core's: models and dataclasses become objects, tuples, sets
    generators and ranges arrays, `datetime`s, `Decimal`, `UUID`, enums, paths and IP addresses
    their text or value, UTF-8 `bytes` text; NaN and infinite numbers (JSON has none), floats
    and `Decimal`s alike, become null, and a `None` key `"null"`, as `json.dumps` writes it.
    Anything else is handed to `fallback`, which by default refuses it.

    Args:
        result: What the tool returned.
        fallback: Called for a value pydantic-core does not know; returns its stand-in.

    Returns:
        Plain data that `json.dumps(..., allow_nan=False)` writes.

    Raises:
        ValueError: (or another `Exception`) The value cannot be written: a value with no JSON
            form, a reference cycle, bytes that are not UTF-8, an integer past CPython's digit
            limit, two keys of one mapping that are one JSON key (`1` and `"1"`)...
    """
    return _jsonable(_read_once(result), fallback)


def _jsonable(result: object, fallback: Callable[[Any], Any] = no_json_form) -> Any:
    """`jsonable_result` of a result whose iterators were already read (`_read_once`), as
    `result_content`'s slower paths hand it over: it is not scanned for them again."""
    written = _with_ranges(fallback)

    def leaf(value: Any) -> Any:
        return pydantic_core.to_jsonable_python(value, fallback=written)

    def whole(value: object) -> Any:
        try:
            return leaf(value)
        except UnicodeEncodeError:
            # pydantic-core refuses a lone surrogate in a key (a file name decoded with
            # `surrogateescape`); the standard encoder escapes it, and it reads back the same.
            return json.loads(compact_json(value, default=leaf))

    plain = whole(result)
    try:
        text = json.dumps(plain, allow_nan=False)
    except ValueError:
        text = None
    # What pydantic-core may have written otherwise than JSON reads it (a `Decimal("NaN")`,
    # a `None` key): rare, so the result is looked into only then.
    if text is None or _MAY_BE_SPELT_OTHERWISE.search(text):
        try:
            spelt = _json_spelt(result)
        except RecursionError:  # nested past Python's stack: as pydantic-core wrote it
            spelt = result
        if spelt is not result:
            plain = whole(spelt)
        plain = finite_json(plain)
        json.dumps(plain, allow_nan=False)  # what is still unwritable raises here
    _check_keys(result)
    return plain


_MAY_BE_SPELT_OTHERWISE = re.compile(r'NaN|Infinity|"None"')


def result_content(result: object) -> str:
    """The payload text for a successful tool result.

    A string is sent as it is (most tools return text), a lone surrogate replaced with U+FFFD;
    anything else is sent as compact JSON through pydantic-core, so models, dataclasses,
    `Decimal` and `datetime` all serialise (`jsonable_result` lists the conversions). NaN and
    infinite numbers, floats and `Decimal`s alike, are written as null, a `None` key as
    `"null"`.

    Args:
        result: What the tool returned.

    Returns:
        The payload text.

    Raises:
        ValueError: (or another `Exception`) The value cannot be written as JSON (a cycle, an
            object with no JSON form, an integer past the interpreter's digit limit, two keys
            of one mapping that are one JSON key;
            `tool_messages` answers the call with an `invalid_result` error then, as the
            executor does).
    """
    if isinstance(result, str):
        return sendable_text(result)
    result = _read_once(result)
    try:
        text = pydantic_core.to_json(result, fallback=no_json_form)
    except Exception:
        # pydantic-core refuses a lone surrogate; the standard encoder escapes it. Anything
        # it cannot write either is raised to the caller.
        return compact_json(_jsonable(result))
    _check_keys(result)
    if b"NaN" in text or b"Infinity" in text or b'"None":' in text:
        # Rare, and may also be inside a string: a NaN float or `Decimal`, a `None` key.
        return _respelt(result, text)
    # pydantic-core writes an integer of any length, which Python's own reader (and the
    # executor, which writes with `json`) refuses past the interpreter's digit limit: such a
    # result is answered as the executor answers it. A long digit run in a string costs only
    # the slower path.
    limit = sys.get_int_max_str_digits()
    if limit and re.search(rb"\d{%d}" % (limit + 1), text):
        return compact_json(_jsonable(result))
    return text.decode()


def _respelt(result: object, text: bytes) -> str:
    """`result_content` of a result pydantic-core wrote as `text` with what JSON reads
    otherwise (NaN, infinities, a `None` key): from `text` itself where only floats are at
    fault, which spares writing `result` a second time."""
    try:
        spelt = _json_spelt(result)
    except RecursionError:  # nested past Python's stack: as pydantic-core wrote it
        spelt = result
    if spelt is not result:  # its keys were checked as returned (a `None` beside a `"null"`)
        return compact_json(_jsonable(spelt))
    plain = finite_json(json.loads(text))
    json.dumps(plain, allow_nan=False)  # what is still unwritable raises here
    return compact_json(plain)


def failure_content(
    *,
    error_type: str,
    message: str | None,
    errors: Sequence[FieldErrorLike],
    hint: str | None,
    retryable: bool,
    attempt: int,
    instruction: str,
    max_result_chars: int | None = None,
) -> str:
    """Compact-JSON failure payload text with the fixed key order.

    A payload longer than `max_result_chars` goes without the field errors and the hint, its
    texts cut: what failed and what to do next stay. Every text the model sent is cut where
    it is echoed, so only a small cap gets to that form, which may still pass it (a failure
    is never left unanswered).

    Args:
        error_type: The failure slug.
        message: One sentence about the failure, if any.
        errors: Field errors (each with `as_payload()`).
        hint: Advice, if any.
        retryable: Whether calling again can help.
        attempt: Which attempt this was.
        instruction: What the model must do next.
        max_result_chars: The cap on the payload's length in characters (None: no cap).

    Returns:
        The payload text.
    """
    payload: dict[str, Any] = {"ok": False, "error_type": error_type}
    if message:
        payload["message"] = message
    if errors:
        payload["errors"] = [e.as_payload() for e in errors]
    if hint:
        payload["hint"] = hint
    payload["retryable"] = retryable
    payload["attempt"] = attempt
    payload["instruction"] = instruction
    content = _compact(payload)
    if max_result_chars is None or len(content) <= max_result_chars:
        return content
    from toolwire.validation import shown_text

    return failure_content(
        error_type=shown_text(error_type),
        message=shown_text(message) if message else None,
        errors=(),
        hint=None,
        retryable=retryable,
        attempt=attempt,
        instruction=shown_text(instruction),
    )


def error_content(outcome: Outcome, *, attempt: int = 1) -> str:
    """The compact-JSON payload text for a failed outcome.

    Args:
        outcome: A failed outcome.
        attempt: Which attempt at this logical call this was (1 for the first).

    Returns:
        The payload text.
    """
    return failure_content(
        error_type=outcome.error_type,
        message=outcome.message,
        errors=outcome.errors,
        hint=outcome.hint,
        retryable=outcome.retryable,
        attempt=attempt,
        instruction=outcome.instruction(),
    )


def message_for(
    style: Style,
    call_id: str,
    outcome: Outcome,
    *,
    attempt: int = 1,
    result: object = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    call: Named | None = None,
    scrub: Callable[[str], str] | None = None,
    bedrock_status: bool = True,
    stateful: bool = False,
) -> dict[str, Any]:
    """The tool-result message for one outcome (with the tool's result when it succeeded).

    A result that cannot be written (a cycle, bytes that are not UTF-8, a `__str__` that
    raises) answers the call as an `invalid_result` error, as `tool_messages` answers it: the
    call must still get its one message. One whose content would be longer than
    `max_result_chars` (None: no cap) answers it as a `result_too_large` error. An
    `ExecutionResult` gives the executor's payload, as in `tool_messages`. `call` is the call
    answered (Gemini's response carries its name as the model sent it), by default one named
    as the outcome's tool, with the id `call_id`. `scrub` hides the call's secret arguments in
    the reasons of a `BusinessRuleError` given as the result. `bedrock_status` and
    `stateful` as in `wrap_message` (without `call`, `stateful` answers the outcome's
    `wire_id`)."""
    _check_stateful(style, stateful)
    message = _message_for(style, call_id, outcome, attempt, result, max_result_chars, call, scrub)
    if stateful:
        # After the message is made, which checks an `ExecutionResult` against `call_id`.
        _as_stored(message, (outcome.wire_id or call_id) if call is None else _provider_id(call))
    return _status_kept(message, bedrock_status)


def _message_for(
    style: Style,
    call_id: str,
    outcome: Outcome,
    attempt: int,
    result: object,
    max_result_chars: int | None,
    call: Named | None,
    scrub: Callable[[str], str] | None,
) -> dict[str, Any]:
    check_cap(max_result_chars)
    call = _AnsweredCall(call_id, outcome.tool) if call is None else call
    if outcome.ok:
        return _result_message(
            style,
            call_id,
            outcome.tool,
            result,
            lang=outcome.lang,
            attempt=attempt,
            max_result_chars=max_result_chars,
            call=call,
            scrub=scrub,
        )
    content = failure_content(
        error_type=outcome.error_type,
        message=outcome.message,
        errors=outcome.errors,
        hint=outcome.hint,
        retryable=outcome.retryable,
        attempt=attempt,
        instruction=outcome.instruction(),
        max_result_chars=max_result_chars,
    )
    return wrap_message(style, call_id, content, is_error=True, call=call)


def too_large_content(
    size: int, limit: int, tool: str, *, lang: Lang = "en", attempt: int = 1
) -> str:
    """The failure payload text for a result of `size` characters past the cap `limit`.

    Args:
        size: The length of the content that was not sent.
        limit: The cap it passed.
        tool: The tool's name.
        lang: Language of the text.
        attempt: Which attempt this was.

    Returns:
        The payload text (`result_too_large`, retryable: asking for less can work).
    """
    return failure_content(
        error_type="result_too_large",
        message=text("msg.result_too_large", lang, size=size, limit=limit),
        errors=(),
        hint=text("hint.result_too_large", lang),
        retryable=True,
        attempt=attempt,
        instruction=text("instruction.retry", lang, tool=_quoted_tool(tool)),
    )


def _quoted_tool(tool: str) -> str:
    """A tool's name as an instruction quotes it, cut like any text the model sent (an
    unknown tool's name is the model's own)."""
    from toolwire.validation import shown_text

    return json.dumps(shown_text(tool) or "the tool", ensure_ascii=False)


def check_lang(lang: object) -> None:
    """Refuse a language the payload texts are not written in.

    Raises:
        ValueError: `lang` is not one of `Lang` (a payload in another language would come
            out in English without a word).
    """
    if not isinstance(lang, str) or lang not in get_args(Lang):
        choices = " or ".join(repr(choice) for choice in get_args(Lang))
        raise ValueError(f"lang must be {choices}, not {lang!r}")


def check_cap(max_result_chars: int | None) -> None:
    """Refuse a result cap that is not a positive int or None (0 would refuse every result).

    Raises:
        ValueError: `max_result_chars` is below 1, or no int (`True` read as a cap of one
            character, which refused every result).
    """
    cap = cast(object, max_result_chars)
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int)):
        raise ValueError(f"max_result_chars must be an int or None, not {type(cap).__name__}")
    if max_result_chars is not None and max_result_chars < 1:
        raise ValueError(f"max_result_chars must be at least 1 or None, not {max_result_chars}")


def _result_message(
    style: Style,
    call_id: str,
    tool: str,
    result: object,
    *,
    lang: Lang,
    attempt: int,
    max_result_chars: int | None,
    call: Named | None,
    scrub: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The message carrying a tool's result; one that cannot be written (a cycle, a `__str__`
    that raises) answers its call as an `invalid_result` error instead, and one past the cap
    as a `result_too_large` error. An exception the tool raised answers it as a failure:
    `BusinessRuleError` with its reasons (each passed through `scrub`, which hides the call's
    secret arguments a reason quotes), any other as `tool_failed`, without its text. `tool`
    is the name as texts quote it, `call` the call answered (`wrap_message`)."""
    from toolwire.execution.errors import NeedsClarification
    from toolwire.execution.executor import ExecutionResult
    from toolwire.validation import BusinessRuleError, Outcome

    check_cap(max_result_chars)
    if isinstance(result, ExecutionResult):
        return _execution_message(
            style, call_id, result, max_result_chars=max_result_chars, call=call
        )
    _refuse_verdict(result)
    if isinstance(result, BaseException):
        # Written as a result, it was an `invalid_result` ("cannot be sent as JSON"), and a
        # business rule's reasons, which the model must relay, were lost.
        answered = _AnsweredCall(call_id)
        if isinstance(result, BusinessRuleError):
            # Scrubbed before `business_failure` cuts them: a secret cut in two is not found.
            reasons = [r if scrub is None else scrub(r) for r in _reasons_text(result)]
            raised = Outcome.business_failure(answered, tool, reasons, lang=lang)
        elif isinstance(result, NeedsClarification):
            raised = _clarification(answered, tool, result, lang, scrub or _as_is)
        else:
            raised = Outcome.failure(answered, tool, "tool_failed", lang=lang)
        return message_for(
            style,
            call_id,
            raised,
            attempt=attempt,
            max_result_chars=max_result_chars,
            call=call,
        )
    try:
        content = result_content(result)
    except Exception:
        failed = Outcome.failure(_AnsweredCall(call_id), tool, "invalid_result", lang=lang)
        content = error_content(failed, attempt=attempt)
        return wrap_message(style, call_id, content, is_error=True, call=call)
    if max_result_chars is not None and len(content) > max_result_chars:
        refused = too_large_content(
            len(content), max_result_chars, tool, lang=lang, attempt=attempt
        )
        return wrap_message(style, call_id, refused, is_error=True, call=call)
    return wrap_message(style, call_id, content, is_error=False, call=call)


def _as_is(said: str) -> str:
    return said


def _clarification(
    call: _AnsweredCall,
    tool: str,
    exc: NeedsClarification,
    lang: Lang,
    scrub: Callable[[str], str],
) -> Outcome:
    """The outcome of a tool that raised `NeedsClarification`: its question (`message`) and
    the fields it names, for the model to put to the user, as the executor relays them;
    scrubbed, then cut (the tool wrote them, and may quote its arguments)."""
    from toolwire.validation import MAX_ERRORS, Outcome, shown_text

    try:
        question = str(exc.message) or str(exc)
        missing = [str(name) for name in exc.missing][:MAX_ERRORS]
    except Exception:  # a subclass that broke its own attributes: its question is lost
        question, missing = "", []
    fields = [shown_text(scrub(name)) for name in missing]
    message = shown_text(scrub(question))
    if not message and fields:
        message = text("msg.needs_clarification", lang, fields=", ".join(fields))
    if not message:  # nothing to ask: a failure like any other
        return Outcome.failure(call, tool, "tool_failed", lang=lang)
    return Outcome(
        ok=False,
        kind="needs_clarification",
        tool=tool,
        call_id=call.id,
        retryable=False,
        error_type="needs_clarification",
        message=message,
        ask_user=fields,
        lang=lang,
    )


def _reasons_text(exc: BusinessRuleError) -> list[str]:
    """A rejection's reasons as text; one whose `str` raises is left out (it has no text to
    relay, and must not turn the rejection into a failure to answer the call)."""
    out: list[str] = []
    for reason in exc.reasons:
        try:
            out.append(str(reason))
        except Exception:
            continue
    return out


def _refuse_verdict(result: object) -> None:
    """Refuse toolwire's own verdict (an `Outcome` or a repair decision) given as a tool's result.

    Written as a result it would be a dump of the outcome, validated arguments and all (secret
    ones in clear, for a plain tool), sent to the model as a success.

    Raises:
        MisuseError: `result` is an `Outcome`, `Proceed`, `Retry` or `Escalation`.
    """
    from toolwire.repair import Escalation, Proceed, Retry
    from toolwire.validation import Outcome

    if isinstance(result, (Outcome, Proceed, Retry, Escalation)):
        from toolwire._core import MisuseError

        raise MisuseError(
            f"a {type(result).__name__} is toolwire's verdict on a call, not what its tool "
            "returned: pass the tool's result"
        )


def _execution_message(
    style: Style,
    call_id: str,
    result: ExecutionResult,
    *,
    max_result_chars: int | None,
    call: Named | None,
) -> dict[str, Any]:
    """The message for an executor's result, wherever it is passed (`tool_messages`,
    `Outcome.to_message`, `Proceed.to_message`): its payload, never the result object itself,
    whose ledger key, hashes, timings, warnings and exception are for operators, not for the
    model; and a failure is marked as one (Anthropic's `is_error`), or a model that goes by it
    would take a failed write for a done one.

    Raises:
        MisuseError: The result is another call's.
    """
    own = result.call_id or result.synthetic_id
    if own and call_id and own != call_id:
        from toolwire._core import MisuseError

        raise MisuseError(f"the result of call {own!r} does not answer call {call_id!r}")
    content, is_error = result.message_content(max_result_chars=max_result_chars)
    return wrap_message(style, call_id, content, is_error=is_error, call=call)


class _AnsweredCall:
    """The id (and tool name) of the call a message answers, as `Outcome.failure` and
    `wrap_message` read them."""

    __slots__ = ("id", "name")

    def __init__(self, call_id: str, name: str | None = None) -> None:
        self.id: str | None = call_id
        self.name: str | None = name


class _ToolsetLang(enum.Enum):
    """`tool_messages`'s default `lang`: the toolset's language, English without one."""

    TOOLSET = "the toolset's"

    def __repr__(self) -> str:
        return "<the toolset's language>"


_TOOLSET_LANG = _ToolsetLang.TOOLSET


class _CallLike(_Identified, Protocol):
    @property
    def name(self) -> str | None: ...


def tool_messages(
    calls: Sequence[_CallLike],
    outcomes_or_results: Mapping[str | int, object] | Sequence[object],
    *,
    style: Style = "openai-chat",
    lang: Lang | _ToolsetLang = _TOOLSET_LANG,
    attempt: int = 1,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    toolset: Toolset | None = None,
    bedrock_status: bool = True,
    stateful: bool = False,
) -> list[dict[str, Any]]:
    """Exactly one tool-result message per call id, in call order; none is ever missing.

    Each entry in `outcomes_or_results` is read as follows: a failed `Outcome` gives its error
    payload, the message its `to_message` gives (`attempt=` and `max_result_chars=` as given
    here); an `ExecutionResult` (from `Executor`) gives its `content()`, marked as an error
    unless the tool's result is available; an exception gives a generic failure
    (`BusinessRuleError` gives its reasons, `NeedsClarification` its question and the fields
    it names, as the executor relays them; no other exception text, type or traceback reaches
    the model); a successful `Outcome` means the tool was never run and gives a "no result"
    error; a `Retry` or an `Escalation` from `RepairPolicy` gives the message its `to_message`
    gives (under the same `max_result_chars`), and a `Proceed` (the tool not run) a "no
    result" error; anything else is the tool's result. A call with no entry gets an explicit
    "no result" error.

    An entry that names its call (an `ExecutionResult`, or an `Outcome` or decision with a
    `call_id`)
    answers that call wherever it stands in a sequence, so results gathered in completion
    order reach the right calls; under a mapping key its id must be the key's call's.
    Entries without an id are matched by position (or key). No entry is ever dropped for
    matching no call: that, two entries for one call, or an id that contradicts its key
    raises `MisuseError`.

    A result whose content would be longer than `max_result_chars` is not sent: its call is
    answered with a `result_too_large` error giving the size and the cap (an `ExecutionResult`
    through `content(max_result_chars=...)`). An error payload past it is sent without its
    details (field errors, hint, cause), its texts cut.

    Calls that share an id are answered once, by the first of them with an entry (the provider
    accepts one result per id). A call without an id is answered as `toolwire_<ordinal>`. An
    id the provider would refuse (too long, or with characters outside its pattern) is sent
    as `sent_id` maps it, as `assistant_turn` sends it.

    Args:
        calls: The completed calls, in the order the model made them.
        outcomes_or_results: Entries keyed by call id or ordinal, or a sequence aligned with
            `calls` (shorter means missing) whose entries that carry a call id may stand in
            any order.
        style: The provider message shape.
        lang: Language for generated errors; by default the toolset's (`Toolset(lang=...)`),
            else English. A failed `Outcome` is written in its own language.
        attempt: The attempt number written into error payloads.
        max_result_chars: The cap on a message's content in characters (None: no cap).
        toolset: The toolset that validated the calls. A tool's `BusinessRuleError` may
            quote its arguments; with the toolset, each reason is scrubbed as validation's
            payloads are (`Toolset.scrub`: the values the schema marks secret, then the
            `redact` hook). Without it nothing says which arguments are secret, and the
            reasons are sent as the tool wrote them.
        bedrock_status: Whether each Bedrock `toolResult` carries `status` (default True);
            AWS documents it for Anthropic Claude and Amazon Nova models only: pass False
            for the others. A failure is then told by its content, toolwire's error payload
            (`{"ok":false,...}`).
        stateful: The results continue a response the provider stored (`openai-responses`
            with `previous_response_id`, the turn not sent again): each answers the
            `call_id` the provider stored, a renamed call's wire id
            (`metadata["wire_id"]`), so two calls that shared one are both answered under
            it, in their order. Without it they answer the ids `assistant_turn` sends.

    Returns:
        The messages, one per distinct call id.

    Raises:
        ValueError: `max_result_chars` is not a positive int or None, or `stateful` is
            given with a style other than `openai-responses`.
        MisuseError: An entry matches no call, two entries answer one call, or an entry's own
            call id is not the call its key or position gives it.
    """
    from toolwire.repair import Escalation, Proceed, Retry
    from toolwire.validation import Outcome, shown_text

    check_cap(max_result_chars)
    _check_stateful(style, stateful)
    if isinstance(lang, _ToolsetLang):
        # The payloads read as the toolset's own do (an exception's `tool_failed` as the
        # outcome's `to_message(result=exc)`); an explicit None is still refused below.
        lang = "en" if toolset is None else toolset.lang
    check_lang(lang)
    given, kind = cast(object, calls), type(calls).__name__
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
        raise TypeError(f"calls must be a list of ToolCalls (from Assembler.finish), not {kind}")
    for index, call in enumerate(calls):
        require_call(call, ("id", "ordinal", "name"), what=f"calls[{index}]")
    entries = _entries_by_call(calls, outcomes_or_results)
    answered: dict[str, dict[str, Any]] = {}
    missing: dict[str, bool] = {}
    for index, call in enumerate(calls):
        call_id = call_id_for(call)
        if call_id in answered and not missing[call_id]:
            continue
        found = index in entries
        entry = entries.get(index)
        if call_id in answered and not found:
            continue
        # The name is the model's own, echoed in instructions: cut like any text it sent.
        tool = shown_text(call.name or "")
        missing[call_id] = not found
        # A verdict gives the message its own `to_message` gives, under the same cap: one
        # path, so that it reads the same however it is sent. (`to_message` reads no more of
        # the call than `require_call` checked.)
        if isinstance(entry, Outcome) and not entry.ok:
            message = entry.to_message(
                cast("CallLike", call), style, attempt=attempt, max_result_chars=max_result_chars
            )
        elif isinstance(entry, (Retry, Escalation)):
            message = entry.to_message(
                cast("CallLike", call), style, max_result_chars=max_result_chars
            )
        elif not found or isinstance(entry, (Outcome, Proceed)):
            # A successful `Outcome` or a `Proceed` says the tool was never run: written as a
            # result, the verdict would be a dump of the validated arguments, secret ones
            # included.
            outcome = Outcome.failure(call, tool, "no_result", lang=lang)
            message = message_for(
                style,
                call_id,
                outcome,
                attempt=attempt,
                max_result_chars=max_result_chars,
                call=call,
            )
        else:
            # A result that cannot be written still answers its call, as an error: the other
            # calls' results are kept. An `ExecutionResult` gives the executor's payload, an
            # exception a failure.
            message = _result_message(
                style,
                call_id,
                tool,
                entry,
                lang=lang,
                attempt=attempt,
                max_result_chars=max_result_chars,
                call=call,
                scrub=None
                if toolset is None
                else functools.partial(toolset.scrub, cast(Any, call)),
            )
        answered[call_id] = _as_stored(message, _provider_id(call)) if stateful else message
    return [_status_kept(message, bedrock_status) for message in answered.values()]


class _SentCall(_CallLike, Protocol):
    @property
    def arguments(self) -> str: ...


def assistant_turn(
    calls: Sequence[_SentCall],
    *,
    style: Style = "openai-chat",
    text: str | None = None,
    reasoning: Sequence[Mapping[str, Any]] | None = None,
    text_places: Sequence[Sequence[object]] | None = None,
) -> list[dict[str, Any]]:
    """The model's turn with its tool calls, as the provider takes it back in the next
    request, each call under the id `tool_messages` answers it with (`call_id_for`, sent as
    `sent_id` maps an id the provider would refuse).

    Append the items to the conversation, then the results: `openai-chat` gives one
    `assistant` message with `tool_calls` (`{"type": "custom", "custom": {"name", "input"}}`
    for a custom tool's call); `openai-responses` the assistant text as message items and
    one `function_call` item per call (a `custom_tool_call` item, its `input` the
    call's text, for a custom tool's call: type `custom`); `anthropic` one `assistant` message of
    `text` blocks and `tool_use` blocks; `gemini` one `model` content of `text` parts and
    `functionCall` parts; `bedrock-converse` one `assistant` message of `text` blocks and
    `toolUse` blocks. An empty list when there is neither text, nor a call, nor an item of
    `reasoning` that goes back.

    The arguments go as the model sent them: their text for the OpenAI shapes, and for the
    others the object that text holds (`{}` for a call whose text is no JSON object, one cut
    off say: its result says what went wrong). What the assembler kept that the provider needs
    back goes with its call: Gemini's `thoughtSignature` (metadata `thought_signature`) and,
    on Chat, the `extra_content` Gemini's OpenAI-compatible endpoint sends with it; a Gemini
    signature on a text part goes back on that text's part, from its place. The
    reasoning the provider needs back is given as `reasoning` (`Assembler.reasoning`,
    `StreamEnded.reasoning`): Anthropic's thinking blocks (an extended-thinking turn with tools
    is refused without them) and server blocks (a server tool's call, `server_tool_use`, and
    its result, which Anthropic ran: no result answers them) and Bedrock's `reasoningContent`
    blocks, server tool blocks (`toolUse` of `type` `server_tool_use`, and `toolResult`) and
    the `image` blocks the model wrote, and Gemini's thought parts (with the `thoughtSignature`
    Gemini wants back on them, as google-genai's chats send every part back) go back where
    they came,
    as the API wants the message echoed: each call after the blocks that came before it
    (metadata `reasoning_before`, their number, set by the assembler: interleaved thinking
    puts blocks between the calls), blocks after the last call at the end; with calls that
    carry no such count, all blocks first, then the text and the calls. The text goes back in
    the blocks the model wrote it in (Anthropic and Bedrock text blocks, Responses `message`
    items, Gemini text parts that no call came between), each in its place among the calls
    and reasoning blocks, where the assembler wrote the places on the calls (metadata
    `text_before` and `text_after`, lists of `[characters of the text before the block,
    reasoning blocks before it]`, set at finish when the text was not one block right
    before the first call); a turn with no call has no call to carry them, and takes them
    as `text_places` (`Assembler.text_places`, `stream.text_places`). `text` must then be
    the stream's own (`stream.text`, or the chunks' `ChunkInfo.text` joined), else (places
    past its end, or none) it goes as one block right before the first call (with no call,
    after the reasoning). An Anthropic or Bedrock block of nothing but white
    space is left out: the APIs refuse one. The Responses `reasoning` items (a stateless
    request, `store=False`, must carry them, with their `encrypted_content`) each go right
    before the item that followed it in the output, as the API requires: the call whose
    metadata `reasoning_id` names it (the assembler sets it), which then also keeps its own id
    (`fc_...`, metadata `item_id`) as the output had it, else the hosted item right after it
    in `reasoning`, else the message right after it (without places, the last such item
    only, before the text's one message). One whose follower is not in the turn (a call left
    out, no text) is left out with a `RuntimeWarning`: the API refuses it alone. A call
    without a reasoning item before it goes without its item id, which the API would pair
    with a reasoning item the turn lacks. The Responses hosted items the assembler keeps with
    the reasoning items (a hosted tool's call, `web_search_call`..., or `computer_call` and
    the like) go back as they came, each after the reasoning item before it, in their places
    among the calls (metadata `hosted_before`, how many came before a call, which the
    assembler sets; a call that carries none goes before them all), and each message in its
    place among them (without places, the text right before the first call, or after them
    with no call). They are no calls: `tool_messages` answers none of them (an item the
    application answers itself, such as a `computer_call`, needs its output appended by the
    application). An Anthropic call made by code execution (programmatic tool calling) goes
    with its `caller` (metadata `caller`, set by the assembler), and one of an MCP toolset's
    tools with its `toolset_name` (metadata `toolset_name`), as the API wants them back. A
    text block goes back with the citations the stream gave it, which its place holds (see
    `text_places`): an Anthropic `text` block with its `citations`, in order, as the
    `anthropic` SDK accumulates them; on Bedrock a `citationsContent` block, its text as
    `content` and its `citation` deltas as `citations`, as Converse wants cited text back.
    A call of a tool declared inside a Responses `namespace` tool goes with its
    `namespace` (metadata `namespace`, set by the assembler) beside its bare name. A call without
    a name (a stream that lost the event naming it) is sent as a call of `NAMELESS_CALL`
    (`toolwire_unnamed`) under its id, which its `missing_name` result answers: the providers
    refuse a call of no name, and a result whose call is not in the turn. On Gemini, which
    pairs responses with calls by name, it goes instead as a `text` part holding the argument
    text the model sent, at its place and with its `thoughtSignature` (`tool_messages` answers
    it with a `text` part): the turn is then never empty, which would put two `user` contents
    in a row. A call without an id keeps none on Gemini, which never saw
    toolwire's, and is answered by name; one whose id the assembler renamed for repeating an
    earlier call's keeps there the id Gemini sent (`metadata["wire_id"]`), as its response
    does, and the two are told apart by their order.

    Args:
        calls: The completed calls, in the order the model made them.
        style: The provider message shape, as in `tool_messages`.
        text: The assistant text that came with the calls, if any: the stream's own, to be
            cut into its blocks where the calls say (every style but `"openai-chat"`).
        reasoning: The turn's reasoning (`Assembler.reasoning`), sent where the APIs require
            it: with `style="anthropic"` its `thinking` and `redacted_thinking` blocks and its
            server blocks (`server_tool_use`, `web_search_tool_result`...) and with
            `"bedrock-converse"` its `reasoningContent`, server tool and `image` blocks in
            their places among the calls (first, before the text and the calls, when no call says
            its place), with `"gemini"` its thought parts (`{"text", "thought": True,
            "thoughtSignature"}`) the same way;
            with `"openai-responses"` its `reasoning` items each right before the item that
            followed it in the output, and its hosted items in their places.
        text_places: The places of the text blocks of a turn with no call
            (`Assembler.text_places`, `stream.text_places`, `StreamEnded.text_places`):
            `[characters of text before the block, reasoning blocks before it]` for each
            block, in order, then what goes back on it: a Gemini text part's thought
            signature (a string), an Anthropic or Bedrock block's citations (a list of
            objects), as in the calls' metadata. Read only when
            `calls` is empty: calls carry their turn's places themselves. Without it (or when
            it does not fit `text`), such a turn's text is one block after its reasoning.

    Returns:
        The items to append, before the turn's tool results.

    Raises:
        ValueError: On an unknown style, or `reasoning` blocks for a style that takes none
            (`openai-chat`).
        TypeError: `calls` is not a list of calls, or `reasoning` not a list of the style's
            reasoning blocks (Responses: items of a `type` other than the ones the turn makes,
            `message`, `function_call` and `custom_tool_call`).
        MisuseError: Two calls are answered with one id (look-alike calls that share an id):
            the provider refuses a turn that repeats one.
    """
    from toolwire._core import MisuseError

    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    given, kind = cast(object, calls), type(calls).__name__
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
        raise TypeError(f"calls must be a list of ToolCalls (from Assembler.finish), not {kind}")
    seen: set[str] = set()
    for index, call in enumerate(calls):
        require_call(call, ("id", "ordinal", "name", "arguments"), what=f"calls[{index}]")
        answer = sent_id(call_id_for(call), style)
        if answer in seen:
            raise MisuseError(f"two calls have the id {answer!r}: the provider takes one")
        seen.add(answer)
    said = text or ""
    thoughts = _reasoning_blocks(reasoning, style)
    if style == "openai-chat":
        if not calls and not said:
            return []
        message: dict[str, Any] = {"role": "assistant", "content": said or None}
        if calls:
            message["tool_calls"] = [_chat_call(call) for call in calls]
        return [message]
    # A turn with calls reads its places from them.
    turn = None if calls else text_places
    if style == "openai-responses":
        return _responses_turn(calls, said, thoughts, turn)
    if style == "gemini":
        uses = [_gemini_call(call) for call in calls]
        parts = _interleaved(calls, thoughts, said, _gemini_text, uses, turn)
        return [{"role": "model", "parts": parts}] if parts else []
    uses: list[dict[str, Any]]
    if style == "anthropic":
        said_block = _anthropic_text
        uses = [_anthropic_use(call) for call in calls]
    else:
        said_block = _converse_text
        uses = [
            {
                "toolUse": {
                    "toolUseId": sent_id(call_id_for(call), style),
                    "name": _sent_name(call),
                    "input": _arguments_object(call),
                }
            }
            for call in calls
        ]
    blocks = _interleaved(calls, thoughts, said, said_block, uses, turn)
    return [{"role": "assistant", "content": blocks}] if blocks else []


def _anthropic_use(call: _SentCall) -> dict[str, Any]:
    """A call as an Anthropic `tool_use` block, with the `caller` the stream gave it
    (programmatic tool calling: the code execution that made it) and its `toolset_name` (a
    tool of an MCP toolset), which the API wants back."""
    use: dict[str, Any] = {
        "type": "tool_use",
        "id": sent_id(call_id_for(call), "anthropic"),
        "name": _sent_name(call),
        "input": _arguments_object(call),
    }
    metadata = _metadata(call)
    caller: object = metadata.get("caller")
    if isinstance(caller, Mapping):
        use["caller"] = copy.deepcopy(dict(cast(Mapping[str, Any], caller)))
    toolset: object = metadata.get("toolset_name")
    if isinstance(toolset, str):
        use["toolset_name"] = toolset
    return use


# A text block as the style writes it, from its text and what goes back on it (`_Place`): its
# Gemini thought signature, its Anthropic or Bedrock citations; None for a block left out.
_SaidBlock: TypeAlias = Callable[[str, "_Place"], dict[str, Any] | None]


def _anthropic_text(said: str, place: _Place) -> dict[str, Any] | None:
    # Anthropic and Bedrock refuse a text block of nothing but white space.
    if not said.strip():
        return None
    if place.citations:
        # As the `anthropic` SDK's accumulator leaves the block: its citations in order.
        return {"type": "text", "text": said, "citations": copy.deepcopy(place.citations)}
    return {"type": "text", "text": said}


def _converse_text(said: str, place: _Place) -> dict[str, Any] | None:
    if not said.strip():
        return None
    if place.citations:
        # Converse sends cited text back as a `citationsContent` block: the text it generated
        # and the citations its `citation` deltas gave, in order.
        cited = {"content": [{"text": said}], "citations": copy.deepcopy(place.citations)}
        return {"citationsContent": cited}
    return {"text": said}


def _gemini_text(said: str, place: _Place) -> dict[str, Any] | None:
    signature = place.signature
    # All the text the model wrote goes back, white space too: only an empty part is left out,
    # unless it carries a signature, which Gemini wants back on the part it came on.
    if signature is not None:
        return {"text": said, "thoughtSignature": signature}
    return {"text": said} if said else None


def _interleaved(
    calls: Sequence[_SentCall],
    thoughts: list[dict[str, Any]],
    said: str,
    said_block: _SaidBlock,
    uses: list[dict[str, Any]],
    turn: Sequence[Sequence[object]] | None = None,
) -> list[dict[str, Any]]:
    """The blocks of an Anthropic or Bedrock turn (the parts of a Gemini one, its thoughts the
    reasoning blocks) in the order the model wrote them: each call right after the reasoning
    blocks that came before it (metadata `reasoning_before`, their number, which the assembler
    sets), each text block in its place (metadata `text_before` and `text_after`, see
    `_text_places`), and the reasoning after the last call at the end. The API wants the message
    back as it came; interleaved thinking puts reasoning between the calls, and a model may write
    text between or after them. Without places the text is one block right before the first
    call; calls that carry no count (none came before them, or calls made by hand) follow all
    the reasoning when none has one. A text block goes with what its place holds for it (a
    Gemini signature, citations)."""
    counts = [_counted(_metadata(call), "reasoning_before") for call in calls]
    places = _text_places(calls, len(said), turn)
    if places is None:
        first = said_block(said, _Place(0, 0, 0))
        said_blocks = [] if first is None else [first]
        if not any(counts):
            return thoughts + said_blocks + uses
        places = [_Place(0, 0, count) for count in counts[:1]] if said_blocks else []
    # Each text block, by the number of calls before it, with the reasoning count before it.
    texts: dict[int, list[tuple[dict[str, Any] | None, int]]] = {}
    for place, piece in zip(places, _text_pieces(said, places), strict=True):
        texts.setdefault(place.gap, []).append((said_block(piece, place), place.reasoning))
    ordered: list[tuple[dict[str, Any] | None, int]] = []
    for gap, (use, count) in enumerate(zip(uses, counts, strict=True)):
        ordered += texts.get(gap, [])
        ordered.append((use, count))
    ordered += texts.get(len(uses), [])
    blocks: list[dict[str, Any]] = []
    sent = 0
    for block, count in ordered:
        upto = min(max(count, sent), len(thoughts))
        blocks += thoughts[sent:upto]
        sent = upto
        if block is not None:
            blocks.append(block)
    return blocks + thoughts[sent:]


class _Place(NamedTuple):
    """Where a text block began (`_text_places`)."""

    # The number of calls before it.
    gap: int
    # Characters of the text before it.
    at: int
    # Reasoning blocks before it.
    reasoning: int
    # The Gemini thought signature of its part.
    signature: str | None = None
    # The citations of an Anthropic or Bedrock text block, in order.
    citations: list[Any] | None = None


def _text_places(
    calls: Sequence[_SentCall], length: int, turn: Sequence[Sequence[object]] | None = None
) -> list[_Place] | None:
    """Where each text block of a message began (an Anthropic or Bedrock text block, a Responses
    `message` item, a run of Gemini text parts), as the assembler wrote it on the calls: metadata
    `text_before` (the blocks between the call before and this one) and `text_after` (the blocks
    after the call), each block `[characters of the text before it, reasoning blocks before it]`
    and then what goes back on it: a Gemini text part's thought signature (a string), a cited
    block's citations (a list of objects); for a turn with no call, `turn`
    (`Assembler.text_places`), the blocks before no call. None when no call carries one, or when
    they do not fit `length` characters of text in order (text other than the stream's): the text
    then goes as one block."""
    places: list[_Place] = []
    listings: list[tuple[object, int]] = [] if turn is None else [(turn, 0)]
    for index, call in enumerate(calls):
        metadata = _metadata(call)
        listings += [(metadata.get("text_before"), index), (metadata.get("text_after"), index + 1)]
    for listed, gap in listings:
        if listed is None:
            continue
        if isinstance(listed, (str, bytes, Mapping)) or not isinstance(listed, Sequence):
            return None
        for entry in cast(Sequence[object], listed):
            if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence):
                return None
            place = _place(gap, cast(Sequence[object], entry))
            if place is None:
                return None
            places.append(place)
    starts = [place.at for place in places]
    if not places or starts != sorted(starts) or starts[-1] > length:
        return None
    return places


def _place(gap: int, entry: Sequence[object]) -> _Place | None:
    """One block's entry of `_text_places`: `[at, reasoning]`, then at most a signature (a
    string) and a list of citations (objects), in that order; None for another shape."""
    if not 2 <= len(entry) <= 4:
        return None
    at, reasoning, *extra = entry
    if not (_count(at) and _count(reasoning)):
        return None
    signature = extra.pop(0) if extra and isinstance(extra[0], str) else None
    citations = extra.pop(0) if extra and isinstance(extra[0], list) else None
    if extra or not all(isinstance(c, Mapping) for c in cast(list[object], citations or [])):
        return None
    return _Place(
        gap, at, reasoning, cast("str | None", signature), cast("list[Any] | None", citations)
    )


def _text_pieces(said: str, places: list[_Place]) -> list[str]:
    """`said` cut at its `places` (`_text_places`), one piece per place. The first also takes
    the text before its place: that of calls left out of the turn."""
    if not places:
        return []
    ends = [place.at for place in places[1:]] + [len(said)]
    return [
        said[place.at if i else 0 : end]
        for i, (place, end) in enumerate(zip(places, ends, strict=True))
    ]


def _count(value: object) -> TypeGuard[int]:
    """Whether `value` is a count: an `int`, not a `bool`, of at least 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _counted(metadata: Mapping[str, Any], key: str) -> int:
    """The count a call's metadata holds under `key` (`reasoning_before`, `hosted_before`:
    how many items came before the call in the output, set by the assembler); 0 without one."""
    value: object = metadata.get(key)
    return value if _count(value) else 0


def _responses_turn(
    calls: Sequence[_SentCall],
    said: str,
    thoughts: list[dict[str, Any]],
    turn: Sequence[Sequence[object]] | None = None,
) -> list[dict[str, Any]]:
    """The Responses items of a turn in the order of the output. Each reasoning item goes
    right before the item that followed it there: the call whose metadata `reasoning_id` names
    it, else the hosted item right after it in `thoughts`, else the message right after it.
    The API refuses a reasoning item sent without its following item (and one right after
    another), so one whose follower is not in the turn is left out, with a warning. Hosted
    items go between the calls as they came (metadata `hosted_before`: how many came before a
    call). Each message of the output goes back as a message of its own, in its place among
    the calls and the items of `thoughts` (metadata `text_before` and `text_after`, see
    `_text_places`; `turn`: those of a turn with no call); without places, the text is one
    message right before the first call (last, with no call), after the last reasoning item that
    no other item followed."""
    # Each call's metadata is built anew on every read of a native call: read once here.
    metadata = [_metadata(call) for call in calls]
    rs_ids = [_reasoning_id(held) for held in metadata]
    named = set(rs_ids) - {None}
    places = _text_places(calls, len(said), turn) if said else None
    # Each message as (calls before it, its text, the items of `thoughts` before it, or None:
    # right before the first call).
    messages: list[tuple[int, str, int | None]] = [
        (place.gap, text, min(place.reasoning, len(thoughts)))
        for place, text in zip(places or [], _text_pieces(said, places or []), strict=True)
        if text
    ]
    if said and places is None:
        messages = [(0, said, None)]
    # The first message at each count of items before it: a reasoning item waiting there
    # was followed by that message.
    opens: dict[int, int] = {}
    for number, (_, _, count) in enumerate(messages):
        if count is not None:
            opens.setdefault(count, number)
    before: dict[str, dict[str, Any]] = {}
    own: dict[int, list[dict[str, Any]]] = {}
    loose: list[dict[str, Any]] = []
    # Each hosted item, after the reasoning item that came right before it, if any; and the
    # number of hosted items before each place among `thoughts`.
    hosted: list[list[dict[str, Any]]] = []
    hosted_at: list[int] = []
    waiting: dict[str, Any] | None = None
    for place, thought in enumerate([*thoughts, None]):
        opened = opens.get(place)
        if opened is not None and waiting is not None:
            own[opened] = [waiting]
            waiting = None
        hosted_at.append(len(hosted))
        if thought is None:
            break
        if thought.get("type") != "reasoning":
            hosted.append([thought] if waiting is None else [waiting, thought])
            waiting = None
            continue
        if waiting is not None:
            loose.append(waiting)
            waiting = None
        rs_id = thought.get("id")
        if isinstance(rs_id, str) and rs_id in named and rs_id not in before:
            before[rs_id] = thought
        else:
            waiting = thought
    if waiting is not None:
        loose.append(waiting)
    if messages and messages[0][2] is None:
        # The text is one message: of the items before messages, only the last goes with it.
        own[0] = loose[-1:]
        loose = loose[:-1]
    if loose:
        warnings.warn(
            f"{len(loose)} reasoning item(s) left out of the turn: the item that followed each "
            "in the output is not in it, and the API refuses a reasoning item without it",
            RuntimeWarning,
            stacklevel=3,
        )
    # The messages by the number of calls before them, each with the number of hosted items
    # before it (one without a place: those before the first call).
    first = _counted(metadata[0], "hosted_before") if calls else len(hosted)
    said_at: dict[int, list[tuple[int, list[dict[str, Any]]]]] = {}
    for number, (gap, text, count) in enumerate(messages):
        message = [*own.get(number, []), {"role": "assistant", "content": text}]
        said_at.setdefault(gap, []).append((first if count is None else hosted_at[count], message))
    ordered: list[tuple[int, list[dict[str, Any]]]] = []
    for gap, (call, rs_id, held) in enumerate(zip(calls, rs_ids, metadata, strict=True)):
        ordered += said_at.get(gap, [])
        thought = None if rs_id is None else before.pop(rs_id, None)
        ordered.append((_counted(held, "hosted_before"), _responses_call(call, held, thought)))
    ordered += said_at.get(len(calls), [])
    items: list[dict[str, Any]] = []
    sent = 0
    for count, group in ordered:
        upto = min(max(count, sent), len(hosted))
        for unit in hosted[sent:upto]:
            items += unit
        sent = upto
        items += group
    for unit in hosted[sent:]:
        items += unit
    return items


def _responses_call(
    call: _SentCall, held: Mapping[str, Any], thought: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """A call's Responses item (`held`: its metadata), after the reasoning item before it."""
    item: dict[str, Any] = {
        "type": "custom_tool_call" if is_free_form(call) else "function_call",
        "call_id": sent_id(call_id_for(call), "openai-responses"),
        "name": _sent_name(call),
        "input" if is_free_form(call) else "arguments": call.arguments,
    }
    namespace = held.get("namespace")
    if isinstance(namespace, str) and namespace:
        # Its name is the bare name inside that `namespace` tool: without it, the call
        # sent back names another tool, or none.
        item["namespace"] = namespace
    if thought is None:
        return [item]
    item_id = held.get("item_id")
    if isinstance(item_id, str) and item_id:
        # Sent as the output had it, with the reasoning item it follows.
        item = {"id": item_id, **item}
    return [thought, item]


def _reasoning_id(metadata: Mapping[str, Any]) -> str | None:
    """The `id` of the Responses reasoning item right before a call in the output."""
    rs_id = metadata.get("reasoning_id")
    return rs_id if isinstance(rs_id, str) and rs_id else None


NAMELESS_CALL = "toolwire_unnamed"
"""The tool name `assistant_turn` gives a call the model sent without one (a stream that lost
the event that names it), in the shapes that answer a call by its id: the provider refuses a
call of no name, and a result for a call left out of the turn. Its result (`missing_name`)
tells the model to call one of the tools that exist. Gemini, which pairs responses with calls
by name, sends such a call as a `text` part of the turn and answers it with text instead."""


def _sent_name(call: _SentCall) -> str:
    return call.name or NAMELESS_CALL


# What a reasoning block of each style that takes them looks like: its `type`, or (Bedrock)
# its one member.
_REASONING_KINDS: dict[str, tuple[str, ...]] = {
    "anthropic": ("thinking", "redacted_thinking"),
    "openai-responses": ("reasoning",),
    # Bedrock: with the model's `image` blocks, which go back in their places as reasoning does.
    "bedrock-converse": ("reasoningContent", "image"),
    # A part with `thought: true`, which has no `type`.
    "gemini": ("thought",),
}
# The Anthropic blocks a turn makes itself (from the text and the calls), the result blocks,
# which go in the next user message, and the Responses `reasoning` item (Anthropic's is
# `thinking`): any other block (`type`) is one the assembler keeps with the thinking blocks
# (a server tool's call or result, `server_tool_use`..., whose kinds grow with the API).
_ANTHROPIC_MADE = frozenset(("text", "tool_use", "tool_result", "reasoning"))
# The Responses items a turn makes itself (from the text and the calls): any other item
# (`type`) is a hosted item the assembler keeps with the reasoning items.
_RESPONSES_MADE = frozenset(("message", "function_call", "custom_tool_call"))


def _reasoning_blocks(
    reasoning: Sequence[Mapping[str, Any]] | None, style: Style
) -> list[dict[str, Any]]:
    """Copies of the reasoning blocks `assistant_turn` sends back; raises when they cannot go."""
    given, kind = cast(object, reasoning), type(reasoning).__name__
    if given is None:
        return []
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
        raise TypeError(f"reasoning must be a list of blocks (Assembler.reasoning), not {kind}")
    blocks = cast(Sequence[object], given)
    if not blocks:
        return []
    kinds = _REASONING_KINDS.get(style)
    if kinds is None:
        takes = ", ".join(repr(s) for s in _REASONING_KINDS)
        raise ValueError(f"reasoning blocks go back only with style={takes}, not {style!r}")
    for index, block in enumerate(blocks):
        said: object = None
        held_id: object = None
        if isinstance(block, Mapping):
            members = cast(Mapping[str, object], block)
            held_id = members.get("id")
            if style != "bedrock-converse":
                said = members.get("type")
            elif len(members) == 1:
                said = next(iter(members))
        if style == "gemini":
            if (
                not isinstance(block, Mapping)
                or cast(Mapping[str, object], block).get("thought") is not True
            ):
                raise TypeError(
                    f"reasoning[{index}] is no thought part (`thought: true`) for {style!r}: "
                    f"{block!r:.80}"
                )
        elif style == "anthropic":
            if not isinstance(said, str) or said in _ANTHROPIC_MADE:
                raise TypeError(
                    f"reasoning[{index}] is no thinking, redacted_thinking or server block for "
                    f"{style!r} (text and tool_use blocks are made from the text and the calls; "
                    f"tool_result blocks go in the results): {block!r:.80}"
                )
        elif style == "openai-responses":
            if not _responses_kept(said, held_id):
                raise TypeError(
                    f"reasoning[{index}] is no reasoning or hosted item for {style!r} (a hosted "
                    f"item has its id; message, function_call and custom_tool_call items are "
                    f"made from the text and the calls): {block!r:.80}"
                )
        elif said not in kinds and not _converse_server_block(said, cast(object, block)):
            raise TypeError(
                f"reasoning[{index}] is no {' or '.join(kinds)} block or server tool block for "
                f"{style!r}: {block!r:.80}"
            )
    return [copy.deepcopy(dict(cast(Mapping[str, Any], block))) for block in blocks]


def _converse_server_block(kind: object, block: object) -> bool:
    """Whether a Bedrock block (of one member, `kind`) is a server tool's that the assembler
    keeps with the reasoning blocks: a `toolUse` of `type` `server_tool_use`, a `toolResult`."""
    if kind == "toolResult":
        return True
    if kind != "toolUse":
        return False
    # `kind` is the one member of a mapping: `block` is one.
    tool: object = cast(Mapping[str, object], block).get("toolUse")
    return isinstance(tool, Mapping) and cast(Mapping[str, object], tool).get("type") == (
        "server_tool_use"
    )


def _responses_kept(kind: object, item_id: object) -> bool:
    """Whether an item of `type` `kind` and `id` `item_id` is one `Assembler.reasoning` keeps
    for a Responses turn: a `reasoning` item, or a hosted item with its `id` (the API takes
    none back without it)."""
    if kind == "reasoning":
        return True
    if not isinstance(kind, str) or kind in _RESPONSES_MADE:
        return False
    return isinstance(item_id, str) and item_id != ""


def _metadata(call: object) -> Mapping[str, Any]:
    held: object = getattr(call, "metadata", None)
    return cast(Mapping[str, Any], held) if isinstance(held, Mapping) else {}


def _chat_call(call: _SentCall) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": sent_id(call_id_for(call), "openai-chat")}
    if is_free_form(call):
        # A custom tool's call as Chat Completions writes it (its custom tool call message).
        entry["type"] = FREE_FORM_TYPE
        entry["custom"] = {"name": _sent_name(call), "input": call.arguments}
    else:
        entry["type"] = "function"
        entry["function"] = {"name": _sent_name(call), "arguments": call.arguments}
    extra = _metadata(call).get("extra_content")
    if extra is not None:
        # Gemini's OpenAI-compatible endpoint refuses the turn without its thought signature.
        entry["extra_content"] = extra
    return entry


def _gemini_call(call: _SentCall) -> dict[str, Any]:
    part: dict[str, Any]
    if call.name:
        function: dict[str, Any] = {"name": call.name, "args": _arguments_object(call)}
        if call.id:
            function["id"] = _provider_id(call)
        part = {"functionCall": function}
    else:
        # A `functionCall` needs a name, and Gemini pairs responses with calls by name: the
        # call goes as the text of what the model sent, which keeps the turn (two user
        # contents in a row are refused) and the call's place for its signature.
        part = {"text": call.arguments if call.arguments.strip() else "{}"}
    signature = _metadata(call).get("thought_signature")
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _arguments_object(call: _SentCall) -> dict[str, Any]:
    """The object a call's argument text holds, `{}` when it holds none (cut off, not JSON,
    another kind of value); NaN and infinities, which JSON has none of, as null."""
    text = call.arguments
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return cast(dict[str, Any], finite_json(value)) if isinstance(value, dict) else {}


def _own_call_id(entry: object) -> str | None:
    """The call id an entry carries itself (an `ExecutionResult`'s or an `Outcome`'s), if any."""
    from toolwire.execution.executor import ExecutionResult
    from toolwire.repair import Escalation, Proceed, Retry
    from toolwire.validation import Outcome

    if isinstance(entry, (ExecutionResult, Outcome)):
        return entry.call_id or entry.synthetic_id or None
    if isinstance(entry, (Proceed, Retry, Escalation)):
        return entry.outcome.call_id or entry.outcome.synthetic_id or None
    return None


def _entries_by_call(
    calls: Sequence[_CallLike], given: Mapping[str | int, object] | Sequence[object]
) -> dict[int, object]:
    """Each call's entry, by the call's index in `calls`; raises `MisuseError` rather than
    leave an entry unused or give a call a result that says it belongs to another."""
    from toolwire._core import MisuseError

    entries: dict[int, object] = {}
    if isinstance(given, Mapping):
        table = cast(Mapping[object, object], given)
        used: set[object] = set()
        for index, call in enumerate(calls):
            keys = [
                key
                for key in dict.fromkeys((call.id, call_id_for(call), call.ordinal))
                if key is not None and key in table
            ]
            if not keys:
                continue
            if len(keys) > 1:
                raise MisuseError(
                    f"two entries answer call {call_id_for(call)!r}: keys {keys[0]!r} and "
                    f"{keys[1]!r}"
                )
            entry = table[keys[0]]
            own = _own_call_id(entry)
            if own is not None and own != call_id_for(call):
                raise MisuseError(
                    f"the entry under key {keys[0]!r} is the result of call {own!r}, "
                    f"not of call {call_id_for(call)!r}"
                )
            entries[index] = entry
            used.add(keys[0])
        unused = [key for key in table if key not in used]
        if unused:
            raise MisuseError(f"entries match no call: keys {unused!r}")
        return entries
    # Entries that name their call go where they belong (results are often gathered in the
    # order they completed); the others keep their positions, which are claimed first so
    # that an id never takes a slot a positional entry was meant for.
    by_id: dict[str, list[int]] = {}
    for index, call in enumerate(calls):
        by_id.setdefault(call_id_for(call), []).append(index)
    named: list[tuple[str, object]] = []
    for position, entry in enumerate(given):
        own = _own_call_id(entry)
        if own is not None:
            named.append((own, entry))
        elif position >= len(calls):
            raise MisuseError(
                f"{len(given)} entries for {len(calls)} calls: entry {position} matches no call"
            )
        else:
            entries[position] = entry
    for own, entry in named:
        if own not in by_id:
            raise MisuseError(f"the result of call {own!r} matches none of the calls")
        free = [index for index in by_id[own] if index not in entries]
        if not free:
            raise MisuseError(f"two entries answer call {own!r}")
        entries[free[0]] = entry
    return entries
