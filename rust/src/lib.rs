//! toolwire's native core: split-proof assembly, parsing and pre-checking of streamed LLM tool
//! calls.
//!
//! ```
//! use toolwire::{Arguments, Assembler, AssemblerConfig, Delta};
//!
//! let mut assembler = Assembler::new(AssemblerConfig::default()).unwrap();
//! for piece in [&br#"{"city": "Par"#[..], &br#"is"}"#[..]] {
//!     let delta = Delta { index: Some(0), name: Some("get_weather"), arguments: Some(Arguments::Text(piece)), ..Delta::default() };
//!     assembler.feed(&delta).unwrap();
//! }
//! let calls = assembler.finish().unwrap();
//! assert_eq!(calls[0].arguments, br#"{"city": "Paris"}"#);
//! assert!(calls[0].error.is_none());
//! ```

pub mod assembler;
pub mod envelope;
pub mod error;
pub mod gateway;
pub mod outline;
pub mod precheck;
pub mod progress;
pub mod scanner;
pub mod schema;
pub mod secret_keys;
pub mod sse;
pub mod tokens;
pub mod value;
pub mod visit;

#[cfg(feature = "python")]
mod python;

pub use assembler::{
    Arguments, Assembler, AssemblerConfig, Delta, JsonVerdict, StreamLimit, Summary, ToolCall,
};
pub use envelope::{FinishReason, Format, Reasoning};
pub use error::{Error, ErrorKind, Misuse, SchemaDetail};
pub use gateway::{StreamDecoder, StreamError, StreamErrorKind};
pub use precheck::Registry;
pub use progress::ProgressItem;
pub use scanner::{DuplicateKeys, ScanConfig, Scanner, Status};
pub use sse::{Framer, SseConfig, SseError};
pub use value::{build_value, BuildOptions, PartialOptions, StringMode, Value};
pub use visit::{ValueKind, Visitor};
