//! Replays of our two-node captures (`data/kernel-own/*-2node`: 6.1 and 7.2 under QEMU, two
//! nodes of 2 GiB, CPUs 0-1 on node 0 and 2-3 on node 1), with `--proc` and `--proc-after`,
//! checked against the kernel beside them:
//!
//! - refill and drain events, per zone and CPU (the headline) and per node, within each
//!   phase's threshold (`LIMITS`: today's figures with some room; `scripts/fidelity-table`
//!   prints the one-node rows);
//! - the node counters: the trace's allocations, counted as `zone_statistics` does with the
//!   allocating CPU's node preferred, miss and are foreign exactly as often as the
//!   snapshots' `numastat` moved by (the trace carries no mempolicy: this is the check that
//!   the CPU's node is the preferred one), and hit at most as often (`alloc_pages_bulk` and
//!   the snapshot reads allocate untraced); ours count what the trace's do, but for
//!   allocations that fail here;
//! - the end state of every zone of both nodes against `--proc-after`.

mod common;

use common::{assert_no_panic, on_every_core, stderr, stdout, zonealloc};
use std::path::{Path, PathBuf};

/// (machine/phase, the most its refill events and drain events may be off the kernel, %:
/// per zone and CPU, then per node 0 and 1).
#[allow(clippy::type_complexity)]
const LIMITS: &[(&str, (f64, f64), [(f64, f64); 2])] = &[
    // Node 1 has two refills in the window, both of 63 pages. Normal CPU 2's Unmovable list,
    // which the kernel refilled at 741.903547 (line 18671), was not refilled here (node 1's
    // refill events 50% off, Normal's end state 16.7%): CPU 1's Movable list, chosen first,
    // had taken the 13 Movable pages CPU 2 served at the window's start, and CPU 2's list got
    // pages of an Unmovable pageblock, which its frees put on its Unmovable list. Exact since
    // every list takes the blocks the trace shows on it first (`layout/pcp.rs` `choose_pcp`).
    (
        "6.1-4g-2node/p_crossnode",
        (1.0, 1.0),
        [(1.0, 1.0), (1.0, 1.0)],
    ),
    ("6.1-4g-2node/p_idle", (1.0, 1.0), [(1.0, 1.0), (1.0, 1.0)]),
    // Under memory pressure: kswapd, direct reclaim's drain_all_pages, and allocations
    // falling back to node 1 (numa_miss 11934 on node 0). Node 0's drains were 6.1% off:
    // CPU 0's DMA32 (the kernel's 13909 drain events, ours 14931; refills 8948, ours 8507):
    // its Unmovable list, exact at 31 pages, had been given 406 of a guessed Reclaimable
    // list's pages (of Unmovable pageblocks), skipped 7 refills and drained 2016 order-0
    // pages where the kernel drained 2 THPs and 992 (998.919342). 0.02% since the set-up
    // makes room in the list's type's pageblocks (layout/room.rs) and keeps the pages it
    // still takes of other types' pageblocks on the list they were taken for (proc_setup.rs
    // `fill_lists`). Node 1's were 49.7% off (Normal CPU 3 drained far more than the
    // kernel's 1701 pages): exact since 6.1 starts from the counts the trace bounds
    // (infer/start_count.rs) and kswapd1's pass ends a nap before its sleep
    // (`kswapd_nap.rs`: CPU 3's frees at 997.709 s met reclaim's `batch << 2`).
    (
        "6.1-4g-2node/p_pressure",
        (1.0, 1.0),
        [(1.0, 1.0), (1.0, 1.0)],
    ),
    // With the layout rolled forward to the window's start (layout/roll.rs): refills 0.00 ->
    // 0.19%, drains 0.00 -> 0.47%. Node 0 CPU 1's free-path drain at 126.346868 (after line
    // 86835) finds its Movable order-0 list empty and drains 59 pages of its Reclaimable and
    // Unmovable lists, 0x2f0e among them, which the kernel allocates from that list at
    // 126.407032 (line 106988; ours refills 31 pages). The kernel's drain takes 63 Movable
    // pages: ours held fewer Movable pages there. 0.00 / 0.00% again since each list's start
    // is read off the first drain that reaches a block the window put on the CPU's lists
    // (`infer/pcp_state/shown.rs`).
    (
        "6.1-4g-2node/p_prodcons",
        (1.0, 1.0),
        [(1.0, 1.0), (1.0, 1.0)],
    ),
    // Node 0's drain events 5.24 -> 6.11% (pages 0.05% both) since each list's start is read
    // off the drains (`infer/pcp_state/shown.rs`): the same pages drained as more, smaller
    // blocks. Not analysed further.
    ("6.1-4g-2node/p_thp", (3.0, 1.0), [(10.0, 6.5), (2.0, 1.0)]),
    // Node 1's drains are few (61 events): one expiry drain of a single page by CPU 1's
    // worker at 855.801 (its timer on the seconds of CPU 0's run ahead, vmstat/ahead.rs),
    // which the trace does not show, is 1.6 points (3.28 -> 4.92%).
    (
        "7.2-4g-2node/p_crossnode",
        (1.0, 1.0),
        [(1.0, 1.0), (1.0, 5.5)],
    ),
    // Node 1's pagesets decay and expire while idle: 7.2's worker runs are timed by the
    // replay's own vmstat model (node 1's drain events 19.4% off, pages 3.4%).
    ("7.2-4g-2node/p_idle", (1.0, 3.5), [(1.0, 3.0), (1.0, 25.0)]),
    (
        "7.2-4g-2node/p_prodcons",
        (1.0, 1.0),
        [(1.0, 1.0), (1.0, 1.0)],
    ),
    ("7.2-4g-2node/p_thp", (1.0, 1.0), [(1.0, 1.0), (1.0, 1.0)]),
];

fn phase_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own")
        .join(name)
}

/// The replay's stdout.
fn replay(dir: &Path) -> Result<String, String> {
    let out = tempfile::tempdir().unwrap();
    let s = |p: PathBuf| p.to_str().unwrap().to_owned();
    let o = zonealloc(&[
        "trace",
        "replay",
        &s(dir.join("trace.txt.xz")),
        "--proc",
        &s(dir.join("before")),
        "--proc-after",
        &s(dir.join("after")),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_no_panic(&o);
    if !o.status.success() {
        return Err(stderr(&o));
    }
    Ok(stdout(&o))
}

/// A headline figure: `<kind> off the kernel [%]   N`.
fn headline(text: &str, kind: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{kind} off the kernel [%]")))?;
    line.split_whitespace().last()?.parse().ok()
}

/// `node N (variant): refill events/pages a/b%, drain events/pages c/d% off the kernel`:
/// (refill events, drain events), `-` (the kernel has none there) as 0.
fn node_figures(text: &str, node: u32) -> Option<(f64, f64)> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("node {node} (")) && l.contains("refill events"))?;
    let pair = |after: &str| -> Option<f64> {
        let rest = line.split(after).nth(1)?.trim_start();
        let first = rest.split('/').next()?;
        Some(first.parse().unwrap_or(0.0))
    };
    Some((pair("refill events/pages")?, pair("drain events/pages")?))
}

/// `node N numastat: /proc moved hit .. miss .. foreign ..; trace's allocations ...; ours
/// ...`: the three, each (hit, miss, foreign, local, other).
fn numastat(text: &str, node: u32) -> Option<[[u64; 5]; 3]> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("node {node} numastat: ")))?;
    let mut out = [[0u64; 5]; 3];
    for (i, part) in line.split(';').enumerate().take(3) {
        let nums: Vec<u64> = part
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        // "node N numastat:" puts N first in the first part.
        let nums = if i == 0 { &nums[1..] } else { &nums[..] };
        out[i] = nums.try_into().ok()?;
    }
    Some(out)
}

fn check(name: &str, limits: (f64, f64), per_node: [(f64, f64); 2]) -> Vec<String> {
    let dir = phase_dir(name);
    let text = match replay(&dir) {
        Ok(t) => t,
        Err(e) => return vec![format!("refused: {e}")],
    };
    let mut bad = Vec::new();
    for (kind, max) in [("refill events", limits.0), ("drain events", limits.1)] {
        match headline(&text, kind) {
            Some(v) if v <= max => {}
            v => bad.push(format!("{kind} off the kernel {v:?}%, at most {max}%")),
        }
    }
    for (node, (refill, drain)) in per_node.into_iter().enumerate() {
        let node = node as u32;
        match node_figures(&text, node) {
            Some((r, d)) if r <= refill && d <= drain => {}
            v => bad.push(format!(
                "node {node}: refill/drain events off the kernel {v:?}%, at most {refill}/{drain}%"
            )),
        }
        let Some([sys, trace, ours]) = numastat(&text, node) else {
            bad.push(format!("node {node}: no numastat line"));
            continue;
        };
        // miss and foreign exactly; hit at most (untraced allocations count there too).
        if trace[1..3] != sys[1..3] || trace[0] > sys[0] || ours[1..3] != trace[1..3] {
            bad.push(format!(
                "node {node} numastat (hit miss foreign local other): /proc moved {sys:?}, \
                 trace {trace:?}, ours {ours:?}"
            ));
        }
    }
    let zones = [
        "Node 0, zone DMA",
        "Node 0, zone DMA32",
        "Node 1, zone DMA32",
        "Node 1, zone Normal",
    ];
    for z in zones {
        if !text.lines().any(|l| {
            l.starts_with("end state (") && l.contains(&format!("{z}: free blocks per order"))
        }) {
            bad.push(format!("no end state for {z}"));
        }
    }
    // Compared where each file was read past the window's end (replay/to_reads.rs).
    let reads = text
        .lines()
        .find(|l| l.starts_with("end state taken past the window"));
    if !reads.is_some_and(|l| l.contains("buddyinfo at cat-") && l.contains("layout at od-")) {
        bad.push(format!(
            "the end state is not taken at each file's read: {reads:?}"
        ));
    }
    bad
}

#[test]
fn two_node_captures_replay_within_their_limits_per_node() {
    // One replay a phase, on every core.
    let problems: Vec<String> = on_every_core(LIMITS, |&(name, l, n)| check(name, l, n))
        .into_iter()
        .zip(LIMITS)
        .flat_map(|(bad, (name, ..))| bad.into_iter().map(move |b| format!("{name}: {b}")))
        .collect();
    assert!(
        problems.is_empty(),
        "two-node replays:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_limits_cover_every_two_node_phase() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernel-own");
    let mut found = Vec::new();
    for m in std::fs::read_dir(&root).unwrap() {
        let m = m.unwrap().path();
        let machine = m.file_name().unwrap().to_string_lossy().into_owned();
        if !machine.ends_with("-2node") {
            continue;
        }
        for p in std::fs::read_dir(&m).unwrap() {
            let p = p.unwrap().path();
            if p.join("trace.txt.xz").is_file() {
                found.push(format!(
                    "{machine}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = LIMITS.iter().map(|l| l.0.to_owned()).collect();
    listed.sort();
    assert_eq!(found, listed);
}

#[test]
fn a_two_node_snapshot_without_its_nodes_folder_is_refused_naming_it() {
    let src = phase_dir("7.2-4g-2node/p_crossnode/before");
    let dir = tempfile::tempdir().unwrap();
    for f in ["zoneinfo", "pagetypeinfo", "buddyinfo"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let trace = phase_dir("7.2-4g-2node/p_crossnode/trace.txt.xz");
    let o = zonealloc(&[
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--proc",
        dir.path().to_str().unwrap(),
    ]);
    assert_no_panic(&o);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("nodes/") && e.contains("/cpulist"), "{e}");
}
