//! The end state against `--proc-after` is taken where each of its files was read, past the
//! window's end marker (`KT_SNAPSHOT_AFTER_BEGIN`), while refills, drains and every count stay
//! the window's.

mod common;

use common::{replay_experiment, SAMPLE};

/// A real `/proc` snapshot of the 6.1 kernel (the p1 phase's `before`).
const PROC_61: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/proc/linux-6.1-p1-before"
);

fn line(task: &str, cpu: u32, ts: &str, what: &str) -> String {
    format!("  {task:>16}     [{cpu:03}] .....     {ts}: {what}\n")
}

const SMALL: &str = "mm_page_alloc: page=(____ptrval____) pfn=0x61000 order=0 migratetype=1 \
                     gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP";
const BIG: &str = "mm_page_alloc: page=(____ptrval____) pfn=0x62000 order=9 migratetype=1 \
                   gfp_flags=GFP_TRANSHUGE";
const BIG_FREE: &str = "mm_page_free: page=(____ptrval____) pfn=0x62000 order=9";

/// The sample, then capture-kmem's after-snapshot: zoneinfo read by `cat-10`, buddyinfo by
/// `cat-11`, pagetypeinfo by `cat-12`; an order-9 allocation by `big_by` (none if `""`) among
/// its reader's allocations, freed at its exit; then more after `KT_SNAPSHOT_AFTER_END`.
fn trace(big_by: &str) -> Vec<u8> {
    let mut t = std::fs::read_to_string(SAMPLE).unwrap();
    let mark = |m: &str| {
        line(
            "dash-7",
            0,
            "3.900000",
            &format!("tracing_mark_write: {m} p"),
        )
    };
    t += &mark("KT_SNAPSHOT_AFTER_BEGIN");
    for (task, ts) in [
        ("cat-10", "3.900100"),
        ("cat-11", "3.900200"),
        ("cat-12", "3.900300"),
    ] {
        t += &line(task, 1, ts, SMALL);
        if task == big_by {
            t += &line(task, 1, ts, BIG);
        }
        t += &line(
            task,
            1,
            ts,
            &SMALL.replace("mm_page_alloc", "mm_page_free").replace(
                " migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP",
                "",
            ),
        );
        if task == big_by {
            t += &line(task, 1, ts, BIG_FREE);
        }
    }
    t += &mark("KT_SNAPSHOT_AFTER_END");
    // Past the after-snapshot: never replayed.
    t += &line("late-20", 2, "3.990000", &BIG.replace("0x62000", "0x64000"));
    t.into_bytes()
}

/// The replay's JSON configuration of `text`, with `args` more.
fn replay(dir: &std::path::Path, name: &str, text: &[u8], args: &[&str]) -> serde_json::Value {
    experiment(dir, name, text, args)["config"].clone()
}

/// The replay's JSON experiment of `text`, with `args` more.
fn experiment(dir: &std::path::Path, name: &str, text: &[u8], args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--proc", PROC_61, "--proc-after", PROC_61];
    a.extend_from_slice(args);
    replay_experiment(dir, name, text, &a)
}

/// The DMA32 zone's end state, upstream variant.
fn dma32(c: &serde_json::Value) -> &serde_json::Value {
    &c["end_state"][0]["zones"][1]
}

#[test]
fn events_after_the_end_marker_up_to_each_files_read_change_its_end_state_only() {
    let dir = tempfile::tempdir().unwrap();
    let at_buddy = replay(dir.path(), "a", &trace("cat-11"), &[]);
    let at_types = replay(dir.path(), "b", &trace("cat-12"), &[]);
    let none = replay(dir.path(), "d", &trace(""), &[]);
    // The window's end, where the markers given explicitly keep it.
    let at_marker = replay(
        dir.path(),
        "c",
        &trace("cat-11"),
        &[
            "--from-marker",
            "KT_SNAPSHOT_BEFORE_END",
            "--to-marker",
            "KT_SNAPSHOT_AFTER_BEGIN",
        ],
    );
    assert_eq!(dma32(&at_buddy)["zone"], "Node 0, zone DMA32", "{at_buddy}");
    // Where each file was read: its reader's last allocation.
    let reads = &at_buddy["end_state_reads"];
    assert_eq!(reads["text_end"], "marker", "{reads}");
    // The snapshot has no layout file, so no layout read is told of.
    assert_eq!(reads["reads"].as_array().map(Vec::len), Some(3), "{reads}");
    let who: Vec<_> = (0..3)
        .map(|i| reads["reads"][i]["reader"].as_str())
        .collect();
    assert_eq!(who, [Some("cat-10"), Some("cat-11"), Some("cat-12")]);
    // zoneinfo after cat-10's allocation; buddyinfo after cat-11's two, not its frees.
    let past: Vec<_> = (0..3)
        .map(|i| reads["reads"][i]["events_past_window"].as_u64().unwrap())
        .collect();
    assert_eq!(past, [1, 4, 7], "{reads}");
    assert!(at_marker["end_state_reads"].is_null());
    // The order-9 allocation by buddyinfo's reader is in buddyinfo's figure ...
    let blocks = |c: &serde_json::Value| dma32(c)["ours_free_blocks"].clone();
    let types = |c: &serde_json::Value| dma32(c)["ours_free_by_type"].clone();
    assert_ne!(blocks(&at_buddy), blocks(&at_marker));
    assert_ne!(blocks(&at_buddy), blocks(&none));
    // ... by pagetypeinfo's reader, only in pagetypeinfo's: buddyinfo was read before it.
    assert_eq!(blocks(&at_types), blocks(&none));
    assert_ne!(types(&at_types), types(&none));
    // The window's figures are the window's whatever came after its end.
    for (name, c) in [("b", &at_types), ("d", &none), ("c", &at_marker)] {
        for k in ["counts", "kernel_side", "events"] {
            let (mine, theirs) = (c[k].to_string(), at_buddy[k].to_string());
            let diff = mine.bytes().zip(theirs.bytes()).position(|(a, b)| a != b);
            assert!(
                diff.is_none() && mine.len() == theirs.len(),
                "{name} {k}: {}",
                &mine[diff.unwrap_or(mine.len().min(theirs.len()))..]
            );
        }
    }
}

/// The most reused frames' table, and the metric drawn from it, count the window's
/// allocations only: the readers' allocations past it (here of the frame the window reused
/// most) are not in them.
#[test]
fn the_most_reused_frames_are_the_windows_whatever_is_replayed_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let window_only = [
        "--from-marker",
        "KT_SNAPSHOT_BEFORE_END",
        "--to-marker",
        "KT_SNAPSHOT_AFTER_BEGIN",
    ];
    let past = experiment(dir.path(), "a", &trace("cat-11"), &[]);
    let at_end = experiment(dir.path(), "b", &trace("cat-11"), &window_only);
    assert!(past["config"]["end_state_reads"]["events"].as_u64() > Some(0));
    let reuse = |e: &serde_json::Value| {
        let tables = e["tables"].as_array().unwrap();
        tables
            .iter()
            .find(|t| {
                t["title"]
                    .as_str()
                    .unwrap()
                    .starts_with("Most reused frames")
            })
            .unwrap()["rows"]
            .clone()
    };
    let top = |e: &serde_json::Value| {
        e["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["metric"] == "allocations of the most reused frame")
            .map(|s| s["value"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(reuse(&past), reuse(&at_end));
    assert_eq!(top(&past), top(&at_end));
    assert!(!top(&past).is_empty());
}
