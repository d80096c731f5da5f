//! The replay's configuration and raw counts as `results.json` carries them (`config`): the
//! file, kernel rules, zones, CPUs, inferences, window, set-up, start counts, end states, the
//! kernel's side and every variant's counts.

use std::path::Path;

use serde_json::json;

use super::tables::per_cpu;
use crate::trace::replay::tally::{self, KINDS};
use crate::trace::replay::{ReplayOptions, ReplayRun};

/// The `config` object of the replay's result.
pub(super) fn config(run: &ReplayRun, file: &Path, opts: &ReplayOptions) -> serde_json::Value {
    let p = &run.parser;
    let k = &run.kernel;
    let mut c = json!({
        "file": file.display().to_string(),
        "kernel": if run.preset.1 || opts.proc.is_some() {
            run.preset.0.name()
        } else {
            "mainline (the ZoneConfig defaults)"
        },
        "kernel_given": run.preset.1,
        "kernel_rules_not_modelled": run.preset.0.unmodelled(),
        "zones": run.geo.zones,
        "online": run.geo.online,
        "cpus": run.geo.cpus,
        "cpus_from": run.geo.cpus_from,
        "pcp": !opts.no_pcp,
        "decay_workers": run.replayers.first().is_some_and(|r| r.decay),
        "late_workers": !opts.no_late_workers,
        "traced_workers": !opts.no_traced_workers,
        "inferences": run.infer,
        "migratetype_numbering": run.geo.numbering,
        "migratetype_numbering_given": opts.numbering.is_some(),
        "lines": p.lines,
        "events": p.events,
        "malformed": p.malformed,
        "replay_s": run.replay_s,
        "replay_lines_per_s": p.lines as f64 / run.replay_s.max(1e-9),
        "replay_events_per_s": p.events as f64 / run.replay_s.max(1e-9),
        "emitted": run.emitted.iter().map(|e| e.display().to_string()).collect::<Vec<_>>(),
        "proc": opts.proc.as_ref().map(|p| p.display().to_string()),
        "proc_after": opts.proc_after.as_ref().map(|p| p.display().to_string()),
        "window": {
            "from": run.window.0.from,
            "to": run.window.0.to,
            "from_found": run.window.1,
        },
        "setup": run.replayers.first().map(|r| &r.setup),
        "start_counts": run.start_counts,
        "end_state": run.replayers.iter().zip(&run.end_states).map(|(r, e)| json!({
            "variant": r.variant.name,
            "zones": e,
        })).collect::<Vec<_>>(),
        // Where the end state was taken: each file at its read past the window (`null`: at
        // the window's end).
        "end_state_reads": run.end_reads,
        // With --whole-file and --proc: the start state at the file's start (`null`: not
        // --whole-file with --proc).
        "whole_file_start": run.whole_start,
        "kernel_side": {
            "per_zone_cpu": k.grid,
            "events_per_cpu": k.events_per_cpu,
            "folded_events": k.folded_events,
            "unexplained_drain_runs": k.unexplained_runs,
            "unexplained_drain_blocks": k.unexplained_blocks,
            "inferred_drains": k.inferred_drains,
            "remote_drained_blocks": k.remote_drained_blocks,
            "untraced_allocs": k.untraced_allocs,
            "untraced_allocs_early": k.untraced_early,
            "bulk_refills": k.bulk_refills,
        },
        "counts": run.replayers.iter().map(|r| json!({
            "variant": r.variant.name,
            "counts": r.counts,
            "per_zone_cpu": r.ours,
            "fidelity_pct": KINDS.iter().map(|(kind, f)| {
                (kind.to_string(), json!(tally::fidelity(&r.ours, &run.kernel.grid, *f)))
            }).collect::<serde_json::Map<_, _>>(),
            "refills_per_cpu": per_cpu(&r.ours, |t| t.refills),
            "drains_per_cpu": per_cpu(&r.ours, |t| t.drains),
            "frag_samples": r.frag,
        })).collect::<Vec<_>>(),
    });
    // Beside `late_workers` (one more key in the `json!` above passes its recursion limit).
    c["timer_wheel"] = json!(opts.timer_wheel);
    c
}
