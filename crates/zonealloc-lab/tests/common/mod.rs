//! Helpers shared by the CLI tests: run the `zonealloc` binary, read its output, and the
//! usual checks on it. Each test file uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The real Linux 6.1 ftrace sample (see `tests/data/linux-6.1-ftrace-sample.README.md`).
pub const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/linux-6.1-ftrace-sample.txt"
);

/// A real `/proc` snapshot of the 6.1 kernel (the p1 phase's `before`): DMA32's CPU 1 has
/// 771 pages on its lists, `high` 3492, `batch` 63. No layout and no `nodes/`: the shipped
/// captures' order, zoneinfo read by the first `cat`.
pub const PROC_61: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/proc/linux-6.1-p1-before"
);

/// One line of ftrace text: `task` on `cpu` at `us` microseconds, printing `what`.
pub fn trace_line(task: &str, cpu: u32, us: u64, what: &str) -> String {
    format!(
        "  {task:>16}     [{cpu:03}] .....     {}.{:06}: {what}\n",
        us / 1_000_000,
        us % 1_000_000
    )
}

/// Runs the binary with `args` and collects its output.
pub fn zonealloc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonealloc"))
        .args(args)
        .output()
        .expect("the zonealloc binary runs")
}

/// Runs the binary with `args` and `input` on its standard input.
pub fn zonealloc_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonealloc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the zonealloc binary runs");
    let mut stdin = child.stdin.take().expect("piped");
    let input = input.to_vec();
    // Written from a thread: the child may exit (an error) before reading it all.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("the binary exits");
    writer.join().expect("the writer thread");
    out
}

/// Its stdout, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its stderr, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that nothing panicked.
pub fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "panic: {err}");
}

/// Asserts that `args` is a usage error (exit 2, nothing on stdout) whose message mentions
/// `mention`.
pub fn assert_usage_error(args: &[&str], mention: &str) {
    let o = zonealloc(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("error"), "{args:?}: {err}");
    assert!(err.contains(mention), "{args:?}: {mention} not in {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(stdout(&o).is_empty(), "{args:?}");
}

/// Asserts success and returns stdout.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts success and parses stdout as JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(o)).expect("valid JSON")
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs the binary with `args` in the folder `dir` (for the default `lab-report/` runs folder).
pub fn zonealloc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonealloc"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the zonealloc binary runs")
}

/// `trace replay` of `text` (written to `dir/NAME.txt`, its report in `dir/NAME`) with
/// `args` after the trace, as JSON: the run's one experiment.
pub fn replay_experiment(dir: &Path, name: &str, text: &[u8], args: &[&str]) -> serde_json::Value {
    let path = dir.join(format!("{name}.txt"));
    std::fs::write(&path, text).unwrap();
    let out = dir.join(name);
    let mut a = vec!["trace", "replay", s(&path), "--out", s(&out), "--json"];
    a.extend_from_slice(args);
    json(&zonealloc(&a))["experiments"][0].clone()
}

/// DMA32's CPU 1 start count (`start_counts.cpus`) in a replay's configuration `config`.
pub fn dma32_cpu1(config: &serde_json::Value) -> serde_json::Value {
    config["start_counts"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["zone"] == "DMA32" && c["cpu"] == 1)
        .cloned()
        .unwrap()
}

/// `f` of each of `items`, on every core (each call typically runs the binary: a process of
/// its own), in `items`' order.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let mut found: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cores.min(items.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return mine;
                        };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(_, r)| r).collect()
}
