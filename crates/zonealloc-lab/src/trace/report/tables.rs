//! The replay report's tables, one function each: the fidelity headline, the kernel beside
//! each variant, accounting, per-CPU counts, the set-up, start counts, end states and reused
//! frames.

use super::diff::diff_pct;
use crate::report::Table;
use crate::trace::replay::tally::{self, KINDS};
use crate::trace::replay::{start_count, EndState, ReplayRun, Replayer, REUSE_ROWS};

/// One kind per CPU, summed over zones.
pub(super) fn per_cpu(g: &tally::Grid, f: fn(&tally::Tally) -> u64) -> Vec<u64> {
    (0..g.cpus)
        .map(|c| (0..g.zones).map(|z| f(g.get(z, c))).sum())
        .collect()
}

fn zone_name(run: &ReplayRun, z: usize) -> String {
    run.geo.zone_label(z)
}

/// The headline: each event kind's kernel total, and per variant its total and how far off
/// the kernel it is.
pub(super) fn fidelity_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec!["event kind".to_owned(), "kernel".to_owned()];
    for n in names {
        header.push(n.clone());
        header.push(format!("{n}: off the kernel"));
    }
    let rows = KINDS
        .iter()
        .map(|(kind, f)| {
            let mut row = vec![(*kind).to_owned(), run.kernel.grid.total(*f).to_string()];
            for r in &run.replayers {
                row.push(r.ours.total(*f).to_string());
                row.push(
                    tally::fidelity(&r.ours, &run.kernel.grid, *f)
                        .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%")),
                );
            }
            row
        })
        .collect();
    Table {
        title: "The kernel beside us: event totals, and sum over zones and CPUs of \
                |ours - kernel| / kernel total"
            .to_owned(),
        header,
        rows,
    }
}

/// One variant against the kernel per zone and CPU, every kind, with the difference in %.
pub(super) fn beside_table(run: &ReplayRun, r: &Replayer) -> Table {
    let mut header = vec!["zone".to_owned(), "cpu".to_owned()];
    for (kind, _) in KINDS {
        header.push(format!("kernel {kind}"));
        header.push("ours (diff)".to_owned());
    }
    let k = &run.kernel.grid;
    let mut rows = Vec::new();
    for z in 0..k.zones {
        for cpu in 0..k.cpus {
            let (kt, ot) = (k.get(z, cpu), r.ours.get(z, cpu));
            if *kt == tally::Tally::default() && *ot == tally::Tally::default() {
                continue;
            }
            let mut row = vec![zone_name(run, z), cpu.to_string()];
            for (_, f) in KINDS {
                row.push(f(kt).to_string());
                row.push(format!("{} ({})", f(ot), diff_pct(f(ot), f(kt))));
            }
            rows.push(row);
        }
    }
    Table {
        title: format!(
            "Variant {}: the kernel's refills, drains, direct buddy allocations and fallbacks \
             per zone and CPU, and ours",
            r.variant.name
        ),
        header,
        rows,
    }
}

/// Reads one counter of a variant's [`crate::trace::replay::ReplayCounts`].
type CountOf = fn(&crate::trace::replay::ReplayCounts) -> u64;

pub(super) fn accounting_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec!["what".to_owned()];
    header.extend(names.iter().cloned());
    let rows: [(&str, CountOf); 20] = [
        ("allocations replayed", |c| c.allocs),
        ("allocation failures (kernel succeeded)", |c| {
            c.alloc_failures
        }),
        ("kernel failures in the trace", |c| c.kernel_failures),
        ("kernel failures that succeed here", |c| {
            c.kernel_failures_satisfied
        }),
        ("allocations skipped (order or migratetype)", |c| {
            c.skipped_allocs
        }),
        (
            "same frame as the kernel (meaningful for a replay of our own emitted trace)",
            |c| c.same_frame,
        ),
        ("allocations of a frame handed out before", |c| c.reused),
        ("frees replayed", |c| c.frees),
        ("frees of pages allocated before the trace (skipped)", |c| {
            c.frees_before_trace
        }),
        ("frees of blocks that failed here (skipped)", |c| {
            c.frees_of_failed
        }),
        ("partial frees (split blocks)", |c| c.partial_frees),
        ("frees with a larger order than allocated", |c| {
            c.order_mismatches
        }),
        ("re-allocations without a traced free", |c| c.implicit_frees),
        ("mm_page_free_batched repeats (counted once)", |c| {
            c.batched_duplicates
        }),
        ("drains inferred from unexplained drain runs", |c| {
            c.inferred_drains
        }),
        (
            "untraced allocations inferred (refilled pages no traced allocation took)",
            |c| c.untraced_allocs,
        ),
        ("frees of pages in use at the /proc snapshot", |c| {
            c.frees_from_snapshot
        }),
        ("kswapd wake-ups (reclaim-active until it sleeps)", |c| {
            c.kswapd_wakes
        }),
        (
            "MAX_PAGE_ORDER blocks onlined as the trace touched them",
            |c| c.onlined_blocks,
        ),
        ("extfrag fallbacks", |c| c.extfrag),
    ];
    Table {
        title: "What the replay did with the trace".to_owned(),
        header,
        rows: rows
            .iter()
            .map(|(label, f)| {
                let mut row = vec![(*label).to_owned()];
                row.extend(run.replayers.iter().map(|r| f(&r.counts).to_string()));
                row
            })
            .collect(),
    }
}

pub(super) fn per_cpu_table(run: &ReplayRun, names: &[String]) -> Table {
    let mut header = vec![
        "cpu".to_owned(),
        "kernel refills".to_owned(),
        "kernel drains".to_owned(),
    ];
    for n in names {
        header.push(format!("{n} refills"));
        header.push(format!("{n} drains"));
    }
    let kr = per_cpu(&run.kernel.grid, |t| t.refills);
    let kd = per_cpu(&run.kernel.grid, |t| t.drains);
    let ours: Vec<(Vec<u64>, Vec<u64>)> = run
        .replayers
        .iter()
        .map(|r| {
            (
                per_cpu(&r.ours, |t| t.refills),
                per_cpu(&r.ours, |t| t.drains),
            )
        })
        .collect();
    let rows = (0..run.geo.cpus as usize)
        .map(|c| {
            let mut row = vec![c.to_string(), kr[c].to_string(), kd[c].to_string()];
            for (r, d) in &ours {
                row.push(format!("{} ({})", r[c], diff_pct(r[c], kr[c])));
                row.push(format!("{} ({})", d[c], diff_pct(d[c], kd[c])));
            }
            row
        })
        .collect();
    Table {
        title: "PCP refills (mm_page_alloc_zone_locked with percpu_refill=1) and drains \
                (mm_page_pcpu_drain) per CPU: the kernel's, from the trace, and ours (trace \
                CPUs beyond the replay's fold onto CPU c % N)"
            .to_owned(),
        header,
        rows,
    }
}

const TYPE_NAMES: [&str; 3] = ["Unmovable", "Movable", "Reclaimable"];

/// Every migratetype's name, in [`zonealloc::MigrateType::index`] order.
const ALL_TYPE_NAMES: [&str; 5] = [
    "Unmovable",
    "Movable",
    "Reclaimable",
    "HighAtomic",
    "Isolate",
];

/// What the `/proc` set-up reached against the snapshot (the first variant's zones; every
/// variant is set up the same way).
pub(super) fn setup_table(r: &Replayer) -> Table {
    let mut rows = Vec::new();
    for f in &r.setup {
        let mut row = |what: &str, k: u64, o: u64| {
            rows.push(vec![
                f.zone.clone(),
                what.to_owned(),
                k.to_string(),
                o.to_string(),
            ])
        };
        row("managed pages", f.managed.0, f.managed.1);
        for (o, (&k, &ours)) in f.free_blocks.0.iter().zip(&f.free_blocks.1).enumerate() {
            row(
                &format!("free blocks, order {o} ({} layout)", f.layout),
                k,
                ours,
            );
        }
        if f.unplaced > 0 {
            row("free blocks the synthesis did not place", 0, f.unplaced);
        }
        if f.trimmed > 0 {
            row(
                "free blocks of the layout beyond pagetypeinfo's",
                f.trimmed,
                0,
            );
        }
        if f.moved != (0, 0) {
            row(
                "free blocks of pagetypeinfo that the events after its read took",
                f.moved.0,
                0,
            );
            row(
                "free blocks the events after pagetypeinfo's read put on the free lists",
                0,
                f.moved.1,
            );
        }
        if f.made_up > 0 {
            row(
                "free blocks made up from pages in use of the layout",
                0,
                f.made_up,
            );
        }
        if f.pcp_missing > 0 {
            row("PCP pages without a page to hold them", 0, f.pcp_missing);
        }
        row("pages in use", f.used.0, f.used.1);
        row("buddy free pages", f.free.0, f.free.1);
        row("PCP pages", f.pcp.0, f.pcp.1);
        for (t, name) in TYPE_NAMES.iter().enumerate() {
            row(
                &format!("{name} pageblocks"),
                f.pageblocks.0[t],
                f.pageblocks.1[t],
            );
        }
    }
    Table {
        title: "The --proc set-up: the kernel's state at the snapshot and ours at the start"
            .to_owned(),
        header: vec![
            "zone".to_owned(),
            "what".to_owned(),
            "kernel".to_owned(),
            "ours".to_owned(),
        ],
        rows,
    }
}

/// Each CPU's count at the start marker: zoneinfo's and the one the trace pins
/// ([`crate::trace::replay::start_count`]).
pub(super) fn start_count_table(sc: &start_count::StartCounts) -> Table {
    let rows = sc
        .cpus
        .iter()
        .map(|c| {
            vec![
                c.zone.clone(),
                c.cpu.to_string(),
                c.zoneinfo.to_string(),
                c.inferred.to_string(),
                format!("{:?}", c.found).to_lowercase(),
                match c.bounds.1 {
                    Some(hi) => format!("{}..={hi}", c.bounds.0),
                    None => format!("{}..", c.bounds.0),
                },
                c.pin_ns
                    .map_or("-".to_owned(), |t| format!("{:.6}", t as f64 / 1e9)),
            ]
        })
        .collect();
    let title = match &sc.skipped {
        Some(why) => format!("Each CPU's count at the start marker: not inferred ({why})"),
        None => format!(
            "Each CPU's count at the start marker: zoneinfo's (read before the marker) and \
             the one the trace bounds ({} events read)",
            sc.events
        ),
    };
    Table {
        title,
        header: [
            "zone",
            "cpu",
            "zoneinfo count",
            "start count",
            "found",
            "trace's bounds",
            "pin at (s)",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    }
}

/// The end state against `--proc-after`, per zone: buddyinfo per order, pagetypeinfo per
/// migratetype, PCP pages; the kernel's column, then one per variant (`ends`: per variant,
/// per zone).
pub(super) fn end_state_table(names: &[String], ends: &[Vec<EndState>]) -> Table {
    // Rows by (zone, what): a variant's rows differ from another's (a migratetype's rows
    // show only where the kernel or that variant has its free blocks), so each cell goes to
    // its own row, "-" where a variant has none; a row first seen in a later variant goes
    // after its zone's rows.
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut at: std::collections::HashMap<(String, String), usize> = Default::default();
    let mut zones: Vec<String> = Vec::new();
    for (v, variant) in ends.iter().enumerate() {
        for e in variant {
            if !zones.contains(&e.zone) {
                zones.push(e.zone.clone());
            }
            for (what, kernel, ours) in end_state_rows(e) {
                let i = *at.entry((e.zone.clone(), what.clone())).or_insert_with(|| {
                    let mut row = vec![e.zone.clone(), what, kernel];
                    row.resize(3 + ends.len(), "-".to_owned());
                    rows.push(row);
                    rows.len() - 1
                });
                rows[i][3 + v] = ours;
            }
        }
    }
    rows.sort_by_key(|r| zones.iter().position(|z| *z == r[0]));
    let mut header = vec!["zone".to_owned(), "what".to_owned(), "kernel".to_owned()];
    header.extend(names.iter().map(|n| format!("{n} (against the kernel)")));
    Table {
        title: "The end state against --proc-after (buddyinfo, pagetypeinfo, PCP)".to_owned(),
        header,
        rows,
    }
}

/// One zone's end state as `(what, the kernel's, ours with the change)` rows.
fn end_state_rows(e: &EndState) -> Vec<(String, String, String)> {
    let diff =
        |what: String, k: u64, o: u64| (what, k.to_string(), format!("{o} ({})", diff_pct(o, k)));
    let mut rows = Vec::new();
    for (o, (k, ours)) in e
        .kernel_free_blocks
        .iter()
        .zip(&e.ours_free_blocks)
        .enumerate()
    {
        rows.push(diff(format!("free blocks, order {o}"), *k, *ours));
    }
    for (t, (k, ours)) in e
        .kernel_free_by_type
        .iter()
        .zip(&e.ours_free_by_type)
        .enumerate()
    {
        if k.iter().chain(ours).all(|&n| n == 0) {
            continue;
        }
        let tn = ALL_TYPE_NAMES.get(t).copied().unwrap_or("?");
        for (o, (&k, &ours)) in k.iter().zip(ours).enumerate() {
            if k > 0 || ours > 0 {
                rows.push(diff(format!("{tn} free blocks, order {o}"), k, ours));
            }
        }
        let pct = e.type_off_pct.get(t).copied().flatten();
        rows.push((
            format!("{tn} free blocks off the kernel (sum over orders)"),
            "-".to_owned(),
            pct.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%")),
        ));
    }
    if let Some(l) = &e.layout {
        for (o, (&k, &same)) in l.kernel_free_blocks.iter().zip(&l.same_place).enumerate() {
            if k > 0 {
                rows.push((
                    format!("order-{o} free blocks of the kernel's layout at the same pfn"),
                    k.to_string(),
                    format!("{same} ({:.1}%)", 100.0 * same as f64 / k as f64),
                ));
            }
        }
    }
    for (t, tn) in TYPE_NAMES.iter().enumerate() {
        let (k, o) = (e.free_pages_by_type.0[t], e.free_pages_by_type.1[t]);
        rows.push(diff(format!("{tn} free pages"), k, o));
        let (k, o) = (e.pageblocks.0[t], e.pageblocks.1[t]);
        rows.push(diff(format!("{tn} pageblocks"), k, o));
    }
    rows.push(diff("PCP pages".to_owned(), e.pcp.0, e.pcp.1));
    for (cpu, ((kc, kh), (oc, oh))) in e.pagesets.iter().enumerate() {
        rows.push((
            format!("CPU {cpu} PCP count / high"),
            format!("{kc} / {kh}"),
            format!("{oc} / {oh}"),
        ));
    }
    rows.push((
        format!(
            "free blocks off the kernel (sum over orders; start layout {})",
            e.start_layout
        ),
        "-".to_owned(),
        e.free_blocks_off_pct
            .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%")),
    ));
    rows
}

/// The most reused frames in the window, the kernel's and every variant's
/// ([`ReplayRun::reused`], [`REUSE_ROWS`] each).
pub(super) fn reuse_table(run: &ReplayRun, names: &[String]) -> Table {
    const N: usize = REUSE_ROWS;
    let (kernel, ours) = (&run.reused.kernel, &run.reused.ours);
    let mut header = vec!["rank".to_owned(), "kernel: pfn (allocs)".to_owned()];
    header.extend(names.iter().map(|n| format!("{n}: pfn (allocs)")));
    let cell =
        |v: Option<(u64, u64)>| v.map_or_else(|| "-".to_owned(), |(p, c)| format!("{p:#x} ({c})"));
    let rows = (0..N)
        .map(|i| {
            let mut row = vec![(i + 1).to_string(), cell(kernel.get(i).copied())];
            row.extend(
                ours.iter()
                    .map(|o| cell(o.get(i).map(|&(p, c)| (p, u64::from(c))))),
            );
            row
        })
        .collect();
    Table {
        title: "Most reused frames (seed 000's table): the kernel's and each variant's".to_owned(),
        header,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone's end state with Movable blocks of orders 0 and 1 on both sides, and
    /// `reclaimable` order-1 Reclaimable blocks of ours only.
    fn end(zone: &str, reclaimable: u64) -> EndState {
        EndState {
            zone: zone.to_owned(),
            start_layout: "kernel",
            kernel_free_blocks: vec![1, 2],
            ours_free_blocks: vec![1, 2 + reclaimable],
            kernel_free_by_type: vec![vec![0, 0], vec![1, 2], vec![0, 0]],
            ours_free_by_type: vec![vec![0, 0], vec![1, 2], vec![0, reclaimable]],
            free_pages_by_type: ([0, 5, 0], [0, 5, 2 * reclaimable]),
            pageblocks: ([1, 2, 0], [1, 2, 0]),
            pcp: (3, 4),
            pagesets: vec![((3, 10), (4, 10))],
            free_blocks_off_pct: Some(0.0),
            order_off_pct: vec![None; 2],
            type_off_pct: vec![None; 3],
            layout: None,
        }
    }

    #[test]
    fn a_row_only_one_variant_has_keeps_every_cell_in_its_own_row_and_column() {
        let names = ["a".to_owned(), "b".to_owned()];
        let ends = vec![
            vec![end("DMA", 0), end("Normal", 0)],
            vec![end("DMA", 0), end("Normal", 1)],
        ];
        let t = end_state_table(&names, &ends);
        assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        let row = |zone: &str, what: &str| {
            t.rows
                .iter()
                .find(|r| r[0] == zone && r[1] == what)
                .unwrap_or_else(|| panic!("no row {zone} {what}"))[2..]
                .to_vec()
        };
        // Only b has Normal's Reclaimable rows: a's cells say so.
        assert_eq!(
            row("Normal", "Reclaimable free blocks, order 1"),
            ["0", "-", "1 (-)"]
        );
        // The rows after it are not shifted into b's column.
        assert_eq!(
            row("Normal", "PCP pages"),
            ["3", "4 (+33.33%)", "4 (+33.33%)"]
        );
        assert_eq!(
            row("Normal", "CPU 0 PCP count / high"),
            ["3 / 10", "4 / 10", "4 / 10"]
        );
        // One zone's rows together.
        let zones: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        let first_normal = zones.iter().position(|&z| z == "Normal").unwrap();
        assert!(zones[first_normal..].iter().all(|&z| z == "Normal"));
    }
}
