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
        .enumerate()
        .map(|(i, z)| {
            format!(
                "{} {} pages from pfn {:#x}",
                run.geo.zone_label(i),
                z.pages,
                z.start
            )
        })
        .collect();
    let (kernel, given) = run.preset;
    if let (Some(from), found) = (&run.window.0.from, run.window.1) {
        out.push_str(&format!(
            "\nwindow: after '{from}'{} to '{}'\n",
            if found == Some(true) {
                ""
            } else {
                " (not in the trace's first 4 MiB, and no KT_SNAPSHOT_BEFORE_BEGIN there: from the start)"
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
    if let Some(reads) = &run.end_reads {
        // Not "end state (": scripts/fidelity-table reads those lines.
        out.push_str(&format!(
            "end state taken past the window, at each --proc-after file's read: {}\n",
            reads.describe()
        ));
    }
    out.push_str(&super::numa::node_lines(run));
    out.push_str(&format!(
        "\nkernel rules: {}; zones: {} (memory: {:?}), {} CPUs (from {}), migratetypes {:?}\n\
         kernel: {} refill and {} drain events, {} drain runs without a free before them \
         (replayed as {} drains)\n\
         replayed {} events ({} lines, {} malformed) under {} variant(s) in one pass of \
         {:.3} s: {:.2} M lines/s, {:.2} M events/s\n",
        super::page::kernel_rules(kernel, given, run.setup_from_proc),
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

#[cfg(test)]
mod tests {
    use super::super::page::kernel_rules;
    use crate::trace::replay::preset::Kernel;

    /// The family's own parentheses and the source's never stand side by side (`7.2
    /// (mainline) (from --proc's zoneinfo)` read as two asides).
    #[test]
    fn kernel_rules_name_the_source_after_a_comma() {
        assert_eq!(
            kernel_rules(Kernel::V7_2, false, true),
            "7.2 (mainline), from --proc's zoneinfo"
        );
        assert_eq!(
            kernel_rules(Kernel::V6_1, true, false),
            "6.1, chosen by --kernel"
        );
        for kernel in [
            Kernel::V5_15,
            Kernel::V6_1,
            Kernel::V6_6,
            Kernel::V6_12,
            Kernel::V7_2,
        ] {
            for (given, proc) in [(true, false), (false, true), (false, false)] {
                let text = kernel_rules(kernel, given, proc);
                assert!(!text.contains(") ("), "{text}");
            }
        }
    }
}
