//! The stdout summary of a replay: one row per metric, one column per variant, then the
//! window, the end states, the kernel rules and the pass's throughput.

use crate::report::ExperimentResult;
use crate::trace::replay::ReplayRun;

/// The stdout summary: one row per metric, one column per variant (each with its change
/// against the baseline in the lab's notation).
pub fn summary(result: &ExperimentResult, run: &ReplayRun) -> String {
    // The headline table of report.md and report.txt: the same figures, units and changes.
    let mut out = super::page::headline_text(result);
    let p = &run.parser;
    let zones: Vec<String> = run
        .geo
        .zones
        .iter()
        .map(|z| {
            format!(
                "{:?} {} pages from pfn {:#x}",
                z.zone_type, z.pages, z.start
            )
        })
        .collect();
    let (kernel, given) = run.preset;
    let kernel = if given || run.setup_from_proc {
        kernel.name()
    } else {
        "mainline (the ZoneConfig defaults)"
    };
    if let (Some(from), found) = (&run.window.0.from, run.window.1) {
        out.push_str(&format!(
            "\nwindow: after '{from}'{} to '{}'\n",
            if found == Some(true) {
                ""
            } else {
                " (not found in the trace's first 4 MiB: from the start)"
            },
            run.window.0.to.as_deref().unwrap_or("the end"),
        ));
    }
    for (r, ends) in run.replayers.iter().zip(&run.end_states) {
        for e in ends {
            if let Some(v) = e.free_blocks_off_pct {
                out.push_str(&format!(
                    "end state ({}), {}: free blocks per order {v:.1}% off the kernel's \
                     (start layout {}), PCP pages {} vs {}\n",
                    r.variant.name, e.zone, e.start_layout, e.pcp.1, e.pcp.0
                ));
            }
        }
    }
    out.push_str(&format!(
        "\nkernel rules: {}{}; zones: {} (memory: {:?}), {} CPUs (from {}), migratetypes {:?}\n\
         kernel: {} refill and {} drain events, {} drain runs without a free before them \
         (replayed as {} drains)\n\
         replayed {} events ({} lines, {} malformed) under {} variant(s) in one pass of \
         {:.3} s: {:.2} M lines/s, {:.2} M events/s\n",
        kernel,
        if given {
            ""
        } else if run.setup_from_proc {
            " (from --proc's zoneinfo)"
        } else {
            " (default; --kernel to choose)"
        },
        zones.join(", "),
        run.geo.online,
        run.geo.cpus,
        run.geo.cpus_from,
        run.geo.numbering,
        run.kernel.grid.total(|t| t.refills),
        run.kernel.grid.total(|t| t.drains),
        run.kernel.unexplained_runs,
        run.kernel.inferred_drains,
        p.events,
        p.lines,
        p.malformed,
        run.replayers.len(),
        run.replay_s,
        p.lines as f64 / run.replay_s.max(1e-9) / 1e6,
        p.events as f64 / run.replay_s.max(1e-9) / 1e6,
    ));
    out
}
