//! The only pyo3 file: converts arguments, calls the pure-Rust core, converts results and errors.
//!
//! Design notes: `feed` borrows the fragment (`str` as UTF-8, `bytes` as-is) and creates no
//! Python object; values are built straight into Python objects only when asked for (through
//! the core's `Sink` trait, without an intermediate Rust tree); misuse raises
//! `MisuseError(ValueError)` and bad model output never raises — it becomes a `CallError`.
//! `Assembler.feed`, called once per fragment, matches its own arguments (`install_feed`).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::create_exception;
use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::string::PyStringData;
use pyo3::types::{IntoPyDict, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::assembler::{
    warning, Arguments, Assembler, AssemblerConfig, Delta, JsonVerdict, Summary, ToolCall,
};
use crate::envelope::{FinishReason, Format, Reasoning};
use crate::error::{Error, ErrorKind, Misuse, SchemaDetail};
use crate::gateway::{StreamDecoder, StreamErrorKind};
use crate::outline::outline;
use crate::precheck::Registry;
use crate::progress::Recorded;
use crate::scanner::{
    is_number_lexeme, DuplicateKeys, ScanConfig, Scanner, Status, PLAIN_NUMBER_CHARS,
};
use crate::schema::nesting::{self, ReadError};
use crate::schema::SchemaErrorKind;
use crate::value::{build, BuildOptions, PartialOptions, Sink, StringMode};

create_exception!(
    toolwire._core,
    ToolwireError,
    PyValueError,
    "Base class of toolwire's exceptions."
);
create_exception!(
    toolwire._core,
    MisuseError,
    ToolwireError,
    "The API was used wrongly (never caused by model output)."
);
create_exception!(
    toolwire._core,
    JsonError,
    ToolwireError,
    "A JSON text was rejected; `.error` holds the `CallError`."
);

/// The single seam where core errors become Python exceptions.
fn misuse(e: &Misuse) -> PyErr {
    MisuseError::new_err(e.to_string())
}

/// `text`, JSON the core wrote, read by `json.loads`: called with the assembler let go, as
/// Python code may let another thread use it meanwhile.
fn json_loads(py: Python<'_>, text: Option<String>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let Some(text) = text else { return Ok(None) };
    let loads = py.import("json")?.getattr("loads")?;
    Ok(Some(loads.call1((text.as_str(),))?))
}

/// An assembler already borrowed: another thread is inside one of its methods (`feed_sse`
/// releases the GIL while it decodes a large body, and Python code a method runs, such as
/// `json.dumps` of dict arguments, lets other threads in), or that code called back into it.
/// One assembler serves one stream. Every `Assembler` method borrows through this instead of
/// taking `&self`/`&mut self`, whose failure is pyo3's bare `RuntimeError("Already borrowed")`;
/// the check is the one pyo3 makes anyway. Takes either borrow error.
#[cold]
/// A reasoning block as the dict the provider takes back.
fn reasoning_block(py: Python<'_>, block: Reasoning) -> PyResult<Bound<'_, PyAny>> {
    let dict = PyDict::new(py);
    match block {
        Reasoning::Thinking {
            thinking,
            signature,
        } => {
            dict.set_item(pyo3::intern!(py, "type"), pyo3::intern!(py, "thinking"))?;
            dict.set_item(pyo3::intern!(py, "thinking"), thinking)?;
            dict.set_item(pyo3::intern!(py, "signature"), signature)?;
        }
        Reasoning::Redacted { data } => {
            dict.set_item(
                pyo3::intern!(py, "type"),
                pyo3::intern!(py, "redacted_thinking"),
            )?;
            dict.set_item(pyo3::intern!(py, "data"), data)?;
        }
        Reasoning::Item { json } => {
            return py.import("json")?.getattr("loads")?.call1((json,));
        }
        Reasoning::ConverseText { text, signature } => {
            let inner = PyDict::new(py);
            inner.set_item(pyo3::intern!(py, "text"), text)?;
            if let Some(signature) = signature {
                inner.set_item(pyo3::intern!(py, "signature"), signature)?;
            }
            let content = PyDict::new(py);
            content.set_item(pyo3::intern!(py, "reasoningText"), inner)?;
            dict.set_item(pyo3::intern!(py, "reasoningContent"), content)?;
        }
        Reasoning::GeminiThought { text, signature } => {
            dict.set_item(pyo3::intern!(py, "text"), text)?;
            dict.set_item(pyo3::intern!(py, "thought"), true)?;
            if let Some(signature) = signature {
                dict.set_item(pyo3::intern!(py, "thoughtSignature"), signature)?;
            }
        }
        Reasoning::ConverseRedacted { data } => {
            let content = PyDict::new(py);
            content.set_item(
                pyo3::intern!(py, "redactedContent"),
                PyBytes::new(py, &data),
            )?;
            dict.set_item(pyo3::intern!(py, "reasoningContent"), content)?;
        }
        Reasoning::ConverseImage { format, data } => {
            let source = PyDict::new(py);
            source.set_item(pyo3::intern!(py, "bytes"), PyBytes::new(py, &data))?;
            let image = PyDict::new(py);
            image.set_item(pyo3::intern!(py, "format"), format)?;
            image.set_item(pyo3::intern!(py, "source"), source)?;
            dict.set_item(pyo3::intern!(py, "image"), image)?;
        }
    }
    Ok(dict.into_any())
}

fn in_use<E>(_: E) -> PyErr {
    MisuseError::new_err(
        "the assembler is in use by another call (another thread?): one assembler serves one \
         stream at a time",
    )
}

/// A scanner already borrowed, as [`in_use`]: its first `finish` in a process imports orjson,
/// which runs Python code and lets other threads in while the scanner is held.
#[cold]
fn scanner_in_use<E>(_: E) -> PyErr {
    MisuseError::new_err(
        "the scanner is in use by another call (another thread?): one scanner reads one text \
         at a time",
    )
}

#[cold]
fn json_error(py: Python<'_>, e: &Error) -> PyErr {
    let err = JsonError::new_err(e.capped().to_string());
    if let Ok(detail) = Py::new(py, PyCallError::from(e)) {
        let _ = err.value(py).setattr("error", detail);
    }
    err
}

/// How a number that is not an integer becomes a Python object (spec R5: the core keeps the
/// exact lexeme, the hand-off decides). Integers are `int` in every mode.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Floats {
    /// `float`, as `json.loads` (nearest double; `1e400` is `inf`).
    #[default]
    Float,
    /// `decimal.Decimal` of the lexeme: exact, and arithmetic on it stays exact.
    Decimal,
    /// [`PyLosslessFloat`]: the lexeme itself, converted only when the caller asks.
    Lossless,
}

impl FromPyObject<'_, '_> for Floats {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, '_, PyAny>) -> Result<Self, Self::Error> {
        let text = obj.cast::<PyString>().ok();
        match text.as_ref().and_then(|s| s.to_str().ok()) {
            Some("float") => Ok(Self::Float),
            Some("decimal") => Ok(Self::Decimal),
            Some("lossless") => Ok(Self::Lossless),
            _ => Err(MisuseError::new_err(
                "floats must be 'float', 'decimal' or 'lossless'",
            )),
        }
    }
}

/// `decimal.Decimal`, imported once per process.
fn decimal_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    DECIMAL.import(py, "decimal", "Decimal")
}

/// `decimal.Decimal` of a JSON number's lexeme: its exact value, or, for an exponent past what
/// a `Decimal` holds (beyond about 10^18 either way, where `Decimal(text)` raises
/// `InvalidOperation`), the infinity or zero of that sign, as a float reads it. Model output
/// must not make `partial` or `finish` raise.
fn decimal_of<'py>(py: Python<'py>, lexeme: &str) -> PyResult<Bound<'py, PyAny>> {
    let decimal = decimal_type(py)?;
    match decimal.call1((lexeme,)) {
        Err(err) if err.is_instance_of::<pyo3::exceptions::PyArithmeticError>(py) => {
            decimal.call1((beyond_decimal(lexeme),))
        }
        made => made,
    }
}

/// The value that stands for a number whose exponent no `Decimal` holds. The text is at most
/// `max_bytes` long, far fewer digits than such an exponent, so the exponent's sign alone says
/// whether the number is past the largest `Decimal` or below the smallest.
fn beyond_decimal(lexeme: &str) -> &'static str {
    let negative = lexeme.starts_with('-');
    let (mantissa, exponent) = lexeme.split_once(['e', 'E']).unwrap_or((lexeme, ""));
    let zero = !mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'));
    let small = zero || exponent.starts_with('-');
    match (small, negative) {
        (true, false) => "0",
        (true, true) => "-0",
        (false, false) => "Infinity",
        (false, true) => "-Infinity",
    }
}

/// Builds Python objects directly from validated JSON text.
struct PySink<'py> {
    py: Python<'py>,
    /// How numbers that are not integers are handed over.
    floats: Floats,
    /// Recently seen object keys: arrays of objects repeat the same keys, and a cached `str`
    /// also carries its hash, so dict inserts skip rehashing (orjson keeps a key cache too).
    keys: Vec<Option<(Box<str>, Bound<'py, PyString>)>>,
    _gc: GcPause,
}

/// Pauses the cyclic garbage collector while a value is built: a parsed JSON value is a tree
/// (it cannot hold a cycle), so collections triggered by its allocations only cost time —
/// about a sixth of the build time on large arguments. Restored on drop, even on error.
struct GcPause {
    was_enabled: bool,
}

impl GcPause {
    fn new(_py: Python<'_>) -> Self {
        // SAFETY: the `Python` token proves the GIL is held, which is all `PyGC_Disable`
        // requires; it only flips the collector's enabled flag and returns its previous state.
        let was_enabled = unsafe { pyo3::ffi::PyGC_Disable() } != 0;
        Self { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: the guard never leaves the function that holds the GIL token it was
            // created with (it is not Send across a detach), so the GIL is still held here.
            unsafe {
                pyo3::ffi::PyGC_Enable();
            }
        }
    }
}

/// The object in `cell`, built by `build` the first time.
///
/// The cell is a plain `OnceLock`, readable without a `Python` token: the collector's
/// `__traverse__` gets none. Unlike `PyOnceLock::get_or_try_init`, the build runs without
/// first detaching from the interpreter. pyo3 detaches so that a thread waiting on the cell cannot deadlock with the one
/// holding the GIL; that costs a thread-state switch on every first read, which for a fresh
/// call's `.value` was a tenth of the read. Nothing waits here: when the build lets another
/// thread run and that thread stores its own first, both return the stored object.
fn cached<'py, T>(
    py: Python<'py>,
    cell: &OnceLock<Py<T>>,
    build: impl FnOnce() -> PyResult<Bound<'py, T>>,
) -> PyResult<Bound<'py, T>> {
    if let Some(stored) = cell.get() {
        return Ok(stored.bind(py).clone());
    }
    let built = build()?;
    Ok(match cell.set(built.clone().unbind()) {
        Ok(()) => built,
        Err(_) => cell.get().map_or(built, |stored| stored.bind(py).clone()),
    })
}

/// A Python `str` of UTF-8 `bytes` (a progress item's path or text): the ASCII check that
/// [`new_str`] makes is the only check ASCII text needs, so no separate UTF-8 pass is made
/// for it. Bytes that are not UTF-8 (the scanner never reports such) are replaced as
/// `String::from_utf8_lossy` replaces them.
fn utf8_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    if bytes.is_ascii() {
        return compact_str(py, bytes.len(), 0x7F, |data| {
            // SAFETY (of the write): `compact_str` gives room for `bytes.len()` one-byte units.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
        });
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => new_str(py, text),
        Err(_) => new_str(py, &String::from_utf8_lossy(bytes)),
    }
}

/// True when `s` holds the characters whose UTF-8 is `bytes` (a progress item's path). An
/// ASCII `str`'s own one-byte characters are compared; another's UTF-8, which CPython keeps
/// with the `str` once asked, so a long string's items under a non-ASCII key share its path
/// too.
fn str_is(s: &Bound<'_, PyString>, bytes: &[u8]) -> bool {
    // SAFETY: `s` is a live `str` (the `Bound` holds the GIL and a reference), which is all
    // `PyUnicode_IS_ASCII` needs. An ASCII `str` is compact and ready, with one byte per
    // character at `PyUnicode_DATA`, `GET_LENGTH` of them, read only when the flag is set.
    unsafe {
        let object = s.as_ptr();
        if pyo3::ffi::PyUnicode_IS_ASCII(object) != 0 {
            return usize::try_from(pyo3::ffi::PyUnicode_GET_LENGTH(object)).ok()
                == Some(bytes.len())
                && std::slice::from_raw_parts(
                    pyo3::ffi::PyUnicode_DATA(object).cast::<u8>(),
                    bytes.len(),
                ) == bytes;
        }
    }
    s.to_str().is_ok_and(|text| text.as_bytes() == bytes)
}

/// A Python `str` of `text`. Most progress texts and paths are short and ASCII: those are
/// copied straight into a new compact string, skipping CPython's UTF-8 decoder, which cost
/// about as much as the rest of a drain's item.
fn new_str<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyString>> {
    if text.is_ascii() {
        return utf8_str(py, text.as_bytes());
    }
    // CPython's own constructor decodes through a growing writer (and a final realloc) for
    // non-ASCII text; the length and widest character are known from a `&str` in one pass.
    let (count, max) = text.chars().fold((0usize, 0u32), |(n, widest), c| {
        (n + 1, widest.max(u32::from(c)))
    });
    compact_str(py, count, max, |data| {
        // SAFETY (of the writes): `compact_str` gives room for `count` units of the kind `max`
        // selects, suitably aligned, and `text` has exactly `count` characters, each at most
        // `max`, so each fits the unit written for it.
        unsafe {
            if max < 0x100 {
                let units = std::slice::from_raw_parts_mut(data, count);
                for (unit, c) in units.iter_mut().zip(text.chars()) {
                    *unit = u32::from(c) as u8;
                }
            } else if max < 0x1_0000 {
                let units = std::slice::from_raw_parts_mut(data.cast::<u16>(), count);
                for (unit, c) in units.iter_mut().zip(text.chars()) {
                    *unit = u32::from(c) as u16;
                }
            } else {
                let units = std::slice::from_raw_parts_mut(data.cast::<u32>(), count);
                for (unit, c) in units.iter_mut().zip(text.chars()) {
                    *unit = u32::from(c);
                }
            }
        }
    })
}

/// A new compact Python `str` of `count` characters whose widest is `max` (at most
/// 0x10FFFF), its data written by `write` (given a pointer to the first unit) before anyone
/// else sees the object. `write` must write exactly `count` units of the kind `max` selects.
fn compact_str<'py>(
    py: Python<'py>,
    count: usize,
    max: u32,
    write: impl FnOnce(*mut u8),
) -> PyResult<Bound<'py, PyString>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(count)
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("text too long"))?;
    // SAFETY: `PyUnicode_New(len, max)` returns a new compact string of `len` characters in the
    // storage kind `max` selects (1 byte per character below 0x100, 2 below 0x10000, else 4;
    // ASCII below 0x80), with its data aligned for that kind, or NULL with an exception set,
    // which `from_owned_ptr_or_err` turns into the error. Its callers pass the widest
    // character of the text as `max`, so the kind is the canonical one CPython expects, and
    // `write` fills exactly the `count` units before the object is handed to anyone.
    unsafe {
        let object = Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyUnicode_New(len, max))?;
        write(pyo3::ffi::PyUnicode_DATA(object.as_ptr()).cast::<u8>());
        Ok(object.cast_into_unchecked())
    }
}

/// The Python `str` of a progress item's text. The literals and texts of at most one Latin-1
/// character (a digit, a one-letter word, an accented letter, the empty text) are objects
/// CPython or this module already holds: a dense call has many, and each new `str` costs its
/// allocation and its free.
fn item_text<'py>(py: Python<'py>, text: &[u8]) -> PyResult<Bound<'py, PyString>> {
    use std::ffi::c_int;
    Ok(match text {
        b"true" => pyo3::intern!(py, "true").clone(),
        b"false" => pyo3::intern!(py, "false").clone(),
        b"null" => pyo3::intern!(py, "null").clone(),
        // `PyUnicode_FromStringAndSize` returns its shared empty and one-character strings.
        [] => PyString::new(py, ""),
        [c] if c.is_ascii() => PyString::new(py, char::from(*c).encode_utf8(&mut [0; 4])),
        // The UTF-8 of one character from U+0080 to U+00FF.
        [lead @ (0xC2 | 0xC3), next @ 0x80..=0xBF] => {
            let ch = (c_int::from(lead & 0x1F) << 6) | c_int::from(next & 0x3F);
            // SAFETY: `ch` is below 0x100, a valid code point; `PyUnicode_FromOrdinal` returns
            // a new reference (CPython's shared string of that Latin-1 character) or NULL with
            // an exception set, which `from_owned_ptr_or_err` turns into the error.
            unsafe {
                Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyUnicode_FromOrdinal(ch))?
                    .cast_into_unchecked()
            }
        }
        _ => utf8_str(py, text)?,
    })
}

/// The `int` of `ordinal`, from `cache` when it holds that ordinal's (it is then replaced).
#[inline]
fn ordinal_object<'a, 'py>(
    py: Python<'py>,
    cache: &'a mut Option<(usize, Py<PyInt>)>,
    ordinal: usize,
) -> &'a Bound<'py, PyInt> {
    if matches!(cache, Some((last, _)) if *last != ordinal) {
        if let Some((_, old)) = cache.take() {
            // Released as a `Bound`, at once: a `Py` dropped without pyo3's attach count
            // waits in its pool.
            drop(old.into_bound(py));
        }
    }
    let (_, int) = cache.get_or_insert_with(|| {
        let int = ordinal
            .into_pyobject(py)
            .unwrap_or_else(|never| match never {});
        (ordinal, int.unbind())
    });
    int.bind(py)
}

/// Appends the progress item `(ordinal, path, text)` to `list`, built straight through the C
/// API: pyo3's tuple conversion and `append` took and dropped references and went through
/// generic conversions, about 40 instructions per item (over 1% of a small call's progressive
/// feed).
///
/// The tuple is no longer watched by the cyclic garbage collector: it holds an int and two
/// strs, so it can never be part of a cycle; the collector would find that out itself, but
/// only after walking it in a collection, and a large stream's items kept in the caller's list
/// made those walks a tenth of the progress path's time.
fn append_item(
    list: &Bound<'_, PyList>,
    ordinal: &Bound<'_, PyInt>,
    path: Bound<'_, PyString>,
    text: Bound<'_, PyString>,
) -> PyResult<()> {
    use pyo3::ffi;
    let py = list.py();
    // SAFETY: the GIL is held (the `Bound`s prove it). `PyTuple_New(3)` returns a new tuple
    // whose three slots are NULL, or NULL with an exception set (turned into the error; the
    // elements are then released by their `Bound`s). Each `PyTuple_SET_ITEM` fills one of
    // those slots, in range, and steals the strong reference `into_ptr` hands over, so every
    // slot is set before the tuple is seen by anyone. `PyObject_GC_UnTrack` is idempotent and
    // only unlinks the live tuple (a GC type) from the collector's lists; an untracked object
    // without references to containers is still freed by its reference count, which is all
    // CPython's own `_PyTuple_MaybeUntrack` relies on too. `PyList_Append` takes its own
    // reference to the item (the one `item` owns is released when it drops) and returns -1
    // with an exception set on failure.
    unsafe {
        let item = Bound::from_owned_ptr_or_err(py, ffi::PyTuple_New(3))?;
        let tuple = item.as_ptr();
        ffi::PyTuple_SET_ITEM(tuple, 0, ordinal.clone().into_ptr());
        ffi::PyTuple_SET_ITEM(tuple, 1, path.into_ptr());
        ffi::PyTuple_SET_ITEM(tuple, 2, text.into_ptr());
        ffi::PyObject_GC_UnTrack(tuple.cast());
        if ffi::PyList_Append(list.as_ptr(), tuple) == -1 {
            return Err(PyErr::fetch(py));
        }
    }
    Ok(())
}

/// `orjson.loads`, looked up once per process (`None` when orjson cannot be imported).
static ORJSON_LOADS: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// The value of a complete, already validated JSON text whose numbers are all plain, built by
/// `orjson` (the fastest builder of Python objects from JSON), or `None` to fall back to
/// [`PySink`]. Our scanner has accepted the text, so orjson sees only strict RFC 8259 JSON with
/// our limits applied; plain numbers are the ones it reads exactly as `json.loads` does.
fn orjson_value<'py>(py: Python<'py>, text: &[u8]) -> Option<Bound<'py, PyAny>> {
    let loads = ORJSON_LOADS
        .get_or_init(py, || {
            py.import("orjson")
                .and_then(|m| m.getattr("loads"))
                .ok()
                .map(Bound::unbind)
        })
        .as_ref()?;
    let _gc = GcPause::new(py);
    // A failure (never expected on accepted text) only means the slower builder is used.
    loads.bind(py).call1((PyBytes::new(py, text),)).ok()
}

/// The final value of a complete text: by orjson when its numbers allow (and floats are to be
/// `float`s, which is all orjson makes), else by [`PySink`].
fn final_value<'py>(
    py: Python<'py>,
    text: &[u8],
    plain_numbers: bool,
    duplicate_keys: bool,
    floats: Floats,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if plain_numbers && floats == Floats::Float {
        if let Some(v) = orjson_value(py, text) {
            return Ok(Some(v));
        }
    }
    build(
        text,
        BuildOptions::for_complete(duplicate_keys),
        &mut PySink::new(py, floats),
    )
}

/// Smallest `feed_sse` piece decoded with the GIL released.
const DETACH_MIN_BYTES: usize = 1024;

/// Slots of the key cache (direct-mapped).
const KEY_CACHE_SLOTS: usize = 128;

impl<'py> PySink<'py> {
    fn new(py: Python<'py>, floats: Floats) -> Self {
        Self {
            py,
            floats,
            keys: Vec::new(),
            _gc: GcPause::new(py),
        }
    }

    fn cached_key(&mut self, key: &str) -> Bound<'py, PyString> {
        if key.len() > 64 {
            return PyString::new(self.py, key);
        }
        if self.keys.is_empty() {
            self.keys.resize_with(KEY_CACHE_SLOTS, || None);
        }
        let mut h: u32 = 0x811c_9dc5;
        for &b in key.as_bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        let slot = &mut self.keys[h as usize % KEY_CACHE_SLOTS];
        if let Some((cached, string)) = slot {
            if &**cached == key {
                return string.clone();
            }
        }
        let string = PyString::new(self.py, key);
        *slot = Some((key.into(), string.clone()));
        string
    }
}

impl<'py> Sink for PySink<'py> {
    type Value = Bound<'py, PyAny>;
    // Elements are collected first so the list is created at its final size, without the
    // reallocations of appending one by one.
    type Array = Vec<Bound<'py, PyAny>>;
    type Object = Bound<'py, PyDict>;
    type Key = Bound<'py, PyString>;
    type Error = PyErr;

    fn null(&mut self) -> PyResult<Self::Value> {
        Ok(self.py.None().into_bound(self.py))
    }
    fn boolean(&mut self, value: bool) -> PyResult<Self::Value> {
        Ok(pyo3::types::PyBool::new(self.py, value)
            .to_owned()
            .into_any())
    }
    fn number(&mut self, lexeme: &str) -> PyResult<Self::Value> {
        if lexeme.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            if let Ok(n) = lexeme.parse::<i64>() {
                return Ok(n.into_pyobject(self.py)?.into_any());
            }
            // Arbitrary precision, as `json.loads`; the scanner caps the digits.
            let int = self.py.get_type::<pyo3::types::PyInt>();
            return match int.call1((lexeme,)) {
                Err(err) if err.is_instance_of::<PyValueError>(self.py) => {
                    // Past CPython's limit on converting text to int (4,300 digits unless set
                    // otherwise), which a raised `max_number_digits` lets through: a `Decimal`
                    // reads any length, and becomes an int without going through text.
                    int.call1((decimal_type(self.py)?.call1((lexeme,))?,))
                }
                made => made,
            };
        }
        match self.floats {
            Floats::Float => Ok(PyFloat::new(self.py, float_of(lexeme)?).into_any()),
            Floats::Decimal => decimal_of(self.py, lexeme),
            Floats::Lossless => Ok(Bound::new(
                self.py,
                PyLosslessFloat {
                    lexeme: lexeme.into(),
                },
            )?
            .into_any()),
        }
    }
    fn string(&mut self, value: &str) -> PyResult<Self::Value> {
        Ok(new_str(self.py, value)?.into_any())
    }
    fn array(&mut self) -> PyResult<Self::Array> {
        Ok(Vec::new())
    }
    fn push(&mut self, array: &mut Self::Array, value: Self::Value) -> PyResult<()> {
        array.push(value);
        Ok(())
    }
    fn end_array(&mut self, array: Self::Array) -> PyResult<Self::Value> {
        Ok(PyList::new(self.py, array)?.into_any())
    }
    fn object(&mut self) -> PyResult<Self::Object> {
        Ok(PyDict::new(self.py))
    }
    fn key(&mut self, key: &str) -> PyResult<Self::Key> {
        Ok(self.cached_key(key))
    }
    fn set(
        &mut self,
        object: &mut Self::Object,
        key: Self::Key,
        value: Self::Value,
        _replace: bool,
    ) -> PyResult<()> {
        object.set_item(key, value)
    }
    fn end_object(&mut self, object: Self::Object) -> PyResult<Self::Value> {
        Ok(object.into_any())
    }
    fn flag(&mut self, value: Self::Value, complete: bool) -> PyResult<Self::Value> {
        let node = PyPartialNode {
            value: value.unbind(),
            complete,
        };
        Ok(Bound::new(self.py, node)?.into_any())
    }
}

/// The `float` of a number lexeme the scanner accepted (correctly rounded, as CPython's).
fn float_of(lexeme: &str) -> PyResult<f64> {
    lexeme
        .parse()
        .map_err(|_| PyValueError::new_err("invalid number"))
}

/// A JSON number kept as the exact text the model wrote (`floats="lossless"`).
#[pyclass(frozen, name = "LosslessFloat", module = "toolwire._core")]
struct PyLosslessFloat {
    lexeme: Box<str>,
}

#[pymethods]
impl PyLosslessFloat {
    #[new]
    #[pyo3(signature = (lexeme, /))]
    fn new(lexeme: &Bound<'_, PyAny>) -> PyResult<Self> {
        let bytes = fragment(lexeme)?;
        match std::str::from_utf8(bytes) {
            Ok(text) if is_number_lexeme(bytes) => Ok(Self {
                lexeme: text.into(),
            }),
            _ => Err(MisuseError::new_err(format!(
                "{} is not a JSON number",
                lexeme.repr()?
            ))),
        }
    }
    fn __float__(&self) -> PyResult<f64> {
        float_of(&self.lexeme)
    }
    fn __str__(&self) -> &str {
        &self.lexeme
    }
    fn __repr__(&self) -> String {
        // A lexeme holds only digits, signs, `.` and `e`: it needs no escaping.
        format!("LosslessFloat('{}')", self.lexeme)
    }
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.lexeme.as_bytes())
    }
    fn as_decimal<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        decimal_of(py, &self.lexeme)
    }
    fn __eq__(&self, other: &Self) -> bool {
        self.lexeme == other.lexeme
    }
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        // The lexeme's own `str` hash: as stable as any str hash, and randomised the same way.
        PyString::new(py, &self.lexeme).hash()
    }
    fn __getnewargs__(&self) -> (&str,) {
        (&self.lexeme,)
    }
}

/// A node of a partial value shown with completeness flags (spec R9).
#[pyclass(frozen, name = "PartialNode", module = "toolwire._core")]
struct PyPartialNode {
    value: Py<PyAny>,
    complete: bool,
}

/// Deepest tree `PartialNode.plain` unwraps: far past the scanner's own nesting limit, so only
/// a tree made by hand (or a cycle made by changing one) reaches it, as Python's recursion
/// limit stops `repr` and `==` of such trees.
const MAX_PLAIN_DEPTH: usize = 1000;

/// A container of a node whose flag-free copy is still to be filled.
enum Unwrap<'py> {
    Object(Bound<'py, PyDict>, Bound<'py, PyDict>, usize),
    Array(Bound<'py, PyList>, Bound<'py, PyList>, usize),
}

/// The flag-free form of a node's value at `depth`: a scalar as it is, a container as a new,
/// empty one that `work` will fill.
fn unwrap_shell<'py>(
    value: &Bound<'py, PyAny>,
    depth: usize,
    work: &mut Vec<Unwrap<'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_PLAIN_DEPTH {
        return Err(pyo3::exceptions::PyRecursionError::new_err(
            "PartialNode tree too deep (or circular)",
        ));
    }
    let py = value.py();
    if let Ok(members) = value.cast::<PyDict>() {
        let copy = PyDict::new(py);
        work.push(Unwrap::Object(members.clone(), copy.clone(), depth));
        return Ok(copy.into_any());
    }
    if let Ok(items) = value.cast::<PyList>() {
        let copy = PyList::empty(py);
        work.push(Unwrap::Array(items.clone(), copy.clone(), depth));
        return Ok(copy.into_any());
    }
    Ok(value.clone())
}

/// What a member or element stands for without flags: a node's unwrapped value; anything else
/// (put there by hand) as it is.
fn unwrap_child<'py>(
    child: &Bound<'py, PyAny>,
    depth: usize,
    work: &mut Vec<Unwrap<'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    match child.cast::<PyPartialNode>() {
        Ok(node) => unwrap_shell(node.get().value.bind(child.py()), depth + 1, work),
        Err(_) => Ok(child.clone()),
    }
}

#[pymethods]
impl PyPartialNode {
    #[new]
    #[pyo3(signature = (value, /, *, complete))]
    fn new(value: Py<PyAny>, complete: bool) -> Self {
        Self { value, complete }
    }
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.value.bind(py).clone()
    }
    #[getter]
    fn complete(&self) -> bool {
        self.complete
    }
    /// The value without flags, equal to the partial value asked for without them.
    fn plain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // A loop with its own stack rather than recursion: depth is bounded by a count, not by
        // the thread's stack.
        let mut work = Vec::new();
        let root = unwrap_shell(self.value.bind(py), 0, &mut work)?;
        while let Some(next) = work.pop() {
            match next {
                Unwrap::Object(members, copy, depth) => {
                    for (key, child) in members.iter() {
                        copy.set_item(key, unwrap_child(&child, depth, &mut work)?)?;
                    }
                }
                Unwrap::Array(items, copy, depth) => {
                    for child in items.iter() {
                        copy.append(unwrap_child(&child, depth, &mut work)?)?;
                    }
                }
            }
        }
        Ok(root)
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let complete = if self.complete { "True" } else { "False" };
        Ok(format!(
            "PartialNode({}, complete={complete})",
            self.value.bind(py).repr()?
        ))
    }
    fn __eq__(&self, py: Python<'_>, other: &Self) -> PyResult<bool> {
        Ok(self.complete == other.complete && self.value.bind(py).eq(other.value.bind(py))?)
    }
    // The value is a dict or list anyone may change, so a node can end up in a cycle: the
    // collector must see through it to free one. No `__clear__`: a frozen node's reference
    // never changes, and clearing the dict or list in the cycle breaks it.
    fn __traverse__(&self, visit: pyo3::gc::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.value)
    }
    /// Its constructor's arguments, for `copy` and `pickle`.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<((Py<PyAny>,), Bound<'py, PyDict>)> {
        let options = [("complete", self.complete)].into_py_dict(py)?;
        Ok(((self.value.clone_ref(py),), options))
    }
}

/// The "no value yet" marker of partial values.
#[pyclass(frozen, name = "NoValue", module = "toolwire._core")]
struct PyNoValue;

#[pymethods]
impl PyNoValue {
    fn __repr__(&self) -> &'static str {
        "NO_VALUE"
    }
    fn __bool__(&self) -> bool {
        false
    }
    /// The module's name of the one marker: `copy` hands it back, and `pickle` finds it again,
    /// so that `is NO_VALUE` holds of a copy.
    fn __reduce__(&self) -> &'static str {
        "NO_VALUE"
    }
}

static NO_VALUE: PyOnceLock<Py<PyNoValue>> = PyOnceLock::new();

fn no_value(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let v = NO_VALUE.get_or_try_init(py, || Py::new(py, PyNoValue))?;
    Ok(v.bind(py).clone().into_any())
}

fn optional_value<'py>(
    py: Python<'py>,
    v: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Some(v) => Ok(v),
        None => no_value(py),
    }
}

/// Why a call must not be executed.
#[pyclass(frozen, name = "CallError", module = "toolwire._core", eq)]
#[derive(PartialEq)]
struct PyCallError {
    kind: ErrorKind,
    #[pyo3(get)]
    message: String,
    #[pyo3(get)]
    offset: usize,
    #[pyo3(get)]
    path: String,
    #[pyo3(get)]
    keyword: Option<String>,
    #[pyo3(get)]
    expected: Option<String>,
    #[pyo3(get)]
    got: Option<String>,
}

impl From<&Error> for PyCallError {
    fn from(e: &Error) -> Self {
        let e = &e.capped();
        let detail = e.detail.as_deref();
        Self {
            kind: e.kind,
            message: e.message.clone(),
            offset: e.offset,
            path: e.path.clone(),
            keyword: detail.map(|d| d.keyword.clone()),
            expected: detail.map(|d| d.expected.clone()),
            got: detail.map(|d| d.got.clone()),
        }
    }
}

impl From<&PyCallError> for Error {
    fn from(e: &PyCallError) -> Self {
        let detail = match (&e.keyword, &e.expected, &e.got) {
            (Some(keyword), Some(expected), Some(got)) => Some(Box::new(SchemaDetail {
                keyword: keyword.clone(),
                expected: expected.clone(),
                got: got.clone(),
            })),
            // `_rebuild` takes the three together or none of them, as `From<&Error>` gives them.
            _ => None,
        };
        Self {
            kind: e.kind,
            offset: e.offset,
            path: e.path.clone(),
            message: e.message.clone(),
            detail,
        }
    }
}

/// `(kind, message, offset, path, keyword, expected, got)`: what a `CallError` is made again
/// from.
type CallErrorParts = (
    &'static str,
    String,
    usize,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// `__reduce__`'s answer for a class made again by its `_rebuild` classmethod (a bound
/// classmethod pickles as the class and the method's name).
fn rebuilt_by<'py, A>(cls: &Bound<'py, PyType>, parts: A) -> PyResult<(Bound<'py, PyAny>, A)> {
    Ok((cls.getattr(pyo3::intern!(cls.py(), "_rebuild"))?, parts))
}

#[pymethods]
impl PyCallError {
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.slug()
    }

    /// True for the kinds that mean the text stopped early (`truncated`, `empty`).
    #[getter]
    fn incomplete(&self) -> bool {
        self.kind.is_incomplete()
    }

    /// An error made again from its parts (`pickle`, `copy`).
    #[classmethod]
    #[pyo3(signature = (kind, message, offset, path, keyword, expected, got, /))]
    #[allow(clippy::too_many_arguments)]
    fn _rebuild(
        _cls: &Bound<'_, PyType>,
        kind: &str,
        message: String,
        offset: Count,
        path: String,
        keyword: Option<String>,
        expected: Option<String>,
        got: Option<String>,
    ) -> PyResult<Self> {
        let kind = ErrorKind::from_slug(kind)
            .ok_or_else(|| MisuseError::new_err(format!("{kind:?} is no CallError kind")))?;
        if keyword.is_some() != expected.is_some() || keyword.is_some() != got.is_some() {
            return Err(MisuseError::new_err(
                "keyword, expected and got come together or not at all",
            ));
        }
        Ok(Self {
            kind,
            message,
            offset: offset.0,
            path,
            keyword,
            expected,
            got,
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, CallErrorParts)> {
        let e = slf.get();
        rebuilt_by(
            &slf.get_type(),
            (
                e.kind.slug(),
                e.message.clone(),
                e.offset,
                e.path.clone(),
                e.keyword.clone(),
                e.expected.clone(),
                e.got.clone(),
            ),
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "CallError(kind={:?}, message={:?}, offset={}, path={:?})",
            self.kind.slug(),
            self.message,
            self.offset,
            self.path
        )
    }

    fn __str__(&self) -> String {
        if self.path.is_empty() {
            format!("{} at byte {}", self.message, self.offset)
        } else {
            format!(
                "{} at byte {} (path {})",
                self.message, self.offset, self.path
            )
        }
    }
}

/// Whether arguments are blank (`bytes.isspace`, which the look-alike path applies): blank is
/// `{}` to the validator.
fn is_blank(arguments: &[u8]) -> bool {
    arguments
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'))
}

/// A finished tool call.
#[pyclass(frozen, name = "ToolCall", module = "toolwire._core")]
struct PyToolCall {
    /// The call; its `error`, `complete` and `plain_numbers` are in `scanned` or `settled`.
    call: ToolCall,
    /// The verdict of a call `finish` scanned. A plain field rather than a filled `OnceLock`,
    /// whose guard made filling it a tenth of making a small call's object.
    scanned: Option<JsonVerdict>,
    /// For a call `finish` left unscanned, set by its first reader that scans it.
    settled: OnceLock<JsonVerdict>,
    /// For a call `finish` left unscanned, set when `.value` proved the text valid with orjson
    /// and an outline: the verdict is [`JsonVerdict::ACCEPTED`]. A flag rather than `settled`
    /// filled, whose `Once` cost as much as a tenth of a small call's `.value`.
    accepted: AtomicBool,
    arguments: OnceLock<Py<PyString>>,
    value: ObjectCell,
}

/// The verdict of every call `.value` accepted unscanned (see `PyToolCall::accepted`).
static ACCEPTED: JsonVerdict = JsonVerdict::ACCEPTED;

/// A Python object set once, by the first of any threads that race to, and then read without
/// a lock: a compare-and-swap of the pointer, where a `OnceLock` ran its `Once` to be set.
struct ObjectCell(AtomicPtr<pyo3::ffi::PyObject>);

impl ObjectCell {
    const fn new() -> Self {
        Self(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// The object, once set.
    fn get(&self) -> Option<&Py<PyAny>> {
        let stored = self.0.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is the cell's own strong reference, which is never
        // replaced or released before the cell is dropped; `Py<PyAny>` is a transparent
        // non-null pointer to the object, so the slot read as one is that reference.
        (!stored.is_null()).then(|| unsafe { &*self.0.as_ptr().cast::<Py<PyAny>>() })
    }

    /// The object stored, built by `build` when there is none yet (as [`cached`]).
    fn get_or_try_init<'py>(
        &self,
        py: Python<'py>,
        build: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(stored) = self.get() {
            return Ok(stored.bind(py).clone());
        }
        let built = build()?;
        let new = built.clone().into_ptr();
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(built),
            Err(stored) => {
                // SAFETY: `new` is the strong reference made above, which the cell did not
                // take; `stored` is the cell's, alive as long as the cell (see `get`).
                unsafe {
                    drop(Bound::from_owned_ptr(py, new));
                    Ok(Bound::from_borrowed_ptr(py, stored))
                }
            }
        }
    }
}

impl Drop for ObjectCell {
    fn drop(&mut self) {
        let slot: *mut *mut pyo3::ffi::PyObject = self.0.get_mut();
        // SAFETY: the slot holds null or the cell's own strong reference (see `get`), read
        // out once, here; `Option<Py<PyAny>>` is a pointer that is null for `None`. Dropped
        // as a `Py`, which defers the release when the interpreter is not attached.
        drop(unsafe { std::ptr::read(slot.cast::<Option<Py<PyAny>>>()) });
    }
}

/// What a `ToolCall` is made again from (`pickle`, `copy`): `(ordinal, index, id, name, type,
/// stop_reason, arguments, metadata, warnings, limits, prechecked, verdict)`, where `limits` is
/// `(max_depth, max_bytes, max_number_digits, duplicate_keys, max_calls, max_stream_bytes)` and
/// `verdict` is `(error, complete, plain_numbers)`, or None for a call whose text is not
/// scanned yet (its first reader scans it, as the original's would have).
type ToolCallParts<'py> = (
    usize,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Bound<'py, PyBytes>,
    Vec<(String, String)>,
    Vec<&'static str>,
    (usize, usize, usize, &'static str, usize, usize),
    bool,
    Option<(Option<PyCallError>, bool, bool)>,
);

/// See [`PyToolCall::validation_fields`].
type ValidationFields<'a, 'py> = (
    Option<PyCallError>,
    bool,
    Option<&'a str>,
    Option<&'a str>,
    Option<Bound<'py, PyBytes>>,
    bool,
);

impl PyToolCall {
    fn new(mut call: ToolCall) -> Self {
        let scanned = (!call.unscanned).then(|| JsonVerdict {
            error: call.error.take(),
            complete: call.complete,
            plain_numbers: call.plain_numbers,
        });
        Self {
            call,
            scanned,
            settled: OnceLock::new(),
            accepted: AtomicBool::new(false),
            arguments: OnceLock::new(),
            value: ObjectCell::new(),
        }
    }

    /// The verdict, when known without a scan.
    fn known_verdict(&self) -> Option<&JsonVerdict> {
        if self.scanned.is_some() {
            return self.scanned.as_ref();
        }
        if self.accepted.load(Ordering::Acquire) {
            return Some(&ACCEPTED);
        }
        self.settled.get()
    }

    fn verdict(&self) -> &JsonVerdict {
        if let Some(known) = self.known_verdict() {
            return known;
        }
        self.settled.get_or_init(|| {
            self.call.scan_unscanned().unwrap_or_else(|| JsonVerdict {
                error: self.call.error.clone(),
                complete: self.call.complete,
                plain_numbers: self.call.plain_numbers,
            })
        })
    }

    /// The value of a call left unscanned, when the text's outline shows nothing orjson would
    /// let past the scanner (see [`crate::outline`]: an object within the depth limit, plain
    /// numbers, no key that may repeat) and orjson accepts it. Settles the call as valid. None
    /// when any of that fails: the scan then decides.
    fn accepted_value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        if !self.call.unscanned {
            return None;
        }
        let config = &self.call.limits;
        let text = &self.call.arguments;
        let shape = outline(text);
        // A plain number has at most `PLAIN_NUMBER_CHARS` digits: under a lower digit limit
        // only the scan can tell whether one is too long.
        if shape.first != Some(b'{')
            || !shape.plain_numbers
            || config.max_number_digits < PLAIN_NUMBER_CHARS
            || shape.depth > config.max_depth
            || (shape.repeated_keys && config.duplicate_keys == DuplicateKeys::Error)
        {
            return None;
        }
        let value = orjson_value(py, text)?;
        // Another thread may have scanned it meanwhile; both verdicts agree.
        self.accepted.store(true, Ordering::Release);
        Some(value)
    }
}

#[pymethods]
impl PyToolCall {
    // `.value` is a dict or list the caller may change, and may store the call in: the
    // collector must see through it to free such a cycle. No `__clear__`, as for `Node`: the
    // call is frozen, and clearing the dict or list in the cycle breaks it.
    fn __traverse__(&self, visit: pyo3::gc::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(self.value.get())
    }

    /// A call made again from its parts (`pickle`, `copy`; see [`ToolCallParts`]).
    #[classmethod]
    #[pyo3(signature = (ordinal, index, id, name, kind, stop_reason, arguments, metadata, warnings, limits, prechecked, verdict, /))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn _rebuild(
        _cls: &Bound<'_, PyType>,
        ordinal: Count,
        index: Option<i64>,
        id: Option<String>,
        name: Option<String>,
        kind: Option<String>,
        stop_reason: Option<String>,
        arguments: &[u8],
        metadata: Vec<(String, String)>,
        warnings: Vec<String>,
        limits: (Count, Count, Count, String, Count, Count),
        prechecked: bool,
        verdict: Option<(Option<PyRef<'_, PyCallError>>, bool, bool)>,
    ) -> PyResult<Self> {
        let (max_depth, max_bytes, max_number_digits, duplicate_keys, max_calls, max_stream_bytes) =
            limits;
        let limits = scan_config(max_depth, max_bytes, max_number_digits, &duplicate_keys)?;
        let warnings = warnings
            .iter()
            .map(|w| {
                warning::ALL
                    .into_iter()
                    .find(|known| known == w)
                    .ok_or_else(|| MisuseError::new_err(format!("{w:?} is no ToolCall warning")))
            })
            .collect::<PyResult<_>>()?;
        let (error, complete, plain_numbers) =
            verdict
                .as_ref()
                .map_or((None, false, false), |(error, complete, plain_numbers)| {
                    (error.as_deref().map(Error::from), *complete, *plain_numbers)
                });
        Ok(Self::new(ToolCall {
            ordinal: ordinal.0,
            index,
            id,
            name,
            kind,
            arguments: arguments.to_vec(),
            error,
            metadata,
            warnings,
            complete,
            plain_numbers,
            // The registry that checked it is not written out: another process has none of
            // this one's, and a toolset counts on the check only when its own registry made
            // it. An empty one stands for it, which no toolset has.
            precheck_registry: prechecked.then(|| Arc::new(Registry::new())),
            unscanned: verdict.is_none(),
            limits,
            stream_limits: (max_calls.0, max_stream_bytes.0),
            stop_reason,
        }))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, ToolCallParts<'py>)> {
        let py = slf.py();
        let this = slf.get();
        let call = &this.call;
        let limits = call.limits;
        let verdict = this.known_verdict();
        rebuilt_by(
            &slf.get_type(),
            (
                call.ordinal,
                call.index,
                call.id.clone(),
                call.name.clone(),
                call.kind.clone(),
                call.stop_reason.clone(),
                PyBytes::new(py, &call.arguments),
                call.metadata.clone(),
                call.warnings.clone(),
                (
                    limits.max_depth,
                    limits.max_bytes,
                    limits.max_number_digits,
                    duplicate_policy_name(limits.duplicate_keys),
                    call.stream_limits.0,
                    call.stream_limits.1,
                ),
                call.prechecked(),
                verdict.map(|v| {
                    (
                        v.error.as_ref().map(PyCallError::from),
                        v.complete,
                        v.plain_numbers,
                    )
                }),
            ),
        )
    }

    #[getter]
    fn ordinal(&self) -> usize {
        self.call.ordinal
    }
    #[getter]
    fn index(&self) -> Option<i64> {
        self.call.index
    }
    #[getter]
    fn id(&self) -> Option<&str> {
        self.call.id.as_deref()
    }
    #[getter]
    fn name(&self) -> Option<&str> {
        self.call.name.as_deref()
    }
    #[getter]
    fn r#type(&self) -> Option<&str> {
        self.call.kind.as_deref()
    }
    /// True when the arguments were checked against the tool's schema while they streamed
    /// (the assembler had tools).
    #[getter]
    fn prechecked(&self) -> bool {
        self.call.prechecked()
    }
    /// Why the provider stopped the call, when it did (its error is then `filtered`).
    #[getter]
    fn stop_reason(&self) -> Option<&str> {
        self.call.stop_reason.as_deref()
    }
    /// The assembler's limits that differ from the defaults, as its keyword arguments.
    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (limits, defaults) = (self.call.limits, ScanConfig::default());
        let out = PyDict::new(py);
        if limits.max_depth != defaults.max_depth {
            out.set_item("max_depth", limits.max_depth)?;
        }
        if limits.max_bytes != defaults.max_bytes {
            out.set_item("max_bytes", limits.max_bytes)?;
        }
        if limits.max_number_digits != defaults.max_number_digits {
            out.set_item("max_number_digits", limits.max_number_digits)?;
        }
        if limits.duplicate_keys != defaults.duplicate_keys {
            out.set_item(
                "duplicate_keys",
                duplicate_policy_name(limits.duplicate_keys),
            )?;
        }
        let (max_calls, max_stream_bytes) = self.call.stream_limits;
        let stream = AssemblerConfig::default();
        if max_calls != stream.max_calls {
            out.set_item("max_calls", max_calls)?;
        }
        if max_stream_bytes != stream.max_stream_bytes {
            out.set_item("max_stream_bytes", max_stream_bytes)?;
        }
        Ok(out)
    }
    /// The raw argument text as received (`{}` when nothing arrived).
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        cached(py, &self.arguments, || {
            Ok(PyString::new(
                py,
                &String::from_utf8_lossy(&self.call.arguments),
            ))
        })
    }
    /// The raw argument bytes.
    #[getter]
    fn arguments_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.call.arguments)
    }
    /// True when every number in the arguments is at most 18 characters with an exponent of
    /// at most two digits: a float reads each one as written, never as infinity or zero.
    #[getter]
    fn plain_numbers(&self) -> bool {
        self.verdict().plain_numbers
    }
    /// The parsed arguments (equal to `json.loads(arguments)`), or None when they are not one
    /// complete JSON value.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.value.get_or_try_init(py, || {
            if self.known_verdict().is_none() {
                if let Some(value) = self.accepted_value(py) {
                    return Ok(value);
                }
            }
            let verdict = self.verdict();
            let call = &self.call;
            let built = if verdict.complete {
                final_value(
                    py,
                    &call.arguments,
                    verdict.plain_numbers,
                    call.last_key_wins(),
                    Floats::Float,
                )?
            } else {
                None
            };
            Ok(built.unwrap_or_else(|| py.None().into_bound(py)))
        })
    }
    #[getter]
    fn error(&self) -> Option<PyCallError> {
        self.verdict().error.as_ref().map(PyCallError::from)
    }
    /// What `Toolset.validate` reads of a call, in one crossing instead of six: `(error,
    /// prechecked, name, id, arguments_bytes or None when they are blank, plain_numbers)`,
    /// where `prechecked` says whether `registry` itself (the validating toolset's, None when
    /// it has none yet) pre-checked the call. Each getter is a method call of its own, and on
    /// a small call they cost as much as a tenth of Pydantic's validation.
    #[pyo3(name = "_validation_fields", signature = (registry, /))]
    fn validation_fields<'py>(
        &self,
        py: Python<'py>,
        registry: Option<PyRef<'_, PyToolRegistry>>,
    ) -> ValidationFields<'_, 'py> {
        let verdict = self.verdict();
        let call = &self.call;
        (
            verdict.error.as_ref().map(PyCallError::from),
            registry.is_some_and(|r| call.prechecked_by(&r.inner)),
            call.name.as_deref(),
            call.id.as_deref(),
            (!is_blank(&call.arguments)).then(|| PyBytes::new(py, &call.arguments)),
            verdict.plain_numbers,
        )
    }
    /// True when the call may be executed (no error).
    #[getter]
    fn ok(&self) -> bool {
        self.verdict().error.is_none()
    }
    /// Opaque provider fields kept for the next turn.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let loads = py.import("json")?.getattr("loads")?;
        for (k, v) in &self.call.metadata {
            match loads.call1((v,)) {
                Ok(value) => d.set_item(k, value)?,
                // An integer longer than Python reads (`sys.get_int_max_str_digits()`): an
                // opaque provider value no use to the next turn, and provider data must not
                // raise, as `set_metadata` leaves out one nested past what it can write.
                Err(e) if e.is_instance_of::<PyValueError>(py) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(d)
    }
    /// Anomalies that were handled (e.g. `cumulative_arguments`).
    #[getter]
    fn warnings(&self) -> Vec<&'static str> {
        self.call.warnings.clone()
    }
    /// Equal when every public attribute is: a replayed, pickled or copied call equals the
    /// original. `value` follows from `arguments` and `limits` and is not compared itself: it
    /// is a dict its reader may have changed. `prechecked` compares as the flag, not as the
    /// registry that checked (a copy's is not the original's).
    fn __eq__(&self, other: &Self) -> bool {
        let (a, b) = (&self.call, &other.call);
        a.ordinal == b.ordinal
            && a.index == b.index
            && a.id == b.id
            && a.name == b.name
            && a.kind == b.kind
            && a.stop_reason == b.stop_reason
            && a.arguments == b.arguments
            && a.warnings == b.warnings
            && a.limits == b.limits
            && a.stream_limits == b.stream_limits
            && a.prechecked() == b.prechecked()
            // Keys are unique, and `metadata` is a dict: the order they were set in is not
            // part of it.
            && a.metadata.len() == b.metadata.len()
            && a.metadata.iter().all(|pair| b.metadata.contains(pair))
            && self.verdict() == other.verdict()
    }
    /// Hashes what identifies a call in its turn (ordinal, id, name), all of which `==`
    /// compares and none of which changes: equal calls hash the same, and calls stay usable
    /// as dict keys as they were before they had `==`. The arguments are left out so that a
    /// hash never reads megabytes.
    fn __hash__<'py>(&self, py: Python<'py>) -> PyResult<isize> {
        let call = &self.call;
        (call.ordinal, call.id.as_deref(), call.name.as_deref())
            .into_pyobject(py)?
            .hash()
    }
    /// Names the arguments by size only: a repr lands in logs (a stream event's among them),
    /// and the arguments are model output that may quote what the user typed (a password, a
    /// card number) and may run to megabytes. `arguments` has the text.
    fn __repr__(&self) -> String {
        let opt = |v: Option<&str>| v.map_or_else(|| "None".to_owned(), |s| format!("{s:?}"));
        format!(
            "ToolCall(ordinal={}, id={}, name={}, arguments=<{} bytes>, error={})",
            self.call.ordinal,
            opt(self.call.id.as_deref()),
            opt(self.call.name.as_deref()),
            self.call.arguments.len(),
            opt(self.verdict().error.as_ref().map(|e| e.kind.slug())),
        )
    }
}

fn duplicate_policy(s: &str) -> PyResult<DuplicateKeys> {
    match s {
        "error" => Ok(DuplicateKeys::Error),
        "last_wins" => Ok(DuplicateKeys::LastWins),
        _ => Err(MisuseError::new_err(
            "duplicate_keys must be 'error' or 'last_wins'",
        )),
    }
}

/// The `duplicate_keys` argument that selects `policy`.
fn duplicate_policy_name(policy: DuplicateKeys) -> &'static str {
    match policy {
        DuplicateKeys::Error => "error",
        DuplicateKeys::LastWins => "last_wins",
    }
}

fn string_mode(s: &str) -> PyResult<StringMode> {
    match s {
        "trailing" => Ok(StringMode::Trailing),
        "off" => Ok(StringMode::Off),
        _ => Err(MisuseError::new_err("strings must be 'trailing' or 'off'")),
    }
}

/// The partial view the `partial` methods' keyword arguments ask for.
fn partial_options(strings: &str, eager_numbers: bool, flags: bool) -> PyResult<PartialOptions> {
    Ok(PartialOptions {
        strings: string_mode(strings)?,
        eager_numbers,
        flags,
    })
}

/// A count or an ordinal from Python: an `int` that is not negative. A negative one (`-1`
/// for "no limit", say) is the caller's mistake, a `MisuseError`, not the `OverflowError` of
/// a plain `usize` argument; a bool, an int to Python, is refused too.
#[derive(Clone, Copy)]
struct Count(usize);

impl FromPyObject<'_, '_> for Count {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, '_, PyAny>) -> Result<Self, Self::Error> {
        // A bool is an int to Python, but `max_bytes=True` is a slip, not a limit of one byte
        // (every call would fail `too_large`), and `name(True)` no ordinal anyone meant.
        if obj.is_instance_of::<pyo3::types::PyBool>() {
            return Err(MisuseError::new_err(format!(
                "{} is not a count: pass an int",
                if obj.is_truthy()? { "True" } else { "False" }
            )));
        }
        let value: i128 = obj.extract()?;
        usize::try_from(value)
            .map(Count)
            .map_err(|_| MisuseError::new_err(format!("{value} is not a count (0 or more)")))
    }
}

fn scan_config(
    Count(max_depth): Count,
    Count(max_bytes): Count,
    Count(max_number_digits): Count,
    duplicate_keys: &str,
) -> PyResult<ScanConfig> {
    let config = ScanConfig {
        max_depth,
        max_bytes,
        max_number_digits,
        duplicate_keys: duplicate_policy(duplicate_keys)?,
    };
    config.validate().map_err(MisuseError::new_err)?;
    Ok(config)
}

/// Borrows the bytes of a `str` or `bytes` fragment.
fn fragment<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    Err(not_text(obj))
}

#[cold]
fn not_text(obj: &Bound<'_, PyAny>) -> PyErr {
    match obj.get_type().name() {
        Ok(name) => MisuseError::new_err(format!("expected str or bytes, got {name}")),
        Err(e) => e,
    }
}

/// The UTF-8 bytes of a `str` or `bytes` fragment, for the feed path.
///
/// A `str` that is not ASCII is encoded into `scratch` from its code points: asking CPython for
/// its UTF-8 form instead allocates and caches a copy inside every fresh fragment object (most
/// fragments are used once), which cost more than the rest of `feed` on CJK-heavy arguments.
fn fragment_utf8<'a>(obj: &'a Bound<'_, PyAny>, scratch: &'a mut Vec<u8>) -> PyResult<&'a [u8]> {
    let Ok(s) = obj.cast::<PyString>() else {
        return fragment(obj);
    };
    // SAFETY: `obj` is a `str` (checked above) and the GIL is held through the `Bound`, which
    // is all `PyUnicode_IS_ASCII` needs; it reads the object's state flags without side effects.
    if unsafe { pyo3::ffi::PyUnicode_IS_ASCII(s.as_ptr()) } != 0 {
        // SAFETY: an ASCII `str` is ready (the flag is only set then) and stores one byte per
        // character, which is its UTF-8; `PyUnicode_DATA` and `PyUnicode_GET_LENGTH` read that
        // buffer and its length, which live as long as `s` borrows the object. Reading them
        // directly skips `PyUnicode_AsUTF8AndSize`, whose checks cost as much as the copy of a
        // typical fragment.
        let bytes = unsafe {
            let len = usize::try_from(pyo3::ffi::PyUnicode_GET_LENGTH(s.as_ptr())).unwrap_or(0);
            std::slice::from_raw_parts(pyo3::ffi::PyUnicode_DATA(s.as_ptr()).cast::<u8>(), len)
        };
        return Ok(bytes);
    }
    // SAFETY: pyo3 documents `data` as unsafe because it decodes CPython's state bitfield by
    // hand; that layout is the one pyo3 tests on the little-endian targets we build for, and the
    // fragment tests in tests/core compare this path with `str.encode` on every kind of string.
    let data = unsafe { s.data() }?;
    scratch.clear();
    let ok = match data {
        PyStringData::Ucs1(units) => encode_units::<u8, 2>(units, scratch),
        PyStringData::Ucs2(units) => encode_units::<u16, 3>(units, scratch),
        PyStringData::Ucs4(units) => encode_units::<u32, 4>(units, scratch),
    };
    if !ok {
        // A surrogate code point, which UTF-8 cannot hold: a JS producer split a pair between
        // fragments (quirk 41). Written as its JSON escape, the halves join across fragments
        // as `\uD83D\uDE00` does, and one left alone is a `lone_surrogate` error at its offset,
        // as on the other paths: model output never raises.
        scratch.clear();
        escape_surrogates(code_points(data), scratch);
    }
    Ok(scratch.as_slice())
}

/// A string's code points, surrogates included, whatever its storage kind (for the cold paths
/// that handle surrogates; the hot path encodes each kind on its own, see `encode_units`).
fn code_points<'a>(data: PyStringData<'a>) -> Box<dyn Iterator<Item = u32> + 'a> {
    match data {
        PyStringData::Ucs1(units) => Box::new(units.iter().map(|&u| u32::from(u))),
        PyStringData::Ucs2(units) => Box::new(units.iter().map(|&u| u32::from(u))),
        PyStringData::Ucs4(units) => Box::new(units.iter().copied()),
    }
}

/// The text of a `str` holding surrogates, each one U+FFFD (pyo3's lossy reading gives one
/// per byte of its surrogate-escaped UTF-8).
#[cold]
fn replacing_surrogates(s: &Bound<'_, PyString>) -> PyResult<String> {
    // SAFETY: as in `fragment_utf8`: `data` decodes CPython's state bitfield by hand.
    let data = unsafe { s.data() }?;
    Ok(code_points(data)
        .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect())
}

/// Appends the UTF-8 of code points to `out`, a surrogate as its JSON escape `\uXXXX`.
#[cold]
fn escape_surrogates(units: impl Iterator<Item = u32>, out: &mut Vec<u8>) {
    for unit in units {
        match char::from_u32(unit) {
            Some(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            None => out.extend_from_slice(format!("\\u{unit:04X}").as_bytes()),
        }
    }
}

/// Appends the UTF-8 encoding of a string's code units to `out`; false on a surrogate (not
/// encodable), with `out` as it was. `MAX` is the most UTF-8 bytes one unit of the string's
/// kind needs (2 for UCS-1, 3 for UCS-2, 4 for UCS-4): the room is made once and written by
/// index, without the per-byte capacity checks and the small `memcpy` calls of pushing each
/// character's bytes, which made this encoding most of the cost of feeding a fragment with CJK
/// text. The room is written uninitialised: zeroing it first (`resize`) cost as much as
/// encoding a short fragment.
fn encode_units<U: Copy + Into<u32>, const MAX: usize>(units: &[U], out: &mut Vec<u8>) -> bool {
    use std::mem::MaybeUninit;
    let room = units.len() * MAX;
    out.reserve(room);
    let start = out.len();
    let Some(buf) = out.spare_capacity_mut().get_mut(..room) else {
        return false;
    };
    let mut j = 0;
    for &unit in units {
        let c: u32 = unit.into();
        if c < 0x80 {
            buf[j] = MaybeUninit::new(c as u8);
            j += 1;
        } else if c < 0x800 {
            buf[j] = MaybeUninit::new(0xC0 | (c >> 6) as u8);
            buf[j + 1] = MaybeUninit::new(0x80 | (c & 0x3F) as u8);
            j += 2;
        } else if c < 0x1_0000 {
            if (0xD800..0xE000).contains(&c) {
                return false;
            }
            buf[j] = MaybeUninit::new(0xE0 | (c >> 12) as u8);
            buf[j + 1] = MaybeUninit::new(0x80 | ((c >> 6) & 0x3F) as u8);
            buf[j + 2] = MaybeUninit::new(0x80 | (c & 0x3F) as u8);
            j += 3;
        } else if c < 0x11_0000 {
            buf[j] = MaybeUninit::new(0xF0 | (c >> 18) as u8);
            buf[j + 1] = MaybeUninit::new(0x80 | ((c >> 12) & 0x3F) as u8);
            buf[j + 2] = MaybeUninit::new(0x80 | ((c >> 6) & 0x3F) as u8);
            buf[j + 3] = MaybeUninit::new(0x80 | (c & 0x3F) as u8);
            j += 4;
        } else {
            return false;
        }
    }
    // SAFETY: `buf` is the spare capacity right after the `start` initialised bytes, and every
    // one of its first `j` bytes was written above (each unit writes the bytes from the `j` it
    // found up to the `j` it leaves); `start + j` is within the capacity `reserve` made.
    unsafe { out.set_len(start + j) };
    true
}

#[inline]
fn optional_text<'a>(
    obj: Option<&'a Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Cow<'a, str>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.cast::<PyString>() {
            // A lone surrogate (a JS producer's split pair) is model output, which never
            // raises: U+FFFD, as `feed_chunk` reads it.
            Ok(s) => match s.to_str() {
                Ok(text) => Ok(Some(Cow::Borrowed(text))),
                Err(_) => Ok(Some(Cow::Owned(replacing_surrogates(s)?))),
            },
            Err(_) => Err(MisuseError::new_err(format!("{what} must be str or None"))),
        },
    }
}

/// A resumable JSON parser for one JSON text of any kind.
#[pyclass(name = "Scanner", module = "toolwire._core")]
struct PyScanner {
    inner: Scanner,
}

#[pymethods]
impl PyScanner {
    #[new]
    #[pyo3(
        signature = (*, max_depth=Count(64), max_bytes=Count(8_388_608), max_number_digits=Count(4300), duplicate_keys="error"),
        text_signature = "(*, max_depth=64, max_bytes=8388608, max_number_digits=4300, duplicate_keys='error')"
    )]
    fn new(
        max_depth: Count,
        max_bytes: Count,
        max_number_digits: Count,
        duplicate_keys: &str,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: Scanner::new(scan_config(
                max_depth,
                max_bytes,
                max_number_digits,
                duplicate_keys,
            )?),
        })
    }

    #[pyo3(signature = (data, /))]
    fn push(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        let bytes = fragment(data)?;
        let mut this = slf.try_borrow_mut().map_err(scanner_in_use)?;
        Ok(match this.inner.push(bytes) {
            Status::Incomplete => "incomplete",
            Status::Complete => "complete",
            Status::Invalid(_) => "invalid",
        })
    }

    #[pyo3(
        signature = (*, floats=Floats::Float),
        text_signature = "($self, *, floats='float')"
    )]
    fn finish<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        floats: Floats,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut this = slf.try_borrow_mut().map_err(scanner_in_use)?;
        if let Err(e) = this.inner.finish() {
            return Err(json_error(py, &e));
        }
        let v = final_value(
            py,
            this.inner.text(),
            this.inner.plain_numbers(),
            this.inner.config().duplicate_keys == DuplicateKeys::LastWins,
            floats,
        )?;
        optional_value(py, v)
    }

    #[pyo3(
        signature = (*, strings="trailing", eager_numbers=false, floats=Floats::Float, flags=false),
        text_signature = "($self, *, strings='trailing', eager_numbers=False, floats='float', flags=False)"
    )]
    fn partial<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        strings: &str,
        eager_numbers: bool,
        floats: Floats,
        flags: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.try_borrow().map_err(scanner_in_use)?;
        let v = crate::assembler::partial_of(
            &this.inner,
            partial_options(strings, eager_numbers, flags)?,
            &mut PySink::new(py, floats),
        )?;
        optional_value(py, v)
    }

    #[getter]
    fn error(slf: &Bound<'_, Self>) -> PyResult<Option<PyCallError>> {
        let this = slf.try_borrow().map_err(scanner_in_use)?;
        Ok(this.inner.error().map(PyCallError::from))
    }

    #[getter]
    fn complete(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(scanner_in_use)?;
        Ok(this.inner.is_complete())
    }

    #[getter]
    fn text<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let this = slf.try_borrow().map_err(scanner_in_use)?;
        Ok(PyBytes::new(py, this.inner.text()))
    }

    /// Refuses, as the Python objects with live state do (`toolwire._pickling.LiveState`),
    /// with what to do instead of pyo3's bare "cannot pickle" (`copy.copy` too).
    #[pyo3(signature = (_protocol, /))]
    fn __reduce_ex__(&self, _protocol: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "cannot pickle or copy Scanner: it holds a text being read. Make a Scanner in each \
             process and push the text (its `text`) to it",
        ))
    }
}

/// What a field of the outcomes [`PyDirectValidation`] builds holds.
enum OutcomeSlot {
    /// The same object in every success.
    Shared(Py<PyAny>),
    /// The tool's name.
    Tool,
    /// The call's id (None without one).
    CallId,
    /// The model Pydantic built.
    Model,
    /// A new empty list (the outcome's lists are the caller's to keep).
    NewList,
}

/// A direct tool as Python describes it: `(name, validate_json, strict, has_floats)`.
type DirectToolSpec<'py> = (Bound<'py, PyString>, Py<PyAny>, Option<bool>, bool);

/// A tool whose calls Pydantic alone decides (`ToolValidator.direct_json`).
struct DirectTool {
    name: Py<PyString>,
    validate_json: Py<PyAny>,
    /// Passed as `strict=`: True, or None for a model that opts out of strict mode.
    strict: Py<PyAny>,
    /// The tool has float fields: a call with a long number needs `validate`'s closer look.
    floats: bool,
}

/// The common case of `Toolset.validate` in one native call: a pre-checked call without an
/// error, to a tool Pydantic alone decides, becomes Pydantic's model in a successful outcome.
///
/// The same steps in Python cost about a tenth of Pydantic's own time on a 200-byte call: the
/// six call fields crossing as a tuple, the bytecode of the checks, and an outcome filled
/// attribute by attribute. Here the fields are read in place and the outcome, whose class
/// keeps its fields in slots, is a new instance whose slots are stored directly, at the
/// offsets its class's member descriptors give: no `__init__`, as unpickling makes one, and
/// no dict (a copied template dict with six items put in cost a twentieth of Pydantic's time).
/// The values every success shares come from Python, from the function that builds successes
/// there.
#[pyclass(frozen, name = "DirectValidation", module = "toolwire._core")]
struct PyDirectValidation {
    /// By name; found by comparing names (tool sets are small, and hashing a name cost more
    /// than comparing it with each).
    tools: Vec<(String, DirectTool)>,
    outcome_type: Py<PyType>,
    /// Every field of the outcome: the byte offset of its slot and what it holds.
    slots: Vec<(usize, OutcomeSlot)>,
    /// The keyword names of Pydantic's call, `("strict",)`.
    strict_keyword: Py<PyTuple>,
    /// Calls of at least this many argument bytes are left to `validate` (it pauses the
    /// collector while a large model is built).
    max_bytes: usize,
    /// The toolset's pre-check registry, once it is built (`_trust`): only a call that
    /// registry pre-checked is known to hold no value Pydantic alone would let through.
    trusted: std::sync::OnceLock<Arc<Registry>>,
}

#[pymethods]
impl PyDirectValidation {
    /// `template`: every field of a successful outcome with the value every success holds,
    /// but for the `per_call` ones: `(field, what)`, `what` one of `tool`, `call_id`, `model`,
    /// `list`. `outcome_type` keeps each field in a writable slot of its own. `tools`: `(name,
    /// validate_json, strict (a bool or None), has_floats)`.
    #[new]
    #[pyo3(signature = (outcome_type, template, per_call, tools, max_bytes))]
    fn new(
        py: Python<'_>,
        outcome_type: Bound<'_, PyType>,
        template: Bound<'_, PyDict>,
        per_call: Vec<(Bound<'_, PyString>, String)>,
        tools: Vec<DirectToolSpec<'_>>,
        max_bytes: usize,
    ) -> PyResult<Self> {
        let mut slots = Vec::with_capacity(template.len());
        for (field, value) in template.iter() {
            let field = field.cast_into::<PyString>()?;
            let offset = object_slot_offset(&outcome_type, &field)?;
            let what = per_call
                .iter()
                .find(|(name, _)| name.as_any().eq(&field).unwrap_or(false))
                .map(|(_, what)| what.as_str());
            let slot = match what {
                None => OutcomeSlot::Shared(value.unbind()),
                Some("tool") => OutcomeSlot::Tool,
                Some("call_id") => OutcomeSlot::CallId,
                Some("model") => OutcomeSlot::Model,
                Some("list") => OutcomeSlot::NewList,
                Some(other) => {
                    return Err(PyValueError::new_err(format!(
                        "unknown outcome slot {other:?}"
                    )))
                }
            };
            if slots.iter().any(|(taken, _)| *taken == offset) {
                return Err(PyValueError::new_err(format!("{field} shares a slot")));
            }
            slots.push((offset, slot));
        }
        for (field, _) in &per_call {
            if !template.contains(field)? {
                return Err(PyValueError::new_err(format!(
                    "the template has no field {field}"
                )));
            }
        }
        let tools = tools
            .into_iter()
            .map(|(name, validate_json, strict, floats)| {
                let tool = DirectTool {
                    name: name.clone().unbind(),
                    validate_json,
                    strict: strict.into_pyobject(py)?.into_any().unbind(),
                    floats,
                };
                Ok((name.to_str()?.to_owned(), tool))
            })
            .collect::<PyResult<_>>()?;
        Ok(Self {
            tools,
            outcome_type: outcome_type.unbind(),
            slots,
            strict_keyword: PyTuple::new(py, [pyo3::intern!(py, "strict")])?.unbind(),
            max_bytes,
            trusted: std::sync::OnceLock::new(),
        })
    }

    /// Trusts the pre-check of `registry`, the toolset's own, from now on (see `outcome`).
    /// True when it is the registry trusted; the first one given stays trusted.
    #[pyo3(name = "_trust", signature = (registry, /))]
    fn trust(&self, registry: PyRef<'_, PyToolRegistry>) -> bool {
        let trusted = self.trusted.get_or_init(|| Arc::clone(&registry.inner));
        Arc::ptr_eq(trusted, &registry.inner)
    }

    /// The successful outcome of `call`, or None when `validate`'s general path decides
    /// (another kind of call, an error, no pre-check by the trusted registry (`_trust`): a
    /// registry of other schemas may have let through what this one refuses, a tool Pydantic does not decide alone,
    /// a call whose repeated id was renamed, blank or large arguments, a long number for a
    /// float field). Raises what Pydantic
    /// raises: a `ValidationError` is the caller's to turn into an outcome.
    #[pyo3(signature = (call, /))]
    fn outcome<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Ok(call) = call.cast::<PyToolCall>() else {
            return Ok(None);
        };
        let call = call.get();
        let held = &call.call;
        let Some(tool) = held.name.as_deref().and_then(|name| self.tool(name)) else {
            return Ok(None);
        };
        let trusted = self.trusted.get().is_some_and(|r| held.prechecked_by(r));
        // A call whose repeated id the assembler renamed goes the general way, which gives its
        // outcome the id the provider sent (`wire_id`): the common case then asks nothing.
        let renamed = held
            .warnings
            .contains(&crate::assembler::warning::DUPLICATE_ID);
        if !trusted || renamed || held.arguments.len() >= self.max_bytes {
            return Ok(None);
        }
        let verdict = call.verdict();
        if verdict.error.is_some()
            || (tool.floats && !verdict.plain_numbers)
            || is_blank(&held.arguments)
        {
            return Ok(None);
        }
        let raw = PyBytes::new(py, &held.arguments);
        let model = self.validate_json(py, tool, &raw)?;
        let call_id = held.id.as_deref().into_pyobject(py)?.into_any();
        let outcome = self.new_outcome(py)?;
        for (offset, slot) in &self.slots {
            let value = match slot {
                OutcomeSlot::Shared(value) => value.bind(py).clone(),
                OutcomeSlot::Tool => tool.name.bind(py).clone().into_any(),
                OutcomeSlot::CallId => call_id.clone(),
                OutcomeSlot::Model => model.clone(),
                OutcomeSlot::NewList => PyList::empty(py).into_any(),
            };
            // SAFETY: `offset` is that of an object slot of `outcome_type` (or of a base),
            // aligned and inside the instance (`object_slot_offset` checked it against the
            // type's member descriptor and size), `outcome` is an instance of exactly that
            // type, and the slot is still NULL, as allocated (each field has a slot of its
            // own): storing a strong reference there is what the member descriptor's setter
            // does, and the instance releases it when it is deallocated. A collection that
            // runs while a list is made sees the slots not yet stored as NULL, which
            // traversal skips, as it does if an error leaves them so.
            unsafe {
                let place = outcome
                    .as_ptr()
                    .cast::<u8>()
                    .add(*offset)
                    .cast::<*mut pyo3::ffi::PyObject>();
                *place = value.into_ptr();
            }
        }
        Ok(Some(outcome))
    }
}

/// The byte offset of the slot that holds `field` in instances of `owner`: the offset its
/// member descriptor gives, once that descriptor is known to be a writable object slot of
/// `owner` or of a base, inside the instance.
fn object_slot_offset(owner: &Bound<'_, PyType>, field: &Bound<'_, PyString>) -> PyResult<usize> {
    let refused = || PyValueError::new_err(format!("{field} is not an object slot of {owner}"));
    let descriptor = owner.getattr(field)?;
    let member_type = std::ptr::addr_of_mut!(pyo3::ffi::PyMemberDescr_Type);
    if descriptor.get_type().as_type_ptr() != member_type {
        return Err(refused());
    }
    // SAFETY: the GIL is held and `descriptor` is exactly a member descriptor (checked above),
    // whose object layout is `PyMemberDescrObject`; its `d_member` points to the `PyMemberDef`
    // the owning type was made with, which lives as long as that type, and `descriptor` keeps
    // the type alive while it is read. (pyo3 types the field as `PyGetSetDef` before 3.11;
    // CPython's is a `PyMemberDef` in every version.)
    let (def, declared_by) = unsafe {
        let object = descriptor.as_ptr().cast::<pyo3::ffi::PyMemberDescrObject>();
        (
            *(*object).d_member.cast::<pyo3::ffi::PyMemberDef>(),
            (*object).d_common.d_type,
        )
    };
    // SAFETY: the GIL is held and both are live type objects (`declared_by` is kept by the
    // descriptor, which is alive).
    let inherited = unsafe { pyo3::ffi::PyType_IsSubtype(owner.as_type_ptr(), declared_by) } != 0;
    // SAFETY: reading a field of a live type object with the GIL held.
    let basicsize = unsafe { (*owner.as_type_ptr()).tp_basicsize };
    let pointer = std::mem::size_of::<*mut pyo3::ffi::PyObject>() as isize;
    let header = std::mem::size_of::<pyo3::ffi::PyObject>() as isize;
    let inside = def.offset >= header && def.offset + pointer <= basicsize;
    if !inherited
        || def.type_code != pyo3::ffi::Py_T_OBJECT_EX
        || def.flags & pyo3::ffi::Py_READONLY != 0
        || !inside
        || def.offset % pointer != 0
    {
        return Err(refused());
    }
    usize::try_from(def.offset).map_err(|_| refused())
}

impl PyDirectValidation {
    fn tool(&self, name: &str) -> Option<&DirectTool> {
        self.tools
            .iter()
            .find_map(|(known, tool)| (known == name).then_some(tool))
    }

    /// A new `outcome_type` instance, its slots all empty.
    fn new_outcome<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the GIL is held (`py`) and `outcome_type` is a live heap type. Its
        // `tp_alloc` is `PyType_GenericAlloc`, which returns a new reference to a zeroed
        // instance (every slot NULL, which the type's traversal and deallocation skip) or NULL
        // with an exception set, which `from_owned_ptr_or_err` takes over; a heap type is
        // never freed while an instance holds it.
        unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyType_GenericAlloc(self.outcome_type.bind(py).as_type_ptr(), 0),
            )
        }
    }

    /// `tool.validate_json(raw, strict=tool.strict)`, through the vectorcall protocol:
    /// Pydantic's keyword-only `strict` would otherwise cost a dict per call.
    fn validate_json<'py>(
        &self,
        py: Python<'py>,
        tool: &DirectTool,
        raw: &Bound<'py, PyBytes>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // The first slot is scratch space the callee may use (`PY_VECTORCALL_ARGUMENTS_OFFSET`).
        // Mutable: with the offset flag the callee may write to the slot before the arguments.
        let mut args = [std::ptr::null_mut(), raw.as_ptr(), tool.strict.as_ptr()];
        // SAFETY: the GIL is held (`py`); `args[1..]` holds one positional and one keyword
        // argument, live for the call, matching `nargsf` (1 positional, offset flag set, so
        // `args[0]` may be overwritten and is restored by the callee) and `kwnames` (a tuple
        // of one str). The result is a new reference or NULL with an exception set, which
        // `from_owned_ptr_or_err` takes over.
        unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyObject_Vectorcall(
                    tool.validate_json.as_ptr(),
                    args.as_mut_ptr().add(1),
                    1 | pyo3::ffi::PY_VECTORCALL_ARGUMENTS_OFFSET,
                    self.strict_keyword.as_ptr(),
                ),
            )
        }
    }
}

/// Compiled tool definitions shared by every stream (frozen, thread-safe).
#[pyclass(frozen, name = "ToolRegistry", module = "toolwire._core")]
struct PyToolRegistry {
    inner: Arc<Registry>,
    unsupported: Vec<(String, String, String)>,
    /// Each tool's name and schema as JSON text, in the order given, and the secrets: what a
    /// copy (`pickle`, `copy`) compiles again.
    sources: Vec<(String, String)>,
    secrets: std::collections::HashMap<String, Vec<String>>,
}

#[pymethods]
impl PyToolRegistry {
    #[new]
    #[pyo3(signature = (schemas, /, *, secrets=None))]
    fn new(
        py: Python<'_>,
        schemas: &Bound<'_, PyAny>,
        secrets: Option<std::collections::HashMap<String, Vec<String>>>,
    ) -> PyResult<Self> {
        let mut registry = Registry::new();
        let secrets = secrets.unwrap_or_default();
        let mut unsupported = Vec::new();
        let mut sources = Vec::new();
        let items = schemas.call_method0("items").map_err(|_| {
            MisuseError::new_err("schemas must be a mapping of tool name to JSON Schema")
        })?;
        let mut names = std::collections::HashSet::new();
        for item in items.try_iter()? {
            let (name, schema): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
            let name = name
                .cast::<PyString>()
                .map_err(|_| MisuseError::new_err("tool names must be str"))?
                .to_str()?
                .to_owned();
            names.insert(name.clone());
            let text = if let Ok(s) = schema.cast::<PyString>() {
                s.to_str()?.to_owned()
            } else {
                match dumps(py, &schema, true) {
                    Ok(text) => text,
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py) => {
                        return Err(too_deep_to_write(py, &schema, &name, e));
                    }
                    Err(e) => return Err(not_json(py, e)),
                }
            };
            let value = nesting::read(&text).map_err(|e| match e {
                ReadError::TooDeep { levels } => too_large(py, &name, levels, "depth"),
                ReadError::TooNested { levels } => too_large(py, &name, levels, "nesting"),
                ReadError::Json(e) => {
                    MisuseError::new_err(format!("schema of {name:?} is not valid JSON: {e}"))
                }
            })?;
            let hidden: Vec<&str> = secrets
                .get(&name)
                .map(|p| p.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let skipped = registry
                .add_with_secrets(&name, &value, &hidden)
                .map_err(|e| match e.kind {
                    // Deeper than the limit only with its references followed: the compiler
                    // stops at the level past it.
                    SchemaErrorKind::TooDeep => {
                        too_large(py, &name, nesting::MAX_SCHEMA_DEPTH + 1, "depth")
                    }
                    SchemaErrorKind::Malformed => {
                        MisuseError::new_err(format!("schema of {name:?} cannot be compiled: {e}"))
                    }
                })?;
            unsupported.extend(
                skipped
                    .into_iter()
                    .map(|u| (name.clone(), u.keyword, u.pointer)),
            );
            sources.push((name, text));
        }
        // A key that names no tool (a misspelt name) would leave the tool it meant with its
        // secret values shown in every violation's `got`.
        let mut strays: Vec<&String> = secrets.keys().filter(|k| !names.contains(*k)).collect();
        strays.sort();
        if let Some(stray) = strays.first() {
            return Err(MisuseError::new_err(format!(
                "secrets names no tool: {stray:?} (the tools are the keys of schemas)"
            )));
        }
        Ok(Self {
            inner: Arc::new(registry),
            unsupported,
            sources,
            secrets,
        })
    }

    /// Its constructor's arguments, the schemas as JSON text, for `copy` and `pickle`: a copy
    /// is compiled again from them.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<((Bound<'py, PyDict>,), Bound<'py, PyDict>)> {
        let schemas = PyDict::new(py);
        for (name, text) in &self.sources {
            schemas.set_item(name, text)?;
        }
        let options = [("secrets", &self.secrets)].into_py_dict(py)?;
        Ok(((schemas,), options))
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    /// Keywords the pre-check leaves to the final validation, as (tool, keyword, schema pointer).
    #[getter]
    fn unsupported(&self) -> Vec<(String, String, String)> {
        self.unsupported.clone()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.inner.contains(name)
    }

    /// The first schema violation of a complete argument text, as the pre-check would have
    /// reported it while the text streamed: for calls assembled without the pre-check, read
    /// with their assembler's `duplicate_keys` policy and limits (a text past the default
    /// limits that its assembler took is still checked to its end). Grammar errors are the
    /// assembler's.
    #[pyo3(
        signature = (name, arguments, /, *, duplicate_keys="error", max_depth=Count(64), max_bytes=Count(8_388_608), max_number_digits=Count(4300)),
        text_signature = "(self, name, arguments, /, *, duplicate_keys='error', max_depth=64, max_bytes=8388608, max_number_digits=4300)"
    )]
    fn check(
        &self,
        name: &str,
        arguments: &[u8],
        duplicate_keys: &str,
        max_depth: Count,
        max_bytes: Count,
        max_number_digits: Count,
    ) -> PyResult<Option<PyCallError>> {
        let config = scan_config(max_depth, max_bytes, max_number_digits, duplicate_keys)?;
        Ok(self
            .inner
            .check_with(name, arguments, config)
            .as_ref()
            .map(PyCallError::from))
    }
}

fn registry_of(tools: &Bound<'_, PyAny>) -> PyResult<Arc<Registry>> {
    if let Ok(r) = tools.cast::<PyToolRegistry>() {
        return Ok(Arc::clone(&r.get().inner));
    }
    // A Toolset builds its registry on first use: its own error (a schema that does not
    // compile) is the one to show, not a complaint about the argument's type.
    let attr = tools
        .getattr(pyo3::intern!(tools.py(), "registry"))
        .map_err(|e| {
            if e.is_instance_of::<PyAttributeError>(tools.py()) {
                MisuseError::new_err("tools must be a Toolset or a ToolRegistry")
            } else {
                e
            }
        })?;
    let r = attr
        .cast::<PyToolRegistry>()
        .map_err(|_| MisuseError::new_err("tools.registry must be a ToolRegistry"))?;
    Ok(Arc::clone(&r.get().inner))
}

/// The calls `finish` returned unscanned (see `PyAssembler::unsettled`). One is kept without
/// a vector: most streams have one call, and a vector of one was an allocation and a free on
/// every stream's `finish`.
#[derive(Default)]
enum Unsettled {
    #[default]
    None,
    One(Py<PyToolCall>),
    Many(Vec<Py<PyToolCall>>),
}

// No larger than the vector it replaces: a larger assembler object crossed the size past which
// every move of a new one (`Assembler()`) is a `memcpy` call.
const _: () =
    assert!(std::mem::size_of::<Unsettled>() == std::mem::size_of::<Vec<Py<PyToolCall>>>());

impl Unsettled {
    fn push(&mut self, call: Py<PyToolCall>) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(call),
            Self::One(first) => Self::Many(vec![first, call]),
            Self::Many(mut calls) => {
                calls.push(call);
                Self::Many(calls)
            }
        };
    }

    fn iter(&self) -> std::slice::Iter<'_, Py<PyToolCall>> {
        match self {
            Self::None => [].iter(),
            Self::One(call) => std::slice::from_ref(call).iter(),
            Self::Many(calls) => calls.iter(),
        }
    }
}

/// Assembles the tool calls of one response stream.
#[pyclass(subclass, name = "Assembler", module = "toolwire._core")]
struct PyAssembler {
    /// The assembler inside the raw-SSE decoder, so `feed` and `feed_sse` share one state.
    /// Boxed: inline it made the object 960 bytes, copied at each of the moves that make
    /// a new object, and too large for Python's small-object allocator.
    decoder: Box<StreamDecoder>,
    /// Reused buffer for the UTF-8 form of non-ASCII `str` fragments.
    scratch: Vec<u8>,
    /// The Python `str` of the last new path of an open string's progress item, which the
    /// string's later items reuse.
    last_path: Option<Py<PyString>>,
    /// The last ordinal handed to Python and its `int`: `feed` returns one per fragment and
    /// each drain's items carry one, mostly the same call's.
    ordinal_int: Option<(usize, Py<PyInt>)>,
    /// The last `index` of `feed` that was an exact `int`, and its value: a stream passes the
    /// same object fragment after fragment, and an `int` it holds cannot change value, so a
    /// pointer comparison settles it without reading the number again.
    last_index: Option<(Py<PyAny>, i64)>,
    /// The keyword names tuple of the last `feed` and the parameter of each of its names: a
    /// call site passes the same constant tuple at every fragment, so its names are matched
    /// once (see `feed_arguments`).
    feed_kwnames: Option<(Py<PyTuple>, [u8; FEED_KEYWORDS.len()])>,
    /// Called with the assembler before `finish` (see `_flush_before_finish`).
    before_finish: Option<Py<PyAny>>,
    /// The caller's list that progress items are appended to as they arrive (`progress_into`).
    progress_into: Option<Py<PyList>>,
    /// With `track_progress`, the items `finish` released (the last fragments', a held one's
    /// included), kept for the next `drain_progress`: the calls they were recorded in are gone.
    finished_progress: Option<Py<PyList>>,
    /// The calls `finish` returned without their verdict (their text not scanned yet), until
    /// `failed` reads them: the core's own answer after `finish` does not know it.
    unsettled: Unsettled,
    /// Whether one of `unsettled` has an error, once `failed` has read them.
    unsettled_failed: bool,
}

impl PyAssembler {
    /// Gives the call at `ordinal` (`interrupt_from`: the calls from it on) a verdict the
    /// caller's path reached on its own (`change`: lost, stopped, mismatched, cut), then hands
    /// the progress items on.
    fn change_call(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        ordinal: Count,
        change: impl FnOnce(&mut Assembler, usize) -> Result<(), Misuse>,
    ) -> PyResult<()> {
        let Count(ordinal) = ordinal;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        change(this.decoder.assembler_mut(), ordinal).map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    /// `Assembler.feed(index, /, *, id, name, arguments, type)`, once `feed_entry` has matched
    /// the arguments: each is absent (`None`) or the object passed, `None` included.
    fn feed(
        &mut self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        keywords: [Option<&Bound<'_, PyAny>>; FEED_KEYWORDS.len()],
    ) -> PyResult<usize> {
        let ordinal = self.feed_delta(py, index, keywords)?;
        self.flush_progress(py)?;
        Ok(ordinal)
    }

    /// Appends the progress items that arrived to the `progress_into` list, if there is one.
    #[inline]
    fn flush_progress(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.progress_into.is_some() {
            self.drain_progress_to(py, None)
        } else {
            Ok(())
        }
    }

    /// Appends the progress items since the last drain to `list` (`None`: the `progress_into`
    /// list, borrowed in place: no method can replace it while `self` is borrowed), as
    /// (ordinal, JSON Pointer, appended text).
    fn drain_progress_to(
        &mut self,
        py: Python<'_>,
        list: Option<&Bound<'_, PyList>>,
    ) -> PyResult<()> {
        let mut failure = None;
        let Self {
            decoder,
            last_path,
            ordinal_int,
            progress_into,
            ..
        } = self;
        let Some(list) = list.or_else(|| progress_into.as_ref().map(|list| list.bind(py))) else {
            return Ok(());
        };
        decoder
            .assembler_mut()
            .drain_progress_each(|ordinal, path, text, complete, continues| {
                if failure.is_some() || (continues && text.is_empty()) {
                    // The rest of a string already announced, adding nothing (its closing
                    // quote, or a character still cut): in token-sized streams a closing quote
                    // often arrives alone, so these would be a good share of the items.
                    return;
                }
                // A long string's items over many drains share one path: reuse its Python str.
                // Only an item that continues a string can repeat the last path, and only an
                // open string's path can come again, so other items skip the cache. The path
                // is compared with the cached `str`'s own characters: a copy of its bytes kept
                // beside it cost an allocation per stream and a copy per new path.
                let path = match last_path.as_ref() {
                    Some(cached) if continues && str_is(cached.bind(py), path) => {
                        cached.clone_ref(py)
                    }
                    _ => match utf8_str(py, path) {
                        Ok(new) => {
                            if !complete {
                                // Released as a `Bound`, at once: a `Py` dropped here would
                                // wait in pyo3's pool until its next entry point (`feed`
                                // enters without raising pyo3's attach count).
                                if let Some(old) = last_path.replace(new.clone().unbind()) {
                                    drop(old.into_bound(py));
                                }
                            }
                            new.unbind()
                        }
                        Err(err) => {
                            failure = Some(err);
                            return;
                        }
                    },
                };
                let int = ordinal_object(py, ordinal_int, ordinal);
                let appended = item_text(py, text)
                    .and_then(|text| append_item(list, int, path.into_bound(py), text));
                if let Err(err) = appended {
                    failure = Some(err);
                }
            });
        match failure {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The value of `feed`'s `index` (not `None`).
    #[inline]
    fn index_value(&mut self, index: &Bound<'_, PyAny>) -> PyResult<i64> {
        if let Some((last, value)) = &self.last_index {
            if last.as_ptr() == index.as_ptr() {
                return Ok(*value);
            }
        }
        let value = index
            .extract::<i64>()
            .map_err(|_| MisuseError::new_err("index must be int or None"))?;
        // Only an exact `int` is remembered: a subclass or an `__index__` object may answer
        // differently next time.
        if index.is_exact_instance_of::<PyInt>() {
            if let Some((old, _)) = self.last_index.replace((index.clone().unbind(), value)) {
                // Released as a `Bound`, at once (see `drain_progress_to`).
                drop(old.into_bound(index.py()));
            }
        }
        Ok(value)
    }

    /// [`PyAssembler::feed`] before its progress items are handed out.
    fn feed_delta(
        &mut self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        [id, name, arguments, r#type, start]: [Option<&Bound<'_, PyAny>>; FEED_KEYWORDS.len()],
    ) -> PyResult<usize> {
        let index = if index.is_none() {
            None
        } else {
            Some(self.index_value(index)?)
        };
        let mut serialized = String::new();
        let max_depth = self.decoder.assembler().config().scan.max_depth;
        let arguments = match arguments {
            None => None,
            Some(a) => read_arguments(py, a, &mut self.scratch, &mut serialized, max_depth)?,
        };
        let assembler = self.decoder.assembler_mut();
        let absent = |o: Option<&Bound<'_, PyAny>>| o.map_or(true, |o| o.is_none());
        if let (Some(index), Some(Arguments::Text(text)), true) = (
            index,
            arguments,
            absent(id) && absent(name) && absent(r#type),
        ) {
            // The common delta: a fragment alone, which the short path settles when plain
            // appending is all the rules would do.
            if let Some(ordinal) = assembler.feed_continuation(index, text) {
                return Ok(ordinal);
            }
        }
        let (id, name, kind) = (
            optional_text(id, "id")?,
            optional_text(name, "name")?,
            optional_text(r#type, "type")?,
        );
        let delta = Delta {
            index,
            id: id.as_deref(),
            name: name.as_deref(),
            kind: kind.as_deref(),
            arguments,
            start: start.map_or(Ok(false), |s| s.is_truthy())?,
        };
        assembler.feed(&delta).map_err(|e| misuse(&e))
    }
}

/// `arguments` of `Assembler.feed` as the core takes them: a `str` or `bytes` as text (encoded
/// into `scratch` when needed), any other JSON value whole (written into `serialized`), `None`
/// as absent.
#[inline]
fn read_arguments<'a>(
    py: Python<'_>,
    a: &'a Bound<'_, PyAny>,
    scratch: &'a mut Vec<u8>,
    serialized: &'a mut String,
    max_depth: usize,
) -> PyResult<Option<Arguments<'a>>> {
    if a.is_none() {
        Ok(None)
    } else if a.is_instance_of::<PyString>() || a.is_instance_of::<PyBytes>() {
        Ok(Some(Arguments::Text(fragment_utf8(a, scratch)?)))
    } else if a.is_instance_of::<PyDict>()
        || a.is_instance_of::<PyList>()
        || a.is_instance_of::<PyInt>()
        || a.is_instance_of::<PyFloat>()
    {
        // A scalar (a provider sending `42` as the arguments) is a value too: the core reports
        // it as no object, and never splices it into a call's text.
        *serialized = dump_arguments(py, a, max_depth)?;
        Ok(Some(Arguments::Value(serialized.as_bytes())))
    } else {
        Err(MisuseError::new_err(
            "arguments must be str, bytes, dict, list, a number, a bool or None",
        ))
    }
}

/// The keyword parameters of `Assembler.feed`, in the order `PyAssembler::feed` takes them.
const FEED_KEYWORDS: [&str; 5] = ["id", "name", "arguments", "type", "start"];

/// `Assembler.feed` is installed by hand (see `install_feed`) so that its arguments are read
/// straight from CPython's vectorcall array. It runs once per streamed fragment, and pyo3's
/// generic matching (each keyword name decoded to UTF-8, then compared byte by byte with each
/// parameter) cost more than the delta's own work. Call sites pass keyword names as interned
/// constants, so comparing pointers with the interned parameter names settles nearly every
/// match; an equal but distinct `str` still matches by value.
const FEED_DOC: &std::ffi::CStr =
    c"feed($self, index, /, *, id=None, name=None, arguments=None, type=None, start=False)
--

Feeds one tool-call delta and returns the ordinal of the call it went to.";

static FEED_NAMES: PyOnceLock<[Py<PyString>; FEED_KEYWORDS.len()]> = PyOnceLock::new();

/// Replaces the class's `feed` with a `METH_FASTCALL | METH_KEYWORDS` method descriptor.
fn install_feed(py: Python<'_>) -> PyResult<()> {
    install_feed_into(&py.get_type::<PyAssembler>())
}

/// Gives `cls`, a Python subclass of `Assembler` that does not define `feed` itself, a
/// `feed` descriptor of its own, the same as the core class's. CPython checks that `self` is
/// an instance of the descriptor's class on every call: for an instance of a subclass, with
/// the core class's descriptor, that walked the subclass's MRO once per fragment.
#[pyfunction]
#[pyo3(name = "_install_feed", signature = (cls, /))]
fn py_install_feed(cls: &Bound<'_, PyType>) -> PyResult<()> {
    if !cls.is_subclass_of::<PyAssembler>()? {
        return Err(PyTypeError::new_err(format!(
            "{} is not a subclass of Assembler",
            cls.name()?
        )));
    }
    let own = cls.getattr(pyo3::intern!(cls.py(), "__dict__"))?;
    if own.contains(pyo3::intern!(cls.py(), "feed"))? {
        return Err(PyValueError::new_err(format!(
            "{} defines feed itself",
            cls.name()?
        )));
    }
    install_feed_into(cls)
}

/// Sets `ty.feed` to a method descriptor of `feed_entry` made for `ty` (`PyAssembler` or a
/// subclass of it: `feed_entry` relies on that).
fn install_feed_into(ty: &Bound<'_, PyType>) -> PyResult<()> {
    let py = ty.py();
    // The descriptor keeps a pointer to its definition for as long as the class lives, so the
    // definition is leaked: one small struct per class given one.
    let def = Box::leak(Box::new(pyo3::ffi::PyMethodDef {
        ml_name: c"feed".as_ptr(),
        ml_meth: pyo3::ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: feed_entry,
        },
        ml_flags: pyo3::ffi::METH_FASTCALL | pyo3::ffi::METH_KEYWORDS,
        ml_doc: FEED_DOC.as_ptr(),
    }));
    // SAFETY: `ty` is a live type object and `def` a valid, 'static method definition with a
    // function of the signature its flags declare; the call returns a new reference or NULL
    // with an exception set, which `from_owned_ptr_or_err` takes over.
    let descriptor = unsafe {
        Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyDescr_NewMethod(ty.as_type_ptr(), def))
    }?;
    ty.setattr("feed", descriptor)
}

/// The C entry point of `Assembler.feed`.
///
/// # Safety
/// Called by CPython only, through the method descriptor `install_feed` creates, which
/// guarantees what `feed_arguments` relies on.
unsafe extern "C" fn feed_entry(
    slf: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    // SAFETY: CPython calls a method's C function only from a thread attached to the
    // interpreter, for the whole call. (pyo3's own attach count is not raised, so a `Py`
    // dropped in here would be released at the next pyo3 entry rather than at once; this path
    // drops none: it only borrows.)
    let py = unsafe { Python::assume_attached() };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { feed_arguments(py, slf, args, nargs, kwnames) }
    }));
    let result = match outcome {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "Assembler.feed panicked".to_owned());
            Err(pyo3::panic::PanicException::new_err(message))
        }
    };
    match result {
        Ok(int) => int.into_ptr(),
        Err(err) => {
            err.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// Matches `feed`'s arguments and calls `PyAssembler::feed`.
///
/// # Safety
/// The vectorcall protocol of a method descriptor: `slf` is a live object; `args` holds
/// `nargs` positional values followed by one value per name of `kwnames` (a tuple of `str`, or
/// NULL when there are none); all are borrowed for the duration of the call.
unsafe fn feed_arguments(
    py: Python<'_>,
    slf: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> PyResult<Bound<'_, PyInt>> {
    use pyo3::ffi;
    let positional = usize::try_from(nargs).unwrap_or(0);
    // SAFETY: `slf` is live (contract).
    let slf = unsafe { Borrowed::from_ptr(py, slf) };
    // SAFETY: CPython's method descriptor checks that `self` is an instance of the class it was
    // created for (`descr_check`) before calling the C function; `install_feed_into` created it
    // for `PyAssembler` or a subclass of it. Checking again would walk the MRO of every Python
    // subclass on each call.
    let slf = unsafe { slf.cast_unchecked::<PyAssembler>() };
    // Borrowed first, for the keyword names it remembers; a failure is raised only after the
    // arguments' own errors, as before.
    let mut borrowed = slf.try_borrow_mut();
    // Borrowed pointers throughout: no reference count changes on the hot path.
    let mut keywords: [*mut ffi::PyObject; FEED_KEYWORDS.len()] =
        [std::ptr::null_mut(); FEED_KEYWORDS.len()];
    if !kwnames.is_null() {
        let known = match &borrowed {
            Ok(assembler) => match &assembler.feed_kwnames {
                Some((names, slots)) if names.as_ptr() == kwnames => Some(*slots),
                _ => None,
            },
            Err(_) => None,
        };
        if let Some(slots) = known {
            // SAFETY: the kept tuple is `kwnames`, live (contract), whose size is at most
            // `slots.len()` (`match_keywords`).
            let count = usize::try_from(unsafe { ffi::PyTuple_GET_SIZE(kwnames) }).unwrap_or(0);
            for (k, &slot) in slots.iter().enumerate().take(count) {
                // SAFETY: `k` is below the tuple's size, so `k + positional` is below the
                // length of `args` (contract); the value is live for the call.
                keywords[usize::from(slot)] = unsafe { *args.add(positional + k) };
            }
        } else {
            // SAFETY: forwarded from this function's contract.
            let slots = unsafe { match_keywords(py, args, positional, kwnames, &mut keywords) }?;
            if let (Ok(assembler), Some(slots)) = (&mut borrowed, slots) {
                // A tuple cannot change, and the one kept cannot be freed (and its address
                // reused) while it is held: the same pointer is the same names.
                // SAFETY: `kwnames` is a live tuple (contract).
                let names = unsafe { Borrowed::from_ptr(py, kwnames).cast_unchecked::<PyTuple>() };
                let kept = (names.to_owned().unbind(), slots);
                if let Some((old, _)) = assembler.feed_kwnames.replace(kept) {
                    // Released as a `Bound`, at once (see `drain_progress_to`).
                    drop(old.into_bound(py));
                }
            }
        }
    }
    if positional != 1 {
        return Err(PyTypeError::new_err(if positional == 0 {
            "feed() missing 1 required positional argument: 'index'".to_owned()
        } else {
            format!("feed() takes 1 positional argument but {positional} were given")
        }));
    }
    let mut assembler = borrowed.map_err(in_use)?;
    // SAFETY: `args[0]` (one positional argument, checked above) is live (contract).
    let index = unsafe { Borrowed::from_ptr(py, *args) };
    // Each slot by hand: `keywords.map` compiled to an out-of-line loop with a drop guard that
    // cost about a tenth of a fragment's `feed` without progress.
    // SAFETY: each non-NULL entry was taken from `args` above.
    let keyword = |p: *mut ffi::PyObject| unsafe { Borrowed::from_ptr_or_opt(py, p) };
    let [id, name, arguments, kind, start] = keywords;
    let (id, name, arguments, kind, start) = (
        keyword(id),
        keyword(name),
        keyword(arguments),
        keyword(kind),
        keyword(start),
    );
    let ordinal = assembler.feed(
        py,
        &index,
        [
            id.as_deref(),
            name.as_deref(),
            arguments.as_deref(),
            kind.as_deref(),
            start.as_deref(),
        ],
    )?;
    Ok(ordinal_object(py, &mut assembler.ordinal_int, ordinal).clone())
}

/// Matches `feed`'s keyword names to its parameters, setting `keywords` (one value per
/// parameter) from `args`; returns the parameter of each name, in order, when there are at
/// most as many names as parameters (always, from a Python call: a name given twice is refused
/// before the call).
///
/// # Safety
/// As for `feed_arguments`, with `kwnames` not NULL.
unsafe fn match_keywords(
    py: Python<'_>,
    args: *const *mut pyo3::ffi::PyObject,
    positional: usize,
    kwnames: *mut pyo3::ffi::PyObject,
    keywords: &mut [*mut pyo3::ffi::PyObject; FEED_KEYWORDS.len()],
) -> PyResult<Option<[u8; FEED_KEYWORDS.len()]>> {
    use pyo3::ffi;
    let interned = FEED_NAMES.get_or_init(py, || {
        FEED_KEYWORDS.map(|name| PyString::intern(py, name).unbind())
    });
    // SAFETY: a non-NULL `kwnames` is a live tuple (contract).
    let count = usize::try_from(unsafe { ffi::PyTuple_GET_SIZE(kwnames) }).unwrap_or(0);
    let mut slots = [0u8; FEED_KEYWORDS.len()];
    for k in 0..count {
        // SAFETY: `k` is below the tuple's size, `k + positional` below the length of `args`
        // (contract); both items are live for the call.
        let (key, value) = unsafe {
            (
                ffi::PyTuple_GET_ITEM(kwnames, k as ffi::Py_ssize_t),
                *args.add(positional + k),
            )
        };
        let slot = match interned.iter().position(|name| name.as_ptr() == key) {
            Some(slot) => slot,
            // SAFETY: `key` is a live item of `kwnames`.
            None => keyword_slot(&unsafe { Borrowed::from_ptr(py, key) })?,
        };
        keywords[slot] = value;
        if let Some(kept) = slots.get_mut(k) {
            // A slot is below `FEED_KEYWORDS.len()`, 5.
            *kept = slot as u8;
        }
    }
    Ok((count <= slots.len()).then_some(slots))
}

/// The parameter a keyword name that is not one of the interned names stands for.
#[cold]
fn keyword_slot(key: &Borrowed<'_, '_, PyAny>) -> PyResult<usize> {
    let key = key.cast::<PyString>()?;
    let text = key.to_str()?;
    if let Some(slot) = FEED_KEYWORDS.iter().position(|name| *name == text) {
        return Ok(slot);
    }
    Err(PyTypeError::new_err(if text == "index" {
        "feed() got some positional-only arguments passed as keyword arguments: 'index'".to_owned()
    } else {
        format!("feed() got an unexpected keyword argument '{text}'")
    }))
}

#[pymethods]
impl PyAssembler {
    #[new]
    #[pyo3(
        signature = (*, tools=None, max_depth=Count(64), max_bytes=Count(8_388_608), max_number_digits=Count(4300), duplicate_keys="error", track_progress=false, progress_into=None, max_calls=Count(1024), max_stream_bytes=Count(33_554_432)),
        text_signature = "(*, tools=None, max_depth=64, max_bytes=8388608, max_number_digits=4300, duplicate_keys='error', track_progress=False, progress_into=None, max_calls=1024, max_stream_bytes=33554432)"
    )]
    // One parameter per keyword of the Python constructor, which pyo3 matches by name.
    #[allow(clippy::too_many_arguments)]
    fn new(
        tools: Option<&Bound<'_, PyAny>>,
        max_depth: Count,
        max_bytes: Count,
        max_number_digits: Count,
        duplicate_keys: &str,
        track_progress: bool,
        progress_into: Option<Bound<'_, PyList>>,
        max_calls: Count,
        max_stream_bytes: Count,
    ) -> PyResult<Self> {
        let config = AssemblerConfig {
            scan: scan_config(max_depth, max_bytes, max_number_digits, duplicate_keys)?,
            track_progress: track_progress || progress_into.is_some(),
            max_calls: max_calls.0,
            max_stream_bytes: max_stream_bytes.0,
        };
        let registry = match tools.filter(|t| !t.is_none()) {
            Some(t) => Some(registry_of(t)?),
            None => None,
        };
        // Made straight in its box: built first and then boxed, the decoder (the assembler
        // inside it) was copied at each of four moves, a tenth of an empty stream's cost.
        let decoder = StreamDecoder::boxed(config, registry).map_err(|e| misuse(&e))?;
        Ok(Self {
            decoder,
            scratch: Vec::new(),
            last_path: None,
            ordinal_int: None,
            last_index: None,
            feed_kwnames: None,
            before_finish: None,
            progress_into: progress_into.map(Bound::unbind),
            finished_progress: None,
            unsettled: Unsettled::default(),
            unsettled_failed: false,
        })
    }

    // The `progress_into` list and the `finish` hook are the caller's, and may hold the
    // assembler (a list it keeps beside it, a hook that closes over it): the collector must
    // see through them to free such a cycle, and the calls' working state with it.
    fn __traverse__(&self, visit: pyo3::gc::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.before_finish)?;
        visit.call(&self.progress_into)?;
        visit.call(&self.finished_progress)?;
        for call in self.unsettled.iter() {
            visit.call(call)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.before_finish = None;
        self.progress_into = None;
        self.finished_progress = None;
        self.unsettled = Unsettled::default();
    }

    /// A per-call stop event for the open call under `index`.
    #[pyo3(signature = (index, /))]
    fn end(slf: &Bound<'_, Self>, py: Python<'_>, index: Option<i64>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        if this.decoder.assembler().is_finished() {
            // As for a key that names a call: the stream is over, whatever the key.
            return Err(misuse(&Misuse::Finished));
        }
        if let Some(o) = this.decoder.assembler().ordinal_of(index) {
            this.decoder
                .assembler_mut()
                .end_call(o)
                .map_err(|e| misuse(&e))?;
        }
        this.flush_progress(py)
    }

    #[pyo3(signature = (index, key, value, /))]
    fn set_metadata(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        index: Option<i64>,
        key: &str,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        // Written out before the assembler is taken: `json.dumps` runs the caller's code (a
        // dict subclass's `items`), which may use the assembler or let another thread in.
        let json = match dumps(py, value, true) {
            Ok(json) => json,
            // An opaque provider value nested past what `json.dumps` can write: no use to the
            // next turn in part, and provider data must not raise. It was dropped without a
            // word; the call's warning now says the next turn lacks a field.
            // So is one with an integer longer than Python writes (`ValueError`, as for a value
            // that is not JSON data: told apart by finding such an integer), as the raw path
            // leaves out one longer than Python reads.
            Err(e)
                if e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py)
                    || (e.is_instance_of::<PyValueError>(py) && holds_unwritable_int(value)?) =>
            {
                let mut this = slf.try_borrow_mut().map_err(in_use)?;
                return this
                    .decoder
                    .assembler_mut()
                    .drop_metadata_for_key(index)
                    .map_err(|e| misuse(&e));
            }
            Err(e) => return Err(not_json(py, e)),
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .assembler_mut()
            .set_metadata_for_key(index, key, &json)
            .map_err(|e| misuse(&e))
    }

    /// The transport broke off: calls with no argument text yet become `truncated`, not `{}`.
    #[pyo3(signature = (reason, /))]
    fn interrupt(slf: &Bound<'_, Self>, py: Python<'_>, reason: &str) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .assembler_mut()
            .interrupt(reason)
            .map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    /// Whether `feed` would start a new call for this delta rather than continue an open one.
    #[pyo3(signature = (index, /, *, id=None, name=None, arguments=None))]
    fn starts_call(
        slf: &Bound<'_, Self>,
        index: Option<i64>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> PyResult<bool> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        Ok(this.decoder.assembler_mut().starts_call(&Delta {
            index,
            id,
            name,
            kind: None,
            arguments: arguments.map(|a| Arguments::Text(a.as_bytes())),
            start: false,
        }))
    }

    /// The name received so far for a call.
    #[pyo3(signature = (ordinal, /))]
    fn name(slf: &Bound<'_, Self>, ordinal: Count) -> PyResult<Option<String>> {
        let Count(ordinal) = ordinal;
        let this = slf.try_borrow().map_err(in_use)?;
        if ordinal >= this.decoder.assembler().len() {
            return Err(misuse(&Misuse::NoSuchCall(ordinal)));
        }
        Ok(this
            .decoder
            .assembler()
            .name(ordinal)
            .filter(|n| !n.is_empty())
            .map(str::to_owned))
    }

    /// The id of a call, if one arrived.
    #[pyo3(signature = (ordinal, /))]
    fn id(slf: &Bound<'_, Self>, ordinal: Count) -> PyResult<Option<String>> {
        let Count(ordinal) = ordinal;
        let this = slf.try_borrow().map_err(in_use)?;
        if ordinal >= this.decoder.assembler().len() {
            return Err(misuse(&Misuse::NoSuchCall(ordinal)));
        }
        Ok(this.decoder.assembler().id(ordinal).map(str::to_owned))
    }

    /// The argument bytes a call holds so far, as appended.
    #[pyo3(signature = (ordinal, /))]
    fn arguments_so_far<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        ordinal: Count,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let Count(ordinal) = ordinal;
        let this = slf.try_borrow().map_err(in_use)?;
        match this.decoder.assembler().arguments(ordinal) {
            Some(text) => Ok(PyBytes::new(py, text)),
            None => Err(misuse(&Misuse::NoSuchCall(ordinal))),
        }
    }

    /// An event that may have carried part of a call could not be read: every call whose
    /// arguments were still open becomes a `lost_event` error (see [`Assembler::lose_event`]).
    #[pyo3(signature = (reason, /))]
    fn lose_event(slf: &Bound<'_, Self>, py: Python<'_>, reason: &str) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .assembler_mut()
            .lose_event(reason)
            .map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    /// A problem of the stream read outside the core (`feed_chunk`), at its 1-based event
    /// number: `stream_errors` tells it as it tells the raw path's own.
    #[pyo3(name = "_stream_error", signature = (kind, event, message, /))]
    fn stream_error(slf: &Bound<'_, Self>, kind: &str, event: u64, message: &str) -> PyResult<()> {
        let kind = StreamErrorKind::from_slug(kind)
            .ok_or_else(|| MisuseError::new_err(format!("no stream error kind {kind:?}")))?;
        slf.try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .record_error(kind, event, message);
        Ok(())
    }

    /// Choice `index` of a Chat stream read outside the core (`feed_chunk`) carried text or tool
    /// calls at event `event`, while choice `chosen` is assembled: `stream_errors` tells it as
    /// `other_choice`, as the raw path tells it.
    #[pyo3(name = "_other_choice", signature = (event, chosen, index, /))]
    fn other_choice(slf: &Bound<'_, Self>, event: u64, chosen: i64, index: i64) -> PyResult<()> {
        slf.try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .record_other_choice(event, chosen, index);
        Ok(())
    }

    /// The call at `ordinal` lost part of its arguments (an event that carried them could not
    /// be read): it becomes a `lost_event` error, never executed, whatever it holds.
    #[pyo3(signature = (ordinal, reason, /))]
    fn lose_arguments(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        ordinal: Count,
        reason: &str,
    ) -> PyResult<()> {
        Self::change_call(slf, py, ordinal, |a, o| a.lose_arguments(o, reason))
    }

    /// The provider stopped the call at `ordinal` alone: it is `filtered`, never executed.
    #[pyo3(signature = (ordinal, reason, /))]
    fn _stop_call(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        ordinal: Count,
        reason: &str,
    ) -> PyResult<()> {
        Self::change_call(slf, py, ordinal, |a, o| a.stop_call(o, reason))
    }

    /// The call at `ordinal` became an `arguments_mismatch` error with `message` (a recorded
    /// call replayed), never executed, whatever it holds.
    #[pyo3(signature = (ordinal, message, /))]
    fn _mismatch_arguments(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        ordinal: Count,
        message: &str,
    ) -> PyResult<()> {
        Self::change_call(slf, py, ordinal, |a, o| a.mismatch_arguments(o, message))
    }

    fn limit_reached(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .assembler_mut()
            .limit_reached()
            .map_err(|e| misuse(&e))
    }

    #[pyo3(signature = (reason, /))]
    fn stop(slf: &Bound<'_, Self>, py: Python<'_>, reason: &str) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .assembler_mut()
            .stop(reason)
            .map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    #[pyo3(signature = (reason, /))]
    fn stop_all(slf: &Bound<'_, Self>, py: Python<'_>, reason: &str) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .assembler_mut()
            .stop_all(reason)
            .map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    fn drain_errors(slf: &Bound<'_, Self>) -> PyResult<Vec<(usize, PyCallError)>> {
        Ok(slf
            .try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .assembler_mut()
            .drain_errors()
            .iter()
            .map(|(o, e)| (*o, PyCallError::from(e)))
            .collect())
    }

    fn drain_progress<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        if let Some(released) = this.finished_progress.take() {
            return Ok(released.into_bound(py));
        }
        let list = PyList::empty(py);
        this.drain_progress_to(py, Some(&list))?;
        Ok(list)
    }

    /// True once `finish` ran.
    #[getter]
    fn finished(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.assembler().is_finished())
    }

    /// True when some call already has an error no later input can fix.
    #[getter]
    fn failed(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        if this.decoder.assembler_mut().has_certain_error() || this.unsettled_failed {
            return Ok(true);
        }
        // Calls `finish` left unscanned: their first reader scans them (once, kept by each).
        let unsettled = std::mem::take(&mut this.unsettled);
        this.unsettled_failed = unsettled
            .iter()
            .any(|call| call.get().verdict().error.is_some());
        Ok(this.unsettled_failed)
    }

    #[pyo3(
        signature = (ordinal, /, *, strings="trailing", eager_numbers=false, floats=Floats::Float, flags=false),
        text_signature = "($self, ordinal, /, *, strings='trailing', eager_numbers=False, floats='float', flags=False)"
    )]
    fn partial<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        ordinal: Count,
        strings: &str,
        eager_numbers: bool,
        floats: Floats,
        flags: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Count(ordinal) = ordinal;
        let view = partial_options(strings, eager_numbers, flags)?;
        let v = slf
            .try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .assembler_mut()
            .partial_into(ordinal, view, &mut PySink::new(py, floats))
            .map_err(|e| match e {
                // A UI reading the last call late is not told to start a new stream.
                Misuse::Finished => MisuseError::new_err(
                    "already finished: each call's final value is on the ToolCall that \
                     finish() returned",
                ),
                other => misuse(&other),
            })??;
        optional_value(py, v)
    }

    /// Feeds raw SSE bytes of the HTTP response body, split anywhere (gateways).
    #[pyo3(signature = (data, /))]
    fn feed_sse(slf: &Bound<'_, Self>, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = data
            .cast::<PyBytes>()
            .map_err(|_| MisuseError::new_err("feed_sse takes bytes"))?
            .as_bytes();
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        // Releasing and re-taking the GIL costs a few hundred nanoseconds: below about 1 KiB
        // (a few microseconds of decoding) it is not worth it; above, other threads run Python
        // (or their own `feed_sse`) meanwhile. The bytes object is immutable and kept alive by
        // the caller's reference for the whole call, so the borrowed slice stays valid.
        let result = if bytes.len() >= DETACH_MIN_BYTES {
            let decoder = &mut this.decoder;
            py.detach(|| decoder.push(bytes))
        } else {
            this.decoder.push(bytes)
        };
        result.map_err(|e| misuse(&e))?;
        this.flush_progress(py)
    }

    /// Assistant text seen on the raw SSE path.
    #[getter]
    fn text(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.text().into_owned())
    }

    /// The last usage object seen on the raw SSE path.
    #[getter]
    fn usage<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // Parsed once the assembler is let go: `json.loads` is Python code, in which another
        // thread may take its turn and use the assembler.
        let usage = slf.try_borrow().map_err(in_use)?.decoder.usage();
        json_loads(py, usage)
    }

    /// The id of the code-execution container the response ran in, on the raw SSE path.
    #[getter]
    fn container(slf: &Bound<'_, Self>) -> PyResult<Option<String>> {
        Ok(slf
            .try_borrow()
            .map_err(in_use)?
            .decoder
            .container()
            .map(str::to_owned))
    }

    /// The reasoning blocks that ended whole, as the provider takes them back, in output
    /// order: Anthropic `thinking` / `redacted_thinking` block dicts and server block dicts,
    /// Responses `reasoning` and hosted item dicts, Bedrock `reasoningContent` block dicts.
    #[getter]
    fn reasoning<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        // Copied out first: `json.loads` is Python code, in which another thread may take its
        // turn and use the assembler.
        let kept = slf
            .try_borrow()
            .map_err(in_use)?
            .decoder
            .reasoning()
            .to_vec();
        let blocks = PyList::empty(py);
        for block in kept {
            blocks.append(reasoning_block(py, block)?)?;
        }
        Ok(blocks)
    }

    /// Where each text block of a turn with no call began, once finished (see
    /// [`StreamDecoder::text_places`]): a list of `[at, reasoning, ...]` entries, or None.
    #[getter]
    fn text_places<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        // Copied out first: `json.loads` is Python code (see `usage`).
        let places = slf
            .try_borrow()
            .map_err(in_use)?
            .decoder
            .text_places()
            .map(str::to_owned);
        json_loads(py, places)
    }

    /// Keeps an Anthropic reasoning block `feed_chunk` read whole, its bytes already counted
    /// (`_keep_text`): `signature` None for a `redacted_thinking` block, whose data is `text`.
    #[pyo3(signature = (text, signature, /))]
    fn _keep_reasoning(slf: &Bound<'_, Self>, text: &str, signature: Option<&str>) -> PyResult<()> {
        let block = match signature {
            Some(signature) => Reasoning::Thinking {
                thinking: text.to_owned(),
                signature: signature.to_owned(),
            },
            None => Reasoning::Redacted {
                data: text.to_owned(),
            },
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.keep_reasoning(block).map_err(|e| misuse(&e))
    }

    /// Keeps a Responses `reasoning` or hosted item, or an Anthropic server block, that
    /// `feed_chunk` read finished, as JSON text written as the raw SSE path writes it, its
    /// bytes already counted (`_keep_text`), before the last `before` items kept (those that
    /// came after it in the output).
    #[pyo3(signature = (json, before = 0, /))]
    fn _keep_reasoning_item(slf: &Bound<'_, Self>, json: &str, before: usize) -> PyResult<()> {
        let block = Reasoning::Item {
            json: json.to_owned(),
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder
            .keep_reasoning_before(block, before)
            .map_err(|e| misuse(&e))
    }

    /// Keeps a Bedrock `reasoningContent` block `feed_chunk` read whole, its bytes already
    /// counted (`_keep_text`): its `reasoningText` (`text`, `signature`), or with `redacted`
    /// its `redactedContent` (`text` and `signature` are then not read).
    #[pyo3(signature = (text, signature, redacted, /))]
    fn _keep_converse_reasoning(
        slf: &Bound<'_, Self>,
        text: &str,
        signature: Option<&str>,
        redacted: Option<&[u8]>,
    ) -> PyResult<()> {
        let block = match redacted {
            Some(data) => Reasoning::ConverseRedacted {
                data: data.to_vec(),
            },
            None => Reasoning::ConverseText {
                text: text.to_owned(),
                signature: signature.map(str::to_owned),
            },
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.keep_reasoning(block).map_err(|e| misuse(&e))
    }

    /// Keeps a Bedrock `image` block `feed_chunk` read whole, in its place among the reasoning
    /// blocks, its bytes already counted (`_keep_text`: its `format`, then its data).
    #[pyo3(signature = (format, data, /))]
    fn _keep_converse_image(slf: &Bound<'_, Self>, format: &str, data: &[u8]) -> PyResult<()> {
        let block = Reasoning::ConverseImage {
            format: format.to_owned(),
            data: data.to_vec(),
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.keep_reasoning(block).map_err(|e| misuse(&e))
    }

    /// Keeps a Gemini thought (a run of `thought` parts) `feed_chunk` read, its bytes already
    /// counted (`_keep_text`): its text and its `thoughtSignature`, if it came with one.
    #[pyo3(signature = (text, signature, /))]
    fn _keep_gemini_thought(
        slf: &Bound<'_, Self>,
        text: &str,
        signature: Option<&str>,
    ) -> PyResult<()> {
        let block = Reasoning::GeminiThought {
            text: text.to_owned(),
            signature: signature.map(str::to_owned),
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.keep_reasoning(block).map_err(|e| misuse(&e))
    }

    /// Lets go of the reasoning item `feed_chunk` kept last, its bytes given back: the item
    /// after it is not one the next turn sends, and the API refuses it alone.
    fn _drop_reasoning(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.drop_last_reasoning().map_err(|e| misuse(&e))
    }

    /// The response `feed_chunk` reads starts again (a replay): the reasoning blocks kept so
    /// far are let go, as they come again.
    fn _forget_reasoning(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.forget_reasoning().map_err(|e| misuse(&e))
    }

    /// A text block starts in the response `feed_chunk` reads, after `at` characters of the
    /// assistant text it kept: its place goes on the calls at finish (see
    /// [`StreamDecoder::mark_text_block`]).
    #[pyo3(signature = (at, /))]
    fn _mark_text_block(slf: &Bound<'_, Self>, at: Count) -> PyResult<()> {
        let Count(at) = at;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.mark_text_block(at).map_err(|e| misuse(&e))
    }

    /// The text block `feed_chunk` began last carries this Gemini thought signature (see
    /// [`StreamDecoder::sign_text_block`]).
    #[pyo3(signature = (signature, /))]
    fn _sign_text_block(slf: &Bound<'_, Self>, signature: &Bound<'_, PyString>) -> PyResult<()> {
        // Written out before the assembler is taken, as `set_metadata` writes a value.
        let json = dumps(slf.py(), signature.as_any(), false)?;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.sign_text_block(&json).map_err(|e| misuse(&e))
    }

    /// Keeps a citation (JSON text of an object) of the text block `feed_chunk` read start
    /// last (`_mark_text_block`): it goes with the block's place. False when
    /// it does not fit `max_stream_bytes` (see [`StreamDecoder::keep_citation`]).
    #[pyo3(signature = (json, /))]
    fn _keep_citation(slf: &Bound<'_, Self>, json: &str) -> PyResult<bool> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.keep_citation(json).map_err(|e| misuse(&e))
    }

    /// The finish reason as sent, on the raw SSE path.
    #[getter]
    fn finish_reason(slf: &Bound<'_, Self>) -> PyResult<Option<String>> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.finish_reason_raw().map(str::to_owned))
    }

    /// How many calls a Chat choice's finish reason (`stop`, `tool_calls`) ended on the raw
    /// path: a break or provider error after it cuts or stops only the calls after those.
    #[getter]
    fn _chat_ended_calls(slf: &Bound<'_, Self>) -> PyResult<Option<usize>> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.chat_ended_calls())
    }

    /// `interrupt` for the calls from ordinal `first` on: those before it had ended.
    #[pyo3(signature = (first, reason, /))]
    fn _interrupt_from(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        first: Count,
        reason: &str,
    ) -> PyResult<()> {
        Self::change_call(slf, py, first, |a, o| a.interrupt_from(o, reason))
    }

    /// The finish reason normalized: `stop`, `tool_calls`, `length`, `content_filter`,
    /// `refusal` or `other`.
    #[getter]
    fn finish_reason_normalized(slf: &Bound<'_, Self>) -> PyResult<Option<&'static str>> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.finish_reason().map(FinishReason::as_str))
    }

    /// The wire format detected on the raw SSE path.
    #[getter]
    fn format(slf: &Bound<'_, Self>) -> PyResult<Option<&'static str>> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.format().map(Format::as_str))
    }

    /// Problems of the stream itself (malformed events, provider errors), as
    /// (kind, event number, message).
    fn stream_errors(slf: &Bound<'_, Self>) -> PyResult<Vec<(&'static str, u64, String)>> {
        let this = slf.try_borrow().map_err(in_use)?;
        let mut errors: Vec<_> = this
            .decoder
            .errors()
            .iter()
            .map(|e| (e.kind.slug(), e.event, e.message.clone()))
            .collect();
        let limit = StreamErrorKind::StreamLimit.slug();
        if let Some((over, _)) = this.decoder.assembler().over_limit() {
            // Fed by `feed` or `feed_chunk`, the stream has no event numbers: the limit is
            // still said, at event 0.
            if !errors.iter().any(|(kind, _, _)| *kind == limit) {
                errors.push((limit, 0, over.message()));
            }
        }
        Ok(errors)
    }

    fn __len__(slf: &Bound<'_, Self>) -> PyResult<usize> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.assembler().len())
    }

    fn finish<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let hook = slf.try_borrow_mut().map_err(in_use)?.before_finish.take();
        if let Some(hook) = hook {
            hook.call1(slf.py(), (slf,))?;
        }
        let calls = {
            let mut assembler = slf.try_borrow_mut().map_err(in_use)?;
            if assembler.decoder.assembler().config().track_progress {
                // Text the raw body's decoder still holds goes into its call first.
                assembler.decoder.end_body().map_err(|e| misuse(&e))?;
                // The last fragments' progress items, a held one's included, go out first:
                // into the caller's list, or kept for the next `drain_progress`.
                assembler
                    .decoder
                    .assembler_mut()
                    .settle_held_fragments()
                    .map_err(|e| misuse(&e))?;
                if assembler.progress_into.is_none() {
                    let released = PyList::empty(slf.py());
                    assembler.drain_progress_to(slf.py(), Some(&released))?;
                    assembler.finished_progress = Some(released.unbind());
                }
            }
            assembler.flush_progress(slf.py())?;
            assembler
                .decoder
                .finish_deferring_scans()
                .map_err(|e| misuse(&e))?
        };
        // Asked before the calls move into the list, and the list read back for them: a list
        // of their positions was an allocation and a free on every stream's `finish`.
        let any_unsettled = calls.iter().any(|call| call.unscanned);
        // Each call object is made straight into the list.
        let list = PyList::new(slf.py(), calls.into_iter().map(PyToolCall::new))?;
        if any_unsettled {
            let mut this = slf.try_borrow_mut().map_err(in_use)?;
            for item in list.iter() {
                let call = item.cast_into::<PyToolCall>()?;
                if call.get().call.unscanned {
                    this.unsettled.push(call.unbind());
                }
            }
        }
        Ok(list)
    }

    /// Registers `hook`, called once with the assembler when `finish` starts: the Python
    /// `feed_chunk` layer hands over input it still holds there. A hook keeps plain `feed`
    /// streams free of a Python-level `finish`.
    fn _flush_before_finish(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<()> {
        let replaced = slf
            .try_borrow_mut()
            .map_err(in_use)?
            .before_finish
            .replace(hook);
        // Released once the assembler is let go: the last reference to a hook runs its
        // finalizer, which may use the assembler.
        drop(replaced);
        Ok(())
    }

    /// Frees the finished calls' working state, which `finish` leaves to the assembler's
    /// own release (see [`Assembler::release_finished`]).
    fn release_finished(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.assembler_mut().release_finished();
        Ok(())
    }

    /// Whether `n` bytes an adapter holds for an open call (merged Gemini `partialArgs`
    /// pieces) fit beside what the response has kept; False once the response is over its byte
    /// limit, when the adapter lets them go (see [`Assembler::may_hold`]).
    #[pyo3(signature = (n, /))]
    fn _may_hold(slf: &Bound<'_, Self>, n: Count) -> PyResult<bool> {
        let Count(n) = n;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        Ok(this.decoder.assembler_mut().may_hold(n))
    }

    /// Whether progress items are recorded (`track_progress` or `progress_into`): an adapter
    /// that reads arguments as values records them itself only then (`_record_progress`).
    fn _tracks_progress(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(in_use)?;
        Ok(this.decoder.assembler().config().track_progress)
    }

    /// Records a progress item of the call open under wire key `index` whose arguments an
    /// adapter reads as values (Vertex AI `partialArgs` pieces): `text` appended to the string
    /// at JSON Pointer `path` (`string`; `ends` when no more of it comes), or the JSON text of
    /// the number or literal there (see [`Assembler::record_progress`]).
    #[pyo3(signature = (index, path, text, string, ends, /))]
    fn _record_progress(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        index: Option<i64>,
        path: &str,
        text: &str,
        string: bool,
        ends: bool,
    ) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        let assembler = this.decoder.assembler_mut();
        if let Some(ordinal) = assembler.ordinal_of(index) {
            let value = if string {
                Recorded::String { ends }
            } else {
                Recorded::Scalar
            };
            assembler
                .record_progress(ordinal, path, text, value)
                .map_err(|e| misuse(&e))?;
        }
        this.flush_progress(py)
    }

    /// Records no more progress items for the call open under wire key `index`, from values or
    /// from its text: the values an adapter reads its arguments as do not make what the call
    /// will hold (see [`Assembler::stop_progress`]).
    #[pyo3(signature = (index, /))]
    fn _stop_progress(slf: &Bound<'_, Self>, index: Option<i64>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        let assembler = this.decoder.assembler_mut();
        if let Some(ordinal) = assembler.ordinal_of(index) {
            assembler.stop_progress(ordinal).map_err(|e| misuse(&e))?;
        }
        Ok(())
    }

    /// Sets aside `arguments` (as `feed` takes them) for the call open under wire key `index`,
    /// used only if its own fragments never come (see [`Assembler::set_aside`]): the bytes
    /// counted toward `max_stream_bytes` until `_release` gives them back, or None when the
    /// adapter must not keep them (the call became `too_large`, or the response is refused).
    #[pyo3(signature = (index, arguments, /))]
    fn _set_aside(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        index: Option<i64>,
        arguments: &Bound<'_, PyAny>,
    ) -> PyResult<Option<usize>> {
        let max_depth = slf
            .try_borrow()
            .map_err(in_use)?
            .decoder
            .assembler()
            .config()
            .scan
            .max_depth;
        // Measured before the assembler is taken: `json.dumps` runs the caller's code (a dict
        // subclass's `items`), which may use the assembler or let another thread in.
        let (mut scratch, mut serialized) = (Vec::new(), String::new());
        let bytes = match read_arguments(py, arguments, &mut scratch, &mut serialized, max_depth)? {
            Some(Arguments::Text(t) | Arguments::Value(t)) => t.len(),
            None => 0,
        };
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        let assembler = this.decoder.assembler_mut();
        let ordinal = assembler.ordinal_of(index);
        Ok(assembler.set_aside(ordinal, bytes).then_some(bytes))
    }

    /// Counts `n` bytes of an argument fragment an adapter holds for its call's next fragment
    /// (it ends in a surrogate half, quirk 41) toward `max_stream_bytes` until `_release` gives
    /// them back; False (nothing counted) when the adapter must not hold them (the response is
    /// refused, or they alone pass `max_bytes`) and hands the fragment on at once.
    #[pyo3(signature = (n, /))]
    fn _hold_fragment(slf: &Bound<'_, Self>, n: Count) -> PyResult<bool> {
        let Count(n) = n;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        // No call: the held text is the call's own, checked against `max_bytes` when fed.
        Ok(this.decoder.assembler_mut().set_aside(None, n))
    }

    /// Gives back `n` bytes counted by `_set_aside`: let go, or about to be fed.
    #[pyo3(signature = (n, /))]
    fn _release(slf: &Bound<'_, Self>, n: Count) -> PyResult<()> {
        let Count(n) = n;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        this.decoder.assembler_mut().release(n);
        Ok(())
    }

    /// Counts `n` bytes of assistant text `feed_chunk` read toward `max_stream_bytes`, as the
    /// raw SSE path counts the text it reads; False (nothing counted) once the response is
    /// past a limit, when `feed_chunk` keeps the text no more (see [`Assembler::keep_text`]).
    #[pyo3(signature = (n, /))]
    fn _keep_text(slf: &Bound<'_, Self>, n: Count) -> PyResult<bool> {
        let Count(n) = n;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        Ok(this.decoder.assembler_mut().keep_text(n))
    }

    /// See [`Assembler::check_summary`] (the Responses layer's `.done` summaries): `same`,
    /// `fill`, `extend` or `mismatch`.
    #[pyo3(signature = (ordinal, full, /))]
    fn _check_summary(
        slf: &Bound<'_, Self>,
        ordinal: Count,
        full: &[u8],
    ) -> PyResult<&'static str> {
        let Count(ordinal) = ordinal;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        Ok(
            match this.decoder.assembler_mut().check_summary(ordinal, full) {
                Summary::Same => "same",
                Summary::Fill => "fill",
                Summary::Extend => "extend",
                Summary::Mismatch => "mismatch",
            },
        )
    }

    /// See [`Assembler::replace_free_form`] (a Responses custom tool call's finished item):
    /// whether its input replaced a different one.
    #[pyo3(signature = (ordinal, full, /))]
    fn _replace_free_form(slf: &Bound<'_, Self>, ordinal: Count, full: &[u8]) -> PyResult<bool> {
        let Count(ordinal) = ordinal;
        let mut this = slf.try_borrow_mut().map_err(in_use)?;
        Ok(this
            .decoder
            .assembler_mut()
            .replace_free_form(ordinal, full))
    }

    /// The index the call at `ordinal` reports, when it is routed by another key (the
    /// `feed_chunk` layer keys a Responses item apart from another under its `output_index`).
    #[pyo3(signature = (ordinal, index, /))]
    fn _set_index(slf: &Bound<'_, Self>, ordinal: Count, index: Option<i64>) -> PyResult<()> {
        let Count(ordinal) = ordinal;
        slf.try_borrow_mut()
            .map_err(in_use)?
            .decoder
            .assembler_mut()
            .set_index(ordinal, index)
            .map_err(|e| misuse(&e))
    }
}

/// `value` as JSON text for the scanner, as `json.dumps` writes it, except where it cannot:
/// - nested past what it can recurse into (a provider's arguments object a thousand levels
///   deep, as a gateway's parser hands it over), the text as far as the scanner reads before
///   its verdict: every container at depth `max_depth + 1` written empty, so the call is
///   `too_deep` where the whole text would have it;
/// - a float an SDK decoded to infinity from a number past double range (`1e400`): JSON has no
///   `Infinity`, and the raw path keeps the number as sent, so it is written as such a number
///   (`1e999`), which reads back as the same value.
fn dump_arguments(py: Python<'_>, value: &Bound<'_, PyAny>, max_depth: usize) -> PyResult<String> {
    match dumps(py, value, false) {
        Err(e)
            if e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py)
                || e.is_instance_of::<PyValueError>(py) =>
        {
            let mut out = String::new();
            dump_item(py, value, 0, max_depth + 1, &mut out)?;
            Ok(out)
        }
        dumped => dumped.map_err(|e| not_json(py, e)),
    }
}

/// Writes `item`, at nesting `depth`, for [`dump_arguments`]: a container at depth `last`
/// empty. Scalars and keys go through `json.dumps`; the recursion here is at most `last` deep,
/// which `MAX_DEPTH_LIMIT` bounds.
fn dump_item(
    py: Python<'_>,
    item: &Bound<'_, PyAny>,
    depth: usize,
    last: usize,
    out: &mut String,
) -> PyResult<()> {
    if let Ok(dict) = item.cast::<PyDict>() {
        out.push('{');
        for (i, (key, member)) in dict.iter().enumerate().take_while(|_| depth + 1 < last) {
            if i > 0 {
                out.push(',');
            }
            // `json.dumps` writes a non-string key (a number, a bool) as the string of its
            // JSON text.
            let key_text = dump_json(py, &key)?;
            if key.is_instance_of::<PyString>() {
                out.push_str(&key_text);
            } else {
                out.push_str(&dump_json(py, PyString::new(py, &key_text).as_any())?);
            }
            out.push(':');
            dump_item(py, &member, depth + 1, last, out)?;
        }
        out.push('}');
    } else if item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>() {
        out.push('[');
        for (i, member) in item
            .try_iter()?
            .enumerate()
            .take_while(|_| depth + 1 < last)
        {
            if i > 0 {
                out.push(',');
            }
            dump_item(py, &member?, depth + 1, last, out)?;
        }
        out.push(']');
    } else if let Some(x) = item
        .cast::<PyFloat>()
        .ok()
        .map(|f| f.value())
        .filter(|x| x.is_infinite())
    {
        out.push_str(if x > 0.0 { "1e999" } else { "-1e999" });
    } else {
        out.push_str(&dump_json(py, item)?);
    }
    Ok(())
}

fn dump_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    dumps(py, value, true).map_err(|e| not_json(py, e))
}

/// The `SchemaTooLargeError` of a `ToolRegistry`'s schema past its limit of `measure`
/// (`"depth"` of subschemas or `"nesting"` of JSON), the error Python-side registration raises.
fn too_large(py: Python<'_>, tool: &str, size: usize, measure: &str) -> PyErr {
    let limit = if measure == "depth" {
        nesting::MAX_SCHEMA_DEPTH
    } else {
        nesting::MAX_SCHEMA_NESTING
    };
    let made = py
        .import("toolwire.schema_export")
        .and_then(|m| m.getattr("SchemaTooLargeError"))
        .and_then(|class| {
            let kwargs = PyDict::new(py);
            kwargs.set_item("tool", tool)?;
            kwargs.set_item("measure", measure)?;
            class.call((size, limit), Some(&kwargs))
        });
    match made {
        Ok(error) => PyErr::from_value(error),
        Err(e) => e,
    }
}

/// A schema dict nested past what `json.dumps` writes (`error`, its `RecursionError`): refused
/// as a schema too deep, or too nested, measured as `schema_export.schema_nesting` measures it,
/// without recursion.
fn too_deep_to_write(py: Python<'_>, schema: &Bound<'_, PyAny>, tool: &str, error: PyErr) -> PyErr {
    let measured = py
        .import("toolwire.schema_export")
        .and_then(|m| m.getattr("schema_nesting")?.call1((schema,)))
        .and_then(|levels| levels.extract::<(usize, usize)>());
    match measured {
        Ok((depth, _)) if depth > nesting::MAX_SCHEMA_DEPTH => too_large(py, tool, depth, "depth"),
        Ok((_, levels)) if levels > nesting::MAX_SCHEMA_NESTING => {
            too_large(py, tool, levels, "nesting")
        }
        // Within the limits, yet too deep for `json.dumps` here (the caller's own stack is
        // deep): the text has no such limit.
        Ok(_) => MisuseError::new_err(format!(
            "schema of {tool:?} nests deeper than json.dumps can write here: pass its JSON text"
        )),
        Err(e) => {
            e.set_cause(py, Some(error));
            e
        }
    }
}

/// Values that JSON cannot hold (an arbitrary object, an int past Python's digit limit) come
/// from the caller, never from a provider's parsed JSON: misuse.
fn not_json(py: Python<'_>, e: PyErr) -> PyErr {
    if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py) {
        MisuseError::new_err(format!("not JSON data: {}", e.value(py)))
    } else {
        e
    }
}

/// Whether `value` holds, in the dicts, lists and tuples `json.dumps` walks, an integer with
/// more digits than `sys.get_int_max_str_digits()` lets Python write. Iterative: the value may
/// nest deeper than Python's recursion limit.
fn holds_unwritable_int(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    // What `json.dumps` calls for an int (a subclass's own `__repr__` aside).
    let write = py.get_type::<PyInt>().getattr("__repr__")?;
    let mut todo = vec![value.clone()];
    // A container met again (`json.dumps` refuses a circular one) is walked once.
    let mut seen = std::collections::HashSet::new();
    while let Some(item) = todo.pop() {
        let container = item.is_instance_of::<PyDict>()
            || item.is_instance_of::<PyList>()
            || item.is_instance_of::<PyTuple>();
        if container && !seen.insert(item.as_ptr() as usize) {
            continue;
        }
        if let Ok(d) = item.cast::<PyDict>() {
            for (k, v) in d.iter() {
                todo.push(k);
                todo.push(v);
            }
        } else if let Ok(l) = item.cast::<PyList>() {
            todo.extend(l.iter());
        } else if let Ok(t) = item.cast::<PyTuple>() {
            todo.extend(t.iter());
        } else if item.is_instance_of::<PyInt>() {
            match write.call1((&item,)) {
                Ok(_) => {}
                Err(e) if e.is_instance_of::<PyValueError>(py) => return Ok(true),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(false)
}

/// `json.dumps(value)`, compact and not ASCII-escaped.
fn dumps(py: Python<'_>, value: &Bound<'_, PyAny>, allow_nan: bool) -> PyResult<String> {
    let dumps = py.import("json")?.getattr("dumps")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("separators", (",", ":"))?;
    kwargs.set_item("allow_nan", allow_nan)?;
    let text = dumps.call((value,), Some(&kwargs))?;
    if let Ok(s) = text.cast::<PyString>() {
        if let Ok(s) = s.to_str() {
            return Ok(s.to_owned());
        }
    }
    // A lone surrogate (an SDK decoded a `\ud800` escape of the event into the value) has no
    // UTF-8 form: escape it, as the raw SSE path keeps it, so the scanner reports
    // `lone_surrogate` on the call instead of `feed` raising.
    kwargs.set_item("ensure_ascii", true)?;
    dumps.call((value,), Some(&kwargs))?.extract()
}

/// Whether two JSON texts are the same tokens, whitespace between them aside (see
/// [`crate::tokens`]).
#[pyfunction]
#[pyo3(name = "same_tokens", signature = (a, b, /))]
fn py_same_tokens(a: &[u8], b: &[u8]) -> bool {
    crate::tokens::same_tokens(a, b)
}

/// Why `pattern` is no ECMA-262 regular expression as JSON Schema reads one, or `None` (see
/// [`crate::schema::pattern_error`]): Python's validation refuses the patterns the pre-check
/// refuses.
#[pyfunction]
#[pyo3(name = "pattern_error", signature = (pattern, /))]
fn py_pattern_error(pattern: &str) -> Option<String> {
    crate::schema::pattern_error(pattern)
}

/// The JSON Pointer `path` with each key past 200 characters cut as a `CallError`'s path is
/// (see [`crate::error::capped_path`]): validation's errors cut their paths by the same rule.
#[pyfunction]
#[pyo3(name = "capped_path", signature = (path, /))]
fn py_capped_path(path: &str) -> String {
    crate::error::capped_path(path)
}

#[pymodule]
#[pyo3(name = "_core")]
mod core_module {
    #[pymodule_export]
    use super::PyDirectValidation;
    #[pymodule_export]
    use super::{py_capped_path, py_install_feed, py_pattern_error, py_same_tokens};
    #[pymodule_export]
    use super::{JsonError, MisuseError, ToolwireError};
    #[pymodule_export]
    use super::{PyAssembler, PyCallError, PyNoValue, PyScanner, PyToolCall, PyToolRegistry};
    #[pymodule_export]
    use super::{PyLosslessFloat, PyPartialNode};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("NO_VALUE", super::no_value(m.py())?)?;
        super::install_feed(m.py())
    }
}
