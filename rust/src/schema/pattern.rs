//! `pattern`: ECMA-262 regular expressions run on the `regex` crate (linear time, no
//! backtracking), searched unanchored as JSON Schema requires.
//!
//! Design notes:
//! - Dialects differ in the class escapes: ECMA-262 reads `\d \w \b` as ASCII, while a model
//!   tool's final validator reads them Unicode-wide (Pydantic's default `rust-regex` engine,
//!   and Python's `re` for `python-re`), so `"José"` matches `^\w+$` there; a plain tool's
//!   validation reads them as ECMA-262 does. Python's
//!   `\w` is wider still (`½`, `²`): the widest `\w` takes every non-ASCII character. The
//!   pre-check must never reject what the final validation accepts, and a pattern is a positive
//!   expression (no complement operator), so each atom is translated to the union of what the
//!   dialects match: `\d \w \s` and their negations match whatever any dialect matches. Inside
//!   a negated class (`[^\d]`) the opposite is needed, so there each escape becomes what every
//!   dialect matches. `\b` and `\B` cannot be widened so (Python's `\w` sees characters no
//!   boundary of the crate does), nor can inline flags (`(?i)`: Python folds `İ` and `ı` to `i`),
//!   so those patterns are left to the final validation. Other translations:
//!   `\uXXXX` and `\cX` become `\x{..}`, a literal `[` inside a class is escaped (Rust
//!   reads it as a nested class), and so is a `{` whose body holds a space (`x{ 2}` is text to
//!   ECMA-262 and Python, a count to the crate).
//! - Anything the crate cannot compile (lookaround, backreferences, `\p{..}` without the
//!   gencat tables) is reported as unsupported and not checked; the final validation decides.
//! - Whether a pattern is an ECMA-262 regular expression at all is decided first, by the
//!   `regress` crate's parser with the `u` flag ([`ecma_error`]): JSON Schema (2020-12 core,
//!   6.4) reads patterns as ECMA-262 with Unicode support, and the JSON-Schema-Test-Suite's
//!   `ecmascript-regex.json` both takes `\p{Letter}` and refuses `\a`, which only that mode
//!   does. Without the flag `\Z` or `\a` would be identity escapes meaning `Z` and `a`, a
//!   reading no other engine shares. A pattern refused there is a broken schema, and Python's
//!   validation asks the same function, so both refuse the same patterns. An escaped
//!   punctuation mark that is no syntax character (`\@`, `\-`) is read as the mark, as every
//!   engine reads it (the `u` flag alone refuses it), and translated so below.
//! - Checked at string end only: testing prefix viability would need the DFA's internal state,
//!   and tool-call strings are short.
//! - Identifier-like patterns (`^SKU-[0-9]{5}$`: anchored at the start, a row of ASCII literals
//!   and ASCII classes with exact counts) are also compiled to a list of byte sets and matched
//!   without the regex: the regex crate spends hundreds of instructions per search on them, and
//!   builds a per-thread cache (tens of thousands) on a thread's first search. Each set holds
//!   ASCII only, so a byte-wise match is a character-wise one.

use std::fmt::Write as _;

use regex::Regex;

/// White space for every dialect: ECMA-262 `\s` without its U+FEFF, which Rust's and Python's
/// `\s` lack.
const SPACE_ALL: &str =
    r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}";
/// White space for some dialect: Unicode `White_Space` (Rust, U+0085 among others), ECMA-262's
/// U+FEFF, and Python's U+001C-U+001F.
const SPACE_ANY: &str = r"\s\x{FEFF}\x1C-\x1F";

/// A compiled `pattern`.
#[derive(Debug)]
pub(crate) struct Pattern {
    regex: Regex,
    /// The same pattern as byte sets, when it has that shape (see the design notes).
    simple: Option<Simple>,
}

impl Pattern {
    /// Whether the pattern matches somewhere in `s`, as ECMA-262 (and JSON Schema) has it.
    #[inline]
    pub(crate) fn is_match(&self, s: &str) -> bool {
        match &self.simple {
            Some(simple) if !simple.digits || s.is_ascii() => simple.is_match(s.as_bytes()),
            _ => self.regex.is_match(s),
        }
    }
}

/// `^` then one ASCII set per character, and `$` or nothing.
#[derive(Debug)]
struct Simple {
    /// Bit `b` of a set: ASCII byte `b` matches.
    sets: Vec<u128>,
    /// Ends with `$`: the string is exactly as long as `sets`.
    end: bool,
    /// Has a `\d`, which also matches non-ASCII digits: a non-ASCII string goes to the regex.
    digits: bool,
}

/// Longest row of sets kept; longer patterns use the regex.
const SIMPLE_MAX: usize = 256;

impl Simple {
    fn is_match(&self, s: &[u8]) -> bool {
        if s.len() < self.sets.len() || (self.end && s.len() != self.sets.len()) {
            return false;
        }
        self.sets
            .iter()
            .zip(s)
            .all(|(&set, &b)| b < 128 && set & (1u128 << b) != 0)
    }

    /// Parses the ECMA source; `None` for anything but the simple shape.
    fn parse(p: &str) -> Option<Self> {
        let b = p.as_bytes();
        if b.first() != Some(&b'^') || !p.is_ascii() {
            return None;
        }
        let mut sets = Vec::new();
        let mut end = false;
        let mut digits = false;
        let mut i = 1;
        while i < b.len() {
            let set = match b[i] {
                b'$' if i + 1 == b.len() => {
                    end = true;
                    break;
                }
                b'\\' => {
                    let e = *b.get(i + 1)?;
                    i += 2;
                    match e {
                        b'd' => {
                            digits = true;
                            ascii_range(b'0', b'9')
                        }
                        _ if e.is_ascii_punctuation() => 1u128 << e,
                        _ => return None,
                    }
                }
                b'[' => {
                    let close = i + 1 + b[i + 1..].iter().position(|&c| c == b']')?;
                    let set = class_set(&b[i + 1..close])?;
                    i = close + 1;
                    set
                }
                c if c.is_ascii_alphanumeric() || b"-_ :/@#,;=%!'\"<>&~`".contains(&c) => {
                    i += 1;
                    1u128 << c
                }
                _ => return None,
            };
            let mut count = 1;
            if b.get(i) == Some(&b'{') {
                let close = i + 1 + b[i + 1..].iter().position(|&c| c == b'}')?;
                let digits = &b[i + 1..close];
                if digits.is_empty() || digits.len() > 3 || !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                count = std::str::from_utf8(digits).ok()?.parse::<usize>().ok()?;
                i = close + 1;
            }
            if matches!(b.get(i), Some(b'?' | b'*' | b'+' | b'{'))
                || sets.len() + count > SIMPLE_MAX
            {
                return None;
            }
            sets.extend(std::iter::repeat(set).take(count));
        }
        Some(Self { sets, end, digits })
    }
}

fn ascii_range(lo: u8, hi: u8) -> u128 {
    (lo..=hi).fold(0, |set, c| set | 1u128 << c)
}

/// The set of a `[...]` body of ASCII literals and ranges (no negation, escapes or nesting).
fn class_set(body: &[u8]) -> Option<u128> {
    if body.is_empty() || body[0] == b'^' || body.iter().any(|&c| matches!(c, b'\\' | b'[')) {
        return None;
    }
    let mut set = 0;
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if body.get(i + 1) == Some(&b'-') && i + 2 < body.len() {
            let d = body[i + 2];
            if c > d {
                return None;
            }
            set |= ascii_range(c, d);
            i += 3;
        } else {
            set |= 1u128 << c;
            i += 1;
        }
    }
    Some(set)
}

/// Why `pattern` is no ECMA-262 regular expression as JSON Schema reads one (with the `u`
/// flag: `(?i)`, `(?P<name>..)`, `\Z`, `a++` or a lone `{` are refused), or `None` when it is
/// one. The parser's own words, which name the construct it refused.
///
/// An escaped ASCII punctuation character that is no syntax character (`\@`, `\#`, `\:`,
/// `\-` outside a class, an escaped space) is taken as that character: the `u` flag refuses
/// it, but every engine (ECMA-262 without the flag, Python's, the `regex` crate) reads it so,
/// and real schemas (OpenAPI-derived `^[\w.\-+\@]+$`) carry it.
#[must_use]
pub fn ecma_error(pattern: &str) -> Option<String> {
    regress::Regex::with_flags(&literal_escapes(pattern), "u")
        .err()
        .map(|e| e.text)
}

/// Whether `\c` is an escape the `u` flag refuses that every engine reads as `c` itself.
fn tolerated_escape(c: char) -> bool {
    c == ' ' || (c.is_ascii_punctuation() && !"^$\\.*+?()[]{}|/".contains(c))
}

/// `pattern` with each tolerated escape (see [`ecma_error`]) written `\xHH`: the same
/// character wherever it stands, in a class or out (a bare `=` after `(?` would be syntax).
fn literal_escapes(pattern: &str) -> std::borrow::Cow<'_, str> {
    if !pattern.contains('\\') {
        return pattern.into();
    }
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e) if tolerated_escape(e) => {
                let _ = write!(out, "\\x{:02X}", u32::from(e));
            }
            Some(e) => {
                out.push('\\');
                out.push(e);
            }
            None => out.push('\\'),
        }
    }
    out.into()
}

/// Compiles an ECMA-262 pattern, or `None` when it uses something this module cannot run.
pub(crate) fn compile(pattern: &str) -> Option<Pattern> {
    build(pattern, &translate(pattern, true)?)
}

/// Whether every dialect reads `pattern` as [`compile`] runs it (no class escape, `.`, or
/// other construct whose meaning differs between ECMA-262, Rust and Python).
pub(crate) fn dialects_agree(pattern: &str) -> bool {
    let wide = translate(pattern, true);
    wide.is_some() && wide == translate(pattern, false)
}

fn build(pattern: &str, translated: &str) -> Option<Pattern> {
    let regex = regex::RegexBuilder::new(translated)
        .size_limit(1 << 22)
        .build()
        .ok()?;
    Some(Pattern {
        regex,
        simple: Simple::parse(pattern),
    })
}

/// A `patternProperties` pattern, read on keys. A `pattern` may match more than the final
/// validation does (a miss is all it reports), but a key pattern decides which subschema a
/// member meets, and `additionalProperties` refuses what no pattern takes: a wrong reading
/// either way could refuse a valid member. So a key is judged twice, by the pattern as some
/// dialect reads it (`wide`, as [`compile`]) and as every dialect does (`narrow`: `\d` is
/// `[0-9]`, `\w` ASCII, `.` without ECMA-262's line terminators, property classes refused,
/// as their tables differ between Unicode versions), and is sure to match only by `narrow`, sure not to only by `wide`.
#[derive(Debug)]
pub(crate) struct KeyPattern {
    wide: Option<Pattern>,
    /// `None` with `wide` set when both readings are one regex (no class escape in it).
    narrow: Option<Pattern>,
    /// Some key may be matched by one reading and not the other (or by none it can run).
    pub uncertain: bool,
}

impl KeyPattern {
    pub(crate) fn compile(pattern: &str) -> Self {
        let wide = translate(pattern, true);
        let narrow = translate(pattern, false);
        let same = wide.is_some() && wide == narrow;
        let wide = wide.and_then(|t| build(pattern, &t));
        let narrow = if same {
            None
        } else {
            narrow.and_then(|t| build(pattern, &t))
        };
        Self {
            wide,
            narrow,
            uncertain: !same,
        }
    }

    /// Whether the pattern can run at all (else every key is unknown to it).
    pub(crate) fn runs(&self) -> bool {
        self.wide.is_some()
    }

    /// `Some(true)` when every dialect matches somewhere in `key`, `Some(false)` when none
    /// does, `None` when they may differ (or the pattern cannot run).
    #[inline]
    pub(crate) fn matches(&self, key: &str) -> Option<bool> {
        let wide = self.wide.as_ref()?;
        if !wide.is_match(key) {
            return Some(false);
        }
        if !self.uncertain || self.narrow.as_ref().is_some_and(|n| n.is_match(key)) {
            return Some(true);
        }
        None
    }
}

/// The set inside the class for `\d \D \w \W \s \S`, and whether the class is negated: what
/// some dialect matches when `widest`, what every dialect matches otherwise (inside `[^...]`).
fn class_escape(c: char, widest: bool) -> Option<(&'static str, bool)> {
    let (any, all) = match c.to_ascii_lowercase() {
        'd' => (r"\d", "0-9"),
        // Python's `\w` (str.isalnum) also takes numerics such as `½` and `²` that Rust's
        // lacks; without the general-category tables, any non-ASCII character stands in.
        'w' => (r"\w\x{80}-\x{10FFFF}", "0-9A-Za-z_"),
        's' => (SPACE_ANY, SPACE_ALL),
        _ => return None,
    };
    // A negated escape is the complement of its set: widest when the set is narrowest.
    let negated = c.is_ascii_uppercase();
    Some((if widest != negated { any } else { all }, negated))
}

/// `p` for the regex crate, as some dialect reads it when `wide`, as every dialect does
/// otherwise (see [`KeyPattern`]).
fn translate(p: &str, wide: bool) -> Option<String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let mut negated_class = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let e = *chars.get(i + 1)?;
                i += 2;
                if let Some((set, negated)) = class_escape(e, wide != negated_class) {
                    out.push_str(if negated { "[^" } else { "[" });
                    out.push_str(set);
                    out.push(']');
                    continue;
                }
                match e {
                    'b' if in_class => out.push_str(r"\x08"),
                    // A word boundary is judged on `\w` at both sides, and Python's `\w` takes
                    // characters (`²`) that no boundary the crate has can see: `\b` and `\B`
                    // may hold there for the final validation and never here.
                    'b' | 'B' => return None,
                    'u' => {
                        let (cp, used) = unicode_escape(&chars[i..])?;
                        // A surrogate pair is one character here and to ECMA-262, two
                        // halves to Python, which then matches no text.
                        if !wide && used == 10 {
                            return None;
                        }
                        i += used;
                        push_codepoint(&mut out, cp);
                    }
                    'x' => {
                        let hex: String = chars.get(i..i + 2)?.iter().collect();
                        let cp = u32::from_str_radix(&hex, 16).ok()?;
                        i += 2;
                        push_codepoint(&mut out, cp);
                    }
                    'c' => {
                        let letter = chars.get(i)?;
                        if !letter.is_ascii_alphabetic() {
                            return None;
                        }
                        i += 1;
                        push_codepoint(&mut out, u32::from(*letter) % 32);
                    }
                    '0' if !chars.get(i).is_some_and(char::is_ascii_digit) => out.push_str(r"\x00"),
                    't' | 'n' | 'r' | 'f' | 'v' => {
                        out.push_str(match e {
                            't' => r"\t",
                            'n' => r"\n",
                            'r' => r"\r",
                            'f' => r"\x0C",
                            _ => r"\x0B",
                        });
                    }
                    // Unicode property escapes: passed through; they compile only when the
                    // regex crate has the tables, and are unsupported otherwise.
                    'p' | 'P' if !wide => return None,
                    'p' | 'P' => {
                        out.push('\\');
                        out.push(e);
                    }
                    // Backreferences and anything else alphanumeric: not translatable.
                    _ if e.is_ascii_alphanumeric() => return None,
                    _ => push_literal(&mut out, e),
                }
                continue;
            }
            '[' if in_class => out.push_str(r"\["),
            '[' => {
                in_class = true;
                out.push('[');
                negated_class = chars.get(i + 1) == Some(&'^');
                if negated_class {
                    out.push('^');
                    i += 1;
                }
                // ECMA `[]` matches nothing and `[^]` anything; Rust reads `]` as a literal.
                if matches!(chars.get(i + 1), Some(']') | None) {
                    return None;
                }
            }
            ']' if in_class => {
                in_class = false;
                negated_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.get(i + 1) == Some(&'-') => return None,
            // Inline flags (`(?i)`) are no ECMA-262 syntax, and Python folds case more widely
            // than the crate (`İ` and `ı` match `i`): left to the final validation.
            '(' if !in_class
                && chars.get(i + 1) == Some(&'?')
                && chars.get(i + 2).is_some_and(|f| "imsxuUR-".contains(*f)) =>
            {
                return None;
            }
            // A brace whose body holds a space is no quantifier to ECMA-262 or Python (`x{ 2}`
            // is text), where the crate reads one.
            '{' if !in_class && brace_has_space(&chars[i + 1..]) => out.push_str(r"\{"),
            // `$` is the end of the text, as for ECMA-262, the crate and Pydantic's default
            // engine (Python's also holds before a final newline: the validation of a plain
            // tool reads it as ECMA-262 does, and a model on `python-re` has its patterns left
            // to validation).
            '$' if !in_class => out.push_str(r"\z"),
            // ECMA-262's `.` takes no line terminator; Python's and the crate's take all but
            // `\n`. A key pattern's narrow reading must hold for every dialect.
            '.' if !in_class && !wide => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            _ => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

/// Whether the text up to the next `}` (the rest of a `{`) holds a space.
fn brace_has_space(rest: &[char]) -> bool {
    rest.iter().take_while(|&&c| c != '}').any(|&c| c == ' ')
}

fn unicode_escape(rest: &[char]) -> Option<(u32, usize)> {
    if rest.first() == Some(&'{') {
        let end = rest.iter().position(|&c| c == '}')?;
        let hex: String = rest[1..end].iter().collect();
        return Some((u32::from_str_radix(&hex, 16).ok()?, end + 1));
    }
    let hex: String = rest.get(..4)?.iter().collect();
    let hi = u32::from_str_radix(&hex, 16).ok()?;
    if (0xD800..0xDC00).contains(&hi) && rest.get(4) == Some(&'\\') && rest.get(5) == Some(&'u') {
        let hex: String = rest.get(6..10)?.iter().collect();
        let lo = u32::from_str_radix(&hex, 16).ok()?;
        if (0xDC00..0xE000).contains(&lo) {
            return Some((0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 10));
        }
    }
    Some((hi, 4))
}

fn push_codepoint(out: &mut String, cp: u32) {
    let _ = write!(out, r"\x{{{cp:X}}}");
}

fn push_literal(out: &mut String, c: char) {
    out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        compile(p)
            .unwrap_or_else(|| panic!("{p} should compile"))
            .is_match(s)
    }

    #[test]
    fn escaped_punctuation_is_the_character_itself() {
        // Refused by the `u` flag, read as the character by every engine: taken, as that.
        for (p, yes, no) in [
            (r"^[\w.\-+\@]+$", "a.b-c+d@e", "a b"),
            (r"^\#[0-9a-f]{6}$", "#00ff00", "00ff00"),
            (r"^[^\:]+$", "host", "host:80"),
            (r"^a\-b\ c$", "a-b c", "a\\-b"),
            (r"^(\=|\!|\<|\>)$", ">", "(?=)"),
            (r#"^[\'\"\,\;\%\&\~\`_\_]+$"#, "'\",;%&~`_", "a"),
        ] {
            assert_eq!(ecma_error(p), None, "{p}");
            assert!(m(p, yes), "{p} takes {yes:?}");
            assert!(!m(p, no), "{p} refuses {no:?}");
        }
        // `(?\=a)` is no lookahead: the escape is a character there too.
        assert!(ecma_error(r"(?\=a)").is_some());
        // Escaped letters and digits mean something else elsewhere: still refused.
        for p in [r"\Z", r"\A", r"\h", r"\q", r"\8", r"[\a]"] {
            assert!(ecma_error(p).is_some(), "{p}");
        }
    }

    #[test]
    fn basics() {
        assert!(m("^u_[0-9a-f]{8}$", "u_deadbeef"));
        assert!(!m("^u_[0-9a-f]{8}$", "u_deadbeefx"));
        assert!(m("a+", "xxaxx"), "unanchored search");
        // `$` is the end of the text, as ECMA-262 reads it: not before a final newline.
        assert!(!m("^u_[0-9a-f]{8}$", "u_deadbeef\n"));
        assert!(!m("^u_[0-9a-f]{8}$", "u_deadbee\n"));
        assert!(!m(r"^[A-Z]+$", "AB\n"), "the same through the regex");
        assert!(!m(r"^[A-Z]+$", "AB\nC"));
        assert!(!m(r"x|^y$", "y\n"));
        assert!(m(r"x|^y$", "y"));
        assert!(!m(r"^(a|b)$", "a\n"));
        assert!(m(r"^(a|b$)", "b"));
        assert!(!m(r"^(a|b)$", "ab"));
        assert!(m(r"^\d+$", "123"));
        assert!(
            m(r"^\d+$", "١٢٣"),
            "Unicode \\d, as Pydantic and Python read it"
        );
        assert!(
            m(r"^\d{3}$", "١٢٣"),
            "the byte-set matcher defers to the regex"
        );
        assert!(!m(r"^\d{3}$", "١٢x"));
        assert!(m(r"^\w+$", "José"), "Unicode \\w");
        assert!(m(r"^\w+$", "日本"));
        assert!(!m(r"^\w+$", "a b"));
        assert!(m(r"^\w+$", "½²"), "Python's \\w takes numerics");
        assert!(m(r"^[^\W\d_]+$", "José"));
        assert!(!m(r"^[^\W\d_]+$", "a1"));
        assert!(m(r"^[^\d]$", "٣"), "ECMA reads [^\\d] as non-ASCII-digit");
        assert!(!m(r"^[^\d]$", "3"));
        assert!(m(r"^[^\w]$", "é"), "ECMA reads [^\\w] as non-ASCII-word");
        assert!(
            m(r"^[^\s]$", "\u{feff}"),
            "Rust and Python do not count U+FEFF as space"
        );
        assert!(
            m(r"^\s$", "\u{85}"),
            "Rust and Python count U+0085 as space"
        );
        assert!(m(r"^\S$", "\u{85}"), "ECMA does not");
        assert!(!m(r"^\S$", " "));
        assert!(m(r"^\D$", "٣"), "ECMA \\D matches non-ASCII digits");
        assert!(m(r"^\W$", "é"));
        assert!(m(r"^\s$", "\u{feff}"));
        assert!(m(r"^[^\s]$", "x"));
        assert!(!m(r"^[^\s]$", "\u{3000}"));
        assert!(m(r"^\/a\.b$", "/a.b"));
        assert!(m(r"^\u00e9\u{1F600}$", "é😀"));
        assert!(m(r"^\ud83d\ude00$", "😀"));
        assert!(m(r"^[a[]+$", "a[a"));
        assert!(m(r"^\cJ$", "\n"));
        assert!(m(r"^x{ 2}$", "x{ 2}"), "a brace with a space is text");
        assert!(m(r"^x{2, 3}$", "x{2, 3}"));
        assert!(m(r"^x{2}$", "xx"));
        assert!(m(r"^(?P<id>[0-9]+)$", "12"), "a named group is no flag");
    }

    /// What the final validation may read otherwise is left to it: word boundaries (Python's
    /// `\w` takes `²`), inline flags (Python folds `İ` and `ı` to `i`).
    #[test]
    fn patterns_read_otherwise_elsewhere_are_unsupported() {
        for p in [
            r"\bfoo\b",
            r"\Bx",
            r"^é\b",
            "(?i)^[a-z]+$",
            "(?i:ab)",
            "(?-i)a",
            "(?m)^a",
        ] {
            assert!(compile(p).is_none(), "{p}");
        }
        assert!(m(r"^[\b]$", "\u{8}"), "a backspace in a class stays");
    }

    /// The byte-set matcher agrees with the regex on the patterns it takes, and declines the
    /// others.
    #[test]
    fn simple_matches_like_the_regex() {
        let taken = [
            "^SKU-[0-9]{5}$",
            "^u_[0-9a-f]{8}$",
            r"^\d{3}-\d{2}$",
            "^ab",
            "^$",
            "^",
            "^[a-]x{0}$",
            r"^\.\/[A-Z_]{2}",
        ];
        let declined = [
            "SKU", "^a+$", "^a{2,3}$", "^a|b$", "^(a)$", "^.$", "^[^a]$", r"^\w$", "^é$", "^a$b",
            "^a{x}", "^[a\\]]$",
        ];
        let inputs = [
            "",
            "SKU-12345",
            "SKU-1234",
            "SKU-123456",
            "SKU-1234x",
            "sku-12345",
            "u_deadbeef",
            "u_deadbeefx",
            "123-45",
            "123-456",
            "ab",
            "abc",
            "xab",
            "ax",
            "-x",
            "./AB",
            "./A",
            "./ABC",
            "SKU-1234５",
            "é",
            "\n",
        ];
        for p in taken {
            let c = compile(p).unwrap_or_else(|| panic!("{p} should compile"));
            assert!(c.simple.is_some(), "{p} should be simple");
            for s in inputs {
                assert_eq!(c.is_match(s), c.regex.is_match(s), "{p} on {s:?}");
            }
        }
        for p in declined {
            assert!(compile(p).map_or(true, |c| c.simple.is_none()), "{p}");
        }
    }

    /// A key `.` may take is judged only where every dialect reads it alike: ECMA-262's `.`
    /// refuses `\r`, U+2028 and U+2029, Python's and Pydantic's take them.
    #[test]
    fn a_key_dot_is_sure_only_off_the_line_terminators() {
        let dot = KeyPattern::compile("^.$");
        assert_eq!(dot.matches("a"), Some(true));
        assert_eq!(dot.matches("é"), Some(true));
        assert_eq!(dot.matches("\n"), Some(false));
        assert_eq!(dot.matches("ab"), Some(false));
        for terminator in ["\r", "\u{2028}", "\u{2029}"] {
            assert_eq!(dot.matches(terminator), None, "{terminator:?}");
        }
        let set = KeyPattern::compile("^[.]$");
        assert_eq!(set.matches("."), Some(true));
        assert_eq!(set.matches("\r"), Some(false));
    }

    #[test]
    fn unsupported() {
        for p in [r"(?=a)b", r"(a)\1", "[]", "[^]", r"\q"] {
            assert!(compile(p).is_none(), "{p}");
        }
    }
}
