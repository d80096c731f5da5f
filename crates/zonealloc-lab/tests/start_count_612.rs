//! The start-count walk on 6.7 to 6.14 (checked against 6.12), whose zoneinfo prints each
//! CPU's current `high` but neither `high_min` nor `high_max`: a CPU's first free-triggered
//! drain pins its count at the marker against its own `high`, and the walk is on by default
//! in the snapshot's window, as on 6.1; with `--whole-file` the rolled-back start is held in
//! the bounds of the `high_min` the kernel sizes (`zone_highsize`).

mod common;

use common::replay_experiment;

/// A real 6.12 `/proc` snapshot (6.12-4g p_idle's `before`): zone Normal, batch 63, low
/// watermark 5126 over 4 CPUs (`high_min` 1281); CPU 2 holds 1273 pages, its `high` 1281;
/// CPU 3's `high` is 1430, the zone's largest.
const PROC_612: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/kernel-own/6.12-4g/p_idle/before"
);

/// The walk named on, whatever the default.
const ON: &[&str] = &["--infer", "start-count=on"];

fn line(cpu: u32, ts: &str, what: &str) -> String {
    format!("           x-1     [{cpu:03}] .....   {ts}: {what}\n")
}

/// CPU 2 frees `frees` pages in use (the snapshot's layout has pfns 0x102000.. in use), and
/// the last free triggers a drain of one batch (63 pages).
fn trace(frees: u64) -> Vec<u8> {
    let mut t = String::from("# tracer: nop\n");
    t += &line(
        0,
        "1.000000",
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p",
    );
    for pfn in 0x102000..0x102000 + frees {
        let free = format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
        t += &line(2, "1.000100", &free);
    }
    for pfn in 0x102000..0x102000 + 63 {
        let drain =
            format!("mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1");
        t += &line(2, "1.000200", &drain);
    }
    t += &line(
        0,
        "2.000000",
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN p",
    );
    t.into_bytes()
}

/// The replay's `start_counts` for `text`, with `args` more (`null` when the walk is off).
fn start_counts(
    dir: &std::path::Path,
    name: &str,
    text: &[u8],
    args: &[&str],
) -> serde_json::Value {
    let mut a = vec!["--proc", PROC_612];
    a.extend_from_slice(args);
    replay_experiment(dir, name, text, &a)["config"]["start_counts"].clone()
}

/// Normal's CPU `cpu` in `sc`.
fn normal(sc: &serde_json::Value, cpu: u64) -> &serde_json::Value {
    sc["cpus"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|c| c["zone"] == "Normal" && c["cpu"].as_u64() == Some(cpu))
        })
        .unwrap_or_else(|| panic!("no Normal CPU {cpu} in {sc}"))
}

#[test]
fn a_6_12_drain_pins_the_count_against_the_cpus_own_high_not_the_zones_largest() {
    let dir = tempfile::tempdir().unwrap();
    // 20 frees take CPU 2 to its high, 1281 (free_unref_page_commit: count >= high drains):
    // it held 1261 at the marker. Against CPU 3's 1430 it would have been 1410.
    let sc = start_counts(dir.path(), "a", &trace(20), ON);
    let c2 = normal(&sc, 2);
    assert_eq!(c2["zoneinfo"], 1273, "{c2}");
    assert_eq!(c2["found"], "pinned", "{c2}");
    assert_eq!(c2["inferred"], 1261, "{c2}");
    // 8 frees: zoneinfo's own 1273 was the count at the marker.
    let sc = start_counts(dir.path(), "b", &trace(8), ON);
    assert_eq!(normal(&sc, 2)["inferred"], 1273, "{sc}");
}

#[test]
fn the_walk_is_on_by_default_in_a_6_12_window_only() {
    let dir = tempfile::tempdir().unwrap();
    let on = start_counts(dir.path(), "on", &trace(20), &[]);
    assert!(on.is_object(), "{on}");
    let whole = start_counts(dir.path(), "whole", &trace(20), &["--whole-file"]);
    assert!(whole.is_null(), "{whole}");
    let off = start_counts(
        dir.path(),
        "off",
        &trace(20),
        &["--infer", "start-count=off"],
    );
    assert!(off.is_null(), "{off}");
}

/// A `--whole-file` capture: CPU 2 frees `frees` pages in use and the last free drains a
/// batch, then zoneinfo's `cat` (on CPU 0: its allocation is the read) and the markers.
fn whole_trace(frees: u64) -> Vec<u8> {
    let mut t = String::from("# tracer: nop\n");
    let mark = |m: &str, ts: &str| line(0, ts, &format!("tracing_mark_write: {m} p"));
    t += &mark("KT_SNAPSHOT_BEFORE_BEGIN", "1.000000");
    let body = String::from_utf8(trace(frees)).unwrap();
    t += body
        .lines()
        .filter(|l| l.contains("mm_page_"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .as_str();
    t += &read_and_marks("GFP_KERNEL");
    t.into_bytes()
}

/// zoneinfo's read by `cat-10` on CPU 0 (an allocation with `gfp`) and the markers after it.
fn read_and_marks(gfp: &str) -> String {
    let read = format!(
        "mm_page_alloc: page=(____ptrval____) pfn=0x103000 order=0 migratetype=0 gfp_flags={gfp}"
    );
    let mut t = format!("           cat-10     [000] .....   1.000300: {read}\n");
    t += &line(
        0,
        "1.000400",
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p",
    );
    t += &line(
        0,
        "2.000000",
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN p",
    );
    t
}

#[test]
fn a_6_12_whole_file_start_is_held_by_the_drain_against_the_kernels_high_min() {
    let dir = tempfile::tempdir().unwrap();
    // zoneinfo's 1273 at the read, after 20 frees and a drain of 63: 1316 rolled back to the
    // file's start. The 20th free drained: the count reached `high`, at least `high_min`
    // (1281, zone_highsize: the low watermark over 4 CPUs), so it was at least 1261. `high`
    // at the file's start is not zoneinfo's (printed at the read), but anywhere up to
    // `high_max`: the rolled-back 1316 holds, and `high` was 1336, which the 20th free met
    // and the 19th did not.
    let sc = start_counts(dir.path(), "w", &whole_trace(20), &["--whole-file"]);
    let c2 = normal(&sc, 2);
    assert_eq!(c2["rolled_back"], 1316, "{c2}");
    assert_eq!(c2["bounds"][0], 1261, "{c2}");
    assert_eq!(c2["inferred"], 1316, "{c2}");
    assert_eq!(c2["found"], "bounded", "{c2}");
    assert_eq!(c2["high"], 1336, "{c2}");
}

/// zoneinfo's `cat` on CPU 0 (6.12-4g p_idle's `cat-910`, shrunk): it frees 16 pages in use
/// (on CPU 0's list), its splice read takes them back untraced (`copy_splice_read`'s
/// `alloc_pages_bulk`, the internal pipe's 16 slots) and zoneinfo prints, 14 come back unused
/// (`release_pages`: a free and a batched commit each), the pipe's 2 when written out, and
/// the read point is its exit's `GFP_NOWAIT` page.
fn splice_trace() -> Vec<u8> {
    let mut t = String::from("# tracer: nop\n");
    let mark = |m: &str, ts: &str| line(0, ts, &format!("tracing_mark_write: {m} p"));
    let cat = |ts: &str, what: &str| format!("           cat-10     [000] .....   {ts}: {what}\n");
    let free = |pfn: u64| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
    t += &mark("KT_SNAPSHOT_BEFORE_BEGIN", "1.000000");
    // Another task's allocation names the pages' pageblock Unmovable (the list the bulk
    // takes from).
    let named = "mm_page_alloc: page=(____ptrval____) pfn=0x102100 order=0 migratetype=0 \
                 gfp_flags=GFP_KERNEL";
    t += &line(3, "1.000050", named);
    for pfn in 0x102000..0x102010 {
        t += &cat("1.000100", &free(pfn));
    }
    for pfn in 0x102000..0x10200e {
        t += &cat("1.000200", &free(pfn));
    }
    for pfn in 0x102000..0x10200e {
        t += &cat(
            "1.000210",
            &format!("mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0"),
        );
    }
    for pfn in 0x10200e..0x102010 {
        t += &cat("1.000250", &free(pfn));
    }
    t += &read_and_marks("GFP_NOWAIT");
    t.into_bytes()
}

#[test]
fn zoneinfo_prints_while_the_readers_splice_holds_its_bulk_pages() {
    let dir = tempfile::tempdir().unwrap();
    // zoneinfo's 1180 (CPU 0) is the count with the 16 pages out: 1180 at the file's start.
    // Read at the exit's page, the walk would have 15 pages more on the list there (16 freed,
    // the re-frees net nothing, one allocated) and roll back to 1165.
    let sc = start_counts(dir.path(), "s", &splice_trace(), &["--whole-file"]);
    let c0 = normal(&sc, 0);
    assert_eq!(c0["zoneinfo"], 1180, "{c0}");
    assert_eq!(c0["rolled_back"], 1180, "{c0}");
}
