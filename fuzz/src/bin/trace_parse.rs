//! The lab's trace parser on arbitrary bytes: lines through buffers of two sizes give the
//! same counts and the same events (LF, CRLF and CR line ends, lines split across fills), a
//! line over the limit is the same error either way, every line is counted once, and the
//! events feed `trace stats` (its maps and spans) without a panic.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use zonealloc_lab::trace::parse::Parser;
use zonealloc_lab::trace::stats::TraceStats;

/// Every event as its debug text, the parser's counts, and the error if the read stopped.
fn read(data: &[u8], cap: usize) -> (Vec<String>, [u64; 5], Option<String>) {
    let mut p = Parser::new();
    p.max_line_bytes = 256;
    let mut events = Vec::new();
    let mut stats = TraceStats::default();
    let r = p.read_all(BufReader::with_capacity(cap, data), |ev| {
        events.push(format!("{ev:?}"));
        stats.add(ev);
    });
    assert_eq!(p.lines, p.events + p.comments + p.other + p.malformed);
    assert_eq!(p.events, events.len() as u64);
    let _ = p.check_trace();
    let _ = stats.most_reused(5);
    (
        events,
        [p.lines, p.events, p.comments, p.other, p.malformed],
        r.err().map(|e| e.to_string()),
    )
}

fuzz_target!(|data: &[u8]| {
    let small = read(data, 7);
    let large = read(data, 1 << 16);
    assert_eq!(small, large);
});
