//! Test-only event generator: emits the scanner's events for a valid JSON text, with string and
//! key pieces cut at the given split points (as a scanner fed in chunks would cut them). Used
//! by unit tests so the checker can be tested without the scanner.

use crate::visit::{ValueKind, Visitor};

/// Emits the events of `text` (which must be valid JSON) to `v`; `splits` are chunk boundaries.
pub(crate) fn drive<V: Visitor>(text: &str, splits: &[usize], v: &mut V) {
    let mut g = Gen {
        b: text.as_bytes(),
        i: 0,
        splits,
    };
    g.ws();
    g.value(v);
}

struct Gen<'a> {
    b: &'a [u8],
    i: usize,
    splits: &'a [usize],
}

impl Gen<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\n' | b'\r' | b'\t') {
            self.i += 1;
        }
    }

    fn value<V: Visitor>(&mut self, v: &mut V) {
        let start = self.i;
        match self.b[self.i] {
            b'{' => {
                v.value_start(ValueKind::Object, start);
                self.i += 1;
                self.ws();
                if self.b[self.i] == b'}' {
                    v.container_end(ValueKind::Object, self.i);
                    self.i += 1;
                    return;
                }
                loop {
                    self.ws();
                    self.string(v, true);
                    self.ws();
                    self.i += 1; // ':'
                    self.ws();
                    self.value(v);
                    self.ws();
                    let c = self.b[self.i];
                    if c == b'}' {
                        v.container_end(ValueKind::Object, self.i);
                        self.i += 1;
                        return;
                    }
                    self.i += 1; // ','
                }
            }
            b'[' => {
                v.value_start(ValueKind::Array, start);
                self.i += 1;
                self.ws();
                if self.b[self.i] == b']' {
                    v.container_end(ValueKind::Array, self.i);
                    self.i += 1;
                    return;
                }
                loop {
                    self.ws();
                    self.value(v);
                    self.ws();
                    let c = self.b[self.i];
                    if c == b']' {
                        v.container_end(ValueKind::Array, self.i);
                        self.i += 1;
                        return;
                    }
                    self.i += 1;
                }
            }
            b'"' => {
                v.value_start(ValueKind::String, start);
                self.string(v, false);
            }
            b't' | b'f' | b'n' => {
                let (kind, value, len) = match self.b[self.i] {
                    b't' => (ValueKind::Bool, true, 4),
                    b'f' => (ValueKind::Bool, false, 5),
                    _ => (ValueKind::Null, false, 4),
                };
                v.value_start(kind, start);
                self.i += len;
                v.literal_end(kind, value, self.i - 1);
            }
            _ => {
                v.value_start(ValueKind::Number, start);
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                let lexeme = std::str::from_utf8(&self.b[start..self.i]).unwrap();
                v.number_end(lexeme, self.i);
            }
        }
    }

    fn piece<V: Visitor>(&self, v: &mut V, is_key: bool, from: usize, to: usize) {
        let mut a = from;
        for &s in self.splits.iter().filter(|&&s| s > from && s < to) {
            Self::emit(v, is_key, &self.b[a..s], a, false);
            a = s;
        }
        if a < to {
            Self::emit(v, is_key, &self.b[a..to], a, false);
        }
    }

    fn emit<V: Visitor>(v: &mut V, is_key: bool, piece: &[u8], offset: usize, escaped: bool) {
        if is_key {
            v.key_piece(piece, offset, escaped);
        } else {
            v.string_piece(piece, offset, escaped);
        }
    }

    fn hex4(&self, at: usize) -> u32 {
        u32::from_str_radix(std::str::from_utf8(&self.b[at..at + 4]).unwrap(), 16).unwrap()
    }

    fn string<V: Visitor>(&mut self, v: &mut V, is_key: bool) {
        self.i += 1; // opening quote
        let mut decoded = String::new();
        let mut run = self.i;
        loop {
            match self.b[self.i] {
                b'"' => {
                    self.piece(v, is_key, run, self.i);
                    decoded.push_str(std::str::from_utf8(&self.b[run..self.i]).unwrap());
                    if is_key {
                        v.key_end(&decoded, self.i);
                    } else {
                        v.string_end(self.i);
                    }
                    self.i += 1;
                    return;
                }
                b'\\' => {
                    self.piece(v, is_key, run, self.i);
                    decoded.push_str(std::str::from_utf8(&self.b[run..self.i]).unwrap());
                    let e = self.b[self.i + 1];
                    let (c, len) = match e {
                        b'n' => ('\n', 2),
                        b't' => ('\t', 2),
                        b'r' => ('\r', 2),
                        b'b' => ('\u{8}', 2),
                        b'f' => ('\u{c}', 2),
                        b'u' => {
                            let hi = self.hex4(self.i + 2);
                            if (0xD800..0xDC00).contains(&hi) {
                                let lo = self.hex4(self.i + 8);
                                let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                (char::from_u32(cp).unwrap(), 12)
                            } else {
                                (char::from_u32(hi).unwrap(), 6)
                            }
                        }
                        other => (char::from(other), 2),
                    };
                    let mut buf = [0; 4];
                    let s = c.encode_utf8(&mut buf);
                    Self::emit(v, is_key, s.as_bytes(), self.i + len - 1, true);
                    decoded.push(c);
                    self.i += len;
                    run = self.i;
                }
                _ => self.i += 1,
            }
        }
    }
}
