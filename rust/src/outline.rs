//! The outline of a JSON text, read without validating it: whether an object may repeat a key,
//! how deep it nests, whether its numbers are plain, and what its top-level value starts with.
//!
//! Design notes:
//! - It exists so that a strict parser's acceptance of a text can stand in for a full scan. A
//!   strict RFC 8259 parser (orjson) accepts no text our scanner refuses, except in what the
//!   outline measures: nesting beyond our depth limit, and repeated keys (such a parser keeps
//!   the last one).
//! - Repeated keys are judged on the raw key bytes: two keys decode alike only if their bytes
//!   are equal or one of them has an escape (valid UTF-8 decodes one way). So a key with an
//!   escape, or two keys of one object with the same hash, count as possibly repeated: the
//!   caller then scans, and the scan decides. A false alarm costs time, never a wrong verdict.
//! - On text that is not valid JSON the figures mean nothing, but reading them is still safe
//!   and linear: the caller only trusts them once the parser has accepted the same text.
//! - The text is read in blocks of 64 bytes, each turned into bitmasks (a bit a byte) of quotes,
//!   backslashes, brackets and colons, number bytes and `e` (simdjson's "stage 1"). Escaped
//!   quotes drop out by the parity of the backslash run before them; a prefix-xor of the other
//!   quotes marks the bytes inside strings; adding each string's backslashes to its content
//!   marks the closing quotes of strings with an escape. All of it carries from block to block.
//!   Only brackets and colons outside strings are then visited one by one (commas mean nothing
//!   here), and numbers are judged by their masks alone.
//! - The masks come from a kernel: AVX2, with BMI and a carry-less multiply, chosen at run time
//!   where the processor has them (every x86 one since about 2013), and SSE2 on other x86_64
//!   processors. Elsewhere the byte loop this replaced reads the text (`bytewise`): the
//!   portable kernel of u64 word arithmetic was slower than it on x86_64, and no processor
//!   should lose speed to the change. The tests run each kernel against that byte loop.
//! - Measured with the `outline` bench on the corpus, against that byte loop (1.1-1.4 ns a byte,
//!   which skipped strings eight bytes at a time but stopped at every byte between them): the
//!   AVX2 kernel is 1.7x as fast at 200 bytes and 2.1-2.3x at 2 KB, 20 KB and 200 KB; the SSE2
//!   kernel 1.4-1.9x. The word kernel is 0.75-1.0x on x86_64: on ARM a NEON kernel is the next
//!   step.
//! - Rejected: a list of the positions of all brackets and colons, walked after the masks of
//!   several blocks (simdjson's stage 2). It saves a branch miss a block, and cost more than
//!   that here.

// On processors other than x86_64 the block reader has no kernel and is compiled for its tests.
#![cfg_attr(not(any(test, target_arch = "x86_64")), allow(dead_code))]

use crate::scanner::{long_exponent, PLAIN_NUMBER_CHARS};

/// What [`outline`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outline {
    /// Some object may repeat a key (see the module notes); false means none does.
    pub repeated_keys: bool,
    /// The deepest nesting of objects and arrays.
    pub depth: usize,
    /// Every number lexeme has at most 18 characters and an exponent of at most two digits
    /// (the scanner's [`plain_numbers`](crate::Scanner::plain_numbers)).
    pub plain_numbers: bool,
    /// The first byte that is not JSON whitespace, if any.
    pub first: Option<u8>,
}

/// Reads the outline of `text` in one pass.
#[must_use]
pub fn outline(text: &[u8]) -> Outline {
    #[cfg(target_arch = "x86_64")]
    {
        match x86::Modern::detect() {
            Some(modern) => x86::read_modern(text, modern),
            None => read(text, x86::Sse2),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    bytewise::outline(text)
}

/// What differs from one processor to another: how a block becomes masks, its prefix-xor and
/// the test for a long run of number bytes.
trait Kernel: Copy {
    fn classify(self, block: &[u8; 64]) -> Masks;

    /// Bit `i` of the result is the xor of bits `0..=i` of `bits`.
    #[inline(always)]
    fn prefix_xor(self, mut bits: u64) -> u64 {
        for shift in [1, 2, 4, 8, 16, 32] {
            bits ^= bits << shift;
        }
        bits
    }

    /// Whether `bits` holds a run of more than `PLAIN_NUMBER_CHARS` ones.
    #[inline(always)]
    fn long_run(self, bits: u64) -> bool {
        has_run(bits, PLAIN_NUMBER_CHARS as u32 + 1)
    }
}

/// One 64-byte block as bitmasks: bit `i` stands for byte `i` of the block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Masks {
    quotes: u64,
    backslashes: u64,
    /// `{`, `[`, `}`, `]` and `:`: the bytes that move the outline (commas do not).
    structure: u64,
    /// Bytes that may be part of a number or a literal: all but quotes, structure, commas, and
    /// bytes up to the space or from 0x80 on. In valid JSON a run of them outside strings is a
    /// whole number lexeme or a literal.
    scalar: u64,
    /// `e` and `E`.
    exponent: u64,
}

impl Masks {
    /// The masks of the bytes from `skip` on, moved down to bit 0.
    fn after(self, skip: usize) -> Self {
        Self {
            quotes: self.quotes >> skip,
            backslashes: self.backslashes >> skip,
            structure: self.structure >> skip,
            scalar: self.scalar >> skip,
            exponent: self.exponent >> skip,
        }
    }
}

/// The masks of a text shorter than a block, padded with spaces, which mean nothing to the
/// outline. Not inlined: inlined, the compiler took the padded block apart byte by byte.
#[inline(never)]
fn padded(text: &[u8], kernel: impl Kernel) -> Masks {
    let mut block = [b' '; 64];
    let len = text.len().min(64);
    block[..len].copy_from_slice(&text[..len]);
    kernel.classify(&block)
}

/// The outline of `text`, read with `kernel`. Always inlined, so that each caller compiles it
/// for its own target features.
#[inline(always)]
fn read(text: &[u8], kernel: impl Kernel) -> Outline {
    let mut walk = Walk::new();
    let mut keys = KeyStore::default();
    let mut at = 0;
    let mut rest = text;
    while let Some((block, after)) = rest.split_first_chunk::<64>() {
        walk.block(&mut keys, text, at, kernel, kernel.classify(block));
        at += 64;
        rest = after;
    }
    if !rest.is_empty() {
        let masks = match text.len().checked_sub(64).and_then(|from| text.get(from..)) {
            // The last 64 bytes, overlapping the block before: shifted down, their masks are
            // those of the tail, with nothing above it.
            Some(last) => last
                .first_chunk::<64>()
                .map_or_else(Masks::default, |last| {
                    kernel.classify(last).after(64 - rest.len())
                }),
            None => padded(rest, kernel),
        };
        walk.block(&mut keys, text, at, kernel, masks);
    }
    Outline {
        repeated_keys: walk.repeated,
        depth: walk.deepest,
        plain_numbers: walk.plain_numbers,
        first: text
            .iter()
            .copied()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')),
    }
}

/// The figures so far, and what carries from one block into the next: plain values only, kept
/// apart from the stored keys (whose arrays live in memory) so that the compiler can hold them
/// in registers.
struct Walk {
    depth: usize,
    deepest: usize,
    plain_numbers: bool,
    repeated: bool,
    /// How many key words are stored: those of the open containers.
    keys: usize,
    /// Where the innermost open container's key words start.
    start: usize,
    /// A Bloom filter of the innermost container's key words, one bit each: a word whose bit
    /// is clear is not among them.
    seen: u64,
    /// 1 when the next block's first byte is escaped by a backslash that ended this one.
    escape: u64,
    /// All ones when the next block starts inside a string, else 0.
    in_string: u64,
    /// How many scalar bytes outside strings end this block: a number the next one goes on with.
    scalar_run: usize,
    /// 1 when this block ends with an `e` or `E` outside strings.
    exponent: u64,
    /// Where the last opening and closing quotes so far stand: a key too long for the rest
    /// of a block opens, and may close, in an earlier one.
    last_open: usize,
    last_close: usize,
    /// 1 when a string with a backslash goes on into the next block.
    taint: u64,
    /// Whether the last closing quote so far ends a string with a backslash.
    last_tainted: bool,
}

/// An object's first keys are checked as they come, against the keys before them; past this
/// many, the object's keys are sorted once it closes.
const PAIRWISE_KEYS: usize = 16;

impl Walk {
    fn new() -> Self {
        Self {
            depth: 0,
            deepest: 0,
            plain_numbers: true,
            repeated: false,
            keys: 0,
            start: 0,
            seen: 0,
            escape: 0,
            in_string: 0,
            scalar_run: 0,
            exponent: 0,
            last_open: 0,
            last_close: 0,
            taint: 0,
            last_tainted: false,
        }
    }

    /// Reads the block of `text` that starts at byte `at`, whose masks are `masks`. Inlined at
    /// both calls, so that the compiler keeps the walk's figures in registers.
    #[inline(always)]
    fn block(
        &mut self,
        keys: &mut KeyStore,
        text: &[u8],
        at: usize,
        kernel: impl Kernel,
        masks: Masks,
    ) {
        // Most blocks have no backslash, and none carried into them.
        let escapes = masks.backslashes | self.escape | self.taint != 0;
        let quotes = if escapes {
            masks.quotes & !self.escaped(masks.backslashes)
        } else {
            masks.quotes
        };
        // A real quote flips in and out of a string; the opening quote counts as inside.
        let inside = kernel.prefix_xor(quotes) ^ self.in_string;
        self.in_string = 0u64.wrapping_sub(inside >> 63);
        let (opening, closing) = (quotes & inside, quotes & !inside);
        // The closing quotes of strings with a backslash: adding a string's backslashes to its
        // content carries onto its closing quote (and out of the block, if it goes on). Then a
        // key's escape is one bit, not the position of the last backslash before it.
        let tainted = if escapes {
            let (sum, carried) = (inside & !opening).overflowing_add(masks.backslashes & inside);
            let (sum, carried_on) = sum.overflowing_add(self.taint);
            self.taint = u64::from(carried | carried_on);
            sum & closing
        } else {
            0
        };
        if self.plain_numbers {
            let (scalar, exponent) = (masks.scalar & !inside, masks.exponent & !inside);
            self.numbers(text, at, kernel, scalar, exponent);
        }
        let mut structure = masks.structure & !inside;
        while structure != 0 {
            let bit = structure.trailing_zeros();
            structure &= structure - 1;
            let Some(&byte) = text.get(at + bit as usize) else {
                break;
            };
            if byte == b':' {
                let before = (1 << bit) - 1;
                let (opening, closing) = (opening & before, closing & before);
                self.key(keys, text, at, opening, closing, tainted);
            } else if byte & 0x02 != 0 {
                // `{` and `[` have bit 1 set, `}` and `]` clear.
                self.open(keys);
            } else {
                self.close(keys);
            }
        }
        self.last_open = last_of(opening, at, self.last_open);
        self.last_close = last_of(closing, at, self.last_close);
        if closing != 0 {
            self.last_tainted = tainted >> highest(closing) & 1 != 0;
        }
    }

    /// The bytes of a block escaped by a backslash: each one right after a run of backslashes
    /// of odd length. A run that reaches the end of a block escapes the next block's first byte.
    #[inline(always)]
    fn escaped(&mut self, backslashes: u64) -> u64 {
        const EVEN: u64 = 0x5555_5555_5555_5555;
        // A backslash escaped from the block before is an ordinary byte: a run starts after it.
        let runs = backslashes & !self.escape;
        let starts = runs & !(runs << 1);
        // Adding a run's first bit carries through the run onto the byte just after it, which
        // is escaped when the run's length is odd: when it and the start differ in parity.
        let after_even = runs.wrapping_add(starts & EVEN) & !runs;
        let (sum, carried) = runs.overflowing_add(starts & !EVEN);
        let after_odd = sum & !runs;
        let escaped = (after_even & !EVEN) | (after_odd & EVEN) | self.escape;
        // Only a run from an odd start carries out of the block with an odd length.
        self.escape = u64::from(carried);
        escaped
    }

    /// Judges the numbers of a block: `scalar` and `exponent` are its scalar bytes and its
    /// `e`/`E` outside strings.
    #[inline(always)]
    fn numbers(&mut self, text: &[u8], at: usize, kernel: impl Kernel, scalar: u64, exponent: u64) {
        let leading = (!scalar).trailing_zeros() as usize;
        if self.scalar_run + leading > PLAIN_NUMBER_CHARS || kernel.long_run(scalar) {
            self.plain_numbers = false;
            return;
        }
        // A block of scalar bytes only was judged above, so this run is shorter than 64.
        self.scalar_run = scalar.leading_ones() as usize;
        // The scalar bytes just after an `e`: rare, so each is judged on the text itself. The
        // `e` of a literal ends it.
        let mut after_e = scalar & (exponent << 1 | self.exponent);
        self.exponent = exponent >> 63;
        while after_e != 0 {
            // Never below 0: the first block's first byte has no `e` before it to be flagged.
            let e = (at + after_e.trailing_zeros() as usize).saturating_sub(1);
            after_e &= after_e - 1;
            // `e`, a sign and three digits show a long exponent; reading no further keeps a
            // run of `e1e1e1…` in invalid text linear.
            let rest = text.get(e..).unwrap_or_default();
            let len = rest
                .iter()
                .take(5)
                .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .count();
            if long_exponent(&rest[..len]) {
                self.plain_numbers = false;
                return;
            }
        }
    }

    /// Adds the key before a colon: `opening` and `closing` are the opening and closing
    /// quotes of the colon's block before it, `tainted` those of its closing quotes that end a
    /// string with a backslash. In valid JSON the last string before a colon is its key.
    #[inline(always)]
    fn key(
        &mut self,
        keys: &mut KeyStore,
        text: &[u8],
        at: usize,
        opening: u64,
        closing: u64,
        tainted: u64,
    ) {
        let open = last_of(opening, at, self.last_open);
        let close = last_of(closing, at, self.last_close);
        self.repeated |= if closing == 0 {
            self.last_tainted
        } else {
            tainted >> highest(closing) & 1 != 0
        };
        let start = open + 1;
        let len = close.wrapping_sub(start);
        let word = match text.get(start..start + 8) {
            // `key_word`'s short case, without its checks: most keys are short.
            Some(eight) if len < 8 => word8(eight) & ((1 << (8 * len)) - 1) | (len as u64) << 56,
            _ => keys.long_word(text, start, close),
        };
        // Checking each key as it comes, behind the filter, costs a few instructions and
        // rarely a loop; comparing all pairs at the close cost a loop a key, whose exits the
        // processor could not predict.
        let bit = 1 << (word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58);
        if self.seen & bit != 0 {
            self.repeated |= keys.words.holds(self.start, self.keys, word);
        }
        self.seen |= bit;
        keys.words.set(self.keys, word);
        self.keys += 1;
    }

    #[inline(always)]
    fn open(&mut self, keys: &mut KeyStore) {
        keys.frames.set(self.depth, (self.start, self.seen));
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        self.start = self.keys;
        self.seen = 0;
    }

    #[inline(always)]
    fn close(&mut self, keys: &mut KeyStore) {
        if self.keys.saturating_sub(self.start) > PAIRWISE_KEYS {
            self.repeated |= keys.words.sorted_repeats(self.start, self.keys);
        }
        self.keys = self.start;
        self.depth = self.depth.saturating_sub(1);
        (self.start, self.seen) = keys.frames.get(self.depth);
    }
}

/// Where the last byte flagged in `bits` stands, for a block at `at`; `earlier` if none is.
#[inline(always)]
fn last_of(bits: u64, at: usize, earlier: usize) -> usize {
    if bits == 0 {
        earlier
    } else {
        at + highest(bits)
    }
}

/// The offset of the highest set bit of `bits`, which is not 0.
fn highest(bits: u64) -> usize {
    63 - bits.leading_zeros() as usize
}

/// Whether `bits` holds a run of `len` (at least 1) ones.
fn has_run(bits: u64, len: u32) -> bool {
    // Bit `i` of `starts`: bits `i..i + have` are all ones. Doubling `have` costs a shift per
    // step instead of one per bit of `len`.
    let mut starts = bits;
    let mut have = 1;
    while have < len {
        let step = have.min(len - have);
        starts &= starts >> step;
        have += step;
    }
    starts != 0
}

/// The key words of the open containers, and where the words of each enclosing container start
/// with its filter, by depth.
struct KeyStore {
    words: Slots<u64, 32>,
    frames: Slots<(usize, u64), 16>,
    /// The closing quote and word of the last long key hashed.
    long_key: (usize, u64),
}

impl Default for KeyStore {
    fn default() -> Self {
        Self {
            words: Slots::default(),
            frames: Slots::default(),
            long_key: (usize::MAX, 0),
        }
    }
}

impl KeyStore {
    /// [`key_word`] of a key of eight bytes or more, kept out of the loop of keys (its hash is
    /// a loop of its own). Valid JSON has one colon after a key; invalid text may have a long
    /// string and then many colons, and hashing it again for each would take quadratic time.
    #[inline(never)]
    fn long_word(&mut self, text: &[u8], start: usize, close: usize) -> u64 {
        if self.long_key.0 != close {
            self.long_key = (close, key_word(text, start, close));
        }
        self.long_key.1
    }
}

/// Items by position: the first `N` inline, the rest on the heap. Arguments of a few kilobytes
/// rarely hold more than a few dozen keys at once, and for them the allocation of a `Vec` costs
/// as much as the rest of the outline; the inline items stay where they are once the heap is
/// used, so that setting one costs a compare and a store.
struct Slots<T, const N: usize> {
    inline: [T; N],
    /// The items from position `N` on.
    heap: Vec<T>,
}

impl<T: Copy + Default, const N: usize> Default for Slots<T, N> {
    fn default() -> Self {
        Self {
            inline: [T::default(); N],
            heap: Vec::new(),
        }
    }
}

impl<T: Copy + Default, const N: usize> Slots<T, N> {
    #[inline(always)]
    fn get(&self, at: usize) -> T {
        match self.inline.get(at) {
            Some(&item) => item,
            None => self.heap.get(at - N).copied().unwrap_or_default(),
        }
    }

    #[inline(always)]
    fn set(&mut self, at: usize, item: T) {
        match self.inline.get_mut(at) {
            Some(slot) => *slot = item,
            None => self.set_on_heap(at - N, item),
        }
    }

    #[cold]
    #[inline(never)]
    fn set_on_heap(&mut self, at: usize, item: T) {
        if at >= self.heap.len() {
            // Positions grow one at a time (a key, a depth), so doubling keeps growth linear.
            self.heap
                .resize((at + 1).max(2 * self.heap.len()), T::default());
        }
        if let Some(slot) = self.heap.get_mut(at) {
            *slot = item;
        }
    }

    /// The items `start..end` that are inline, and those on the heap.
    fn range(&self, start: usize, end: usize) -> (&[T], &[T]) {
        let inline = self
            .inline
            .get(start.min(N)..end.min(N))
            .unwrap_or_default();
        let heap = (self.heap.get(start.max(N) - N..end.max(N) - N)).unwrap_or_default();
        (inline, heap)
    }
}

impl<const N: usize> Slots<u64, N> {
    /// Whether `word` is among the items `start..end`, when they are at most
    /// `PAIRWISE_KEYS` (past that, the close sorts them instead).
    #[inline(never)]
    fn holds(&self, start: usize, end: usize, word: u64) -> bool {
        if end.saturating_sub(start) >= PAIRWISE_KEYS {
            return false;
        }
        let (inline, heap) = self.range(start, end);
        inline.contains(&word) || heap.contains(&word)
    }

    /// Whether two of the items `start..end` are equal.
    #[cold]
    #[inline(never)]
    fn sorted_repeats(&self, start: usize, end: usize) -> bool {
        let (inline, heap) = self.range(start, end);
        let mut words = [inline, heap].concat();
        words.sort_unstable();
        words.windows(2).any(|pair| pair[0] == pair[1])
    }
}

/// The x86_64 kernels: SSE2, which every x86_64 processor has, and a modern one, chosen at run
/// time, for processors with AVX2, BMI1, BMI2, LZCNT, POPCNT and PCLMULQDQ (every one since
/// about 2013). The walk compiled for the modern features runs about 1.3x as fast on the
/// corpus: its variable shifts and bit scans become one instruction each (BMI), the compares
/// need no register copies (VEX) and take 32 bytes at a time (AVX2), and the prefix-xor is one
/// carry-less multiply. Compiling the same walk for them gave most of that; the AVX2 compares
/// and the carry-less multiply a few percent each.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{has_run, read, Kernel, Masks, Outline, PLAIN_NUMBER_CHARS};
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm_clmulepi64_si128,
        _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
    };

    /// The kernel of every x86_64 processor.
    #[derive(Clone, Copy)]
    pub(super) struct Sse2;

    impl Kernel for Sse2 {
        #[inline(always)]
        fn classify(self, block: &[u8; 64]) -> Masks {
            classify_sse2(block)
        }
    }

    /// The modern kernel; a value is the proof that the processor has its features, so only
    /// [`Modern::detect`] makes one.
    #[derive(Clone, Copy)]
    pub(super) struct Modern(());

    impl Modern {
        /// `is_x86_feature_detected` caches what it finds: this costs a few loads a call.
        pub(super) fn detect() -> Option<Self> {
            let modern = is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("bmi1")
                && is_x86_feature_detected!("bmi2")
                && is_x86_feature_detected!("lzcnt")
                && is_x86_feature_detected!("pclmulqdq")
                && is_x86_feature_detected!("popcnt");
            modern.then_some(Self(()))
        }
    }

    impl Kernel for Modern {
        #[inline(always)]
        fn classify(self, block: &[u8; 64]) -> Masks {
            // SAFETY: a `Modern` exists only on a processor with AVX2 (see `detect`).
            unsafe { classify_avx2(block) }
        }

        #[inline(always)]
        fn prefix_xor(self, bits: u64) -> u64 {
            // SAFETY: a `Modern` exists only on a processor with PCLMULQDQ (see `detect`).
            unsafe { carryless_prefix_xor(bits) }
        }

        /// Most blocks hold too few scalar bytes for a long run, and one instruction counts
        /// them.
        #[inline(always)]
        fn long_run(self, bits: u64) -> bool {
            bits.count_ones() > PLAIN_NUMBER_CHARS as u32
                && has_run(bits, PLAIN_NUMBER_CHARS as u32 + 1)
        }
    }

    /// [`read`] with the modern kernel, compiled for its features.
    pub(super) fn read_modern(text: &[u8], modern: Modern) -> Outline {
        // SAFETY: `modern` proves the processor has every feature `with_features` enables.
        unsafe { with_features(text, modern) }
    }

    /// # Safety
    ///
    /// The processor must have the features enabled here.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,pclmulqdq,popcnt")]
    unsafe fn with_features(text: &[u8], modern: Modern) -> Outline {
        read(text, modern)
    }

    /// Multiplying by all ones without carries xors every bit into all those above it.
    ///
    /// # Safety
    ///
    /// The processor must have PCLMULQDQ (then these intrinsics only compute on registers).
    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    unsafe fn carryless_prefix_xor(bits: u64) -> u64 {
        let product = _mm_clmulepi64_si128(_mm_set_epi64x(0, bits as i64), _mm_set1_epi8(-1), 0);
        _mm_cvtsi128_si64(product) as u64
    }

    /// The masks of a block by AVX2, 32 bytes at a time.
    ///
    /// # Safety
    ///
    /// The processor must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn classify_avx2(block: &[u8; 64]) -> Masks {
        let at = block.as_ptr().cast::<__m256i>();
        // SAFETY: the two loads read the bytes 0..32 and 32..64 of `block`, which has 64, and
        // need no alignment; the caller vouches for AVX2.
        let (low, high) = unsafe {
            (
                half_masks(_mm256_loadu_si256(at)),
                half_masks(_mm256_loadu_si256(at.add(1))),
            )
        };
        let join =
            |pick: fn(&[u32; 5]) -> u32| u64::from(pick(&low)) | u64::from(pick(&high)) << 32;
        Masks {
            quotes: join(|m| m[0]),
            backslashes: join(|m| m[1]),
            structure: join(|m| m[2]),
            scalar: !join(|m| m[3]),
            exponent: join(|m| m[4]),
        }
    }

    /// The masks of 32 bytes, as [`Masks`] orders them but with the scalar mask inverted.
    ///
    /// # Safety
    ///
    /// The processor must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn half_masks(half: __m256i) -> [u32; 5] {
        let bits = |found| _mm256_movemask_epi8(found) as u32;
        let quote = _mm256_cmpeq_epi8(half, _mm256_set1_epi8(b'"' as i8));
        let backslash = _mm256_cmpeq_epi8(half, _mm256_set1_epi8(b'\\' as i8));
        // Setting bit 5 folds `[` into `{`, `]` into `}` and `E` into `e`, and no other
        // byte into any of them.
        let folded = _mm256_or_si256(half, _mm256_set1_epi8(0x20));
        let open = _mm256_cmpeq_epi8(folded, _mm256_set1_epi8(b'{' as i8));
        let close = _mm256_cmpeq_epi8(folded, _mm256_set1_epi8(b'}' as i8));
        let colon = _mm256_cmpeq_epi8(half, _mm256_set1_epi8(b':' as i8));
        let structure = _mm256_or_si256(_mm256_or_si256(open, close), colon);
        // A signed compare: bytes from 0x80 on are negative, so below the space.
        let space = _mm256_cmpgt_epi8(_mm256_set1_epi8(b' ' as i8 + 1), half);
        let comma = _mm256_cmpeq_epi8(half, _mm256_set1_epi8(b',' as i8));
        let ends = _mm256_or_si256(
            _mm256_or_si256(space, comma),
            _mm256_or_si256(quote, structure),
        );
        let exponent = _mm256_cmpeq_epi8(folded, _mm256_set1_epi8(b'e' as i8));
        [
            bits(quote),
            bits(backslash),
            bits(structure),
            bits(ends),
            bits(exponent),
        ]
    }

    #[inline(always)]
    pub(super) fn classify_sse2(block: &[u8; 64]) -> Masks {
        // SAFETY: the only memory accesses, the four `_mm_loadu_si128`, read the bytes 0..16,
        // 16..32, 32..48 and 48..64 of `block`, which has 64, and need no alignment. The other
        // intrinsics only compute on registers and need SSE2, which `target_arch = "x86_64"`
        // implies: it is part of the x86_64 baseline, so the `sse2` target feature is always on.
        unsafe {
            let at = block.as_ptr().cast::<__m128i>();
            let lanes = [
                _mm_loadu_si128(at),
                _mm_loadu_si128(at.add(1)),
                _mm_loadu_si128(at.add(2)),
                _mm_loadu_si128(at.add(3)),
            ];
            let splat = |byte: u8| _mm_set1_epi8(byte as i8);
            let equal = |lane: __m128i, byte: u8| _mm_cmpeq_epi8(lane, splat(byte));
            let bits = |found: __m128i| u64::from(_mm_movemask_epi8(found) as u16);
            // Setting bit 5 folds `[` into `{`, `]` into `}` and `E` into `e`, and no other
            // byte into any of them.
            let folded = |lane: __m128i| _mm_or_si128(lane, splat(0x20));
            let structure = |lane: __m128i| {
                let bracket = _mm_or_si128(equal(folded(lane), b'{'), equal(folded(lane), b'}'));
                _mm_or_si128(bracket, equal(lane, b':'))
            };
            Masks {
                quotes: gather(&lanes, |lane| bits(equal(lane, b'"'))),
                backslashes: gather(&lanes, |lane| bits(equal(lane, b'\\'))),
                structure: gather(&lanes, |lane| bits(structure(lane))),
                scalar: !gather(&lanes, |lane| {
                    // A signed compare: bytes from 0x80 on are negative, so below the space.
                    let space = _mm_cmplt_epi8(lane, splat(b' ' + 1));
                    let comma = equal(lane, b',');
                    let quote = equal(lane, b'"');
                    let ends = _mm_or_si128(_mm_or_si128(space, comma), quote);
                    bits(_mm_or_si128(ends, structure(lane)))
                }),
                exponent: gather(&lanes, |lane| bits(equal(folded(lane), b'e'))),
            }
        }
    }

    /// The 16-bit masks `lane_bits` gives each lane, as one mask of the block.
    fn gather(lanes: &[__m128i; 4], lane_bits: impl Fn(__m128i) -> u64) -> u64 {
        lane_bits(lanes[0])
            | lane_bits(lanes[1]) << 16
            | lane_bits(lanes[2]) << 32
            | lane_bits(lanes[3]) << 48
    }
}

/// Masks from u64 words, eight bytes at a time: portable, but on x86_64 0.75-1.0x the byte
/// loop, so no processor uses it yet; compiled for the tests that compare it with the other
/// kernels, as the starting point of a kernel for another processor (NEON on ARM).
#[cfg(test)]
mod words {
    use super::{word8, Kernel, Masks};

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

    #[derive(Clone, Copy)]
    pub(super) struct Words;

    impl Kernel for Words {
        #[inline(always)]
        fn classify(self, block: &[u8; 64]) -> Masks {
            classify(block)
        }
    }

    fn classify(block: &[u8; 64]) -> Masks {
        let mut words = [0; 8];
        for (word, eight) in words.iter_mut().zip(block.chunks_exact(8)) {
            *word = word8(eight);
        }
        // Setting bit 5 folds `[` into `{`, `]` into `}` and `E` into `e`, and no other byte
        // into any of them.
        let folded = |word: u64| word | (ONES * 0x20);
        let structure =
            |word: u64| equal(folded(word), b'{') | equal(folded(word), b'}') | equal(word, b':');
        Masks {
            quotes: gather(&words, |word| equal(word, b'"')),
            backslashes: gather(&words, |word| equal(word, b'\\')),
            structure: gather(&words, structure),
            scalar: !gather(&words, |word| {
                let ends = below(word, b' ' + 1) | equal(word, b',') | equal(word, b'"');
                ends | structure(word)
            }),
            exponent: gather(&words, |word| equal(folded(word), b'e')),
        }
    }

    /// The high bits `word_bits` gives each word, as one mask of the block.
    fn gather(words: &[u64; 8], word_bits: impl Fn(u64) -> u64) -> u64 {
        words.iter().enumerate().fold(0, |mask, (i, &word)| {
            // Bit 7 + 8k moves to bit 56 + k; no two products overlap, so nothing carries.
            let eight = (word_bits(word) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            mask | eight << (8 * i)
        })
    }

    /// The high bit of each byte of `word` equal to `byte`. Exact, unlike the borrowing
    /// zero-byte test: no byte's sum reaches into the next one.
    fn equal(word: u64, byte: u8) -> u64 {
        let x = word ^ (ONES * u64::from(byte));
        !(((x & LOWS) + LOWS) | x) & HIGHS
    }

    /// The high bit of each byte of `word` below `byte` (itself below 0x80) or from 0x80 on:
    /// the bytes a signed compare finds below `byte`.
    fn below(word: u64, byte: u8) -> u64 {
        let at_least = (word & LOWS) + ONES * u64::from(0x80 - byte);
        (!at_least | word) & HIGHS
    }
}

/// Up to eight bytes as a little-endian word, zero-padded. A byte loop: `copy_from_slice` of a
/// variable length becomes a call to `memcpy`, which cost more than the rest of a short key.
fn word_of(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .enumerate()
        .fold(0, |word, (i, &b)| word | u64::from(b) << (8 * i))
}

/// A key as one word: its bytes themselves when it has at most 7 (then equal words mean equal
/// keys), or a hash with the top bit set (equal keys give equal words). `text[start..end]` is the
/// key; the bytes after it (its closing quote at least) let a short key be read in one load.
fn key_word(text: &[u8], start: usize, end: usize) -> u64 {
    let key = text.get(start..end).unwrap_or_default();
    if key.len() < 8 {
        let word = match text.get(start..start + 8) {
            Some(eight) => word8(eight) & ((1 << (8 * key.len())) - 1),
            None => word_of(key),
        };
        // The length in the top byte tells a key from the same key padded with NUL bytes.
        return word | (key.len() as u64) << 56;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = key.chunks_exact(8);
    for chunk in chunks.by_ref() {
        hash = mix(hash, word8(chunk));
    }
    if !chunks.remainder().is_empty() {
        // The last eight bytes of the key, overlapping the chunk before: still a function of
        // the key's bytes alone.
        hash = mix(hash, word8(&key[key.len() - 8..]));
    }
    hash ^ (key.len() as u64).rotate_left(40) | 1 << 63
}

/// The first eight bytes of `bytes` (which has at least eight) as a little-endian word.
fn word8(bytes: &[u8]) -> u64 {
    bytes
        .first_chunk::<8>()
        .map_or_else(|| word_of(bytes), |eight| u64::from_le_bytes(*eight))
}

fn mix(hash: u64, word: u64) -> u64 {
    let hash = (hash ^ word).wrapping_mul(0x0000_0100_0000_01b3);
    hash ^ hash >> 29
}

/// The byte loop the block reader replaced: the outline on processors without a block kernel
/// (all but x86_64, where the portable word kernel was slower than it), and the oracle the
/// tests judge the kernels by: on valid JSON both must give the same outline, to the false
/// alarm.
#[cfg(any(test, not(target_arch = "x86_64")))]
mod bytewise {
    use super::{key_word, word8, Outline};
    use crate::scanner::{long_exponent, PLAIN_NUMBER_CHARS};

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;

    /// An object with at most this many keys is checked pair by pair; a larger one is sorted.
    const PAIRWISE_KEYS: usize = 16;

    /// A stack that lives inline until it outgrows `N` items, then on the heap. Arguments of a
    /// few kilobytes rarely hold more than a few dozen keys at once, and for them the
    /// allocations of a `Vec` cost as much as the rest of the outline.
    struct Stack<T, const N: usize> {
        inline: [T; N],
        len: usize,
        /// Every item, once there were more than `N`; `inline` is unused from then on.
        spilled: Option<Vec<T>>,
    }

    impl<T: Copy + Default, const N: usize> Default for Stack<T, N> {
        fn default() -> Self {
            Self {
                inline: [T::default(); N],
                len: 0,
                spilled: None,
            }
        }
    }

    impl<T: Copy, const N: usize> Stack<T, N> {
        fn len(&self) -> usize {
            self.spilled.as_ref().map_or(self.len, Vec::len)
        }

        fn push(&mut self, item: T) {
            if let Some(items) = &mut self.spilled {
                items.push(item);
            } else if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = item;
                self.len += 1;
            } else {
                let mut items = Vec::with_capacity(4 * N);
                items.extend_from_slice(&self.inline);
                items.push(item);
                self.spilled = Some(items);
            }
        }

        fn pop(&mut self) -> Option<T> {
            if let Some(items) = &mut self.spilled {
                return items.pop();
            }
            self.len = self.len.checked_sub(1)?;
            self.inline.get(self.len).copied()
        }

        fn truncate(&mut self, len: usize) {
            if let Some(items) = &mut self.spilled {
                items.truncate(len);
            } else {
                self.len = self.len.min(len);
            }
        }

        fn as_mut_slice(&mut self) -> &mut [T] {
            match &mut self.spilled {
                Some(items) => items,
                None => &mut self.inline[..self.len],
            }
        }
    }

    /// The keys of the open containers, checked pair by pair as each closes.
    #[derive(Default)]
    struct Keys {
        words: Stack<u64, 32>,
        /// Where each open container's words start.
        starts: Stack<usize, 16>,
        repeated: bool,
    }

    impl Keys {
        fn open(&mut self) {
            self.starts.push(self.words.len());
        }

        fn add(&mut self, word: u64, escaped: bool) {
            if escaped {
                self.repeated = true;
            }
            self.words.push(word);
        }

        fn close(&mut self) {
            let start = self.starts.pop().unwrap_or(0).min(self.words.len());
            let words = &mut self.words.as_mut_slice()[start..];
            if words.len() <= PAIRWISE_KEYS {
                for (i, word) in words.iter().enumerate() {
                    if words[i + 1..].contains(word) {
                        self.repeated = true;
                    }
                }
            } else {
                words.sort_unstable();
                if words.windows(2).any(|pair| pair[0] == pair[1]) {
                    self.repeated = true;
                }
            }
            self.words.truncate(start);
        }
    }

    /// What a byte outside strings means to the outline.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Class {
        Other,
        Quote,
        Colon,
        Open,
        Close,
        Number,
        Literal,
    }

    static CLASSES: [Class; 256] = {
        let mut table = [Class::Other; 256];
        table[b'"' as usize] = Class::Quote;
        table[b':' as usize] = Class::Colon;
        table[b'{' as usize] = Class::Open;
        table[b'[' as usize] = Class::Open;
        table[b'}' as usize] = Class::Close;
        table[b']' as usize] = Class::Close;
        table[b'-' as usize] = Class::Number;
        table[b't' as usize] = Class::Literal;
        table[b'f' as usize] = Class::Literal;
        table[b'n' as usize] = Class::Literal;
        let mut digit = b'0';
        while digit <= b'9' {
            table[digit as usize] = Class::Number;
            digit += 1;
        }
        table
    };

    /// Reads the outline of `text` byte by byte between strings.
    pub(super) fn outline(text: &[u8]) -> Outline {
        let mut keys = Keys::default();
        let mut depth = 0usize;
        let mut deepest = 0;
        let mut plain_numbers = true;
        let first = text
            .iter()
            .copied()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
        // The last string read: in valid JSON, a colon follows a key and nothing else.
        let mut last_string = (0, 0, false);
        let mut i = 0;
        while let Some(&b) = text.get(i) {
            i += 1;
            match CLASSES[usize::from(b)] {
                Class::Other => {}
                // Runs of `"key":"value",` are read here without a round through the loop:
                // which class of byte comes next is what the processor cannot predict, and in
                // compact text a string is mostly followed by a colon or a comma and another
                // string.
                Class::Quote => loop {
                    // `i` is just past an opening quote.
                    let (end, escaped) = string_end(text, i);
                    match text.get(end) {
                        Some(b':') => {
                            keys.add(key_word(text, i, end - 1), escaped);
                            i = end + 1;
                        }
                        Some(b',') => i = end + 1,
                        _ => {
                            last_string = (i, end.saturating_sub(1), escaped);
                            i = end;
                            break;
                        }
                    }
                    if text.get(i) != Some(&b'"') {
                        break;
                    }
                    i += 1;
                },
                Class::Colon => {
                    let (start, end, escaped) = last_string;
                    keys.add(key_word(text, start, end), escaped);
                }
                Class::Open => {
                    depth += 1;
                    deepest = deepest.max(depth);
                    keys.open();
                }
                Class::Close => {
                    depth = depth.saturating_sub(1);
                    keys.close();
                }
                // `true`, `false` or `null`, skipped whole rather than letter by letter.
                Class::Literal => {
                    i += text
                        .get(i..)
                        .unwrap_or_default()
                        .iter()
                        .take_while(|c| c.is_ascii_lowercase())
                        .count();
                }
                Class::Number => {
                    let start = i - 1;
                    let rest = text.get(i..).unwrap_or_default();
                    i += rest
                        .iter()
                        .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                        .count();
                    let lexeme = &text[start..i];
                    if lexeme.len() > PLAIN_NUMBER_CHARS || long_exponent(lexeme) {
                        plain_numbers = false;
                    }
                }
            }
        }
        Outline {
            repeated_keys: keys.repeated,
            depth: deepest,
            plain_numbers,
            first,
        }
    }

    /// The high bit of the lowest zero byte of `w` (and perhaps of bytes above it), or 0.
    fn zero_byte(w: u64) -> u64 {
        w.wrapping_sub(ONES) & !w & HIGHS
    }

    /// The offset just past the closing quote of the string whose content starts at `from` (the
    /// end of the text when it never closes), and whether the string has an escape. Eight bytes
    /// at a time while no quote or backslash is among them: tool arguments are mostly short
    /// strings, where a call to `memchr` costs more than the search.
    fn string_end(text: &[u8], mut from: usize) -> (usize, bool) {
        let mut escaped = false;
        loop {
            while let Some(chunk) = text.get(from..from + 8) {
                let w = word8(chunk);
                let stop = zero_byte(w ^ (ONES * u64::from(b'"')))
                    | zero_byte(w ^ (ONES * u64::from(b'\\')));
                if stop != 0 {
                    // The lowest flagged byte is a real quote or backslash.
                    from += (stop.trailing_zeros() / 8) as usize;
                    break;
                }
                from += 8;
            }
            match text.get(from) {
                Some(b'"') => return (from + 1, escaped),
                // A backslash escapes the next byte, whatever it is; in valid text a `\u` is
                // followed by four hex digits, which hold no quote or backslash.
                Some(b'\\') => {
                    escaped = true;
                    from += if text.get(from + 1) == Some(&b'u') {
                        6
                    } else {
                        2
                    };
                }
                Some(_) => from += 1,
                None => return (text.len(), escaped),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_outside_strings_only() {
        let o = outline(br#" {"a:b": "c:d", "e": [1, {"f": "a:b"}], "g": {"e": 1}} "#);
        assert!(!o.repeated_keys);
        assert_eq!(o.depth, 3);
        assert_eq!(o.first, Some(b'{'));
        assert!(o.plain_numbers);
    }

    #[test]
    fn repeated_keys_are_never_missed() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"b": 1, "c": [{"d": 1}], "b": 2}}"#,
            r#"{"a long key of many bytes": 1, "a long key of many bytes": 2}"#,
            r#"{"a": 1, "\u0061": 2}"#,
            r#"{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}"#,
        ] {
            assert!(outline(text.as_bytes()).repeated_keys, "{text}");
        }
        for text in [
            r#"{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}"#,
            r#"{"ab": 1, "a": 2, "abcdefgh": 3, "abcdefg": 4, "abcdefghi": 5}"#,
            r#"{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}"#,
        ] {
            assert!(!outline(text.as_bytes()).repeated_keys, "{text}");
        }
    }

    /// Past the inline capacity of the key stacks (32 words, 16 open containers) nothing changes.
    #[test]
    fn many_keys_and_deep_nesting_are_judged_alike() {
        let many: Vec<String> = (0..70).map(|k| format!("\"key{k}\": {k}")).collect();
        let flat = format!("{{{}}}", many.join(", "));
        assert!(!outline(flat.as_bytes()).repeated_keys);
        let repeated = format!("{{{}, \"key3\": 0}}", many.join(", "));
        assert!(outline(repeated.as_bytes()).repeated_keys);
        // Forty nested objects, each with a key of its own before the next and one after it:
        // the words of every open level stay on the stack while deeper levels come and go.
        let mut nested = String::new();
        for level in 0..40 {
            nested.push_str(&format!("{{\"a{level}\": 1, \"next\": "));
        }
        nested.push_str("null");
        for level in (0..40).rev() {
            nested.push_str(&format!(", \"z{level}\": 2}}"));
        }
        let o = outline(nested.as_bytes());
        assert_eq!(o.depth, 40);
        assert!(!o.repeated_keys, "{nested}");
        let clash = nested.replacen(", \"z20\": 2}", ", \"a20\": 2}", 1);
        assert!(outline(clash.as_bytes()).repeated_keys, "{clash}");
        let elsewhere = nested.replacen(", \"z20\": 2}", ", \"a21\": 2}", 1);
        assert!(!outline(elsewhere.as_bytes()).repeated_keys, "{elsewhere}");
    }

    #[test]
    fn numbers_are_plain_as_the_scanner_says() {
        for (text, plain) in [
            ("{\"a\": [0.5, -1E+99, 99999999999999999.9]}", false),
            ("{\"a\": [0.5, -1E+99, 9999999999999999.9]}", true),
            ("{\"a\": -0, \"b\": 1e-7}", true),
            ("{\"a\": 2E-100}", false),
            ("{\"a\": \"1e1000\", \"1e1000\": 0}", true),
        ] {
            assert_eq!(outline(text.as_bytes()).plain_numbers, plain, "{text}");
            let mut scanner = crate::Scanner::default();
            scanner.push(text.as_bytes());
            scanner.finish().expect("valid");
            assert_eq!(scanner.plain_numbers(), plain, "{text}");
        }
    }

    #[test]
    fn runs_of_strings_literals_and_numbers_are_read_in_any_spacing() {
        for (text, repeated, depth) in [
            (r#"{"a":"x","b":["p","q"],"a":1}"#, true, 2),
            (
                r#"{"a":"x","b":["p","q"],"c":true,"d":null,"e":false,"f":{"a":1}}"#,
                false,
                2,
            ),
            (r#"{"a":{"b":1},"b":[{"b":2},{"b":3}],"c":"d"}"#, false, 3),
            (r#"{"a" :"x", "a"  : "y"}"#, true, 1),
            (r#"{"t":true,"n":null,"t":false}"#, true, 1),
            (r#"["a","b",{"a":"a","b":"b"},"a",["a"]]"#, false, 2),
            (r#"{"key,":"a,","key":",b"}"#, false, 1),
            (r#"{"abcdefghij":1,"abcdefghik":2,"abcdefghij":3}"#, true, 1),
            (r#"{"abcdefghij":1,"abcdefghik":2}"#, false, 1),
        ] {
            let o = outline(text.as_bytes());
            assert_eq!((o.repeated_keys, o.depth), (repeated, depth), "{text}");
        }
    }

    proptest::proptest! {
        /// Against the structure itself, on random compact or spaced texts with short keys
        /// (at most seven bytes, no escapes: judged exactly, never a false alarm).
        #[test]
        fn repeated_keys_and_depth_match_the_structure(
            node in node_strategy(),
            spaced in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            node.render(spaced, &mut text);
            let o = outline(text.as_bytes());
            proptest::prop_assert_eq!(o.repeated_keys, node.repeats(), "{}", text);
            proptest::prop_assert_eq!(o.depth, node.depth(), "{}", text);
        }
    }

    #[derive(Debug, Clone)]
    enum Node {
        Leaf(String),
        Array(Vec<Node>),
        Object(Vec<(String, Node)>),
    }

    impl Node {
        fn render(&self, spaced: bool, out: &mut String) {
            let gap = if spaced { " " } else { "" };
            match self {
                Node::Leaf(text) => out.push_str(text),
                Node::Array(items) => {
                    out.push('[');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                            out.push_str(gap);
                        }
                        item.render(spaced, out);
                    }
                    out.push(']');
                }
                Node::Object(fields) => {
                    out.push('{');
                    for (n, (key, value)) in fields.iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                            out.push_str(gap);
                        }
                        out.push_str(&format!("\"{key}\"{gap}:{gap}"));
                        value.render(spaced, out);
                    }
                    out.push('}');
                }
            }
        }

        fn repeats(&self) -> bool {
            match self {
                Node::Leaf(_) => false,
                Node::Array(items) => items.iter().any(Node::repeats),
                Node::Object(fields) => {
                    let mut seen = std::collections::HashSet::new();
                    !fields.iter().all(|(key, _)| seen.insert(key))
                        || fields.iter().any(|(_, value)| value.repeats())
                }
            }
        }

        fn depth(&self) -> usize {
            match self {
                Node::Leaf(_) => 0,
                Node::Array(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
                Node::Object(fields) => {
                    1 + fields.iter().map(|(_, v)| v.depth()).max().unwrap_or(0)
                }
            }
        }
    }

    fn node_strategy() -> impl proptest::strategy::Strategy<Value = Node> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Node::Leaf("null".into())),
            Just(Node::Leaf("true".into())),
            Just(Node::Leaf("false".into())),
            Just(Node::Leaf("-12.5e+3".into())),
            (0u32..1000).prop_map(|n| Node::Leaf(n.to_string())),
            "[a-c:, {}\\[\\]]{0,4}".prop_map(|s| Node::Leaf(format!("\"{s}\""))),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Node::Array),
                proptest::collection::vec(("[a-c:,]{1,2}", inner), 0..5).prop_map(Node::Object),
            ]
        })
    }

    #[test]
    fn any_bytes_are_read_safely() {
        for text in [&b""[..], b"\"", b"\"\\", b"}}]]", b"\xff\xfe:", b"{\"a\\"] {
            let o = outline(text);
            assert!(o.depth <= text.len());
        }
        assert_eq!(outline(b"   ").first, None);
    }

    /// The outline by each kernel, which must agree with the oracle.
    fn by_each_path(text: &[u8]) -> Vec<(&'static str, Outline)> {
        let mut outlines = vec![("words", read(text, words::Words))];
        #[cfg(target_arch = "x86_64")]
        {
            outlines.push(("sse2", read(text, x86::Sse2)));
            if let Some(modern) = x86::Modern::detect() {
                outlines.push(("modern", x86::read_modern(text, modern)));
            }
        }
        outlines
    }

    /// The masks of `block` by each kernel.
    fn masks_by_each_path(block: &[u8; 64]) -> Vec<(&'static str, Masks)> {
        let mut masks = vec![("words", words::Words.classify(block))];
        #[cfg(target_arch = "x86_64")]
        {
            masks.push(("sse2", x86::Sse2.classify(block)));
            if let Some(modern) = x86::Modern::detect() {
                masks.push(("modern", modern.classify(block)));
            }
        }
        masks
    }

    fn assert_as_oracle(text: &[u8]) {
        let expected = bytewise::outline(text);
        assert_eq!(outline(text), expected, "{}", String::from_utf8_lossy(text));
        for (path, found) in by_each_path(text) {
            assert_eq!(found, expected, "{path}: {}", String::from_utf8_lossy(text));
        }
    }

    /// Masks byte by byte, to judge both fast paths.
    fn classify_bytewise(block: &[u8; 64]) -> Masks {
        let mut masks = Masks::default();
        for (i, &b) in block.iter().enumerate() {
            let bit = 1 << i;
            let set = |mask: &mut u64, on: bool| {
                if on {
                    *mask |= bit;
                }
            };
            set(&mut masks.quotes, b == b'"');
            set(&mut masks.backslashes, b == b'\\');
            set(&mut masks.structure, b"{}[]:".contains(&b));
            let ends = b <= b' ' || b >= 0x80 || b",\"{}[]:".contains(&b);
            set(&mut masks.scalar, !ends);
            set(&mut masks.exponent, b"eE".contains(&b));
        }
        masks
    }

    #[test]
    fn every_byte_is_classified_alike_by_each_path() {
        let all: Vec<u8> = (0..=255).collect();
        for block in all.chunks_exact(64) {
            let block: &[u8; 64] = block.try_into().expect("64 bytes");
            let expected = classify_bytewise(block);
            for (path, masks) in masks_by_each_path(block) {
                assert_eq!(masks, expected, "{path}");
            }
        }
    }

    /// Backslash runs of every length, ending at every offset around a block edge, before a
    /// quote or another byte, in keys and in values.
    #[test]
    fn escapes_across_block_edges_are_read_as_the_oracle() {
        for pad in 0..140 {
            for run in 0..8 {
                let filler = "p".repeat(pad);
                let slashes = "\\".repeat(2 * run);
                for text in [
                    format!(r#"{{"{filler}":"{slashes}\"","k":1,"k":2}}"#),
                    format!(r#"{{"{filler}":"x{slashes}","k{slashes}":1,"{filler}":[1e100]}}"#),
                    format!(r#"["{filler}{slashes}\"{{\":", {{"a":1,"b":2}}, 123456789012345678]"#),
                    format!(r#"{{"a":"{filler}","b{slashes}\"":{{"c":1.5e-300}},"b":1}}"#),
                ] {
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                        "{text}"
                    );
                    assert_as_oracle(text.as_bytes());
                }
            }
        }
    }

    /// Numbers of every length and exponent, crossing a block edge at every offset.
    #[test]
    fn numbers_across_block_edges_are_read_as_the_oracle() {
        for pad in 40..70 {
            let filler = "p".repeat(pad);
            for number in [
                "123456789012345678",
                "1234567890123456789",
                "-12345678901234567",
                "-123456789012345678",
                "1.5e+99",
                "1.5e+100",
                "1E-100",
                "1E10",
                "0.000000000000000001",
            ] {
                for text in [
                    format!(r#"{{"{filler}":{number}}}"#),
                    format!(r#"["{filler}", {number}, true, false]"#),
                ] {
                    assert_as_oracle(text.as_bytes());
                }
            }
        }
    }

    /// Invalid texts that would make a careless reader slow: each must be read in linear time
    /// (a quadratic reading of these takes minutes).
    #[test]
    fn invalid_texts_are_read_in_linear_time() {
        let long_key = format!("{{\"{}\"{}", "k".repeat(200_000), ":".repeat(200_000));
        let exponents = format!("[{}]", "1e1".repeat(100_000));
        let opens = format!("{}{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
        let backslashes = format!("\"{}", "\\".repeat(300_000));
        for text in [long_key, exponents, opens, backslashes] {
            for (_, o) in by_each_path(text.as_bytes()) {
                assert!(o.depth <= text.len());
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The block reader by each path against the oracle, on random valid JSON: keys and
        /// strings with escapes of every kind, long backslash runs, multibyte UTF-8, padding
        /// strings that move everything across block edges, long numbers and exponents, deep
        /// nesting and many keys, compact or spaced.
        #[test]
        fn valid_json_is_read_as_the_oracle(
            node in json_strategy(),
            nesting in proptest::collection::vec(proptest::bool::ANY, 0..40),
            padding in 0usize..130,
            spaced in proptest::bool::ANY,
        ) {
            let mut node = node;
            for in_object in nesting {
                node = if in_object {
                    Node::Object(vec![("n".into(), node), ("m".into(), Node::Leaf("0".into()))])
                } else {
                    Node::Array(vec![node])
                };
            }
            let padded = Node::Array(vec![
                Node::Leaf(format!("\"{}\"", "p".repeat(padding))),
                node,
            ]);
            let mut text = String::new();
            padded.render(spaced, &mut text);
            proptest::prop_assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "not JSON: {}",
                text
            );
            assert_as_oracle(text.as_bytes());
        }

        /// Any bytes at all are read without a panic, by each path.
        #[test]
        fn any_bytes_are_read_safely_by_each_path(
            text in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
        ) {
            let o = outline(&text);
            proptest::prop_assert!(o.depth <= text.len());
            bytewise::outline(&text);
            by_each_path(&text);
        }

        /// Bytes that mean something to the outline, in any order, by each path.
        #[test]
        fn json_punctuation_in_any_order_is_read_safely(
            text in "[{}\\[\\]:,\"\\\\ e1+.tu\u{e9}-]{0,300}",
        ) {
            let o = outline(text.as_bytes());
            proptest::prop_assert!(o.depth <= text.len());
            bytewise::outline(text.as_bytes());
            by_each_path(text.as_bytes());
        }

        /// Each 64-byte block is turned into the same masks by each path.
        #[test]
        fn blocks_are_classified_alike_by_each_path(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(b"{}[]:,\"\\ eE0123456789+-./".to_vec()),
                    proptest::num::u8::ANY,
                ],
                64,
            ),
        ) {
            let block: &[u8; 64] = bytes.as_slice().try_into().expect("64 bytes");
            let expected = classify_bytewise(block);
            for (path, masks) in masks_by_each_path(block) {
                proptest::prop_assert_eq!(masks, expected, "{}", path);
            }
        }
    }

    proptest::proptest! {
        /// Each kernel's prefix-xor (the carry-less multiply of the modern one, the shifts of the
        /// others) is the parity of the bits up to each one.
        #[test]
        fn prefix_xor_is_alike_by_each_path(bits in proptest::num::u64::ANY) {
            let expected = words::Words.prefix_xor(bits);
            for i in 0..64 {
                let up_to = u64::MAX >> (63 - i);
                let parity = u64::from((bits & up_to).count_ones()) % 2;
                proptest::prop_assert_eq!(expected >> i & 1, parity);
            }
            #[cfg(target_arch = "x86_64")]
            {
                proptest::prop_assert_eq!(x86::Sse2.prefix_xor(bits), expected);
                if let Some(modern) = x86::Modern::detect() {
                    proptest::prop_assert_eq!(modern.prefix_xor(bits), expected);
                }
            }
        }
    }

    /// A JSON string's content as written: plain text, every escape, backslash runs, bytes that
    /// mean something outside strings, and multibyte characters.
    fn string_content() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            "[a-z ]{0,12}",
            Just(r#"\""#.to_owned()),
            Just(r"\\".to_owned()),
            Just(r#"\\\""#.to_owned()),
            Just(r"\n\t\/".to_owned()),
            // `\uXXXX` outside the surrogates, which a strict parser wants paired.
            "[0-9a-cef][0-9a-f]{3}".prop_map(|hex| format!(r"\u{hex}")),
            (1usize..40).prop_map(|n| r"\\".repeat(n)),
            "[{}\\[\\]:,]{1,3}",
            "[0-9eE+.-]{1,25}",
            "[\u{e9}\u{6771}\u{1f680}\u{fc}]{1,4}",
        ];
        proptest::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
    }

    fn json_strategy() -> impl proptest::strategy::Strategy<Value = Node> {
        use proptest::prelude::*;
        let number = prop_oneof![
            (0u32..1000).prop_map(|n| n.to_string()),
            "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,12})?([eE][+-]?[0-9]{1,4})?",
        ];
        let leaf = prop_oneof![
            Just(Node::Leaf("null".into())),
            Just(Node::Leaf("true".into())),
            Just(Node::Leaf("false".into())),
            number.prop_map(Node::Leaf),
            string_content().prop_map(|s| Node::Leaf(format!("\"{s}\""))),
            // Plain strings of any length move what follows across block edges.
            (0usize..90).prop_map(|n| Node::Leaf(format!("\"{}\"", "q".repeat(n)))),
        ];
        let key = prop_oneof![
            3 => "[a-d]{1,2}",
            1 => "k[a-z]{8,20}",
            1 => string_content(),
        ];
        leaf.prop_recursive(6, 96, 10, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..10).prop_map(Node::Array),
                proptest::collection::vec((key.clone(), inner), 0..10).prop_map(Node::Object),
                // Many keys in one object: past the pairwise limit and the inline stack.
                proptest::collection::vec(
                    (
                        "k[0-9]{1,3}",
                        (0u32..9).prop_map(|n| Node::Leaf(n.to_string()))
                    ),
                    17..60,
                )
                .prop_map(Node::Object),
            ]
        })
    }
}
