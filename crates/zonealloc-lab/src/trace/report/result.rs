//! The replay as a lab [`ExperimentResult`]: its metrics ([`super::metrics`]), tables
//! ([`super::tables`]), plots ([`super::plots`]) and configuration ([`super::config`]).

use std::path::Path;

use super::tables::{
    accounting_table, beside_table, end_state_table, fidelity_table, per_cpu_table, reuse_table,
    setup_table, start_count_table,
};
use super::{config, metrics, numa, plots};
use crate::report::{ExperimentResult, Table};
use crate::trace::replay::{ReplayOptions, ReplayRun};

/// The run as a lab [`ExperimentResult`] (one sample per variant and metric: a replay is
/// deterministic).
///
/// "Same frame as the kernel" is no metric: on a real trace our free lists are not the
/// kernel's, so which frame comes back says nothing. It stays in the accounting table, where
/// it means something for a replay of a trace we emitted ourselves.
pub fn to_result(run: &ReplayRun, file: &Path, opts: &ReplayOptions) -> ExperimentResult {
    let names: Vec<String> = run
        .replayers
        .iter()
        .map(|r| r.variant.name.clone())
        .collect();
    ExperimentResult {
        name: "trace-replay".to_owned(),
        seed: "-".to_owned(),
        change: format!("replay of {}", file.display()),
        baseline: names.first().cloned().unwrap_or_default(),
        metrics: metrics::definitions(),
        samples: metrics::samples(run),
        tables: tables(run, &names),
        plots: plots::plots(run),
        variants: names,
        expected_shape: "A replay is deterministic: one sample per variant, so differences \
            are exact, not statistical. The kernel's own refills, drains, direct buddy \
            allocations and fallbacks (read from the trace) stand beside ours per zone and CPU; \
            each 'off the kernel' figure is the sum over zones and CPUs of |ours - kernel| over \
            the kernel's total. Without --proc the zones start empty of the pages the kernel \
            had in use before the trace, so frees of those are skipped and the sizes and \
            watermarks are ours, not the kernel's."
            .to_owned(),
        config: config::config(run, file, opts),
        oversubscribed: false,
    }
}

/// Every table of the report, in order.
fn tables(run: &ReplayRun, names: &[String]) -> Vec<Table> {
    let mut tables = vec![
        fidelity_table(run, names),
        accounting_table(run, names),
        per_cpu_table(run, names),
    ];
    tables.extend(run.replayers.iter().map(|r| beside_table(run, r)));
    if run.geo.multi_node() {
        tables.extend(run.replayers.iter().map(|r| numa::per_node_table(run, r)));
        tables.push(numa::numastat_table(run, names));
    }
    if let Some(r) = run.replayers.first() {
        if !r.setup.is_empty() {
            tables.push(setup_table(r));
        }
    }
    if let Some(sc) = &run.start_counts {
        tables.push(start_count_table(sc));
    }
    if run.end_states.iter().any(|e| !e.is_empty()) {
        tables.push(end_state_table(names, &run.end_states));
    }
    tables.push(reuse_table(run, names));
    tables
}
