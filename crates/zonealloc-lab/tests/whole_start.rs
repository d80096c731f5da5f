//! `--whole-file` with `--proc` starts from the kernel's state at the file's start: each CPU's
//! count is zoneinfo's rolled back over the events between the file's start and zoneinfo's
//! read (`trace::replay::whole_start`), not zoneinfo's as read; with a layout, the zones'
//! free blocks are the layout's, read at the file's start, not pagetypeinfo's.

mod common;

use common::{dma32_cpu1, replay_experiment, PROC_61};

/// zoneinfo's count of DMA32's CPU 1.
const COUNT: u64 = 771;
/// Pages CPU 1 allocates off its lists before zoneinfo's read.
const TAKEN: u64 = 100;

use common::trace_line as line;

fn alloc(pfn: u64, gfp: &str) -> String {
    format!(
        "mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags={gfp}"
    )
}

/// The before-snapshot's reads, in which CPU 1 allocates [`TAKEN`] pages off its lists
/// before `cat-10` reads zoneinfo (so zoneinfo's 771 were 871 at the file's start); then the
/// workload: CPU 1 allocates the 771 pages its lists held at the read, and one more, which
/// the kernel refilled its lists for (one refill of `batch`, 63 pages).
fn trace() -> String {
    let mut t = String::from("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:4\n");
    let mut us = 10_000_000u64;
    let mut tick = || {
        us += 10;
        us
    };
    let mark = |m: &str, at: u64| line("dash-7", 0, at, &format!("tracing_mark_write: {m} p"));
    t += &mark("KT_SNAPSHOT_BEFORE_BEGIN", tick());
    let user = "GFP_HIGHUSER_MOVABLE|__GFP_ZERO";
    for i in 0..TAKEN {
        t += &line("sh-9", 1, tick(), &alloc(0x50000 + i, user));
    }
    // zoneinfo's reader, on CPU 0: its allocation is the read.
    t += &line("cat-10", 0, tick(), &alloc(0x51000, "GFP_KERNEL"));
    t += &line("cat-11", 0, tick(), &alloc(0x51001, "GFP_KERNEL"));
    t += &mark("KT_SNAPSHOT_BEFORE_END", tick());
    for i in 0..COUNT {
        t += &line("work-20", 1, tick(), &alloc(0x60000 + i, user));
    }
    for i in 0..63u64 {
        let what = format!(
            "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={:#x} order=0 migratetype=1 \
             percpu_refill=1",
            0x70000 + i
        );
        t += &line("work-20", 1, tick(), &what);
    }
    t += &line("work-20", 1, tick(), &alloc(0x70000, user));
    t
}

/// The `--whole-file` replay's JSON configuration, with `args` more.
fn replay(dir: &std::path::Path, name: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--proc", PROC_61, "--whole-file"];
    a.extend_from_slice(args);
    replay_experiment(dir, name, trace().as_bytes(), &a)["config"].clone()
}

/// DMA32 CPU 1's refill events: the kernel's and ours (cells are per zone, then CPU).
fn refills(c: &serde_json::Value) -> (u64, u64) {
    let of = |grid: &serde_json::Value| {
        let cpus = grid["cpus"].as_u64().unwrap();
        grid["cells"][(cpus + 1) as usize]["refills"]
            .as_u64()
            .unwrap()
    };
    (
        of(&c["kernel_side"]["per_zone_cpu"]),
        of(&c["counts"][0]["per_zone_cpu"]),
    )
}

#[test]
fn the_whole_file_starts_from_zoneinfos_counts_rolled_back_to_the_files_start() {
    let dir = tempfile::tempdir().unwrap();
    let rolled = replay(dir.path(), "a", &[]);
    let as_read = replay(dir.path(), "b", &["--infer", "whole-start=off"]);
    let start = &rolled["whole_file_start"];
    assert_eq!(start["counts"], "rolled_back", "{start}");
    assert_eq!(start["zoneinfo_reader"], "cat-10", "{start}");
    // No `KT_SNAPSHOT_READ` marker: the first `cat` of a capture without layout.
    assert_eq!(start["zoneinfo_found_by"], "order", "{start}");
    let cpu1 = dma32_cpu1(&rolled);
    assert_eq!(cpu1["zoneinfo"], COUNT, "{cpu1}");
    assert_eq!(cpu1["rolled_back"], COUNT + TAKEN, "{cpu1}");
    assert_eq!(cpu1["inferred"], COUNT + TAKEN, "{cpu1}");
    // The kernel refilled once (63 pages) when its lists ran out; from the rolled-back count
    // ours do too, from zoneinfo's as read they hold 100 pages fewer and refill twice.
    let per_cpu = |c: &serde_json::Value| c["counts"][0]["refills_per_cpu"].to_string();
    assert_eq!(refills(&rolled), (63, 63), "{}", per_cpu(&rolled));
    assert_eq!(refills(&as_read), (63, 126), "{}", per_cpu(&as_read));
    assert_eq!(as_read["whole_file_start"]["counts"], "snapshot");
}

/// [`trace`] with the after-snapshot's reads after it: `KT_SNAPSHOT_AFTER_BEGIN`, then CPU 1
/// runs out again and the kernel refills its lists once more (63 pages).
fn trace_with_after_reads() -> String {
    let mut t = trace();
    let mut us = 20_000_000u64;
    t += &line(
        "dash-7",
        0,
        us,
        "tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN p",
    );
    for i in 0..63u64 {
        us += 10;
        let what = format!(
            "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={:#x} order=0 migratetype=1 \
             percpu_refill=1",
            0x71000 + i
        );
        t += &line("od-30", 1, us, &what);
    }
    t += &line("od-30", 1, us + 10, &alloc(0x71000, "GFP_KERNEL"));
    t
}

#[test]
fn whole_file_with_to_marker_replays_from_the_files_start_to_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let text = trace_with_after_reads();
    let run = |name: &str, more: &[&str]| {
        let mut a = vec!["--proc", PROC_61, "--whole-file"];
        a.extend_from_slice(more);
        replay_experiment(dir.path(), name, text.as_bytes(), &a)["config"].clone()
    };
    let cut = run("cut", &["--to-marker", "KT_SNAPSHOT_AFTER_BEGIN"]);
    let all = run("all", &[]);
    // Up to the marker: the kernel's one refill, not the after-snapshot's reads' second one,
    // and the start is still the file's, rolled back.
    assert_eq!(refills(&cut).0, 63, "{}", cut["kernel_side"]);
    assert_eq!(refills(&all).0, 126, "{}", all["kernel_side"]);
    assert_eq!(cut["whole_file_start"]["counts"], "rolled_back");
    assert_eq!(cut["whole_file_start"]["zoneinfo_reader"], "cat-10");
    assert_eq!(refills(&cut), (63, 63));
}

/// The 7.2 snapshot (DMA32 CPU 1: count 1294, `high` 3492 = `high_min`, `high_max` 15551,
/// batch 63).
const PROC_72: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/proc/linux-7.2-p1-before"
);

/// A 7.2 file whose DMA32 CPU 1 holds 4000 pages at its start, above zoneinfo's `high`
/// (3492, printed at its read later on), under a `high` of 4399: 20 frees drain nothing, then
/// the CPU's vmstat worker (`decay_pcp_high`) takes `high` to 4399 - 549 = 3850 and drains
/// 170 pages, then 2556 allocations leave zoneinfo's 1294 at `cat-10`'s read.
fn trace_72() -> String {
    let mut t = String::from("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:4\n");
    let mark = |m: &str, at: u64| line("dash-7", 0, at, &format!("tracing_mark_write: {m} p"));
    t += &mark("KT_SNAPSHOT_BEFORE_BEGIN", 10_000_000);
    for i in 0..20u64 {
        let what = format!(
            "mm_page_free: page=(____ptrval____) pfn={:#x} order=0",
            0x50000 + i
        );
        t += &line("sh-9", 1, 10_000_010 + i, &what);
    }
    for i in 0..170u64 {
        t += &format!(
            "     kworker/1:1-66      [001] d..2.    10.{:06}: mm_page_pcpu_drain: \
             page=(____ptrval____) pfn={:#x} order=0 migratetype=1\n",
            500_000 + i,
            0x52000 + i
        );
    }
    allocs_then_read(&mut t, 2556, 10_600_000, 10_700_000);
    t
}

/// `n` allocations on CPU 1 from `us` on, then zoneinfo's read (`cat-10`) and the
/// before-snapshot's end from `read_us`.
fn allocs_then_read(t: &mut String, n: u64, us: u64, read_us: u64) {
    let user = "GFP_HIGHUSER_MOVABLE|__GFP_ZERO";
    for i in 0..n {
        *t += &line("sh-9", 1, us + i, &alloc(0x60000 + i, user));
    }
    *t += &line("cat-10", 0, read_us, &alloc(0x51000, "GFP_KERNEL"));
    *t += &line("cat-11", 0, read_us + 10, &alloc(0x51001, "GFP_KERNEL"));
    let end = "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p";
    *t += &line("dash-7", 0, read_us + 20, end);
}

/// The `--whole-file` replay of `trace` on the 7.2 snapshot: its configuration and DMA32
/// CPU 1's start there.
fn start_72(trace: &str) -> (serde_json::Value, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let a = ["--proc", PROC_72, "--whole-file"];
    let c = replay_experiment(dir.path(), "h", trace.as_bytes(), &a)["config"].clone();
    let cpu1 = dma32_cpu1(&c);
    (c, cpu1)
}

#[test]
fn a_7_2_whole_file_starts_from_the_high_its_trace_shows_not_zoneinfos() {
    let (c, cpu1) = start_72(&trace_72());
    assert_eq!(cpu1["rolled_back"], 4000, "{cpu1}");
    assert_eq!(cpu1["inferred"], 4000, "{cpu1}");
    // decay_pcp_high: high - (high >> 3) == 3850 for 4399 and 4400.
    assert_eq!(cpu1["high"], 4399, "{cpu1}");
    // Set up at zoneinfo's 3492, the first free drained (count >= high) where the
    // kernel's drained nothing; from 4399 ours drain the worker's 170 pages alone.
    let drains = |grid: &serde_json::Value| {
        let cpus = grid["cpus"].as_u64().unwrap();
        grid["cells"][(cpus + 1) as usize]["drains"].clone()
    };
    let kernel = drains(&c["kernel_side"]["per_zone_cpu"]);
    assert_eq!(kernel, 170, "{}", c["kernel_side"]["per_zone_cpu"]);
    let ours = &c["counts"][0]["per_zone_cpu"];
    assert_eq!(drains(ours), kernel, "{ours}");
}

/// A traced run of CPU 1's vmstat worker (`capture-kmem --workqueue`) at `us`.
fn vmstat_update(us: u64) -> String {
    line(
        "kworker/1:1-66",
        1,
        us,
        "workqueue_execute_start: work struct (____ptrval____): function vmstat_update",
    )
}

/// A 7.2 file with the worker's runs traced, whose DMA32 CPU 1 holds 4000 pages at its start:
/// its worker's run drains nothing, the CPU refills 2016 pages (`nr_pcp_alloc` raises `high`
/// by `batch << 5`) and takes one, the next run drains nothing with 6015 pages on the lists,
/// then 4721 allocations leave zoneinfo's 1294 at `cat-10`'s read.
fn trace_72_refill() -> String {
    let mut t = String::from("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:4\n");
    let mark = |m: &str, at: u64| line("dash-7", 0, at, &format!("tracing_mark_write: {m} p"));
    t += &mark("KT_SNAPSHOT_BEFORE_BEGIN", 10_000_000);
    t += &vmstat_update(10_000_100);
    for i in 0..2016u64 {
        let what = format!(
            "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={:#x} order=0 migratetype=1 \
             percpu_refill=1",
            0x70000 + i
        );
        t += &line("sh-9", 1, 10_200_000 + i, &what);
    }
    let user = "GFP_HIGHUSER_MOVABLE|__GFP_ZERO";
    t += &line("sh-9", 1, 10_300_000, &alloc(0x70000, user));
    t += &vmstat_update(11_000_100);
    allocs_then_read(&mut t, 4721, 11_100_000, 12_000_000);
    t
}

#[test]
fn a_7_2_whole_files_start_high_is_read_through_the_refills_raise() {
    let (_, cpu1) = start_72(&trace_72_refill());
    assert_eq!(cpu1["rolled_back"], 4000, "{cpu1}");
    // The least `high` the two quiet runs allow: decay_pcp_high's eighth off, the refill's
    // raise of 2016, an eighth off again, at or above 6015. The first run alone (the walk
    // stopped at the refill) says 4571, from which the second run's decay leaves 5264 and
    // drains 751 pages.
    assert_eq!(cpu1["high"], 5551, "{cpu1}");
}

/// With a layout (our own captures), the zones start from it as read, at the file's start,
/// rolled back over the trace's first events (`layout::ZoneLayout::roll_back`), not matched
/// to pagetypeinfo's counts, read 42 s later. 6.12-4g-wq p_pressure: the layout is read from
/// 499.19 s (line 14), buddyinfo at 541.81 s (line 45941), and the trace's refills, direct
/// takes and drains between the two leave Normal's buddy 2981 pages fuller at the later
/// read. Before, Normal started at buddyinfo's 198328 free pages (548 of the layout's free
/// blocks trimmed, 40 made up) and passed the order-9 check where the kernel failed it: its
/// drain events over the file were 11.8% off the kernel's (2.4% after it; 0.0% once a lone
/// extfrag line counts as a refill of its page, `start_count/refill.rs`).
#[test]
fn with_a_layout_the_whole_file_starts_from_it_as_read_not_from_the_later_counts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/kernel-own/6.12-4g-wq/p_pressure");
    let out = tempfile::tempdir().unwrap();
    let path = |p: &str| root.join(p).to_str().unwrap().to_owned();
    let o = common::zonealloc(&[
        "trace",
        "replay",
        &path("trace.txt.xz"),
        "--proc",
        &path("before"),
        "--proc-after",
        &path("after"),
        "--whole-file",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let json = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let setup = &json["experiments"][0]["config"]["setup"];
    let normal = (setup.as_array().unwrap().iter())
        .find(|z| z["zone"] == "Node 0, zone Normal")
        .unwrap();
    assert_eq!(
        normal["free"],
        serde_json::json!([198328, 198328 - 2981]),
        "{normal}"
    );
    assert_eq!(
        (&normal["trimmed"], &normal["made_up"]),
        (&0.into(), &0.into())
    );
}
