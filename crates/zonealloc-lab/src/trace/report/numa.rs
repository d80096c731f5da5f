//! The report's tables for a replay of several NUMA nodes: refills and drains per node and
//! CPU beside the kernel's, and the node counters (`numastat`).

use super::diff::diff_pct;
use crate::procfs::numastat_fields;
use crate::report::Table;
use crate::trace::replay::numa::{node_cpu, node_fidelity};
use crate::trace::replay::tally::KINDS;
use crate::trace::replay::{ReplayRun, Replayer};

/// The kinds shown per node: refill and drain events and pages.
const NODE_KINDS: usize = 4;

/// Variant `r` beside the kernel per node and CPU (summed over the node's zones), a row
/// `all` per node with its fidelity figure (`|ours - kernel|` over its zones and CPUs).
pub(super) fn per_node_table(run: &ReplayRun, r: &Replayer) -> Table {
    let geo = &run.geo;
    let k = &run.kernel.grid;
    let mut header = vec!["node".to_owned(), "cpu".to_owned()];
    for (kind, _) in &KINDS[..NODE_KINDS] {
        header.push(format!("kernel {kind}"));
        header.push("ours (diff)".to_owned());
    }
    let mut rows = Vec::new();
    for node in 0..geo.nodes() {
        for cpu in 0..k.cpus {
            let mut row = vec![node.to_string(), cpu.to_string()];
            let mut any = false;
            for (_, f) in &KINDS[..NODE_KINDS] {
                let (kv, ov) = (
                    node_cpu(geo, k, node, cpu, *f),
                    node_cpu(geo, &r.ours, node, cpu, *f),
                );
                any |= kv > 0 || ov > 0;
                row.push(kv.to_string());
                row.push(format!("{ov} ({})", diff_pct(ov, kv)));
            }
            if any {
                rows.push(row);
            }
        }
        let mut row = vec![node.to_string(), "all: off the kernel".to_owned()];
        for (_, f) in &KINDS[..NODE_KINDS] {
            row.push(String::new());
            row.push(
                node_fidelity(geo, &r.ours, k, node, *f)
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}%")),
            );
        }
        rows.push(row);
    }
    Table {
        title: format!(
            "Variant {}: the kernel's refills and drains per node and CPU (summed over the \
             node's zones; a CPU's pageset of a remote node's zone counts on that node), and ours",
            r.variant.name
        ),
        header,
        rows,
    }
}

/// Per node and counter: what `numastat` moved by between `--proc` and `--proc-after`, what
/// the trace's allocations count (`zone_statistics`, the allocating CPU's node preferred),
/// and each variant's.
pub(super) fn numastat_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec![
        "node".to_owned(),
        "counter".to_owned(),
        "/proc snapshots (after - before)".to_owned(),
        "trace's allocations".to_owned(),
    ];
    header.extend(names.iter().cloned());
    let mut rows = Vec::new();
    let first = run.replayers.first().and_then(|r| r.numa.as_ref());
    for node in 0..run.geo.nodes() {
        let sys = run.numastat_moved.iter().find(|(n, _)| *n == node);
        let trace = first.and_then(|n| n.kernel.nodes.get(node as usize));
        for (i, (name, _)) in numastat_fields(&Default::default()).iter().enumerate() {
            if *name == "interleave_hit" {
                continue;
            }
            let value = |s: Option<&zonealloc::numa::NumaStat>| {
                s.map_or_else(|| "-".to_owned(), |s| numastat_fields(s)[i].1.to_string())
            };
            let mut row = vec![
                node.to_string(),
                (*name).to_owned(),
                value(sys.map(|(_, s)| s)),
                value(trace),
            ];
            for r in &run.replayers {
                row.push(value(
                    r.numa
                        .as_ref()
                        .and_then(|n| n.ours.nodes.get(node as usize)),
                ));
            }
            rows.push(row);
        }
    }
    Table {
        title: "Node counters (numastat): the kernel's over the window, the trace's \
                allocations counted as zone_statistics does with the allocating CPU's node \
                preferred (the trace carries no mempolicy), and ours"
            .to_owned(),
        header,
        rows,
    }
}

/// The stdout summary's lines per node (none for one node): each variant's refill and
/// drain events and pages off the kernel on the node, and the node counters.
pub(super) fn node_lines(run: &ReplayRun) -> String {
    if !run.geo.multi_node() {
        return String::new();
    }
    let mut out = String::new();
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for r in &run.replayers {
        for node in 0..run.geo.nodes() {
            let f = |i: usize| {
                pct(node_fidelity(
                    &run.geo,
                    &r.ours,
                    &run.kernel.grid,
                    node,
                    KINDS[i].1,
                ))
            };
            out.push_str(&format!(
                "node {node} ({}): refill events/pages {}/{}%, drain events/pages {}/{}% off \
                 the kernel\n",
                r.variant.name,
                f(0),
                f(1),
                f(2),
                f(3)
            ));
        }
    }
    let first = run.replayers.first().and_then(|r| r.numa.as_ref());
    for node in 0..run.geo.nodes() {
        let sys = run.numastat_moved.iter().find(|(n, _)| *n == node);
        let trace = first.and_then(|n| n.kernel.nodes.get(node as usize));
        let ours = first.and_then(|n| n.ours.nodes.get(node as usize));
        let show = |s: Option<&zonealloc::numa::NumaStat>| {
            s.map_or_else(
                || "-".to_owned(),
                |s| {
                    format!(
                        "hit {} miss {} foreign {} local {} other {}",
                        s.numa_hit, s.numa_miss, s.numa_foreign, s.local_node, s.other_node
                    )
                },
            )
        };
        out.push_str(&format!(
            "node {node} numastat: /proc moved {}; trace's allocations {}; ours {}\n",
            show(sys.map(|(_, s)| s)),
            show(trace),
            show(ours)
        ));
    }
    for r in &run.replayers {
        let Some(e) = r.numa.as_ref().map(|n| &n.expiry) else {
            continue;
        };
        for (node, (k, o)) in e.kernel.iter().zip(&e.ours).enumerate() {
            out.push_str(&format!(
                "node {node} ({}): remote pagesets' expiry drains of its zones \
                 (drain_zone_pages): trace {} ({} pages), ours {} ({} pages)\n",
                r.variant.name, k.drains, k.pages, o.drains, o.pages
            ));
        }
        let (k, o) = (e.kernel_total(), e.ours_total());
        out.push_str(&format!(
            "remote pagesets' expiry drains (drain_zone_pages, {}): trace {} ({} pages), ours \
             {} ({} pages, {} of them where the trace's drain came first)\n",
            r.variant.name, k.drains, k.pages, o.drains, o.pages, e.aligned
        ));
    }
    out
}
