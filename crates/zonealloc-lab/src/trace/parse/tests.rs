//! The parser's unit tests: each tool's and kernel era's line format, line ends and limits,
//! compressed input and the golden files.

use super::line::{find_sep, is_sep, parse_line, skip_sep, LineKind};
use super::*;
use proptest::prelude::*;
use std::io::BufReader;
use std::path::Path;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/linux-6.1-ftrace-sample.txt"
);

fn one(line: &str) -> Event<'_> {
    let mut p = Parser::new();
    let ev = p.feed(line.as_bytes());
    assert_eq!(p.malformed, 0, "{line}: {:?}", p.first_malformed);
    ev.unwrap_or_else(|| panic!("no event in {line}"))
}

#[test]
fn ftrace_with_irqs_off_columns() {
    let ev = one("            init-1       [003] .....     3.812917: mm_page_alloc: page=(____ptrval____) pfn=0x2e64 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO\n");
    assert_eq!(ev.cpu, Some(3));
    assert_eq!(ev.ts_ns, Some(3_812_917_000));
    assert_eq!(ev.page, PagePtr::Present);
    assert_eq!(
        ev.kind,
        EventKind::Alloc {
            pfn: 0x2e64,
            order: 0,
            migratetype: 1,
            gfp_flags: "GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO"
        }
    );
}

#[test]
fn ftrace_without_irqs_off_columns() {
    let ev = one("          <idle>-0     [001]   120.000001: mm_page_free: page=ffffea0004a3c000 pfn=0x128f00 order=2");
    assert_eq!(ev.cpu, Some(1));
    assert_eq!(ev.ts_ns, Some(120_000_001_000));
    assert_eq!(
        ev.kind,
        EventKind::Free {
            pfn: 0x128f00,
            order: 2
        }
    );
}

#[test]
fn perf_script_with_kmem_prefix() {
    let ev = one("              dd  4242 [002]  5123.456789: kmem:mm_page_alloc_zone_locked: page=0xffffea0000b98000 pfn=0x2e600 order=0 migratetype=1 percpu_refill=1");
    assert_eq!(ev.cpu, Some(2));
    assert_eq!(
        ev.kind,
        EventKind::ZoneLocked {
            pfn: 0x2e600,
            order: 0,
            migratetype: 1,
            percpu_refill: true
        }
    );
    // perf with a sample period column before the event name.
    let ev = one("dd 4242 [002] 5123.456789:          1 kmem:mm_page_free_batched: page=0xffffea0000b98000 pfn=0x2e600 order=0");
    assert_eq!(ev.kind, EventKind::FreeBatched { pfn: 0x2e600 });
}

#[test]
fn trace_cmd_report() {
    let ev = one("     kworker/0:1-45    [000]   812.345678: mm_page_pcpu_drain:   page=0xffffea0000123400 pfn=0x48d0 order=3 migratetype=0");
    assert_eq!(ev.cpu, Some(0));
    assert_eq!(
        ev.kind,
        EventKind::PcpuDrain {
            pfn: 0x48d0,
            order: 3,
            migratetype: 0
        }
    );
}

#[test]
fn decimal_pfn_and_hashed_page() {
    let ev = one("           bash-812   [000] d..2  42.123456: mm_page_free: page=00000000c3a5f1e2 pfn=1212416 order=0");
    assert_eq!(
        ev.kind,
        EventKind::Free {
            pfn: 1_212_416,
            order: 0
        }
    );
    assert_eq!(ev.page, PagePtr::Present);
}

#[test]
fn null_page_failed_alloc_and_hex_gfp() {
    let ev = one("  stress-ng-900 [005] ..... 77.000100: mm_page_alloc: page=NULL pfn=0x0 order=9 migratetype=1 gfp_flags=0x140cca");
    assert!(ev.is_failed_alloc());
    assert_eq!(ev.page, PagePtr::Null);
    assert!(matches!(
        ev.kind,
        EventKind::Alloc {
            order: 9,
            gfp_flags: "0x140cca",
            ..
        }
    ));
    let ev = one(
        "x-1 [000] 1.0: mm_page_alloc: page=(null) pfn=0x0 order=0 migratetype=0 gfp_flags=none",
    );
    assert!(ev.is_failed_alloc());
}

#[test]
fn missing_page_and_extfrag() {
    let ev = one("kswapd0-60 [001] .... 9.5: mm_page_alloc_extfrag: pfn=0x3fe00 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1");
    assert_eq!(ev.page, PagePtr::Missing);
    assert_eq!(
        ev.kind,
        EventKind::Extfrag {
            pfn: 0x3fe00,
            alloc_order: 0,
            fallback_order: 9,
            alloc_migratetype: 0,
            fallback_migratetype: 1,
            fragmenting: false,
            change_ownership: true
        }
    );
}

#[test]
fn comments_other_events_and_malformed_lines() {
    let text =
        "# tracer: nop\n\n  init-1 [003] ..... 3.8: tracing_mark_write: mm_page_alloc: pfn=1\n\
                    init-1 [003] ..... 3.8: mm_page_alloc: page=(____ptrval____) pfn=0x2e64 ord\n\
                    garbage\n\
                    init-1 [003] ..... 3.8: mm_page_free: page=x pfn=0xzz order=0\n";
    let mut p = Parser::new();
    let mut n = 0;
    p.read_all(text.as_bytes(), |_| n += 1).unwrap();
    assert_eq!(
        (n, p.lines, p.comments, p.other, p.malformed),
        (0, 6, 2, 1, 3)
    );
    let lines: Vec<u64> = p.first_malformed.iter().map(|m| m.line).collect();
    assert_eq!(lines, [4, 5, 6]);
}

const EV: &str = "a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0";

/// Reads `text` through a buffer of `cap` bytes: (events, lines) or the error.
fn read_with(text: &[u8], cap: usize) -> io::Result<(u64, u64)> {
    let mut p = Parser::new();
    let mut n = 0;
    p.read_all(BufReader::with_capacity(cap, text), |_| n += 1)?;
    assert_eq!(n, p.events);
    Ok((p.events, p.lines))
}

#[test]
fn lf_crlf_and_cr_line_ends_are_all_read() {
    for end in ["\n", "\r\n", "\r"] {
        let text = format!("# comment{end}{}", format!("{EV}{end}").repeat(10));
        for cap in [1, 2, 3, 7, 64, 1 << 16] {
            assert_eq!(
                read_with(text.as_bytes(), cap).unwrap(),
                (10, 11),
                "{end:?}, buffer {cap}"
            );
        }
    }
    // A blank line stays a line, whatever the line ends; CR CR is two line ends.
    assert_eq!(read_with(b"x\r\n\r\ny\r\rz", 4).unwrap(), (0, 5));
    // A last line without its line end is read.
    assert_eq!(
        read_with(format!("{EV}\r{EV}").as_bytes(), 5).unwrap(),
        (2, 2)
    );
}

#[test]
fn a_line_over_the_limit_is_an_error_naming_it() {
    let check = |r: io::Result<(u64, u64)>, line: u64, max: usize| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let inner = e.get_ref().and_then(|e| e.downcast_ref::<InputError>());
        assert_eq!(
            inner,
            Some(&InputError::LineTooLong {
                line,
                max_bytes: max
            }),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("line {line} ")), "{e}");
    };
    // Split over many fills, or whole in one.
    let mut text = format!("{EV}\n{EV}\n").into_bytes();
    text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
    text.extend(b"\nmore\n");
    check(read_with(&text, 1 << 12), 3, MAX_LINE_BYTES);
    check(read_with(&text, 1 << 20), 3, MAX_LINE_BYTES);
    // Exactly at the limit is fine.
    let mut text = vec![b'x'; MAX_LINE_BYTES];
    text.push(b'\n');
    assert_eq!(read_with(&text, 1 << 12).unwrap(), (0, 1));
    // A smaller limit; an endless input without line ends stops at it (`/dev/zero`).
    let mut p = Parser::new();
    p.max_line_bytes = 100;
    let e = p
        .read_all(BufReader::new(io::repeat(0)), |_| ())
        .unwrap_err();
    assert!(
        e.to_string().starts_with("line 1 is longer than 100 bytes"),
        "{e}"
    );
}

#[test]
fn input_without_events_or_mostly_malformed_is_not_a_trace() {
    let verdict = |text: &[u8]| {
        let mut p = Parser::new();
        p.read_all(text, |_| ()).unwrap();
        p.check_trace()
    };
    assert_eq!(verdict(b""), Err(InputError::NoEvents { lines: 0 }));
    assert_eq!(
        verdict(b"# tracer: nop\nx-1 [000] 1.0: sched_switch: a=b\n"),
        Err(InputError::NoEvents { lines: 2 })
    );
    // The start of an ELF file: no line is an event.
    let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0\n\x10\x6a\0\0\n";
    assert!(matches!(verdict(elf), Err(InputError::NoEvents { .. })));
    // One event among three malformed lines.
    let text = format!("{EV}\nbad 1\nbad 2\nbad 3\n");
    let e = verdict(text.as_bytes()).unwrap_err();
    assert!(matches!(
        e,
        InputError::MostlyMalformed {
            lines: 4,
            events: 1,
            malformed: 3,
            ..
        }
    ));
    assert!(e.to_string().contains("line 2: no timestamp"), "{e}");
    // As many events as malformed lines: a damaged trace, still read.
    assert_eq!(verdict(format!("{EV}\nbad\n").as_bytes()), Ok(()));
}

/// Counted independently with
/// `grep -c ' mm_page_alloc: '` (1312), `' mm_page_free: '` (364),
/// `' mm_page_free_batched: '` (294), `' mm_page_alloc_zone_locked: '` (1015),
/// `' mm_page_pcpu_drain: '` (0), `' mm_page_alloc_extfrag: '` (0),
/// `' tracing_mark_write: '` (3) and `-c '^#'` (12): 3000 lines in all.
#[test]
fn real_ftrace_sample_counts() {
    let mut p = Parser::new();
    let mut counts = std::collections::BTreeMap::new();
    p.read_all(open(Path::new(SAMPLE)).unwrap(), |ev| {
        *counts.entry(ev.kind.name()).or_insert(0u64) += 1;
    })
    .unwrap();
    assert_eq!(p.malformed, 0, "{:?}", p.first_malformed);
    assert_eq!(
        (p.lines, p.events, p.other, p.comments),
        (3000, 2985, 3, 12)
    );
    let want: std::collections::BTreeMap<_, _> = [
        ("mm_page_alloc", 1312),
        ("mm_page_free", 364),
        ("mm_page_free_batched", 294),
        ("mm_page_alloc_zone_locked", 1015),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, want);
}

#[test]
fn gzip_is_read_transparently() {
    use std::io::Write as _;
    let raw = std::fs::read(SAMPLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(&raw).unwrap();
    gz.finish().unwrap();
    let mut p = Parser::new();
    p.read_all(open(&path).unwrap(), |_| ()).unwrap();
    assert_eq!((p.lines, p.events, p.malformed), (3000, 2985, 0));
}

#[test]
fn zstd_is_read_transparently() {
    let raw = std::fs::read(SAMPLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.zst");
    // Two frames, as `zstd -c a b` writes them.
    let (a, b) = raw.split_at(raw.len() / 2);
    let level = ruzstd::encoding::CompressionLevel::Fastest;
    let mut file = ruzstd::encoding::compress_to_vec(a, level);
    file.extend(ruzstd::encoding::compress_to_vec(b, level));
    std::fs::write(&path, file).unwrap();
    let mut p = Parser::new();
    p.read_all(open(&path).unwrap(), |_| ()).unwrap();
    assert_eq!((p.lines, p.events, p.malformed), (3000, 2985, 0));
}

/// Throughput: `cargo test --release -p zonealloc-lab -- --ignored parse_throughput --nocapture`.
#[test]
#[ignore = "a benchmark, not a test"]
fn parse_throughput() {
    let raw = std::fs::read(SAMPLE).unwrap();
    let rounds = 1000;
    let started = std::time::Instant::now();
    let mut events = 0u64;
    let mut p = Parser::new();
    for _ in 0..rounds {
        p.read_all(&raw[..], |_| events += 1).unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} lines, {events} events in {secs:.3} s: {:.2} M lines/s",
        p.lines,
        p.lines as f64 / secs / 1e6
    );
}

/// One event in the hand-written canonical form of the golden `.expected` files.
fn canonical(ev: &Event<'_>) -> String {
    let ts = ev.ts_ns.map_or("-".to_owned(), |t| {
        format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
    });
    let cpu = ev.cpu.map_or("-".to_owned(), |c| c.to_string());
    let page = match ev.page {
        PagePtr::Present => "present",
        PagePtr::Null => "null",
        PagePtr::Missing => "missing",
    };
    let fields = match ev.kind {
        EventKind::Alloc {
            pfn,
            order,
            migratetype,
            gfp_flags,
        } => format!(
            "pfn={pfn:#x} order={order} migratetype={migratetype} gfp_flags={gfp_flags}{}",
            if ev.is_failed_alloc() { " failed" } else { "" }
        ),
        EventKind::Free { pfn, order } => format!("pfn={pfn:#x} order={order}"),
        EventKind::FreeBatched { pfn } => format!("pfn={pfn:#x}"),
        EventKind::ZoneLocked {
            pfn,
            order,
            migratetype,
            percpu_refill,
        } => format!(
            "pfn={pfn:#x} order={order} migratetype={migratetype} percpu_refill={}",
            u8::from(percpu_refill)
        ),
        EventKind::PcpuDrain {
            pfn,
            order,
            migratetype,
        } => format!("pfn={pfn:#x} order={order} migratetype={migratetype}"),
        EventKind::Extfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            fragmenting,
            change_ownership,
        } => format!(
            "pfn={pfn:#x} alloc_order={alloc_order} fallback_order={fallback_order} \
                 alloc_migratetype={alloc_migratetype} fallback_migratetype={fallback_migratetype} \
                 fragmenting={} change_ownership={}",
            u8::from(fragmenting),
            u8::from(change_ownership)
        ),
        EventKind::KswapdWake { nid, order } => format!("nid={nid} order={order}"),
        EventKind::KswapdSleep { nid } => format!("nid={nid}"),
        EventKind::VmstatUpdate => "function=vmstat_update".to_owned(),
        EventKind::VmstatShepherd => "function=vmstat_shepherd".to_owned(),
        EventKind::CompactIsolate {
            start_pfn,
            end_pfn,
            nr_taken,
            ..
        } => format!("range={start_pfn:#x}~{end_pfn:#x} nr_taken={nr_taken}"),
    };
    format!("cpu={cpu} ts={ts} page={page} {} {fields}", ev.kind.name())
}

/// Golden files, one per tool and kernel era (`tests/data/golden/*.txt`), each with the
/// events worked out by hand from the format strings in `*.expected`.
#[test]
fn golden_files_of_each_tool_and_kernel_era() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut p = Parser::new();
        let mut got = String::new();
        for line in text.lines() {
            if let Some(ev) = p.feed(line.as_bytes()) {
                got.push_str(&canonical(&ev));
                got.push('\n');
            }
        }
        got.push_str(&format!(
            "# lines={} events={} comments={} other={} malformed={}\n",
            p.lines, p.events, p.comments, p.other, p.malformed
        ));
        let want = std::fs::read_to_string(path.with_extension("expected")).unwrap();
        assert_eq!(got, want, "{}", path.display());
        seen += 1;
    }
    assert_eq!(seen, 5, "golden files in {}", dir.display());
}

proptest! {
    /// The eight-bytes-at-a-time scans agree with the byte-at-a-time definitions on
    /// every input, separators, `=` and bytes from 0x80 up included.
    #[test]
    fn swar_scans_match_the_byte_loops(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'='), Just(b'\t'), Just(0u8), Just(0x21u8), Just(0x7f), Just(0x80), Just(0xa1), Just(0xff), any::<u8>()],
            0..40,
        ),
    ) {
        let naive_sep = |eq: bool| bytes.iter().position(|&b| is_sep(b) || (eq && b == b'=')).unwrap_or(bytes.len());
        prop_assert_eq!(find_sep(&bytes, false), naive_sep(false));
        prop_assert_eq!(find_sep(&bytes, true), naive_sep(true));
        prop_assert_eq!(skip_sep(&bytes), bytes.iter().position(|&b| !is_sep(b)).unwrap_or(bytes.len()));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut p = Parser::new();
        p.read_all(&bytes[..], |_| ()).unwrap();
        prop_assert_eq!(p.lines, p.events + p.comments + p.other + p.malformed);
    }

    /// Lines come out the same whatever the buffer size, and as a plain split on
    /// LF, CRLF and CR says.
    #[test]
    fn lines_do_not_depend_on_the_buffer(
        parts in proptest::collection::vec(
            prop_oneof![Just("\n"), Just("\r"), Just("\r\n"), Just(EV), Just("x")],
            0..30,
        ),
        cap in 1usize..40,
    ) {
        let text = parts.concat();
        let want = {
            let norm = text.replace("\r\n", "\n").replace('\r', "\n");
            let mut lines: Vec<&str> = norm.split('\n').collect();
            if lines.last() == Some(&"") {
                lines.pop();
            }
            let mut p = Parser::new();
            lines.iter().for_each(|l| { p.feed(l.as_bytes()); });
            (p.events, p.lines)
        };
        prop_assert_eq!(read_with(text.as_bytes(), cap).unwrap(), want);
    }

    #[test]
    fn mangled_event_lines_never_panic(cut in 0usize..200, junk in "[ -~]{0,40}") {
        let line = "  init-1 [003] ..... 3.812917: mm_page_alloc_extfrag: page=(null) pfn=0x2e64 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1";
        let cut = cut.min(line.len());
        let mangled = format!("{}{junk}", &line[..cut]);
        let mut p = Parser::new();
        let _ = p.feed(mangled.as_bytes());
        prop_assert_eq!(p.lines, 1);
    }
}

#[test]
fn kswapd_wake_and_sleep_name_a_node() {
    let ev = one("kswapd0-60 [001] ..... 9.5: mm_vmscan_kswapd_wake: nid=0 order=3");
    assert_eq!(ev.kind, EventKind::KswapdWake { nid: 0, order: 3 });
    assert_eq!((ev.kind.pfn(), ev.page), (0, PagePtr::Missing));
    let ev = one("kswapd0-60 [001] ..... 9.6: vmscan:mm_vmscan_kswapd_sleep: nid=1");
    assert_eq!(ev.kind, EventKind::KswapdSleep { nid: 1 });
    assert_eq!(ev.kind.name(), "mm_vmscan_kswapd_sleep");
    let mut p = Parser::new();
    assert!(p
        .feed(b"kswapd0-60 [001] ..... 9.6: mm_vmscan_kswapd_sleep: order=1")
        .is_none());
    assert_eq!(p.malformed, 1);
}

/// What a line gives, as text: its event, or why none.
fn outcome(r: Result<Event<'_>, LineKind>) -> String {
    match r {
        Ok(ev) => format!("{ev:?}"),
        Err(LineKind::Comment) => "comment".into(),
        Err(LineKind::Other) => "other".into(),
        Err(LineKind::Malformed(why)) => format!("malformed: {why}"),
    }
}

/// A line of each event the fast path takes, as 6.1 and 7.2 print them (with and without
/// the flags column).
const FAST_LINES: [&str; 7] = [
    "            init-1       [003] .....     3.812917: mm_page_alloc: page=(____ptrval____) pfn=0x2e64 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO",
    "           mkdir-186     [000] ...1.     7.096269: mm_page_free: page=(____ptrval____) pfn=0x3752 order=0",
    "           mkdir-175     [002] ...2.     3.818755: mm_page_free_batched: page=(____ptrval____) pfn=0x130f7 order=0",
    "            init-1       [002] d..3.     7.067491: mm_page_alloc_zone_locked: page=(____ptrval____) pfn=0x14744 order=2 migratetype=0 percpu_refill=1",
    "              rm-195     [000] d..3.     8.127971: mm_page_pcpu_drain: page=(____ptrval____) pfn=0x24443 order=0 migratetype=1",
    "  a-1 [001] 1.000004: mm_page_alloc: page=0x0 pfn=0xFFFFFFFFFFFFFFFF order=10 migratetype=0 gfp_flags=0x2cc0",
    "kworker/1:0-27 [1] 12.000000005: mm_page_free: page=ffffea0000abcd00 pfn=0x0 order=255\t ",
];

/// Where the fast path answers, it answers as the general walk does.
fn fast_agrees(line: &[u8]) -> Result<(), String> {
    if let Some(fast) = fast::parse_common(line) {
        let (f, g) = (outcome(fast), outcome(parse_line(line)));
        if f != g {
            return Err(format!("{}: fast {f}, general {g}", line.escape_ascii()));
        }
    }
    Ok(())
}

#[test]
fn the_fast_path_takes_every_page_event_of_the_common_shape() {
    for l in FAST_LINES {
        assert!(
            matches!(fast::parse_common(l.as_bytes()), Some(Ok(_))),
            "{l}"
        );
        fast_agrees(l.as_bytes()).unwrap();
    }
    let sample = std::fs::read_to_string(SAMPLE).unwrap();
    let mut taken = 0;
    for l in sample.lines().filter(|l| l.contains(": mm_page_")) {
        assert!(
            matches!(fast::parse_common(l.as_bytes()), Some(Ok(_))),
            "{l}"
        );
        fast_agrees(l.as_bytes()).unwrap();
        taken += 1;
    }
    assert_eq!(taken, 2985);
    // Other events, comments and the forms the general walk words go that way.
    for l in [
        "# tracer: nop",
        "            init-1       [003] .....     3.812328: tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p1_tmpfs",
        "a-1 [000] 1.5: mm_page_free: page=0x1 pfn=0x10 order=0 order=1",
        "a-1 [000] 1.5: mm_page_free: page=0x1 pfn=16 order=0",
        "a-1 [000] 1.5: mm_page_free: page=0x1 pfn=0x10",
        "perf 1234 [000] 1.5: kmem:mm_page_free: page=0x1 pfn=0x10 order=0",
    ] {
        assert!(
            !matches!(fast::parse_common(l.as_bytes()), Some(Ok(_))),
            "{l}"
        );
        fast_agrees(l.as_bytes()).unwrap();
    }
}

#[test]
fn the_fast_path_agrees_with_the_general_walk_on_every_one_byte_change() {
    const BYTES: &[u8] = b" \t\n=:.[]#09xXfgA-\x00\x7f\x80\xff";
    let mut checked = 0;
    for l in FAST_LINES.map(str::as_bytes) {
        for i in 0..=l.len() {
            fast_agrees(&l[..i]).unwrap();
            for &b in BYTES {
                let mut v = l.to_vec();
                v.insert(i, b);
                fast_agrees(&v).unwrap();
                if i < l.len() {
                    v.remove(i);
                    v[i] = b;
                    fast_agrees(&v).unwrap();
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// Where the fast path answers for `line` read after `before` (whose opening and middle it
/// keeps), it answers as the general walk does.
fn fast_agrees_after(before: &[u8], line: &[u8]) -> Result<(), String> {
    let mut seen = fast::Seen::default();
    let _ = fast::parse_after(before, &mut seen);
    match fast::parse_after(line, &mut seen) {
        Some((r, end)) if end + 1 >= line.len() => {
            let (f, g) = (outcome(r), outcome(parse_line(line)));
            if f != g {
                return Err(format!(
                    "{} after {}: fast {f}, general {g}",
                    line.escape_ascii(),
                    before.escape_ascii()
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[test]
fn a_line_after_another_agrees_with_the_general_walk_on_every_one_byte_change() {
    const BYTES: &[u8] = b" \t\n=:.[]#09xXfgA-\x00\x7f\x80\xff";
    let mut checked = 0;
    let mut same_before = 0;
    for l in FAST_LINES.map(str::as_bytes) {
        // The line after itself: its opening and middle are not walked again.
        let mut seen = fast::Seen::default();
        let first = fast::parse_after(l, &mut seen).map(|(r, e)| (outcome(r), e));
        let again = fast::parse_after(l, &mut seen).map(|(r, e)| (outcome(r), e));
        assert_eq!(first, again);
        for i in 0..=l.len() {
            fast_agrees_after(l, &l[..i]).unwrap();
            for &b in BYTES {
                let mut v = l.to_vec();
                v.insert(i, b);
                // Changed after the line, and the line after the changed one.
                fast_agrees_after(l, &v).unwrap();
                fast_agrees_after(&v, l).unwrap();
                if i < l.len() {
                    v.remove(i);
                    v[i] = b;
                    fast_agrees_after(l, &v).unwrap();
                    fast_agrees_after(&v, l).unwrap();
                    if v[..i] == l[..i] && matches!(fast::parse_common(&v), Some(Ok(_))) {
                        same_before += 1;
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
    assert!(same_before > 1_000, "{same_before}");
}

proptest! {
    /// The word-at-a-time digit run agrees with the byte loop: count, and value below eight.
    #[test]
    fn swar_digits_match_the_byte_loop(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'0'), Just(b'9'), Just(b'/'), Just(b':'), Just(b' '), Just(0x80u8), Just(0xb9u8), Just(0xffu8), 0x30u8..0x3a],
            8,
        ),
    ) {
        let n = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let v = if n == 8 { 0 } else { bytes[..n].iter().fold(0, |v, &b| v * 10 + u64::from(b - b'0')) };
        let x = u64::from_le_bytes(bytes[..].try_into().unwrap());
        prop_assert_eq!(fast::swar_digits(x), (v, n));
    }

    /// The same with longer changes: junk of the bytes that matter put in at any point.
    #[test]
    fn the_fast_path_agrees_on_mangled_lines(
        which in 0usize..FAST_LINES.len(),
        at in 0usize..200,
        cut in 0usize..8,
        junk in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'='), Just(b':'), Just(b'.'), Just(b'0'), Just(b'x'), Just(b'['), Just(b']'), any::<u8>()],
            0..12,
        ),
    ) {
        let l = FAST_LINES[which].as_bytes();
        let at = at.min(l.len());
        let end = (at + cut).min(l.len());
        let v = [&l[..at], &junk[..], &l[end..]].concat();
        prop_assert!(fast_agrees(&v).is_ok(), "{}", fast_agrees(&v).unwrap_err());
    }
}

proptest! {
    /// A line read where it lies in a buffer (`parse_at`, up to its LF) gives what the line
    /// alone gives, whatever follows it; a line that is cut off, or that ends in CR, is left
    /// to the general split.
    #[test]
    fn the_fast_path_in_a_buffer_stops_at_the_line_end(
        which in 0usize..FAST_LINES.len(),
        at in 0usize..200,
        junk in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'\n'), Just(b'\r'), Just(b'\t'), Just(b'0'), Just(b'x'), any::<u8>()],
            0..6,
        ),
        next in "[ -~]{0,20}",
    ) {
        let l = FAST_LINES[which].as_bytes();
        let at = at.min(l.len());
        let line = [&l[..at], &junk[..], &l[at..]].concat();
        let buf = [&line[..], b"\n", next.as_bytes()].concat();
        if let Some((r, end)) = fast::parse_at(&buf) {
            // Where it answers, the LF it stops at is the line's first line end, and the
            // answer is the general walk's on the line before it.
            let first_end = buf.iter().position(|&b| b == b'\n' || b == b'\r').unwrap();
            prop_assert_eq!(end, first_end);
            prop_assert_eq!(buf[end], b'\n');
            prop_assert_eq!(outcome(r), outcome(parse_line(&buf[..end])));
        }
    }
}

#[test]
fn the_fast_path_reads_lines_in_place_and_leaves_cut_and_cr_lines() {
    let l = FAST_LINES[0].as_bytes();
    let buf = [l, b"\n", l].concat();
    // Read in place up to its LF.
    assert!(matches!(fast::parse_at(&buf), Some((Ok(_), n)) if n == l.len()));
    // The last line, cut off by the buffer's end: no LF, so the caller carries it.
    assert!(matches!(fast::parse_at(l), Some((Ok(_), n)) if n == l.len()));
    // A CR inside or at the end goes the general way (which splits there).
    for cr in [b"\r".as_slice(), b"\r\n"] {
        assert!(fast::parse_at(&[l, cr].concat()).is_none());
    }
    let mut mid = l.to_vec();
    mid[l.len() - 5] = b'\r';
    assert!(fast::parse_at(&mid).is_none());
    // Another event's line: its end found, counted as other.
    let other = b"  a-1 [000] 1.5: tracing_mark_write: x\nnext";
    assert!(matches!(
        fast::parse_at(other),
        Some((Err(LineKind::Other), 38))
    ));
    assert!(fast::parse_at(b"  a-1 [000] 1.5: tracing_mark_write: x\rnext").is_none());
    // The pointer and pfn in one compare, and the same fields another way.
    for page in ["(____ptrval____)", "ffff8880abcd0000", "(null)", ""] {
        let line = format!("a-1 [000] 1.5: mm_page_free: page={page} pfn=0x1f order=0");
        let want = parse_line(line.as_bytes());
        assert!(want.is_ok(), "{line}");
        let got = fast::parse_common(line.as_bytes());
        assert_eq!(got.map(outcome), Some(outcome(want)), "{line}");
    }
    // Each name matched in place, and the near misses that are other tokens.
    for (name, want) in [
        (
            "mm_page_alloc_zone_locked: page=p pfn=0x1 order=0 migratetype=1 percpu_refill=1",
            true,
        ),
        ("mm_page_free_batched: page=p pfn=0x1 order=0", true),
        (
            "mm_page_pcpu_drain: page=p pfn=0x1 order=0 migratetype=1",
            true,
        ),
        (
            "mm_page_alloc:x page=p pfn=0x1 order=0 migratetype=1 gfp_flags=G",
            false,
        ),
        ("mm_page_freed: page=p pfn=0x1 order=0", false),
        ("mm_page_: page=p pfn=0x1 order=0", false),
    ] {
        let line = format!("a-1 [000] 1.5: {name}");
        let fast = fast::parse_common(line.as_bytes());
        assert_eq!(matches!(fast, Some(Ok(_))), want, "{line}");
        fast_agrees(line.as_bytes()).unwrap();
    }
}

#[test]
fn who_ran_a_line_is_read_on_both_paths_and_kept_across_lines() {
    let worker = b" kworker/2:0-32  [002] d..2.  22.151788: mm_page_pcpu_drain: page=(____ptrval____) pfn=0x14740 order=0 migratetype=0";
    let free = b" kworker/2:0-32  [002] d..3.  22.233026: mm_page_pcpu_drain: page=(____ptrval____) pfn=0x1477c order=2 migratetype=0";
    let task = b"     realtrue-611 [002] d.s4.  22.146579: mm_page_pcpu_drain: page=(____ptrval____) pfn=0x146f1 order=0 migratetype=0";
    let general = |l: &[u8]| parse_line(l).ok().map(|e| e.who);
    let w = general(worker).unwrap();
    assert_eq!((w.task(), w.pid()), (Task::CpuWorker, Some(32)));
    assert!(w.is_worker_drain());
    assert!(!general(free).unwrap().is_worker_drain());
    let t = general(task).unwrap();
    assert_eq!(
        (t.task(), t.pid(), t.ctx().softirq()),
        (Task::Other, Some(611), true)
    );
    // The fast path, with and without the line before's opening cached, says the same.
    let mut seen = fast::Seen::default();
    for l in [&worker[..], worker, free, task, worker] {
        let (r, _) = fast::parse_after(l, &mut seen).expect("the fast path takes it");
        assert_eq!(r.ok().map(|e| e.who), general(l));
    }
    // perf script: comm and pid apart, no latency column.
    let perf = one("              dd  4242 [002]  5123.456789: kmem:mm_page_free: page=0xffffea0000b98000 pfn=0x2e600 order=0");
    assert_eq!((perf.who.task(), perf.who.pid()), (Task::Other, Some(4242)));
    assert_eq!(perf.who.ctx(), Ctx::NONE);
    // No task column at all.
    let bare = one("[001] 1.000004: mm_page_free: page=0x1 pfn=0x2 order=0");
    assert_eq!(bare.who, Who::UNKNOWN);
}

mod feed;
mod workqueue;
