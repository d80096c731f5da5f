//! `zonealloc trace stats` end to end on the real ftrace sample and on a malformed file.

mod common;

use common::{zonealloc, SAMPLE};

#[test]
fn trace_stats_on_the_sample() {
    let o = zonealloc(&["trace", "stats", SAMPLE, "--strict"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for want in [
        "mm_page_alloc                    1312",
        "mm_page_alloc_zone_locked        1015",
        "mm_page_free                      364",
        "mm_page_free_batched              294",
        "malformed                 0",
        "0x2df6         8",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn trace_stats_json() {
    let o = zonealloc(&["trace", "stats", SAMPLE, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["events_per_type"]["mm_page_alloc"], 1312);
    assert_eq!(v["frees"], 364);
    assert_eq!(v["malformed"], 0);
    assert_eq!(v["most_reused"][0]["pfn"], 0x2df6);
}

#[test]
fn strict_fails_on_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.txt");
    std::fs::write(
        &path,
        "a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0\na-1 [000] 1.1: mm_page_free: page=p pfn=\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let lax = zonealloc(&["trace", "stats", p]);
    assert!(lax.status.success());
    assert!(String::from_utf8_lossy(&lax.stdout).contains("line 2:"));
    let strict = zonealloc(&["trace", "stats", p, "--strict"]);
    assert_eq!(strict.status.code(), Some(1));
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(err.contains("malformed") && err.contains("line 2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_file_is_an_error() {
    let o = zonealloc(&["trace", "stats", "/nonexistent/trace.txt"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn migratetype_numbering_is_inferred_or_given() {
    // The 6.1 sample: GFP_HIGHUSER_MOVABLE allocations print migratetype=1 (current).
    let o = zonealloc(&["trace", "stats", SAMPLE, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["migratetype_numbering"], "current");
    assert_eq!(v["migratetype_names"]["1"], "Movable");
    assert!(v["migratetype_evidence"]["current"].as_u64().unwrap() > 1000);
    assert_eq!(v["migratetype_evidence"]["legacy"], 0);

    // Given, it overrides the evidence.
    let o = zonealloc(&[
        "trace",
        "stats",
        SAMPLE,
        "--migratetypes",
        "legacy",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["migratetype_numbering"], "legacy");
    assert_eq!(v["migratetype_names"]["1"], "Reclaimable");

    // A pre-4.4 trace (decimal pfn, Movable printed as 2) is read as legacy.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.txt");
    std::fs::write(
        &path,
        "bash-1 [000] .... 1.000: mm_page_alloc: page=ffffea0000010000 pfn=1024 order=0 migratetype=2 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
         bash-1 [000] .... 1.001: mm_page_alloc: page=ffffea0000010040 pfn=1025 order=0 migratetype=1 gfp_flags=GFP_KERNEL|__GFP_RECLAIMABLE\n\
         bash-1 [000] .... 1.002: mm_page_alloc: page=ffffea0000010080 pfn=1026 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n",
    )
    .unwrap();
    let o = zonealloc(&["trace", "stats", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("numbering: legacy (before Linux 4.4) (inferred: 0 allocations agree with current, 2 with legacy)"),
        "{out}"
    );
    assert!(out.contains("2  Movable"), "{out}");

    let o = zonealloc(&["trace", "stats", SAMPLE, "--migratetypes", "2015"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("possible values: current, legacy"));
}
