//! A whole JSON answer where an event stream was asked for, read as the events that would have
//! carried it.
//!
//! A server that ignores `stream=True` (a proxy, a gateway, a mock) answers one JSON document.
//! Framed as SSE it holds no event, so its calls were lost (`truncated_body`). `assemble` reads
//! such an answer through `feed_chunk` (`python/toolwire/formats/whole.py`); the raw path reads
//! the same events here, so that a gateway gets the same calls, text, reasoning, finish reason
//! and usage from the same bytes:
//! - Chat: a `ChatCompletion`, each choice's `message` read as its one `delta` (its tool calls
//!   numbered by position, which a message does not send);
//! - Responses: a finished `Response`, as each output item's text and `output_item.done`, then
//!   the finishing event;
//! - Anthropic: a `Message`, as `message_start`, each block started, filled and stopped, then
//!   `message_delta` and `message_stop`;
//! - Gemini: a `GenerateContentResponse` is its own chunk; a JSON array of them (what
//!   `streamGenerateContent` answers without `alt=sse`) is read chunk by chunk;
//! - an `{"error": ...}` document is the provider's error event, and so is AWS's error shape
//!   (`{"message": ...}`), which a gateway may answer with status 200.
//!
//! Only read when the body has ended, never on the path of a streamed event.

use serde_json::{json, Map, Value};

/// What a body that is one JSON document stands for.
#[derive(Debug, PartialEq)]
pub(super) enum Document {
    /// The data of the events the same response streamed would have carried, in order.
    Events(Vec<String>),
    /// JSON, but no response or error of a known format.
    Unknown,
    /// Not one JSON document (or nested past the reader's depth).
    NotJson,
}

/// Reads `body` (white space and a BOM before it allowed) as a whole response.
pub(super) fn read(body: &[u8]) -> Document {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Document::NotJson;
    };
    let mut events = Vec::new();
    let known = match &value {
        Value::Array(items) => !items.is_empty() && items.iter().all(|item| one(item, &mut events)),
        value => one(value, &mut events),
    };
    if known {
        Document::Events(events)
    } else {
        Document::Unknown
    }
}

/// Appends the events `value` stands for; false when it is no response or error the decoder
/// reads.
fn one(value: &Value, events: &mut Vec<String>) -> bool {
    let Value::Object(fields) = value else {
        return false;
    };
    let text = |key: &str| fields.get(key).and_then(Value::as_str);
    let gemini = ["candidates", "usageMetadata", "promptFeedback"]
        .iter()
        .any(|key| fields.contains_key(*key));
    if text("object") == Some("response")
        && matches!(
            text("status"),
            Some("completed" | "incomplete" | "failed" | "cancelled")
        )
    {
        responses(fields, events);
    } else if text("type") == Some("message") && text("role") == Some("assistant") {
        anthropic(fields, events);
    } else if fields.get("choices").is_some_and(Value::is_array) {
        events.push(chat(fields).to_string());
    } else if fields.contains_key("error") || gemini {
        events.push(value.to_string());
    } else if is_aws_error(fields) {
        // The provider's error, as an error event carries it.
        events.push(json!({ "error": value }).to_string());
    } else {
        return false;
    }
    true
}

/// Whether an object is AWS's JSON error shape (`{"message": ...}`, with the error's type
/// beside it, as botocore reads an error body): a gateway in front of a model (Bedrock, API
/// Gateway) answers one with status 200 too, and it says why there is no response.
fn is_aws_error(fields: &Map<String, Value>) -> bool {
    let said = ["message", "Message"]
        .iter()
        .any(|key| fields.get(*key).is_some_and(Value::is_string));
    said && fields.keys().all(|key| {
        matches!(
            key.as_str(),
            "message" | "Message" | "__type" | "code" | "Code"
        )
    })
}

fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A `ChatCompletion` as the chunk that carries it: each choice's `message` as its `delta`.
fn chat(fields: &Map<String, Value>) -> Value {
    let mut chunk = fields.clone();
    if let Some(Value::Array(choices)) = chunk.get_mut("choices") {
        for choice in choices.iter_mut().filter_map(Value::as_object_mut) {
            if choice.contains_key("delta") {
                continue;
            }
            let Some(Value::Object(mut message)) = choice.remove("message") else {
                continue;
            };
            if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
                for (position, entry) in calls.iter_mut().enumerate() {
                    if let Value::Object(entry) = entry {
                        if !entry.contains_key("index") {
                            entry.insert("index".to_owned(), json!(position));
                        }
                    }
                }
            }
            choice.insert("delta".to_owned(), Value::Object(message));
        }
    }
    Value::Object(chunk)
}

/// A finished `Response`: each message item started, its text, each item done, then the event
/// named by its status.
fn responses(response: &Map<String, Value>, events: &mut Vec<String>) {
    for (position, item) in list(response.get("output")).iter().enumerate() {
        let Value::Object(fields) = item else {
            continue;
        };
        if fields.get("type").and_then(Value::as_str) == Some("message") {
            // Where a message starts among the calls is where it goes back in the next turn.
            let mut started = fields.clone();
            started.insert("status".to_owned(), json!("in_progress"));
            started.insert("content".to_owned(), json!([]));
            events.push(
                json!({"type": "response.output_item.added", "output_index": position,
                       "item": started})
                .to_string(),
            );
            for (part, content) in list(fields.get("content")).iter().enumerate() {
                let text = content.get("text").and_then(Value::as_str);
                if content.get("type").and_then(Value::as_str) == Some("output_text") {
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        events.push(
                            json!({"type": "response.output_text.delta", "output_index": position,
                                   "content_index": part, "item_id": fields.get("id"),
                                   "delta": text})
                            .to_string(),
                        );
                    }
                }
            }
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": position, "item": item})
                .to_string(),
        );
    }
    let status = response
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    events.push(json!({"type": format!("response.{status}"), "response": response}).to_string());
}

/// A `Message`: `message_start` without its content, each block, then `message_delta` with the
/// stop reason (and usage) and `message_stop`.
fn anthropic(message: &Map<String, Value>, events: &mut Vec<String>) {
    let mut start = message.clone();
    start.insert("content".to_owned(), json!([]));
    start.insert("stop_reason".to_owned(), Value::Null);
    start.insert("stop_sequence".to_owned(), Value::Null);
    events.push(json!({"type": "message_start", "message": start}).to_string());
    for (index, block) in list(message.get("content")).iter().enumerate() {
        let Value::Object(block) = block else {
            continue;
        };
        block_events(index, block, events);
        events.push(json!({"type": "content_block_stop", "index": index}).to_string());
    }
    let field = |key: &str| message.get(key).cloned().unwrap_or(Value::Null);
    let mut ending = json!({
        "type": "message_delta",
        "delta": {"stop_reason": field("stop_reason"), "stop_sequence": field("stop_sequence")},
    });
    if let (Some(usage @ Value::Object(_)), Value::Object(ending)) =
        (message.get("usage"), &mut ending)
    {
        ending.insert("usage".to_owned(), usage.clone());
    }
    events.push(ending.to_string());
    events.push(json!({"type": "message_stop"}).to_string());
}

/// A content block's start and the deltas that carry it: a text or thinking block's text and
/// signature as their deltas, a tool block's whole `input` as its one fragment (none for an
/// empty one), any other block (redacted thinking, a server tool's) whole at its start.
fn block_events(index: usize, block: &Map<String, Value>, events: &mut Vec<String>) {
    let start = |emptied: &[(&str, Value)]| {
        let mut started = block.clone();
        for (key, value) in emptied {
            started.insert((*key).to_owned(), value.clone());
        }
        json!({"type": "content_block_start", "index": index, "content_block": started}).to_string()
    };
    let delta = |fields: Value| {
        json!({"type": "content_block_delta", "index": index, "delta": fields}).to_string()
    };
    let field = |key: &str| block.get(key).cloned().unwrap_or(json!(""));
    match block.get("type").and_then(Value::as_str) {
        Some("text") => {
            events.push(start(&[("text", json!(""))]));
            events.push(delta(json!({"type": "text_delta", "text": field("text")})));
        }
        Some("thinking") => {
            events.push(start(&[("thinking", json!("")), ("signature", json!(""))]));
            let thinking = field("thinking");
            events.push(delta(
                json!({"type": "thinking_delta", "thinking": thinking}),
            ));
            if let Some(signature) = block.get("signature") {
                let signed = json!({"type": "signature_delta", "signature": signature});
                events.push(delta(signed));
            }
        }
        Some("tool_use") => {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            events.push(start(&[("input", json!({}))]));
            // A block with no input is a call without parameters if the message goes on, cut
            // if it stopped at `max_tokens`, as a stream sends it: no fragment.
            if input != json!({}) {
                let fragment = input.to_string();
                let sent = json!({"type": "input_json_delta", "partial_json": fragment});
                events.push(delta(sent));
            }
        }
        _ => events.push(start(&[])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembler::{Assembler, AssemblerConfig};
    use crate::gateway::{StreamDecoder, StreamErrorKind};

    const MESSAGE: &[u8] = br#" {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"n": 12345678901234567890}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 5}}"#;

    fn decoder(max_stream_bytes: usize) -> StreamDecoder {
        let config = AssemblerConfig {
            max_stream_bytes,
            ..AssemblerConfig::default()
        };
        StreamDecoder::new(Assembler::new(config).unwrap_or_else(|e| panic!("{e:?}")))
    }

    #[test]
    fn a_json_answer_pushed_bytewise_gives_its_calls() {
        let mut decoder = decoder(1 << 20);
        for byte in MESSAGE.chunks(1) {
            decoder.push(byte).unwrap_or_else(|e| panic!("{e:?}"));
        }
        let calls = decoder.finish().unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(calls.len(), 1);
        assert!(calls[0].error.is_none());
        assert_eq!(
            calls[0].arguments,
            br#"{"n":12345678901234567890}"#.to_vec()
        );
        assert_eq!(decoder.text(), "Checking.");
        assert_eq!(decoder.finish_reason_raw(), Some("tool_use"));
        assert_eq!(decoder.errors(), &[]);
    }

    #[test]
    fn a_json_answer_past_max_stream_bytes_is_refused_and_not_held() {
        let mut decoder = decoder(64);
        for piece in MESSAGE.chunks(16) {
            decoder.push(piece).unwrap_or_else(|e| panic!("{e:?}"));
        }
        assert!(decoder.assembler().over_limit().is_some());
        let calls = decoder.finish().unwrap_or_else(|e| panic!("{e:?}"));
        assert!(calls.is_empty());
        let kinds: Vec<_> = decoder.errors().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [StreamErrorKind::StreamLimit]);
    }

    #[test]
    fn an_event_stream_after_white_space_is_framed_as_before() {
        let mut decoder = decoder(1 << 20);
        let event = br#"data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}"#;
        let body = [b"\r\n\n: keep-alive\n\n".as_slice(), event, b"\n\n"].concat();
        for piece in body.chunks(3) {
            decoder.push(piece).unwrap_or_else(|e| panic!("{e:?}"));
        }
        let _ = decoder.finish();
        assert_eq!(decoder.text(), "hi");
        assert_eq!(decoder.finish_reason_raw(), Some("stop"));
    }

    #[test]
    fn an_aws_error_document_is_the_providers_error() {
        let mut decoder = decoder(1 << 20);
        let body = br#"{"message": "The security token included in the request is invalid."}"#;
        for piece in body.chunks(5) {
            decoder.push(piece).unwrap_or_else(|e| panic!("{e:?}"));
        }
        let _ = decoder.finish();
        let told: Vec<_> = decoder
            .errors()
            .iter()
            .map(|e| (e.kind, e.message.as_str()))
            .collect();
        let said = r#"{"message":"The security token included in the request is invalid."}"#;
        assert_eq!(told, [(StreamErrorKind::ProviderError, said)]);
        assert_eq!(decoder.finish_reason_raw(), Some("error"));
        // With its type beside it, as botocore reads it; a message among other members is not
        // that shape, nor is one that is no string.
        let typed = br#"{"__type": "ValidationException", "Message": "bad"}"#;
        assert!(matches!(read(typed), Document::Events(_)));
        assert_eq!(read(br#"{"message": "hi", "id": 1}"#), Document::Unknown);
        assert_eq!(read(br#"{"message": 3}"#), Document::Unknown);
    }

    #[test]
    fn documents_of_no_response_are_told_apart_from_no_json() {
        assert_eq!(read(br#"{"hello": "world"}"#), Document::Unknown);
        assert_eq!(read(b"[]"), Document::Unknown);
        assert_eq!(read(b"[1]"), Document::Unknown);
        assert_eq!(read(br#"{"choices": ["#), Document::NotJson);
        assert_eq!(read(b"{} data: {}"), Document::NotJson);
    }

    #[test]
    fn a_chat_completion_is_its_one_chunk_with_numbered_calls() {
        let body = br#"{"choices": [{"index": 0, "message": {"role": "assistant",
            "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]}"#;
        let Document::Events(events) = read(body) else {
            panic!("not read");
        };
        let chunk: Value = serde_json::from_str(&events[0]).unwrap_or_default();
        assert_eq!(
            chunk["choices"][0]["delta"]["tool_calls"][0]["index"],
            json!(0)
        );
        assert!(chunk["choices"][0].get("message").is_none());
    }
}
