//! The `--proc` snapshot reader on arbitrary text: zoneinfo, pagetypeinfo and buddyinfo,
//! each parsed alone and then together under every tolerance, never panic, and what they
//! accept holds the bounds the replay sizes its arrays by (CPU ids below `MAX_CPUS`, spans
//! below `MAX_PFN` and apart, each zone once). The input is the three files separated by NUL
//! bytes (`zoneinfo \0 pagetypeinfo \0 buddyinfo`; a missing part is an absent file), and
//! optionally a fourth, the pfn `layout` (`parse_layout`, then checked against each accepted
//! snapshot; its free blocks are aligned, within the range asked and at most `max_order`);
//! `fuzz/seeds/proc_snapshot/` holds the real 6.1 and 7.2 snapshots in that form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zonealloc_lab::procfs::{
    parse_buddyinfo, parse_layout, parse_pagetypeinfo, parse_zoneinfo, Layout, ProcSnapshot,
    Tolerance, MAX_CPUS, MAX_PFN,
};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |&b| b == 0).map(std::str::from_utf8);
    let Some(Ok(zoneinfo)) = parts.next() else {
        return;
    };
    let pagetypeinfo = parts.next().and_then(Result::ok);
    let buddyinfo = parts.next().and_then(Result::ok);
    let layout = parts
        .next()
        .and_then(Result::ok)
        .and_then(|t| parse_layout(t).ok());
    if let Some(l) = &layout {
        check_layout(l);
    }
    let _ = parse_zoneinfo(zoneinfo);
    if let Some(p) = pagetypeinfo {
        let _ = parse_pagetypeinfo(p);
    }
    if let Some(b) = buddyinfo {
        let _ = parse_buddyinfo(b);
    }
    for tolerance in [Tolerance::Exact, Tolerance::Live, Tolerance::Busy] {
        let Ok(s) = ProcSnapshot::parse_with(zoneinfo, pagetypeinfo, buddyinfo, tolerance) else {
            continue;
        };
        check(&s);
        if let Some(l) = &layout {
            let _ = s.check_layout(l);
        }
    }
});

/// What an accepted layout promises the set-up: free blocks aligned, of at most `max_order`,
/// inside the range asked, in pfn order without overlap.
fn check_layout(l: &Layout) {
    assert!(l.end <= MAX_PFN);
    let (from, to) = (l.end / 3, l.end - l.end / 5);
    let mut next = from;
    for (pfn, order) in l.free_blocks(from..to, l.max_order) {
        assert!(order <= l.max_order && pfn % (1 << order) == 0, "{pfn} {order}");
        assert!(pfn >= next && pfn + (1 << order) <= to, "{pfn} {order} in {from}..{to}");
        next = pfn + (1 << order);
    }
    let pages: u64 = l.runs_in(0..l.end).map(|r| r.count).sum();
    assert_eq!(pages, l.end);
}

/// What an accepted snapshot promises the replay.
fn check(s: &ProcSnapshot) {
    assert!(s.cpus.iter().all(|&c| c < MAX_CPUS), "{:?}", s.cpus);
    assert!(s.cpus.windows(2).all(|w| w[0] < w[1]), "{:?}", s.cpus);
    let mut spans: Vec<(u64, u64)> = s
        .zones
        .iter()
        .map(|z| {
            let end = z
                .start_pfn
                .checked_add(z.spanned_pages)
                .expect("span wraps");
            assert!(end <= MAX_PFN, "{} ends at {end:#x}", z.label());
            assert!(z.managed_pages <= z.present_pages && z.present_pages <= z.spanned_pages);
            (z.start_pfn, end)
        })
        .collect();
    spans.sort_unstable();
    assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
    for z in &s.zones {
        // Every derived figure the set-up reads, computed without a panic.
        let _ = (
            z.free_blocks(),
            z.buddy_free_pages(),
            z.used_pages(),
            z.pcp_pages(),
        );
    }
    assert!(s.same_machine(s).is_ok());
}
