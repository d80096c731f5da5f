//! [`Parser::feed`] line after line: its fast path goes on from the line before's.

use super::*;

/// One parser fed line after line (its fast path starting from the line before's opening
/// and middle) answers each line as the general walk does, and counts as many of each kind:
/// lines that repeat, that change a byte in the opening or the middle, that end in LF, CR or
/// nothing, hold an LF, or are no event at all.
#[test]
fn a_parser_fed_line_by_line_answers_as_the_general_walk() {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for l in FAST_LINES.map(str::as_bytes) {
        let pfn = l.windows(6).position(|w| w == b"pfn=0x").unwrap();
        let cpu = l.iter().position(|&b| b == b']').unwrap() - 1;
        let mut other_cpu = l.to_vec();
        other_cpu[cpu] = b'7';
        let mut other_page = l.to_vec();
        other_page[pfn - 3] = b'X';
        for v in [
            l.to_vec(),
            [l, b"\n"].concat(),
            l.to_vec(),
            [l, b"\r\n"].concat(),
            [l, b"\nnext"].concat(),
            other_cpu.clone(),
            other_cpu,
            other_page,
            [&l[..pfn], b"pfn=0x1"].concat(),
            b"# tracer: nop".to_vec(),
            b"  a-1 [001] 1.5: tracing_mark_write: x".to_vec(),
            l.to_vec(),
        ] {
            lines.push(v);
        }
    }
    let mut one = Parser::new();
    let mut each = [0u64; 5];
    for l in &lines {
        let got = one.feed(l).map(|ev| outcome(Ok(ev)));
        // The general walk, which words every line the fast path leaves.
        let want = parse_line(l);
        let k = match &want {
            Ok(_) => 1,
            Err(LineKind::Comment) => 2,
            Err(LineKind::Other) => 3,
            Err(LineKind::Malformed(_)) => 4,
        };
        each[0] += 1;
        each[k] += 1;
        let want = want.ok().map(|ev| outcome(Ok(ev)));
        assert_eq!(got, want, "{}", l.escape_ascii());
    }
    let counts = [
        one.lines,
        one.events,
        one.comments,
        one.other,
        one.malformed,
    ];
    assert_eq!(counts, each);
    assert!(one.events > 20, "{}", one.events);
}
