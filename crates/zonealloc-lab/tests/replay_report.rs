//! What a person reads of a replay: `report.md` leads with one screen (the trace, the kernel's
//! rules, the window, how close the model came, best and worst, caveats), stays short, shows
//! one value per metric with its unit, and `report.txt` beside it fits 100 columns.

mod common;

use std::path::Path;

use common::{ok, s, zonealloc, SAMPLE};

/// A real `/proc` snapshot of the 6.1 kernel (the p1 phase's `before`).
const PROC_61: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/proc/linux-6.1-p1-before"
);

/// Replays the sample under two variants into `out` (with `--proc` and `--proc-after` when
/// `proc`), and returns `report.md`, `report.txt` and the printed summary.
fn replay(out: &Path, proc: bool) -> (String, String, String) {
    let mut args = vec![
        "trace",
        "replay",
        SAMPLE,
        "--variant",
        "upstream",
        "--variant",
        "batch_scale_max=5",
        "--out",
        s(out),
    ];
    if proc {
        args.extend(["--proc", PROC_61, "--proc-after", PROC_61]);
    }
    let stdout = ok(&zonealloc(&args));
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    (read("report.md"), read("report.txt"), stdout)
}

/// The first screen: everything before the headline table.
fn first_screen(md: &str) -> &str {
    md.split("\n## Headline metrics").next().unwrap()
}

#[test]
fn the_first_screen_names_the_trace_kernel_window_fidelity_best_and_caveats() {
    let dir = tempfile::tempdir().unwrap();
    for proc in [false, true] {
        let out = dir.path().join(format!("r{proc}"));
        let (md, _, _) = replay(&out, proc);
        let screen = first_screen(&md);
        assert!(screen.len() < md.len(), "no headline table after it: {md}");
        assert!(screen.lines().count() <= 40, "{screen}");
        assert!(screen.starts_with("# Trace replay: "), "{screen}");
        for item in [
            "linux-6.1-ftrace-sample.txt",
            "Kernel rules: ",
            "Window: ",
            "refills: events / pages off",
            "drains: events / pages off",
            "end state",
            "best `",
            "## Caveats",
        ] {
            // Best and worst name variants only where they differ; the sample's two do.
            if item == "best `" && !screen.contains("worst `") {
                assert!(screen.contains(": all variants "), "{screen}");
                continue;
            }
            assert!(screen.contains(item), "{item:?} missing from {screen}");
        }
        let layout = "free-page layout synthesised from counts";
        assert_eq!(screen.contains(layout), proc, "{screen}");
        if proc {
            assert!(screen.contains("6.1, from --proc's zoneinfo"), "{screen}");
            assert!(screen.contains("end state, Node 0, zone DMA32"), "{screen}");
        }
    }
}

#[test]
fn the_report_is_short_deterministic_and_has_units() {
    let dir = tempfile::tempdir().unwrap();
    for proc in [false, true] {
        let out = dir.path().join(format!("r{proc}"));
        let (md, _, _) = replay(&out, proc);
        assert!(md.lines().count() <= 300, "{} lines", md.lines().count());
        for absent in [
            "Stddev",
            "CoeffVar",
            "()",
            "lab report",
            "seed -",
            "- quick:",
            "- threads:",
            "```json",
        ] {
            assert!(!md.contains(absent), "{absent:?} in {md}");
        }
        // The configuration is in results.json instead.
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
                .unwrap();
        assert!(json["experiments"][0]["config"]["counts"].is_array());
        assert!(md.contains("PCP refill blocks [blocks]"), "{md}");
        // One end-state table, every variant a column beside the kernel's.
        let ends = md.matches("end state against --proc-after").count();
        assert_eq!(ends, usize::from(proc), "{md}");
        if proc {
            assert!(
                md.contains(
                    "| kernel | upstream (against the kernel) | batch_scale_max=5 (against"
                ),
                "{md}"
            );
        }
    }
}

#[test]
fn the_text_rendering_fits_100_columns_and_leads_with_the_same_screen() {
    let dir = tempfile::tempdir().unwrap();
    let (_, txt, stdout) = replay(&dir.path().join("r"), true);
    // The printed summary's table is report.txt's headline table: same figures, same notation.
    let headline = txt.split("Headline metrics\n\n").nth(1).unwrap();
    assert!(stdout.starts_with(headline), "{stdout}\n---\n{headline}");
    assert!(txt.starts_with("Trace replay: "), "{txt}");
    assert!(txt.contains("Headline metrics"), "{txt}");
    assert!(txt.contains("upstream (baseline)"), "{txt}");
    for l in txt.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
}

/// A zone the trace never touches (the sample's frames all lie in DMA32) ends exactly as the
/// snapshot had it: DMA's free blocks per order and migratetype and its pageblocks (before the
/// set-up placed the free blocks per order and migratetype, DMA ended `2 1 1 1 1 1 2 2 3 3 1`
/// against the kernel's `0 0 0 0 0 0 1 1 0 1 3`, with one Unmovable pageblock more), and the
/// report says where it prints the end-state figure that the start layout was synthesised.
#[test]
fn a_zone_the_trace_never_touches_ends_as_it_began() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (md, _, _) = replay(&out, true);
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ends = &json["experiments"][0]["config"]["end_state"];
    for variant in ends.as_array().unwrap() {
        let zones = variant["zones"].as_array().unwrap();
        let dma = zones
            .iter()
            .find(|z| z["zone"] == "Node 0, zone DMA")
            .expect("DMA's end state");
        let dma_free = serde_json::json!([0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 3]);
        assert_eq!(dma["kernel_free_blocks"], dma_free);
        assert_eq!(dma["ours_free_blocks"], dma_free, "{dma}");
        assert_eq!(
            dma["ours_free_by_type"], dma["kernel_free_by_type"],
            "{dma}"
        );
        assert_eq!(dma["pageblocks"][0], dma["pageblocks"][1], "{dma}");
        assert_eq!(dma["start_layout"], "synthesised");
    }
    let line = "end state, Node 0, zone DMA: free blocks off (start layout synthesised)";
    assert!(md.contains(line), "{md}");
}
