//! The `zonealloc` binary end to end: usage errors, the `/proc` views, and a quick lab run
//! whose report folder and JSON are checked for structure (never for timings).

mod common;

use common::{assert_no_panic, stderr, stdout, zonealloc};

#[test]
fn bad_flag_exits_non_zero_with_a_message() {
    let o = zonealloc(&["lab", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--no-such-flag"), "{}", stderr(&o));
    assert_no_panic(&o);
}

#[test]
fn impossible_sizes_are_usage_errors() {
    for args in [
        ["lab", "--threads", "0"],
        ["lab", "--iterations", "0"],
        ["lab", "--zone-pages", "0"],
        ["lab", "--seed", "-1"],
        ["lab", "--threads", "many"],
        ["lab", "--nodes", "0"],
        ["lab", "--nodes", "9"],
    ] {
        let o = zonealloc(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains("error"), "{args:?}: {}", stderr(&o));
        assert_no_panic(&o);
    }
}

#[test]
fn unknown_experiment_exits_2_and_lists_the_known_ones() {
    let o = zonealloc(&["lab", "no-such-experiment"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("unknown experiment 'no-such-experiment'"),
        "{err}"
    );
    assert!(err.contains("known experiments"), "{err}");
    let list = zonealloc(&["lab", "--list"]);
    assert!(list.status.success());
    for line in stdout(&list).lines() {
        if let Some(name) = line
            .split_whitespace()
            .next()
            .filter(|n| !n.starts_with('('))
        {
            assert!(err.contains(name), "{name} missing from {err}");
        }
    }
    assert!(stdout(&o).is_empty());
}

#[test]
fn an_experiment_that_runs_on_one_node_refuses_nodes_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = zonealloc(&[
        "lab",
        "free-high",
        "--nodes",
        "2",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("'free-high' runs on one node only"), "{err}");
    assert!(err.contains("batch-scale, drain"), "{err}");
    assert!(!out.exists());
    assert_no_panic(&o);
}

#[test]
fn buddyinfo_prints_kernel_format_lines() {
    let o = zonealloc(&["buddyinfo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().count() >= 1);
    assert!(out.lines().all(|l| l.starts_with("Node 0, zone")), "{out}");
}

#[test]
fn buddyinfo_is_deterministic_given_the_seed() {
    let a = zonealloc(&["buddyinfo", "--seed", "7"]);
    let b = zonealloc(&["buddyinfo", "--seed", "7"]);
    assert!(a.status.success());
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn zoneinfo_and_pagetypeinfo_print_their_headers() {
    let z = zonealloc(&["zoneinfo", "--workload", "none"]);
    assert!(z.status.success(), "{}", stderr(&z));
    assert!(stdout(&z).contains("pages free"));
    assert!(stdout(&z).contains("pagesets"));
    let p = zonealloc(&["pagetypeinfo"]);
    assert!(p.status.success(), "{}", stderr(&p));
    assert!(stdout(&p).starts_with("Page block order:"));
    let bad = zonealloc(&["buddyinfo", "--workload", "bogus"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn quick_lab_writes_report_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report");
    let out_s = out.to_str().expect("utf-8 temp path");
    let o = zonealloc(&["lab", "--quick", "--json", "--out", out_s]);
    assert_no_panic(&o);
    assert!(o.status.success(), "{}", stderr(&o));

    // --json: stdout is exactly one JSON document.
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(md.starts_with("# zonealloc lab report"));
    assert!(md.contains("## Machine"));
    assert!(md.contains("Welch"));
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("results.json parses");
    assert_eq!(json, printed);
    for key in [
        "tool",
        "command",
        "machine",
        "opts",
        "significance_test",
        "experiments",
        "failures",
    ] {
        assert!(json.get(key).is_some(), "results.json lacks {key}");
    }
    assert_eq!(json["opts"]["quick"], true);
    assert!(json["machine"]["logical_cores"].as_u64().unwrap_or(0) >= 1);
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(0));

    for e in json["experiments"].as_array().expect("experiments array") {
        let name = e["name"].as_str().expect("name");
        assert!(
            md.contains(&format!("## {name} ")),
            "{name} missing from report.md"
        );
        for key in [
            "baseline",
            "variants",
            "metrics",
            "samples",
            "config",
            "comparisons",
        ] {
            assert!(e.get(key).is_some(), "{name} lacks {key}");
        }
        let metrics = e["metrics"].as_array().expect("metrics");
        assert_eq!(
            e["comparisons"].as_array().map(Vec::len),
            Some(metrics.len())
        );
        for m in metrics {
            let m = m["name"].as_str().expect("metric name");
            assert!(
                md.contains(&format!("Stddev {m}")),
                "{name}: no Stddev row for {m}"
            );
            assert!(
                md.contains(&format!("CoeffVar {m}")),
                "{name}: no CoeffVar row for {m}"
            );
        }
        for p in e["plots"].as_array().expect("plots") {
            let stem = p["file_stem"].as_str().expect("file_stem");
            let svg = std::fs::read_dir(&out)
                .expect("report dir")
                .filter_map(Result::ok)
                .map(|f| f.file_name().to_string_lossy().into_owned())
                .any(|f| f.ends_with(".svg") && f.contains(stem));
            assert!(svg, "{name}: plot {stem} not rendered");
        }
    }
}

#[test]
fn human_output_ends_with_the_report_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r");
    let out_s = out.to_str().expect("utf-8 temp path");
    // One experiment: the last line is the same whichever ran, and a whole quick lab in
    // debug costs CI a minute (`quick_lab_writes_report_and_json` runs every experiment).
    let o = zonealloc(&[
        "lab",
        "drain",
        "--quick",
        "--iterations",
        "2",
        "--out",
        out_s,
    ]);
    assert_no_panic(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).trim_end().ends_with(&format!("report: {out_s}")));
    assert!(out.join("report.md").is_file());
}

#[test]
fn registered_experiment_names_are_unique() {
    let o = zonealloc(&["lab", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with('('))
        .map(str::to_owned)
        .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "duplicate names in {names:?}");
}

#[test]
fn impossible_zone_size_fails_each_experiment_cleanly() {
    let list = zonealloc(&["lab", "--list"]);
    let any = stdout(&list)
        .lines()
        .any(|l| !l.trim_start().starts_with('('));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().to_str().expect("utf-8 temp path");
    let o = zonealloc(&["lab", "--quick", "--zone-pages", "3", "--out", out]);
    assert_no_panic(&o);
    if any {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("failed"), "{}", stderr(&o));
        let text = std::fs::read_to_string(dir.path().join("results.json")).expect("json");
        let json: serde_json::Value = serde_json::from_str(&text).expect("parses");
        assert!(json["failures"].as_array().is_some_and(|f| !f.is_empty()));
    }
}
