use super::*;
use crate::trace::parse::{Ctx, Task};
use std::io::Cursor;

const LINES: &str = "\
 a-1 [000] .... 1.000001: mm_page_alloc: page=0x1 pfn=0x100 order=0 migratetype=1 gfp_flags=GFP_KERNEL
 a-1 [001] .... 1.000002: mm_page_alloc: page=0x1 pfn=0x101 order=0 migratetype=1 gfp_flags=GFP_KERNEL
 a-1 [001] .... 1.000003: mm_page_free: page=0x1 pfn=0x100 order=0
 a-1 [001] .... 1.000004: mm_page_alloc: page=0x1 pfn=0x102 order=1 migratetype=0 gfp_flags=GFP_ATOMIC|__GFP_NOWARN
this line is malformed: mm_page_alloc: pfn=zz
 a-1 [000] .... 1.000005: mm_page_pcpu_drain: page=0x1 pfn=0x103 order=0 migratetype=1
";

/// Every event, in order, as a parse in this thread gives them.
fn direct(text: &str) -> (Vec<String>, u64, u64) {
    let mut p = Parser::new();
    let mut out = Vec::new();
    p.read_all(text.as_bytes(), |ev| out.push(format!("{ev:?}")))
        .unwrap();
    (out, p.lines, p.malformed)
}

#[test]
fn chunks_carry_every_event_and_its_text_in_order() {
    // Over two chunks, with the text of one chunk repeated and changed.
    let text = LINES.repeat(CHUNK_EVENTS / 4);
    let ahead = ParseAhead::spawn(
        Parser::new(),
        Box::new(Cursor::new(text.clone().into_bytes())),
    )
    .unwrap();
    let mut got = Vec::new();
    let mut chunks = 0;
    while let Some(c) = ahead.next() {
        chunks += 1;
        got.extend(c.events().map(|ev| format!("{ev:?}")));
        ahead.recycle(c);
    }
    let (parser, read) = ahead.finish();
    read.unwrap();
    let (want, lines, malformed) = direct(&text);
    assert!(chunks > 1);
    assert_eq!(got, want);
    assert_eq!((parser.lines, parser.malformed), (lines, malformed));
}

#[test]
fn every_kind_of_event_comes_out_of_a_chunk_as_it_went_in() {
    let kinds = [
        EventKind::Alloc {
            pfn: u64::MAX,
            order: 255,
            migratetype: 7,
            gfp_flags: "GFP_KERNEL|__GFP_ZERO",
        },
        EventKind::Alloc {
            pfn: 0,
            order: 0,
            migratetype: 0,
            gfp_flags: "",
        },
        EventKind::Free { pfn: 1, order: 10 },
        EventKind::FreeBatched { pfn: 1 << 40 },
        EventKind::ZoneLocked {
            pfn: 2,
            order: 3,
            migratetype: 1,
            percpu_refill: true,
        },
        EventKind::ZoneLocked {
            pfn: 2,
            order: 3,
            migratetype: 1,
            percpu_refill: false,
        },
        EventKind::PcpuDrain {
            pfn: 3,
            order: 9,
            migratetype: 4,
        },
        EventKind::Extfrag {
            pfn: 4,
            alloc_order: 1,
            fallback_order: 2,
            alloc_migratetype: 3,
            fallback_migratetype: 4,
            fragmenting: true,
            change_ownership: false,
        },
        EventKind::Extfrag {
            pfn: 4,
            alloc_order: 9,
            fallback_order: 10,
            alloc_migratetype: 0,
            fallback_migratetype: 2,
            fragmenting: false,
            change_ownership: true,
        },
        EventKind::KswapdWake {
            nid: u32::MAX,
            order: 4,
        },
        EventKind::KswapdSleep { nid: 1 },
        EventKind::Alloc {
            pfn: 5,
            order: 1,
            migratetype: 2,
            gfp_flags: "GFP_ATOMIC",
        },
    ];
    let mut want = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        for (cpu, ts_ns, page, who) in [
            (
                Some(u32::MAX),
                Some(u64::MAX),
                PagePtr::Present,
                Who::new(Task::CpuWorker, Some(u32::MAX), Ctx::parse(b"d..2.")),
            ),
            (None, Some(0), PagePtr::Null, Who::UNKNOWN),
            (
                Some(0),
                None,
                PagePtr::Missing,
                Who::new(Task::Other, Some(0), Ctx::parse(b"D.Hf.")),
            ),
        ] {
            let kind = kind.clone();
            want.push(Event {
                cpu: cpu.map(|c| c ^ i as u32),
                ts_ns,
                page,
                kind,
                who,
            });
        }
    }
    let mut chunk = Chunk::new();
    for ev in &want {
        chunk.push(ev);
    }
    let got: Vec<Event<'_>> = chunk.events().collect();
    assert_eq!(got, want);
    let times: Vec<_> = chunk.times().collect();
    assert_eq!(times, want.iter().map(|e| e.ts_ns).collect::<Vec<_>>());
    assert!(chunk.has_kswapd());
    // Repeated texts were copied once each run.
    assert_eq!(
        chunk.text, "GFP_KERNEL|__GFP_ZEROGFP_ATOMIC",
        "{:?}",
        chunk.text
    );
}

/// The texts are kept once a run and found again by position: a text that comes back
/// after another is kept again, an allocation after other events reads its own run's, and
/// a partial read (`take`) or a refilled chunk reads the same.
#[test]
fn each_allocation_reads_its_own_text_across_runs_and_refills() {
    let at = |kind| Event {
        cpu: Some(1),
        ts_ns: Some(7),
        page: PagePtr::Present,
        kind,
        who: Who::UNKNOWN,
    };
    let alloc = |gfp_flags| {
        at(EventKind::Alloc {
            pfn: 9,
            order: 0,
            migratetype: 1,
            gfp_flags,
        })
    };
    let free = at(EventKind::Free { pfn: 9, order: 0 });
    let want = [
        alloc("A|B"),
        free.clone(),
        alloc("A|B"),
        alloc("C"),
        alloc(""),
        free.clone(),
        alloc(""),
        alloc("A|B"),
        free,
        alloc("C"),
    ];
    let mut chunk = Chunk::new();
    for round in 0..2 {
        for ev in &want {
            chunk.push(ev);
        }
        assert_eq!(chunk.events().collect::<Vec<_>>(), want, "round {round}");
        assert_eq!(chunk.text, "A|BCA|BC");
        assert_eq!(chunk.bounds, [0, 3, 4, 4, 7, 8]);
        for n in 0..want.len() {
            assert_eq!(chunk.events().take(n).collect::<Vec<_>>(), want[..n]);
        }
        assert_eq!(chunk.events().len(), want.len());
        chunk.clear();
        assert_eq!(chunk.events().count(), 0);
    }
}

/// A compaction isolate line keeps its range, its pages and its path through the chunk.
#[test]
fn a_compaction_isolate_line_comes_back_as_it_went_in() {
    let mut chunk = Chunk::new();
    let kinds = [
        EventKind::CompactIsolate {
            start_pfn: 0x13b400,
            end_pfn: 0x13b600,
            nr_taken: 512,
            fast: false,
        },
        EventKind::CompactIsolate {
            start_pfn: 0x1000,
            end_pfn: 0x140000,
            nr_taken: 1024,
            fast: true,
        },
    ];
    for kind in &kinds {
        chunk.push(&Event {
            cpu: Some(1),
            ts_ns: Some(7),
            page: PagePtr::Missing,
            kind: kind.clone(),
            who: Who::UNKNOWN,
        });
    }
    let back: Vec<_> = chunk.events().map(|e| e.kind).collect();
    assert_eq!(back, kinds);
}

#[test]
fn a_chunk_knows_whether_it_holds_a_kswapd_event_until_it_is_cleared() {
    let ev = |kind| Event {
        cpu: Some(0),
        ts_ns: Some(5),
        page: PagePtr::Missing,
        kind,
        who: Who::UNKNOWN,
    };
    for kswapd in [
        EventKind::KswapdWake { nid: 0, order: 0 },
        EventKind::KswapdSleep { nid: 0 },
    ] {
        let mut chunk = Chunk::new();
        chunk.push(&ev(EventKind::Free { pfn: 1, order: 0 }));
        chunk.push(&ev(EventKind::PcpuDrain {
            pfn: 1,
            order: 0,
            migratetype: 1,
        }));
        assert!(!chunk.has_kswapd());
        chunk.push(&ev(kswapd));
        assert!(chunk.has_kswapd());
        chunk.clear();
        chunk.push(&ev(EventKind::FreeBatched { pfn: 1 }));
        assert!(!chunk.has_kswapd());
    }
}

#[test]
fn the_parser_reads_to_the_end_when_the_replay_stops_and_returns_its_error() {
    let mut text = LINES.repeat(CHUNK_EVENTS);
    text.push_str(&"x".repeat(300));
    let mut parser = Parser::new();
    parser.max_line_bytes = 200;
    let ahead = ParseAhead::spawn(parser, Box::new(Cursor::new(text.into_bytes()))).unwrap();
    // One chunk taken, the rest left.
    assert!(ahead.next().is_some());
    let (parser, read) = ahead.finish();
    let e = read.unwrap_err();
    assert!(e.to_string().contains("longer than 200 bytes"), "{e}");
    assert_eq!(parser.lines, 6 * CHUNK_EVENTS as u64);
}
