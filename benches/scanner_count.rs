//! Instruction-count driver for the scanner: pushes a bench corpus case through `Scanner` once
//! as its fragments and once whole, each in an `#[inline(never)]` function, so
//! `valgrind --tool=callgrind` plus `callgrind_annotate --inclusive=yes` separates the cost per
//! push (fragmented minus whole) from the cost per byte (whole).
//!
//! ```text
//! cargo build --release --example scanner_count
//! valgrind --tool=callgrind target/release/examples/scanner_count [CASE [fragments|whole]]
//! ```
//!
//! The corpus is the one `benches/rust_bench.rs` writes to `target/bench-corpus/` (or
//! `$TOOLWIRE_BENCH_CORPUS`); run the bench once first. CASE defaults to `single-200KB`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use toolwire::{Arguments, Assembler, AssemblerConfig, Delta, Scanner};

fn read_u32(data: &[u8], at: &mut usize) -> u32 {
    let bytes: [u8; 4] = data[*at..*at + 4]
        .try_into()
        .expect("truncated corpus file");
    *at += 4;
    u32::from_le_bytes(bytes)
}

fn load(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let path = dir.join(format!("{name}.frags"));
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut at = 0;
    let count = read_u32(&data, &mut at);
    (0..count)
        .map(|_| {
            let _index = read_u32(&data, &mut at);
            let len = read_u32(&data, &mut at) as usize;
            let fragment = data[at..at + len].to_vec();
            at += len;
            fragment
        })
        .collect()
}

#[inline(never)]
fn push_fragments(fragments: &[Vec<u8>]) -> usize {
    let mut scanner = Scanner::default();
    for fragment in fragments {
        black_box(scanner.push(fragment));
    }
    scanner.finish().expect("valid corpus");
    scanner.text().len()
}

#[inline(never)]
fn push_whole(text: &[u8]) -> usize {
    let mut scanner = Scanner::default();
    black_box(scanner.push(text));
    scanner.finish().expect("valid corpus");
    scanner.text().len()
}

#[inline(never)]
fn push_plain(pushes: usize) -> usize {
    let mut scanner = Scanner::default();
    black_box(scanner.push(b"\""));
    for _ in 0..pushes {
        black_box(scanner.push(black_box(b"abcdefghij")));
    }
    black_box(scanner.push(b"\""));
    scanner.finish().expect("valid");
    scanner.text().len()
}

/// One stream through an `Assembler`, as `Assembler.feed` gives it from Python: with
/// `progress`, tracking on and a drain after every fragment (what `progress_into` does),
/// counting the bytes handed out so that nothing is optimised away.
#[inline(never)]
fn assemble(fragments: &[Vec<u8>], progress: bool) -> usize {
    let mut assembler = Assembler::new(AssemblerConfig {
        track_progress: progress,
        ..AssemblerConfig::default()
    })
    .expect("a valid configuration");
    let mut handed = 0;
    for (k, fragment) in fragments.iter().enumerate() {
        let delta = Delta {
            index: Some(0),
            id: (k == 0).then_some("call_0"),
            name: (k == 0).then_some("create_document"),
            kind: None,
            arguments: Some(Arguments::Text(fragment)),
            start: false,
        };
        black_box(assembler.feed(&delta).expect("a valid delta"));
        if progress {
            assembler.drain_progress_each(|_, path, text, _, _| handed += path.len() + text.len());
        }
    }
    handed + assembler.finish().expect("not finished before").len()
}

fn main() {
    let dir = std::env::var_os("TOOLWIRE_BENCH_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-corpus"),
        PathBuf::from,
    );
    let case = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "single-200KB".to_owned());
    // MODE: `fragments`, `whole` or both (default), to annotate one of them alone; `plain`
    // for the cost of a push with the least work; `time` for wall time; `assemble` and
    // `progress` for an assembler without and with progress items (a single call's case),
    // `progress-whole` with the arguments in one fragment.
    let mode = std::env::args().nth(2).unwrap_or_default();
    if mode == "plain" {
        // The floor: 100,000 pushes of 10 plain ASCII bytes inside one string.
        let mut best = std::time::Duration::MAX;
        for _ in 0..50 {
            let start = std::time::Instant::now();
            assert!(black_box(push_plain(100_000)) > 0);
            best = best.min(start.elapsed());
        }
        #[allow(clippy::print_stdout)]
        {
            println!("plain: {:?} per push", best / 100_000);
        }
        return;
    }
    let fragments = load(&dir, &case);
    let whole: Vec<u8> = fragments.concat();
    let whole_piece = [whole.clone()];
    if let Some((progress, pieces)) = match mode.as_str() {
        "assemble" => Some((false, &fragments[..])),
        "progress" => Some((true, &fragments[..])),
        "progress-whole" => Some((true, &whole_piece[..])),
        _ => None,
    } {
        // The Rust side of `Assembler.feed` over a single call's stream, 1,000 times, with and
        // without progress items: their difference is what tracking costs before any Python
        // object is made.
        for _ in 0..1000 {
            black_box(assemble(black_box(pieces), progress));
        }
        return;
    }
    if mode == "time" {
        // Least wall time of 300 fragmented runs: on a shared machine the minimum is the
        // figure least disturbed by other jobs.
        let mut best = std::time::Duration::MAX;
        let mut best_whole = std::time::Duration::MAX;
        for _ in 0..300 {
            let start = std::time::Instant::now();
            black_box(push_fragments(black_box(&fragments)));
            best = best.min(start.elapsed());
            let start = std::time::Instant::now();
            black_box(push_whole(black_box(&whole)));
            best_whole = best_whole.min(start.elapsed());
        }
        #[allow(clippy::print_stdout)]
        {
            println!(
                "{case}: {best:?} in {} pushes, {best_whole:?} in one push of {} bytes",
                fragments.len(),
                whole.len()
            );
        }
        return;
    }
    if mode != "whole" {
        assert_eq!(
            black_box(push_fragments(black_box(&fragments))),
            whole.len()
        );
    }
    if mode != "fragments" {
        assert_eq!(black_box(push_whole(black_box(&whole))), whole.len());
    }
}
