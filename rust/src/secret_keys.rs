//! Secret values the model sent again as keys, hidden from what a stream hands out early.
//!
//! A tool's secret values (see [`ToolSchema::set_secrets`]) never show in a pre-check error's
//! `got` nor in a progress item's text. A model may also write one as a key
//! (`{"token": "sk-live-9999", "sk-live-9999": 1}`): the key is then in the error's path and
//! message (`unexpected property "sk-live-9999"`) and in the progress items' pointers. The
//! pre-check's own error on the finished call keeps the exact path (the application's
//! locator, as the argument text is); what a stream hands out while it runs, the drained
//! errors and the progress items, hides each key that holds a secret value complete before
//! it. A value complete only after the key is not known to be secret when the key is read,
//! and an error or item reads the same however the text was cut, so the rule is the text's
//! order, not the time of the drain.
//!
//! Only tools with secret values pay for this: the errors are judged when they are drained (a
//! call that has them is refused anyway), the progress items as they are drained.

use crate::error::Error;
use crate::progress::Progress;
use crate::scanner::{push_pointer_token, ScanConfig, Scanner};
use crate::schema::{ToolSchema, REDACTED};

/// Below this many characters a secret value (a PIN, `1`) is also a part of other words and
/// numbers: it is hidden only where it stands alone, a whole key or a whole quoted string.
const SHORT_SECRET: usize = 6;

/// The secret values of one call complete so far, in the order of the text.
#[derive(Debug, Default)]
pub struct SeenSecrets {
    /// Each secret value's text (decoded, for a string), once.
    texts: Vec<String>,
    /// The text of the secret value still being read.
    open: Vec<u8>,
}

impl SeenSecrets {
    /// Takes a progress item at a secret value (see [`crate::progress::Progress::drain_each`]):
    /// `text` appended to it, `complete` when the value ends with it, `continues` when it goes
    /// on with the item before.
    pub fn take(&mut self, text: &[u8], complete: bool, continues: bool) {
        if !continues {
            self.open.clear();
        }
        self.open.extend_from_slice(text);
        if complete {
            let open = std::mem::take(&mut self.open);
            if let Ok(text) = String::from_utf8(open) {
                if !text.is_empty() && !self.texts.contains(&text) {
                    self.texts.push(text);
                    // Longest first: a secret that holds another must not be left half shown.
                    self.texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
                }
            }
        }
    }

    /// True while no secret value is complete.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// `text` with each secret value in it as [`REDACTED`], or `None` when it holds none: a
    /// short value only where it is the whole text or a whole quoted string.
    #[must_use]
    pub fn hidden_text(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for secret in &self.texts {
            let current = out.as_deref().unwrap_or(text);
            if current == secret {
                return Some(REDACTED.to_owned());
            }
            let quoted = serde_json::to_string(secret).unwrap_or_default();
            let mut next = current.replace(&quoted, &format!("\"{REDACTED}\""));
            if secret.chars().count() >= SHORT_SECRET {
                next = next.replace(secret.as_str(), REDACTED);
                // As a message quotes it: JSON-escaped, without its quotes.
                if let Some(escaped) = quoted.get(1..quoted.len() - 1) {
                    next = next.replace(escaped, REDACTED);
                }
            }
            if next != current {
                out = Some(next);
            }
        }
        out
    }

    /// The JSON Pointer `path` with each key that holds a secret value hidden (see
    /// [`SeenSecrets::hidden_text`]), or `None` when no key does.
    #[must_use]
    pub fn hidden_pointer(&self, path: &str) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut hid = false;
        let mut out = String::with_capacity(path.len());
        for token in path.split('/').skip(1) {
            let key = token.replace("~1", "/").replace("~0", "~");
            out.push('/');
            match self.hidden_text(&key) {
                Some(shown) => {
                    hid = true;
                    push_pointer_token(&mut out, &shown);
                }
                None => out.push_str(token),
            }
        }
        hid.then_some(out)
    }

    /// Hides the secret values in the path, message and value of `error`.
    pub fn hide_in(&self, error: &mut Error) {
        if self.is_empty() {
            return;
        }
        if let Some(path) = self.hidden_pointer(&error.path) {
            error.path = path;
        }
        if let Some(message) = self.hidden_text(&error.message) {
            error.message = message;
        }
        // `expected` is the schema's own words, never the model's.
        if let Some(detail) = error.detail.as_deref_mut() {
            if let Some(got) = self.hidden_text(&detail.got) {
                detail.got = got;
            }
        }
    }
}

/// Hides, in each of `errors` (in the order of their offsets) of a call whose argument text so
/// far is `text`, the secret values of `schema` complete before the error's offset (see the
/// module's notes). The text is read once, up to the last error, with the limits `config` it
/// was read with.
#[cold]
#[inline(never)]
pub fn hide_in_errors<'a>(
    errors: impl IntoIterator<Item = &'a mut Error>,
    text: &[u8],
    schema: &ToolSchema,
    config: ScanConfig,
) {
    let mut scanner = Scanner::new(config);
    let mut progress = Progress::default();
    let mut seen = SeenSecrets::default();
    let mut read = 0;
    for error in errors {
        let upto = error.offset.clamp(read, text.len().max(read));
        if let Some(piece) = text.get(read..upto) {
            scanner.feed_with(piece, &mut progress);
            read = upto;
        }
        progress.drain_each(|path, piece, complete, continues| {
            if std::str::from_utf8(path).is_ok_and(|path| schema.is_secret(path)) {
                seen.take(piece, complete, continues);
            }
        });
        seen.hide_in(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(texts: &[&str]) -> SeenSecrets {
        let mut seen = SeenSecrets::default();
        for text in texts {
            seen.take(text.as_bytes(), true, false);
        }
        seen
    }

    #[test]
    fn a_key_that_is_or_holds_a_secret_is_hidden_and_others_are_kept() {
        let seen = seen(&["sk-live-9999", "12"]);
        assert_eq!(
            seen.hidden_pointer("/sk-live-9999").as_deref(),
            Some("/[redacted]")
        );
        assert_eq!(
            seen.hidden_pointer("/a/my-sk-live-9999/0").as_deref(),
            Some("/a/my-[redacted]/0")
        );
        // A short secret only as a whole key: `123` and index `12` of another key stay.
        assert_eq!(seen.hidden_pointer("/12").as_deref(), Some("/[redacted]"));
        assert_eq!(seen.hidden_pointer("/123/x"), None);
        assert_eq!(seen.hidden_pointer(""), None);
        assert_eq!(
            seen.hidden_text(r#"unexpected property "12""#).as_deref(),
            Some(r#"unexpected property "[redacted]""#)
        );
    }

    #[test]
    fn a_secret_read_in_pieces_is_whole_once_complete() {
        let mut seen = SeenSecrets::default();
        seen.take(b"sk-li", false, false);
        assert!(seen.is_empty());
        seen.take(b"ve-1/~", true, true);
        assert_eq!(
            seen.hidden_pointer("/x~1sk-live-1~1~0").as_deref(),
            Some("/x~1[redacted]")
        );
    }
}
