//! `zonealloc bench` end to end: usage errors, and quick runs whose table and JSON are checked
//! for structure and conservation (never for timings). Every peer runs every workload; a
//! cell whose allocator does not get every block back fails, and so does the command.

mod common;

use serde_json::Value;

use common::{assert_usage_error, stderr, stdout, zonealloc};

#[test]
fn bad_bench_flags_are_usage_errors_that_say_what_is_wrong() {
    assert_usage_error(&["bench", "--workload", "nope"], "pair0");
    assert_usage_error(&["bench", "--peer", "jemalloc"], "mimalloc");
    assert_usage_error(&["bench", "--threads", "0"], "--threads");
    assert_usage_error(&["bench", "--threads", "1,x"], "--threads");
    assert_usage_error(&["bench", "--repetitions", "0"], "--repetitions");
    assert_usage_error(&["bench", "--pool-pages", "1000"], "power of two");
    assert_usage_error(&["bench", "--pool-pages", "512"], "power of two");
    assert_usage_error(
        &["bench", "--ops", "5", "--duration-ms", "5"],
        "cannot be used",
    );
    assert_usage_error(&["bench", "--json", "a", "b"], "unexpected argument");
}

#[test]
fn help_lists_workloads_and_peers() {
    let o = zonealloc(&["bench", "--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for name in [
        "pair0",
        "burst64",
        "pair1",
        "pair3",
        "pair9",
        "local",
        "producer-consumer",
        "mixed",
        "zonealloc-buddy",
        "global-lock",
        "bsa-frame",
        "bsa-heap",
        "posix-memalign",
        "mimalloc",
        "mmap",
    ] {
        assert!(out.contains(name), "{name} missing from --help:\n{out}");
    }
}

/// Every peer x every workload at 1 and 2 threads: each cell is measured (none failed, so
/// each allocator got all its blocks back), the ratios are against zonealloc.
#[test]
fn quick_run_measures_every_peer_on_every_workload_and_conserves() {
    let o = zonealloc(&["bench", "--quick", "--threads", "1,2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("stdout is the JSON document");
    assert!(doc["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(doc["ratio_definition"]
        .as_str()
        .unwrap()
        .contains("zonealloc"));
    let cells = doc["cells"].as_array().unwrap();
    let peers: Vec<&str> = doc["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(peers[0], "zonealloc");
    assert!(peers.len() >= 7, "{peers:?}");
    // 5 single-thread workloads once, local and mixed at 1 and 2 threads, producer-consumer
    // at 2 only.
    assert_eq!(cells.len(), peers.len() * (5 + 2 + 2 + 1));
    for c in cells {
        let what = format!("{} {} {}", c["workload"], c["peer"], c["threads"]);
        let m = &c["outcome"]["measured"];
        assert!(m.is_object(), "{what}: {}", c["outcome"]);
        let reps = m["reps"].as_array().unwrap();
        assert_eq!(reps.len(), 1, "{what}");
        assert!(reps[0]["ops"].as_u64().unwrap() >= 128, "{what}");
        assert!(m["summary"]["ns_per_op"].as_f64().unwrap() > 0.0, "{what}");
        assert!(m["summary"]["cpu_ns_per_op"].as_f64().is_some(), "{what}");
        assert!(c["ratio"].as_f64().unwrap() > 0.0, "{what}");
        if c["peer"] == "zonealloc" {
            assert_eq!(c["ratio"].as_f64(), Some(1.0));
            assert!(m["counters"]["pcp_hit_pct"].as_f64().is_some(), "{what}");
        }
    }
    assert!(doc["skipped"][0]
        .as_str()
        .unwrap()
        .starts_with("producer-consumer at 1 thread(s)"));
}

#[test]
fn zonealloc_always_runs_and_the_table_names_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let o = zonealloc(&[
        "bench",
        "--quick",
        "--workload",
        "pair0",
        "--peer",
        "mmap",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("- Machine: "), "{out}");
    assert!(out.contains("- Load average (1 min): "), "{out}");
    assert!(
        out.contains(
            "| workload | threads | peer | ops/s | ns/op | instr/op | CPU ns/op | pages/s | ratio | CPU ratio | note |"
        ),
        "{out}"
    );
    let (table, matrix) = out
        .split_once("Ratios to zonealloc")
        .expect("a ratio matrix");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| pair0 |"))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(matrix.contains("| workload | threads | zonealloc ns/op (CPU) | mmap |"));
    let ratios: Vec<&str> = matrix
        .lines()
        .filter(|l| l.starts_with("| pair0 | 1 | "))
        .collect();
    assert_eq!(ratios.len(), 1, "{out}");
    assert!(rows[0].starts_with("| pair0 | 1 | zonealloc | "), "{out}");
    assert!(rows[0].contains("| 1.00 | 1.00 |"), "{out}");
    assert!(rows[1].starts_with("| pair0 | 1 | mmap | "), "{out}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["cells"].as_array().unwrap().len(), 2);
}

#[test]
fn more_threads_than_cores_are_flagged() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let n = (cores + 1).to_string();
    let o = zonealloc(&[
        "bench",
        "--quick",
        "--workload",
        "local",
        "--peer",
        "zonealloc-buddy",
        "--threads",
        &n,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let flag = format!("oversubscribed: {n} threads > {cores} cores");
    assert_eq!(out.matches(&flag).count(), 2, "{out}");
}

/// Without `--quick`, a single-thread row gets an instruction count where valgrind is on
/// `PATH` (callgrind counts, so two runs agree), `n/a` without; a multi-thread row never
/// gets one.
#[test]
fn single_thread_rows_count_instructions_where_valgrind_is_present() {
    let has_valgrind = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let args = [
        "bench",
        "--workload",
        "pair1,local",
        "--peer",
        "zonealloc",
        "--threads",
        "2",
        "--ops",
        "256",
        "--repetitions",
        "1",
        "--pool-pages",
        "4096",
        "--json",
    ];
    let instr = |o: &std::process::Output| -> Vec<Value> {
        assert!(o.status.success(), "{}", stderr(o));
        let v: Value = serde_json::from_str(&stdout(o)).expect("JSON");
        v["cells"]
            .as_array()
            .expect("cells")
            .iter()
            .map(|c| c["instructions_per_op"].clone())
            .collect()
    };
    let first = instr(&zonealloc(&args));
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first[1].is_null(), "a multi-thread row: {first:?}");
    if has_valgrind {
        let n = first[0]["Ok"].as_f64().expect("a count");
        assert!(n > 50.0 && n < 5000.0, "{n}");
        let again = instr(&zonealloc(&args))[0]["Ok"].as_f64().expect("a count");
        assert!(
            (again - n).abs() <= n / 100.0,
            "callgrind counts: {n} then {again}"
        );
    } else {
        assert!(first[0].is_null(), "{first:?}");
    }
}
