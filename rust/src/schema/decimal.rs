//! Exact decimal numbers taken from JSON lexemes, for bounds, `multipleOf`, integer-ness and
//! numeric `enum`/`const` equality.
//!
//! Design notes:
//! - Never f64: `19.99` must be a multiple of `0.01` and `1e400` must compare above `1e300`. A
//!   number is kept as its significant decimal digits plus a power of ten, which is exact for
//!   every JSON number and costs one pass over the lexeme.
//! - Instance numbers are parsed into a reused digit buffer ([`parse_into`]) so the checker does
//!   not allocate per number; schema constants own their digits ([`Decimal`]).
//! - The usual case, a number of at most 18 digits without exponent against bounds of the
//!   same kind, is exact in machine integers too ([`Fixed`]: mantissa and decimal scale, aligned
//!   in `i64` or, past that, `i128`); the checker uses it first and the digits otherwise.
//! - `multipleOf` never builds big integers. With both numbers normalised (no trailing zeros),
//!   `x = a·10^p` is a multiple of `m = b·10^q` iff `p >= q` and `b | a·10^(p-q)`. Writing
//!   `b = 2^i·5^j·c` with `gcd(c, 10) = 1`, that is `c | a`, `v2(a) + p - q >= i` and
//!   `v5(a) + p - q >= j`, all computable with streaming remainders in `u128`. If `p < q` the
//!   quotient would need `10 | a`, impossible for a normalised `a` (unless `x = 0`). Divisors
//!   whose `c` does not fit in `u64` are reported as unsupported instead of checked.
//! - Exponents are clamped to ±2^60: comparisons against schema constants stay exact for any
//!   lexeme, and no arithmetic can overflow.

use std::cmp::Ordering;
use std::fmt::Write as _;

/// Exponents beyond this magnitude are clamped (no schema constant comes near it).
const EXP_CLAMP: i64 = 1 << 60;

/// A borrowed exact decimal: `(-1)^neg × 0.d1d2…dn × 10^exp`, where `digits` are digit values
/// (0..=9) with no leading or trailing zeros. Zero has no digits, `exp` 0 and `neg` false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DecRef<'a> {
    pub neg: bool,
    pub digits: &'a [u8],
    pub exp: i64,
}

/// An owned exact decimal (schema constants), with how it was written.
#[derive(Debug, Clone)]
pub(crate) struct Decimal {
    neg: bool,
    digits: Box<[u8]>,
    exp: i64,
    /// Written without fraction or exponent: Python reads it as an exact `int`, which it
    /// compares with another `int` exactly, where any other lexeme is a `float` to it.
    int: bool,
}

/// Equal by value, however written (`1.0 == 1`, as JSON Schema compares numbers).
impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}

impl Eq for Decimal {}

impl Decimal {
    /// Parses a JSON number lexeme; `None` when it is not one.
    pub fn parse(lexeme: &str) -> Option<Self> {
        let mut buf = Vec::new();
        let (neg, exp) = parse_into(lexeme.as_bytes(), &mut buf)?;
        Some(Self {
            neg,
            digits: buf.into_boxed_slice(),
            exp,
            int: is_int_lexeme(lexeme.as_bytes()),
        })
    }

    /// Whether it was written as an integer (see [`is_int_lexeme`]).
    pub fn written_int(&self) -> bool {
        self.int
    }

    /// The exact value of a finite double (written as a float).
    pub fn of_f64(x: f64) -> Option<Self> {
        if !x.is_finite() {
            return None;
        }
        // 1080 places hold every digit of a double (the smallest has 1074 after the point).
        Self::parse(&format!("{x:.1080}"))
    }

    /// Whether every reader takes a number equal to this one, written as an integer when
    /// `int`, for this one. Written alike, both are the same `int` or the same `float` to
    /// Python; written apart, one is a `float`, which Python compares with the other exactly:
    /// `12345678901234567890.0` is the float `12345678901234567168.0` there, which is no
    /// `12345678901234567890`, unless that is exactly a double.
    pub fn reads_alike(&self, int: bool) -> bool {
        self.int == int || Self::of_f64(self.as_ref().to_f64()).is_some_and(|e| e == *self)
    }

    /// Whether some reader takes a number that is not this schema constant as written for
    /// this constant: `x` is the number's nearest double, `exact` the exact value of `x` when
    /// the number was written as a float (`None` for an integer, an exact `int` to Python).
    /// An integer constant is an `int`, equal only to a float of exactly its value; a float
    /// constant is equal to any number with the same nearest double, as a float field
    /// (Pydantic's float enums) reads both.
    pub fn read_as_this(&self, x: f64, exact: Option<&Self>) -> bool {
        if self.int {
            exact.is_some_and(|e| e == self)
        } else {
            self.as_ref().to_f64() == x
        }
    }

    pub fn as_ref(&self) -> DecRef<'_> {
        DecRef {
            neg: self.neg,
            digits: &self.digits,
            exp: self.exp,
        }
    }

    /// The value as a `u64` when it is a non-negative integer that fits.
    pub fn to_u64(&self) -> Option<u64> {
        let d = self.as_ref();
        if d.neg || !d.is_integer() {
            return None;
        }
        let len = usize::try_from(d.exp).ok()?;
        if len > 20 {
            return None;
        }
        let mut v: u64 = 0;
        for i in 0..len {
            let digit = d.digits.get(i).copied().unwrap_or(0);
            v = v.checked_mul(10)?.checked_add(u64::from(digit))?;
        }
        Some(v)
    }
}

/// Whether a number lexeme is an integer as written (no fraction, no exponent): Python's
/// `json` reads it as an exact `int`, so every reader compares it exactly with another such.
pub(crate) fn is_int_lexeme(lexeme: &[u8]) -> bool {
    !lexeme.iter().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// Parses `lexeme` into `buf` (cleared first) and returns `(neg, exp)` as in [`DecRef`].
/// Returns `None` for text that is not a JSON number.
pub(crate) fn parse_into(bytes: &[u8], buf: &mut Vec<u8>) -> Option<(bool, i64)> {
    buf.clear();
    let mut i = 0;
    let neg = bytes.first() == Some(&b'-');
    if neg {
        i += 1;
    }
    // Digit runs are found first and copied in one `extend` each: a push per digit was most
    // of the cost of checking a number.
    let digit_run = |from: usize| {
        from + bytes.get(from..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let int_start = i;
    i = digit_run(i);
    buf.extend(bytes[int_start..i].iter().map(|&b| b - b'0'));
    let int_len = i - int_start;
    if int_len == 0 {
        return None;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let frac_start = i;
        i = digit_run(i);
        buf.extend(bytes[frac_start..i].iter().map(|&b| b - b'0'));
        if i == frac_start {
            return None;
        }
    }
    let mut e: i64 = 0;
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        let e_neg = match bytes.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let e_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            e = e
                .saturating_mul(10)
                .saturating_add(i64::from(bytes[i] - b'0'))
                .min(EXP_CLAMP);
            i += 1;
        }
        if i == e_start {
            return None;
        }
        if e_neg {
            e = -e;
        }
    }
    if i != bytes.len() {
        return None;
    }
    let lead = buf.iter().take_while(|&&d| d == 0).count();
    let trail = buf[lead..].iter().rev().take_while(|&&d| d == 0).count();
    if lead == buf.len() {
        buf.clear();
        return Some((false, 0));
    }
    buf.truncate(buf.len() - trail);
    if lead > 0 {
        buf.drain(..lead);
    }
    // int_len and lead are bounded by the lexeme length, far below EXP_CLAMP.
    let shift = i64::try_from(int_len).unwrap_or(EXP_CLAMP) - i64::try_from(lead).unwrap_or(0);
    let exp = (e + shift).clamp(-EXP_CLAMP, EXP_CLAMP);
    Some((neg, exp))
}

impl DecRef<'_> {
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// True when the value is integral (`1.0`, `1e2`, `-0`), as JSON Schema's `integer` asks.
    pub fn is_integer(&self) -> bool {
        self.is_zero() || self.exp >= len_i64(self.digits)
    }

    /// Exact numeric ordering.
    pub fn cmp(&self, other: &DecRef<'_>) -> Ordering {
        let sign = |d: &DecRef<'_>| -> i8 {
            if d.is_zero() {
                0
            } else if d.neg {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(self), sign(other));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        let magnitude = self
            .exp
            .cmp(&other.exp)
            .then_with(|| self.digits.cmp(other.digits));
        if sa < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

/// A number as `mantissa / 10^scale` with at most 18 digits: most lexemes and bounds of tool
/// arguments fit, and then comparisons and `multipleOf` are exact in machine integers, with no
/// digit buffer. Values that do not fit (or have an exponent) take the [`DecRef`] path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed {
    mantissa: i64,
    scale: u32,
}

/// `10^i` for the scales of a [`Fixed`].
const POW10: [i64; FIXED_DIGITS as usize + 1] = {
    let mut table = [1i64; FIXED_DIGITS as usize + 1];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// Digits a [`Fixed`] holds: `10^18 - 1 < i64::MAX`, and two widened to 18 decimals stay
/// below `10^36 < i128::MAX`.
const FIXED_DIGITS: u32 = 18;

impl Fixed {
    /// Parses a lexeme without exponent as [`parse_into`] would; `None` for an exponent, more
    /// than 18 digits, or text that is not a JSON number.
    pub fn parse(lexeme: &[u8]) -> Option<Self> {
        let (neg, rest) = match lexeme.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, lexeme),
        };
        let mut mantissa: i64 = 0;
        let mut digits = 0;
        let mut int_digits = 0;
        let mut dot = false;
        for &b in rest {
            match b {
                b'0'..=b'9' => {
                    digits += 1;
                    if digits > FIXED_DIGITS {
                        return None;
                    }
                    mantissa = mantissa * 10 + i64::from(b - b'0');
                    if !dot {
                        int_digits += 1;
                    }
                }
                b'.' if !dot && int_digits > 0 => dot = true,
                _ => return None,
            }
        }
        let scale = digits - int_digits;
        if int_digits == 0 || (dot && scale == 0) {
            return None;
        }
        Some(Self {
            mantissa: if neg { -mantissa } else { mantissa },
            scale,
        })
    }

    /// The same value, when it fits.
    pub fn from_decimal(d: &Decimal) -> Option<Self> {
        let len = len_i64(&d.digits);
        if len > i64::from(FIXED_DIGITS) || d.exp > i64::from(FIXED_DIGITS) {
            return None;
        }
        let mut mantissa: i64 = 0;
        for &digit in d.digits.iter() {
            mantissa = mantissa * 10 + i64::from(digit);
        }
        let scale = if d.exp >= len {
            for _ in len..d.exp {
                mantissa *= 10;
            }
            0
        } else {
            u32::try_from(len - d.exp)
                .ok()
                .filter(|&s| s <= FIXED_DIGITS)?
        };
        Some(Self {
            mantissa: if d.neg { -mantissa } else { mantissa },
            scale,
        })
    }

    /// Both mantissas at the larger scale: in `i64` when they fit (the common case, and
    /// `i128` division is a library call), else in `i128`.
    fn aligned(self, other: Self) -> Result<(i64, i64), (i128, i128)> {
        let scale = self.scale.max(other.scale);
        let a = POW10[(scale - self.scale) as usize];
        let b = POW10[(scale - other.scale) as usize];
        match (self.mantissa.checked_mul(a), other.mantissa.checked_mul(b)) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err((
                i128::from(self.mantissa) * i128::from(a),
                i128::from(other.mantissa) * i128::from(b),
            )),
        }
    }

    /// Exact numeric ordering.
    pub fn cmp(self, other: Self) -> Ordering {
        match self.aligned(other) {
            Ok((x, y)) => x.cmp(&y),
            Err((x, y)) => x.cmp(&y),
        }
    }

    pub fn is_integer(self) -> bool {
        self.mantissa % POW10[self.scale as usize] == 0
    }

    /// True when `self` is an integer multiple of `m` (`m > 0`).
    pub fn is_multiple_of(self, m: Self) -> bool {
        match self.aligned(m) {
            Ok((x, y)) => y != 0 && x % y == 0,
            Err((x, y)) => y != 0 && x % y == 0,
        }
    }
}

impl DecRef<'_> {
    /// The nearest `f64`, as a float field reads the number.
    pub fn to_f64(self) -> f64 {
        let mut s = String::with_capacity(self.digits.len() + 24);
        if self.neg {
            s.push('-');
        }
        s.push_str("0.0");
        for &d in self.digits {
            s.push(char::from(b'0' + d));
        }
        let _ = write!(s, "e{}", self.exp.saturating_add(1));
        s.parse().unwrap_or(f64::NAN)
    }
}

/// Whether Pydantic's `float` validator takes `x` as a multiple of `m`: it lets the remainder
/// be off by `|x| / 1e9`, so `0.5700000000000001` (`0.57` computed in binary floating point)
/// passes `multiple_of=0.01` there, although it is no exact multiple. Only for numbers with a
/// fraction: integers (and integer fields) are checked exactly, as JSON Schema requires.
pub(crate) fn float_multiple(x: f64, m: f64) -> bool {
    if !x.is_finite() || !m.is_finite() || m <= 0.0 {
        return false;
    }
    let rem = x % m;
    let threshold = x.abs() / 1e9;
    rem.abs() <= threshold || (rem - m).abs() <= threshold || (rem + m).abs() <= threshold
}

fn len_i64(digits: &[u8]) -> i64 {
    i64::try_from(digits.len()).unwrap_or(EXP_CLAMP)
}

/// A precomputed `multipleOf` divisor `m = 2^i · 5^j · c · 10^q`.
#[derive(Debug, Clone)]
pub(crate) struct MultipleOf {
    twos: u32,
    fives: u32,
    rest: u64,
    q: i64,
}

impl MultipleOf {
    /// `None` when the divisor is not positive or too large to check without big integers.
    pub fn new(m: &Decimal) -> Option<Self> {
        let d = m.as_ref();
        if d.neg || d.is_zero() || d.digits.len() > 19 {
            return None;
        }
        let mut b: u64 = 0;
        for &digit in d.digits {
            b = b * 10 + u64::from(digit);
        }
        let q = d.exp - len_i64(d.digits);
        let mut twos = 0;
        while b % 2 == 0 {
            b /= 2;
            twos += 1;
        }
        let mut fives = 0;
        while b % 5 == 0 {
            b /= 5;
            fives += 1;
        }
        Some(Self {
            twos,
            fives,
            rest: b,
            q,
        })
    }

    /// True when `x` is an integer multiple of the divisor.
    pub fn divides(&self, x: &DecRef<'_>) -> bool {
        if x.is_zero() {
            return true;
        }
        let p = x.exp - len_i64(x.digits);
        if p < self.q {
            return false;
        }
        let k = p - self.q;
        if self.rest > 1 && rem(x.digits, u128::from(self.rest)) != 0 {
            return false;
        }
        if i64::from(self.twos) > k {
            // a mod 2^64 by wrapping arithmetic; its trailing zeros are v2(a), capped at 64.
            let mut low: u64 = 0;
            for &digit in x.digits {
                low = low.wrapping_mul(10).wrapping_add(u64::from(digit));
            }
            let v2 = if low == 0 { 64 } else { low.trailing_zeros() };
            if i64::from(v2) + k < i64::from(self.twos) {
                return false;
            }
        }
        if i64::from(self.fives) > k {
            // 5^27 < 2^63, and fives <= 27 because the divisor has at most 19 digits.
            const FIVE_27: u128 = 7_450_580_596_923_828_125;
            let mut r = rem(x.digits, FIVE_27);
            let mut v5 = 0;
            if r == 0 {
                v5 = 27;
            } else {
                while r % 5 == 0 {
                    r /= 5;
                    v5 += 1;
                }
            }
            if i64::from(v5) + k < i64::from(self.fives) {
                return false;
            }
        }
        true
    }
}

/// The remainder of the integer written by `digits` modulo `m` (`m < 2^64`).
fn rem(digits: &[u8], m: u128) -> u128 {
    digits
        .iter()
        .fold(0u128, |r, &d| (r * 10 + u128::from(d)) % m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn multiple(x: &str, m: &str) -> bool {
        MultipleOf::new(&dec(m)).unwrap().divides(&dec(x).as_ref())
    }

    /// `Fixed` is a shortcut: wherever it answers, it answers as the decimal path does.
    #[test]
    fn fixed_agrees_with_decimals() {
        let numbers = [
            "0",
            "-0",
            "0.0",
            "1",
            "-1",
            "1.0",
            "1.5",
            "-1.5",
            "0.01",
            "0.001",
            "0.015",
            "2.5",
            "100",
            "123.45",
            "-123.450",
            "007",
            "999999999999999999",
            "-999999999999999999",
            "0.000000000000000001",
            "12345678.9",
            "1e2",
            "1.",
            "-",
            ".5",
            "1.2.3",
            "+1",
            "",
            "1000000000000000000",
            "0.1000000000000000000",
        ];
        let mut fitted = 0;
        for a in numbers {
            let fa = Fixed::parse(a.as_bytes());
            if Decimal::parse(a).is_none() || a.contains('e') {
                assert!(fa.is_none(), "{a}");
                continue;
            }
            let Some(fa) = fa else { continue };
            fitted += 1;
            let da = dec(a);
            assert_eq!(fa.is_integer(), da.as_ref().is_integer(), "{a}");
            assert_eq!(
                Fixed::from_decimal(&da).map(|f| f.cmp(fa)),
                Some(Ordering::Equal),
                "{a}"
            );
            for b in numbers {
                let Some(db) = Decimal::parse(b) else {
                    continue;
                };
                let Some(fb) = Fixed::from_decimal(&db) else {
                    continue;
                };
                assert_eq!(fa.cmp(fb), da.as_ref().cmp(&db.as_ref()), "{a} vs {b}");
                if let Some(m) =
                    MultipleOf::new(&db).filter(|_| !db.as_ref().neg && !db.as_ref().is_zero())
                {
                    assert_eq!(fa.is_multiple_of(fb), m.divides(&da.as_ref()), "{a} % {b}");
                }
            }
        }
        assert!(fitted >= 18, "{fitted}");
    }

    #[test]
    fn parse_normalises() {
        assert_eq!(dec("1.0"), dec("1"));
        assert_eq!(dec("100"), dec("1e2"));
        assert_eq!(dec("-0.0"), dec("0"));
        assert_eq!(dec("0.00120"), dec("1.2e-3"));
        assert!(Decimal::parse("1.").is_none());
        assert!(Decimal::parse("abc").is_none());
        assert!(Decimal::parse("1e").is_none());
    }

    #[test]
    fn integers() {
        for s in ["1.0", "1e2", "-0", "0.0", "12.5e1", "1E+3"] {
            assert!(dec(s).as_ref().is_integer(), "{s}");
        }
        for s in ["1.5", "1e-1", "0.01", "125e-1"] {
            assert!(!dec(s).as_ref().is_integer(), "{s}");
        }
    }

    #[test]
    fn ordering() {
        let c = |a: &str, b: &str| dec(a).as_ref().cmp(&dec(b).as_ref());
        assert_eq!(c("1", "10"), Ordering::Less);
        assert_eq!(c("-1", "-10"), Ordering::Greater);
        assert_eq!(c("0", "-0.0001"), Ordering::Greater);
        assert_eq!(c("1e400", "1e300"), Ordering::Greater);
        assert_eq!(c("0.12", "0.123"), Ordering::Less);
        assert_eq!(c("2.0", "2"), Ordering::Equal);
        assert_eq!(c("-1e400", "5"), Ordering::Less);
    }

    #[test]
    fn multiples() {
        assert!(multiple("19.99", "0.01"));
        assert!(multiple("0.3", "0.1"));
        assert!(multiple("1e2", "10"));
        assert!(multiple("4.5", "1.5"));
        assert!(!multiple("35", "1.5"));
        assert!(multiple("0", "7"));
        assert!(!multiple("0.075", "0.01"));
        assert!(multiple("0.0075", "0.0001"));
        assert!(!multiple("0.00751", "0.0001"));
        assert!(multiple("12391239123", "1e-8"));
        assert!(!multiple("1e308", "0.123456789"));
        assert!(multiple("1e308", "0.5"));
        assert!(multiple("3.2e1", "64e-1"));
        assert!(!multiple("1.6", "0.64"));
        assert!(multiple("-84", "42"));
        assert!(multiple("96", "32"));
        assert!(!multiple("48", "32"));
        assert!(!multiple("1e99999999999999999999", "7e10"));
        assert!(multiple("7e99999999999999999999", "7e10"));
        assert!(!multiple("7e-99999999999999999999", "7e10"));
    }
}
