//! `zonealloc trace stats` end to end on the real ftrace sample, on malformed and hostile
//! input (no trace at all, endless lines, decompression bombs, other line ends, standard
//! input), and `zonealloc trace gen` on zones that cannot hold its workload.

mod common;

use common::{
    assert_no_panic, assert_usage_error, json, s, stderr, zonealloc, zonealloc_with_stdin, SAMPLE,
};

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

/// Asserts a failure (exit 1) whose message contains `needle`, with nothing on stdout.
fn assert_fails_with(o: &std::process::Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
    assert_no_panic(o);
    assert!(o.stdout.is_empty());
}

#[test]
fn input_that_is_no_trace_is_an_error() {
    assert_fails_with(
        &zonealloc(&["trace", "stats", "/dev/null"]),
        "empty input: not one kmem page-allocator event",
    );
    // An ELF binary: the zonealloc binary itself (where a run of 64 KiB without a newline
    // comes first, that is the error), and its first 16 KiB.
    let elf = env!("CARGO_BIN_EXE_zonealloc");
    let o = zonealloc(&["trace", "stats", elf]);
    assert_fails_with(&o, "reading ");
    let err = stderr(&o);
    assert!(
        err.contains("not a kmem trace") || err.contains("is longer than 65536 bytes"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("elf-head");
    std::fs::write(&head, &std::fs::read(elf).unwrap()[..16 << 10]).unwrap();
    assert_fails_with(
        &zonealloc(&["trace", "stats", s(&head)]),
        "not a kmem trace",
    );
    // Text, but every line malformed but one.
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0\nsome notes\nabout nothing\n",
    )
    .unwrap();
    assert_fails_with(
        &zonealloc(&["trace", "stats", s(&path)]),
        "2 of 3 lines are malformed",
    );
}

#[test]
fn an_endless_line_is_an_error_naming_it() {
    // /dev/zero used to grow one line until a 4 GiB allocation aborted.
    assert_fails_with(
        &zonealloc(&["trace", "stats", "/dev/zero"]),
        "reading /dev/zero: line 1 is longer than 65536 bytes",
    );
    // A zstd bomb without a newline: 64 MiB of text in a small file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.zst");
    let mut text = b"a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0\n".to_vec();
    text.extend(std::iter::repeat_n(b'a', 64 << 20));
    let zst =
        ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest);
    assert!(zst.len() < 4 << 20);
    std::fs::write(&path, zst).unwrap();
    assert_fails_with(
        &zonealloc(&["trace", "stats", s(&path)]),
        "line 2 is longer than 65536 bytes",
    );
}

#[test]
fn cr_crlf_and_lf_files_read_alike() {
    let sample = std::fs::read_to_string(SAMPLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let want = json(&zonealloc(&[
        "trace", "stats", SAMPLE, "--json", "--strict",
    ]));
    for (name, end) in [("cr", "\r"), ("crlf", "\r\n")] {
        let path = dir.path().join(name);
        std::fs::write(&path, sample.replace('\n', end)).unwrap();
        let got = json(&zonealloc(&[
            "trace",
            "stats",
            s(&path),
            "--json",
            "--strict",
        ]));
        assert_eq!(got["lines"], 3000, "{name}");
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn dash_reads_standard_input() {
    let sample = std::fs::read(SAMPLE).unwrap();
    let want = json(&zonealloc(&["trace", "stats", SAMPLE, "--json"]));
    let got = json(&zonealloc_with_stdin(
        &["trace", "stats", "-", "--json"],
        &sample,
    ));
    assert_eq!(got, want);
    // Compressed on standard input too (the format is sniffed, not named).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &sample).unwrap();
    let got = json(&zonealloc_with_stdin(
        &["trace", "stats", "-", "--json"],
        &gz.finish().unwrap(),
    ));
    assert_eq!(got, want);
    assert_fails_with(
        &zonealloc_with_stdin(&["trace", "stats", "-"], b""),
        "reading standard input: empty input",
    );
}

#[test]
fn xz_traces_are_read() {
    let sample = std::fs::read(SAMPLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.txt.xz");
    let mut w = liblzma::write::XzEncoder::new(Vec::new(), 6);
    std::io::Write::write_all(&mut w, &sample).unwrap();
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    let want = json(&zonealloc(&["trace", "stats", SAMPLE, "--json"]));
    assert_eq!(
        json(&zonealloc(&[
            "trace",
            "stats",
            s(&path),
            "--json",
            "--strict"
        ])),
        want
    );
}

#[test]
fn gen_refuses_a_zone_that_cannot_hold_its_workload() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.txt");
    let o = s(&out);
    // Used to write 100k failed allocations and exit 0.
    assert_usage_error(
        &["trace", "gen", "--zone-pages", "10", "-o", o],
        "--zone-pages 10 cannot hold the mixed workload: it needs at least 2048 pages",
    );
    assert_usage_error(
        &[
            "trace",
            "gen",
            "--workload",
            "cross-cpu",
            "--zone-pages",
            "100",
            "-o",
            o,
        ],
        "cannot hold the cross-cpu workload",
    );
    // Used to panic (index out of bounds in the frame table).
    assert_usage_error(
        &[
            "trace",
            "gen",
            "--zone-start",
            "0xfffffffffffffc00",
            "--zone-pages",
            "512",
            "-o",
            o,
        ],
        "passes the end of the pfn space",
    );
    assert_usage_error(
        &["trace", "gen", "--zone-pages", "4294967295", "-o", o],
        "more than trace gen builds",
    );
    assert!(!out.exists(), "nothing written");
    // The smallest zones it accepts run their workload.
    for (workload, pages) in [
        ("cross-cpu", "512"),
        ("page-fault", "64"),
        ("high-order", "1024"),
        ("mixed", "2048"),
    ] {
        let o = zonealloc(&[
            "trace",
            "gen",
            "--workload",
            workload,
            "--zone-pages",
            pages,
            "--ops",
            "20000",
            "-o",
            s(&out),
        ]);
        assert!(o.status.success(), "{workload}: {}", stderr(&o));
    }
}
