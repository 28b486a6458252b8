//! `format` assertions for the formats that tool schemas use (the `OpenAI` strict subset).
//!
//! Design notes:
//! - 2020-12 makes `format` an annotation by default, but a tool schema that says `date-time`
//!   wants a date-time, so the pre-check asserts the formats listed in [`Format`] and reports
//!   every other format name as unsupported (ignored).
//! - Hand-written checkers, not regexes: they are exact where the RFC is exact (calendar days,
//!   leap seconds after applying the offset) and allocation-free.
//! - Where an RFC grammar is stricter than common practice, the checker is lenient (email
//!   accepts any non-empty dot-atom or quoted local part; hostname accepts a trailing dot),
//!   because a pre-check must never reject what the final validation accepts.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The `format` value under which a schema asks for a `time` with its offset required (see
/// [`Format::TimeWithOffset`]); errors name the format `time`, as the tool's schema does.
pub(crate) const TIME_WITH_OFFSET: &str = "x-toolwire-time-with-offset";

/// A `format` value the pre-check asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Date,
    DateTime,
    Time,
    /// `time` where validation reads it as RFC 3339's full-time, which has an offset: a plain
    /// tool's, whose `format: time` the Python layer names [`TIME_WITH_OFFSET`] for us.
    TimeWithOffset,
    Email,
    Uuid,
    Ipv4,
    Ipv6,
    Hostname,
    Duration,
}

impl Format {
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "date" => Self::Date,
            "date-time" => Self::DateTime,
            "time" => Self::Time,
            TIME_WITH_OFFSET => Self::TimeWithOffset,
            "email" => Self::Email,
            "uuid" => Self::Uuid,
            "ipv4" => Self::Ipv4,
            "ipv6" => Self::Ipv6,
            "hostname" => Self::Hostname,
            "duration" => Self::Duration,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Date => "date",
            Self::DateTime => "date-time",
            Self::Time | Self::TimeWithOffset => "time",
            Self::Email => "email",
            Self::Uuid => "uuid",
            Self::Ipv4 => "ipv4",
            Self::Ipv6 => "ipv6",
            Self::Hostname => "hostname",
            Self::Duration => "duration",
        }
    }

    /// What a valid value is, in words.
    pub fn expected(self) -> &'static str {
        match self {
            Self::Date => "a date (RFC 3339 full-date, YYYY-MM-DD)",
            Self::DateTime => "a date-time (RFC 3339)",
            Self::Time => "a time (HH:MM[:SS], with an optional offset)",
            Self::TimeWithOffset => {
                "a time with a time zone offset, e.g. 14:30:00Z or 14:30:00+01:00"
            }
            Self::Email => "an email address",
            Self::Uuid => "a UUID",
            Self::Ipv4 => "an IPv4 address",
            Self::Ipv6 => "an IPv6 address",
            Self::Hostname => "a hostname (RFC 1123)",
            Self::Duration => "a duration (ISO 8601, e.g. P1DT2H)",
        }
    }

    pub fn check(self, s: &str) -> bool {
        // No final newline anywhere: validation refuses one too, Pydantic's types and the
        // jsonschema dialect's format checks alike.
        match self {
            Self::Date => date(s.as_bytes()),
            Self::DateTime => date_time(s.as_bytes()),
            Self::Time => time(s.as_bytes(), false),
            Self::TimeWithOffset => time(s.as_bytes(), true),
            Self::Email => email(s),
            Self::Uuid => uuid(s.as_bytes()),
            Self::Ipv4 => s.parse::<Ipv4Addr>().is_ok(),
            Self::Ipv6 => ipv6(s),
            Self::Hostname => hostname(s),
            Self::Duration => duration(s.as_bytes()),
        }
    }
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |v, &d| v * 10 + u32::from(d - b'0')))
}

fn date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..])) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// A time of day, `HH:MM[:SS[.frac]]` then an offset (`Z`, `±HH:MM` or `±HHMM`).
///
/// Lenient where Pydantic is (the final validation for model tools): seconds may be left out,
/// a comma may stand for the decimal point and the offset may lack its colon. A `time` field serialises without an offset when it has
/// no zone (`"14:30:00"`), so the offset is optional for `format: time`; a `date-time` keeps
/// it required, because validation rejects a naive timestamp unless a default zone is set.
#[allow(clippy::many_single_char_names)] // h, m, s: the RFC's own names
fn time(b: &[u8], offset_required: bool) -> bool {
    if b.len() < 5 || b[2] != b':' {
        return false;
    }
    let (Some(h), Some(m)) = (digits(&b[..2]), digits(&b[3..5])) else {
        return false;
    };
    let mut i = 5;
    let mut s = 0;
    if b.get(i) == Some(&b':') {
        let Some(sec) = b.get(i + 1..i + 3).and_then(digits) else {
            return false;
        };
        s = sec;
        i += 3;
        // Pydantic also reads a comma before the fraction (ISO 8601 allows either).
        if matches!(b.get(i), Some(b'.' | b',')) {
            let start = i + 1;
            i = start;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return false;
            }
        }
    }
    let offset_minutes: i64 = match &b[i..] {
        [] if !offset_required => 0,
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), oh1, oh2, b':', om1, om2]
        | [sign @ (b'+' | b'-'), oh1, oh2, om1, om2] => {
            let (Some(oh), Some(om)) = (digits(&[*oh1, *oh2]), digits(&[*om1, *om2])) else {
                return false;
            };
            if oh > 23 || om > 59 {
                return false;
            }
            let v = i64::from(oh * 60 + om);
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return false,
    };
    if h > 23 || m > 59 || s > 60 {
        return false;
    }
    if s == 60 {
        // A leap second is only valid at 23:59:60 UTC.
        let utc = (i64::from(h * 60 + m) - offset_minutes).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

/// A date, a separator (`T`, `t`, or the space and `_` that Pydantic also reads) and a time
/// with its offset.
fn date_time(b: &[u8]) -> bool {
    b.len() > 11
        && matches!(b[10], b'T' | b't' | b' ' | b'_')
        && date(&b[..10])
        && time(&b[11..], true)
}

/// A UUID in the forms Pydantic reads (the `uuid` crate's `parse_str`): hyphenated, 32 bare
/// hex digits, hyphenated in braces, or hyphenated after `urn:uuid:`.
fn uuid(b: &[u8]) -> bool {
    match b.len() {
        32 => b.iter().all(u8::is_ascii_hexdigit),
        36 => hyphenated_uuid(b),
        38 => b[0] == b'{' && b[37] == b'}' && hyphenated_uuid(&b[1..37]),
        45 => b.starts_with(b"urn:uuid:") && hyphenated_uuid(&b[9..]),
        _ => false,
    }
}

fn hyphenated_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// An IPv6 address, with an optional zone id (`fe80::1%eth0`) as Python's `ipaddress` reads
/// it: Pydantic's `IPv6Address` (the final validation for model tools) takes one. The zone is
/// any non-empty text without `%` or `/`. `jsonschema` refuses zone ids, so plain-dict tools
/// still reject them, in validation; the pre-check only must not be stricter than either.
fn ipv6(s: &str) -> bool {
    let (addr, zone) = match s.split_once('%') {
        Some((addr, zone)) => (addr, Some(zone)),
        None => (s, None),
    };
    zone.map_or(true, |z| !z.is_empty() && !z.contains(['%', '/']))
        && addr.parse::<Ipv6Addr>().is_ok()
}

fn hostname(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    })
}

/// An email address, read as Pydantic's `EmailStr` and `NameEmail` read one (the final
/// validation for model tools): whitespace around it is stripped, and an address in angle
/// brackets after a display name (`Jane Doe <jane@example.com>`, the name maybe quoted) is the
/// address checked. `jsonschema` asks only for an `@`, so neither form makes a plain-dict tool
/// stricter.
fn email(s: &str) -> bool {
    let s = s.trim_matches(py_space);
    if let Some(inner) = s.strip_suffix('>') {
        // A quoted display name may hold a `<` itself: any `<` may open the address.
        if inner
            .match_indices('<')
            .any(|(at, _)| addr_spec(inner[at + 1..].trim_matches(py_space)))
        {
            return true;
        }
    }
    addr_spec(s)
}

/// Whitespace as Python's `str.strip` and `\s` see it: Unicode `White_Space` plus the four
/// separators U+001C to U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// A bare address (`local@domain`), leniently.
fn addr_spec(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    if local.is_empty() || domain.is_empty() {
        return false;
    }
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && !local.contains('@')
            && !local.chars().any(|c| c.is_whitespace() || c.is_control())
    };
    let domain_ok = if let Some(lit) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        lit.parse::<Ipv4Addr>().is_ok()
            || lit
                .strip_prefix("IPv6:")
                .is_some_and(|v6| v6.parse::<Ipv6Addr>().is_ok())
    } else {
        // Internationalised domains are allowed: only reject what no domain can contain.
        !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains("..")
            && !domain
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '@')
    };
    local_ok && domain_ok
}

/// RFC 3339 appendix A durations, read as leniently as Pydantic reads them (the final
/// validation for model tools): a leading sign (Pydantic writes a negative `timedelta` as
/// `-P1D`), weeks next to other date units, units in any order (each at most once), an empty
/// time part after `T`, and a decimal fraction on the last component.
fn duration(b: &[u8]) -> bool {
    let b = match b.first() {
        Some(b'+' | b'-') => &b[1..],
        _ => b,
    };
    let Some(rest) = b.strip_prefix(b"P") else {
        return clock_duration(b);
    };
    let (date_part, time_part) = match rest.iter().position(|&c| c == b'T') {
        Some(t) => (&rest[..t], &rest[t + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    (!date_part.is_empty() || !time_part.is_empty())
        && components(date_part, b"YMWD", time_part.is_empty())
        && components(time_part, b"HMS", true)
}

/// Pydantic's other duration forms, read loosely: days and a clock time (`01:02:03`,
/// `1 day, 01:02`, `2d`, `3 Days`, `01:02:03,5`). Models write durations this way, and the
/// pre-check must not refuse what the final validation accepts; a string that only looks like
/// one is left to that validation.
fn clock_duration(b: &[u8]) -> bool {
    b.first().is_some_and(u8::is_ascii_digit)
        && b.iter().all(|&c| {
            c.is_ascii_digit()
                || matches!(c, b' ' | b':' | b'.' | b',')
                || matches!(c.to_ascii_lowercase(), b'd' | b'a' | b'y' | b's')
        })
}

/// Components `<number><unit>`, each unit at most once, in any order.
fn components(mut s: &[u8], units: &[u8], fraction_last: bool) -> bool {
    let mut seen = 0u8;
    while !s.is_empty() {
        let Some(end) = s.iter().position(u8::is_ascii_alphabetic) else {
            return false;
        };
        let Some(k) = units.iter().position(|&u| u == s[end]) else {
            return false;
        };
        if seen & (1 << k) != 0 {
            return false;
        }
        seen |= 1 << k;
        let is_last = end + 1 == s.len();
        if !number(&s[..end], fraction_last && is_last) {
            return false;
        }
        s = &s[end + 1..];
    }
    true
}

fn number(n: &[u8], allow_fraction: bool) -> bool {
    let (int, frac) = match n.iter().position(|&c| c == b'.' || c == b',') {
        Some(p) if allow_fraction => (&n[..p], Some(&n[p + 1..])),
        Some(_) => return false,
        None => (n, None),
    };
    !int.is_empty()
        && int.iter().all(u8::is_ascii_digit)
        && frac.map_or(true, |f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(f: Format, s: &str) -> bool {
        f.check(s)
    }

    #[test]
    fn dates() {
        assert!(ok(Format::Date, "2024-02-29"));
        assert!(!ok(Format::Date, "2023-02-29"));
        assert!(ok(Format::Date, "2000-02-29"));
        assert!(!ok(Format::Date, "1900-02-29"));
        assert!(!ok(Format::Date, "2024-13-01"));
        assert!(!ok(Format::Date, "2024-04-31"));
        assert!(!ok(Format::Date, "2024-4-01"));
        assert!(!ok(Format::Date, "2024-04-01T"));
    }

    #[test]
    fn times() {
        assert!(ok(Format::Time, "08:30:06Z"));
        assert!(ok(Format::Time, "08:30:06.283185+01:00"));
        assert!(ok(Format::Time, "23:59:60Z"));
        assert!(ok(Format::Time, "15:59:60-08:00"));
        assert!(!ok(Format::Time, "22:59:60Z"));
        assert!(
            ok(Format::Time, "08:30:06"),
            "a naive time, as Pydantic writes one"
        );
        assert!(ok(Format::Time, "08:30"));
        // Where validation reads RFC 3339's full-time, the offset is required; the rest of
        // the reading stays as lenient (a pass is never certain, see `compile`).
        assert!(!ok(Format::TimeWithOffset, "08:30:06"));
        assert!(!ok(Format::TimeWithOffset, "08:30"));
        assert!(ok(Format::TimeWithOffset, "08:30:06Z"));
        assert!(ok(Format::TimeWithOffset, "08:30:06.5+01:00"));
        assert!(!ok(Format::TimeWithOffset, "22:59:60Z"));
        assert!(ok(Format::Time, "08:30:06.5+0100"));
        assert!(!ok(Format::Time, "08:30:06+01"));
        assert!(!ok(Format::Time, "8:30:06"));
        assert!(!ok(Format::Time, "08:30:"));
        assert!(!ok(Format::Time, "24:00:00Z"));
        assert!(!ok(Format::Time, "08:30:06+24:00"));
        assert!(!ok(Format::Time, "08:30:06."));
        assert!(
            ok(Format::Time, "08:30:06,5"),
            "a comma fraction, as Pydantic reads it"
        );
        assert!(!ok(Format::Time, "08:30:06,"));
        assert!(!ok(Format::Time, "08:30,5"));
    }

    #[test]
    fn date_times() {
        assert!(ok(Format::DateTime, "1963-06-19T08:30:06.283185Z"));
        assert!(ok(Format::DateTime, "1963-06-19t08:30:06z"));
        assert!(ok(Format::DateTime, "1998-12-31T23:59:60Z"));
        assert!(ok(Format::DateTime, "1963-06-19 08:30:06Z"));
        assert!(ok(Format::DateTime, "1963-06-19T08:30+0100"));
        assert!(!ok(Format::DateTime, "1963-06-19X08:30:06Z"));
        assert!(!ok(Format::DateTime, "1963-06-19T08:30:06"));
        assert!(ok(Format::DateTime, "1963-06-19T08:30:06,283185Z"));
        assert!(!ok(Format::DateTime, "06/19/1963 08:30:06 PST"));
        assert!(!ok(Format::DateTime, "1963-06-19T08:30:06Z\n"));
        assert!(!ok(Format::DateTime, "1963-06-19T08:30:06Z\n\n"));
        assert!(!ok(Format::Time, "08:30:06Z\n"));
    }

    #[test]
    fn others() {
        assert!(ok(Format::Uuid, "2EB8AA08-AA98-11EA-B4AA-73B441D16380"));
        // The other forms Pydantic reads: bare hex, braces, a URN.
        assert!(ok(Format::Uuid, "2eb8aa08aa9811eab4aa73b441d16380"));
        assert!(ok(Format::Uuid, "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}"));
        assert!(ok(
            Format::Uuid,
            "urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380"
        ));
        assert!(!ok(Format::Uuid, "2eb8aa08aa9811eab4aa73b441d1638"));
        assert!(!ok(Format::Uuid, "{2eb8aa08aa9811eab4aa73b441d16380}"));
        assert!(!ok(
            Format::Uuid,
            "urn:uuid:2eb8aa08aa9811eab4aa73b441d16380"
        ));
        assert!(!ok(
            Format::Uuid,
            "URN:UUID:2eb8aa08-aa98-11ea-b4aa-73b441d16380"
        ));
        assert!(!ok(Format::Uuid, "2eb8aa08-aa98-11ea-b4aa-73b441d1638g"));
        assert!(ok(Format::Ipv4, "192.168.0.1"));
        assert!(!ok(Format::Ipv4, "087.10.0.1"));
        assert!(!ok(Format::Ipv4, "256.0.0.1"));
        assert!(ok(Format::Ipv6, "::ffff:192.168.0.1"));
        // Zone ids, as Python's ipaddress (and so Pydantic) reads them.
        assert!(ok(Format::Ipv6, "fe80::1%eth0"));
        assert!(ok(Format::Ipv6, "::ffff:192.168.0.1%1"));
        assert!(!ok(Format::Ipv6, "fe80::1%"));
        assert!(!ok(Format::Ipv6, "fe80::1%eth%0"));
        assert!(!ok(Format::Ipv6, "fe80::1%eth/0"));
        assert!(!ok(Format::Ipv6, "fe80::g%eth0"));
        assert!(!ok(Format::Ipv6, "%eth0"));
        assert!(ok(Format::Hostname, "www.example.com"));
        assert!(ok(Format::Hostname, "example.com."));
        assert!(!ok(Format::Hostname, "-bad.example"));
        assert!(!ok(Format::Hostname, "a..b"));
        assert!(ok(Format::Email, "joe.bloggs@example.com"));
        assert!(ok(Format::Email, "\"joe bloggs\"@example.com"));
        assert!(ok(Format::Email, "joe@[127.0.0.1]"));
        assert!(!ok(Format::Email, "joe..bloggs@example.com"));
        assert!(!ok(Format::Email, "example.com"));
        assert!(!ok(Format::Email, "@example.com"));
    }

    #[test]
    fn emails_as_pydantic_reads_them() {
        // Pydantic's `EmailStr` strips whitespace around the address and takes the address
        // out of a display-name form.
        for s in [
            " joe@example.com ",
            "\tjoe@example.com\u{a0}",
            "joe@example.com\u{1f}",
            "Joe Bloggs <joe@example.com>",
            "\"Bloggs, Joe <2>\" < joe@example.com >",
            "<joe@example.com>",
        ] {
            assert!(ok(Format::Email, s), "{s:?}");
        }
        for s in [
            "Joe <example.com>",
            "Joe <joe@example.com",
            "Joe <joe@exa mple.com>",
            " ",
            "<>",
        ] {
            assert!(!ok(Format::Email, s), "{s:?}");
        }
    }

    #[test]
    fn durations() {
        for s in [
            "P4DT12H30M5S",
            "P1W",
            "PT1.5S",
            "P1Y",
            "PT36H",
            "P0D",
            "P1M",
            "PT1M",
            "-P1D",
            "+PT1S",
            "-P1Y179DT23H45M39.168246S",
            "P1W1D",
            "P1M1Y",
            "P1DT",
        ] {
            assert!(ok(Format::Duration, s), "{s}");
        }
        for s in [
            "P", "PT", "-P", "P1", "P1D2H", "PT1D", "P1S", "P1D1D", "P1.5DT1H", "PT-1S", "", "day",
            " 01:02", "1 week", "1h",
        ] {
            assert!(!ok(Format::Duration, s), "{s}");
        }
        // Pydantic's clock and day forms.
        for s in [
            "01:02:03",
            "-01:02:03",
            "1 day, 01:02:03",
            "2 Days 1:02",
            "1D",
            "1d,01:02:03",
            "01:02:03,5",
        ] {
            assert!(ok(Format::Duration, s), "{s}");
        }
    }
}
