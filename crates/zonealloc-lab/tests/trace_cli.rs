//! `zonealloc trace stats` end to end on the real ftrace sample and on a malformed file.

use std::process::{Command, Output};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/linux-6.1-ftrace-sample.txt"
);

fn zonealloc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonealloc"))
        .args(args)
        .output()
        .expect("the zonealloc binary runs")
}

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
