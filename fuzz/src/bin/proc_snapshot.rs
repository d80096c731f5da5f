//! The `--proc` snapshot reader on arbitrary text: zoneinfo, pagetypeinfo and buddyinfo,
//! each parsed alone and then together under every tolerance, never panic, and what they
//! accept holds the bounds the replay sizes its arrays by (CPU ids below `MAX_CPUS`, spans
//! below `MAX_PFN` and apart, each zone once). The input is the three files separated by NUL
//! bytes (`zoneinfo \0 pagetypeinfo \0 buddyinfo`; a missing part is an absent file);
//! `fuzz/seeds/proc_snapshot/` holds the real 6.1 and 7.2 snapshots in that form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zonealloc_lab::procfs::{
    parse_buddyinfo, parse_pagetypeinfo, parse_zoneinfo, ProcSnapshot, Tolerance, MAX_CPUS, MAX_PFN,
};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0).map(std::str::from_utf8);
    let Some(Ok(zoneinfo)) = parts.next() else {
        return;
    };
    let pagetypeinfo = parts.next().and_then(Result::ok);
    let buddyinfo = parts.next().and_then(Result::ok);
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
    }
});

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
