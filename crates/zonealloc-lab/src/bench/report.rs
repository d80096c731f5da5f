//! The bench's output: a markdown table (one row per workload, thread count and peer; ops/s,
//! ns/op, pages/s and the ratio to zonealloc), the machine above it, a legend of what each
//! peer measures below it, and the same as a JSON document with every repetition.
//!
//! The ratio is the peer's ns/op divided by zonealloc's (with per-CPU lists) in the same
//! workload and thread count: how many times slower the peer is. Above 1 zonealloc is faster,
//! below 1 the peer is.

use std::fmt::Write as _;

use serde::Serialize;

use super::peers::{Counters, Hands, Peer, PAGE_BYTES};
use super::runner::{OpsPlan, Summary};
use super::workloads::{Rep, Workload, MIXED_OCCUPANCY_PCT};
use super::BenchOpts;
use crate::machine::Machine;
use crate::report::table::{self, Align};

/// How a cell ended.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Measured: the median and every repetition.
    Measured {
        /// Median and spread.
        summary: Summary,
        /// Every timed repetition.
        reps: Vec<Rep>,
        /// The allocator's own counters over the cell (zonealloc's per-CPU lists).
        counters: Option<Counters>,
    },
    /// Not run, and why (e.g. producer-consumer on one thread).
    Skipped(String),
    /// Ran and failed: an error, a leak or a panic.
    Failed(String),
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// The workload.
    pub workload: Workload,
    /// The peer.
    pub peer: Peer,
    /// Threads used.
    pub threads: usize,
    /// More threads than the machine's logical cores.
    pub oversubscribed: bool,
    /// The result.
    pub outcome: Outcome,
    /// This peer's ns/op divided by zonealloc's in the same workload and thread count.
    pub ratio: Option<f64>,
    /// The same with CPU ns/op.
    pub cpu_ratio: Option<f64>,
    /// Instructions per op under callgrind (see [`icount`](super::icount)), or why there is
    /// no count; `None` where none was asked for (a multi-thread row, `--quick`,
    /// `--no-icount`, valgrind not on `PATH`).
    pub instructions_per_op: Option<Result<f64, String>>,
}

impl Cell {
    /// The summary, if measured.
    pub fn summary(&self) -> Option<&Summary> {
        match &self.outcome {
            Outcome::Measured { summary, .. } => Some(summary),
            _ => None,
        }
    }
}

/// One peer of the legend.
#[derive(Clone, Debug, Serialize)]
pub struct PeerInfo {
    /// `--peer` name.
    pub name: &'static str,
    /// What its tokens are.
    pub hands: Hands,
    /// What a row of it measures.
    pub about: &'static str,
}

/// The whole run: what `--json` writes.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// The tool and its version.
    pub tool: String,
    /// The command line.
    pub command: String,
    /// The machine.
    pub machine: Machine,
    /// What was asked.
    pub opts: BenchOpts,
    /// How to read `ratio`.
    pub ratio_definition: &'static str,
    /// The peers in the table.
    pub peers: Vec<PeerInfo>,
    /// The rows.
    pub cells: Vec<Cell>,
    /// Workloads left out at some thread count, and why.
    pub skipped: Vec<String>,
    /// The machine's 1-minute load average before and after the run, where readable.
    pub load_average: [Option<f64>; 2],
}

/// The ratio's meaning, in the JSON and under the table.
pub const RATIO_DEFINITION: &str = "peer ns/op / zonealloc ns/op, same workload and threads: \
     above 1 zonealloc is faster (CPU ratio: the same with CPU ns/op)";

impl BenchReport {
    /// Fills in the ratios of `cells` and wraps them.
    pub fn new(
        command: String,
        machine: Machine,
        opts: BenchOpts,
        mut cells: Vec<Cell>,
        skipped: Vec<String>,
    ) -> Self {
        let base: Vec<(Workload, usize, Summary)> = cells
            .iter()
            .filter(|c| c.peer == Peer::Zonealloc)
            .filter_map(|c| c.summary().map(|s| (c.workload, c.threads, *s)))
            .collect();
        let div = |a: f64, b: f64| (b > 0.0).then(|| a / b);
        for c in &mut cells {
            let zone = base
                .iter()
                .find(|(w, t, _)| *w == c.workload && *t == c.threads)
                .map(|b| b.2);
            if let (Some(&s), Some(z)) = (c.summary(), zone) {
                c.ratio = div(s.ns_per_op, z.ns_per_op);
                c.cpu_ratio = div(s.cpu_ns_per_op, z.cpu_ns_per_op);
            }
        }
        let peers = opts
            .peers
            .iter()
            .map(|&p| PeerInfo {
                name: p.name(),
                hands: p.hands(),
                about: p.about(),
            })
            .collect();
        BenchReport {
            tool: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            command,
            machine,
            opts,
            ratio_definition: RATIO_DEFINITION,
            peers,
            cells,
            skipped,
            load_average: [None, None],
        }
    }

    /// Cells that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Cell> {
        self.cells
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed(_)))
    }

    /// The markdown text: header, table, legend.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) -> std::fmt::Result {
        self.preamble(out)?;
        let header: Vec<String> = [
            "workload",
            "threads",
            "peer",
            "ops/s",
            "ns/op",
            "instr/op",
            "CPU ns/op",
            "pages/s",
            "ratio",
            "CPU ratio",
            "note",
        ]
        .map(String::from)
        .to_vec();
        let (l, r) = (Align::Left, Align::Right);
        let align = [l, r, l, r, r, r, r, r, r, r, l];
        let rows: Vec<Vec<String>> = self.cells.iter().map(|c| self.row(c)).collect();
        out.push_str(&table::markdown(&header, &align, &rows));
        self.ratio_matrix(out)?;
        if !self.skipped.is_empty() {
            writeln!(out, "\nNot run: {}.", self.skipped.join("; "))?;
        }
        writeln!(out, "\nPeers:\n")?;
        for p in &self.peers {
            writeln!(out, "- `{}`: {}", p.name, p.about)?;
        }
        Ok(())
    }
}

impl BenchReport {
    /// The title and the run's facts: command, machine, load, what a row measured.
    fn preamble(&self, out: &mut String) -> std::fmt::Result {
        let m = &self.machine;
        let o = &self.opts;
        writeln!(out, "# zonealloc bench\n")?;
        writeln!(out, "- Command: `{}` ({})", self.command, self.tool)?;
        writeln!(
            out,
            "- Machine: {}, {} logical cores, kernel {}, {}",
            m.cpu_model, m.logical_cores, m.kernel, m.os_arch
        )?;
        if let [Some(before), Some(after)] = self.load_average {
            writeln!(
                out,
                "- Load average (1 min): {before:.2} before the run, {after:.2} after, on {} \
                 cores",
                m.logical_cores
            )?;
        }
        let ops = match o.plan.ops {
            OpsPlan::Fixed(n) => format!("{n} ops per thread"),
            OpsPlan::DurationMs(ms) => format!("about {ms} ms"),
        };
        writeln!(
            out,
            "- Each row: a fresh allocator, a warm-up, then {} repetitions of {ops}; the \
             median. Frame allocators manage {} pages ({} MiB); `mixed` keeps {}% of that \
             allocated.{}",
            o.plan.repetitions,
            o.plan.pool_pages,
            (o.plan.pool_pages * PAGE_BYTES as u64) >> 20,
            MIXED_OCCUPANCY_PCT,
            if o.quick {
                " Quick run: sizes too small to quote."
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "- An op is one allocation and its free. ops/s counts all threads; ns/op is \
             1e9 / (ops/s), wall clock; CPU ns/op is the threads' CPU time per op, summed \
             over threads (it leaves out waiting for a core, and sleeping); ratio = \
             {RATIO_DEFINITION}."
        )?;
        writeln!(
            out,
            "- instr/op: {}\n",
            if o.icount {
                "instructions per op of the single-thread rows under valgrind's callgrind \
                 (two runs of the row's workload, 10000 and 20000 ops: the difference of \
                 their totals over the difference of their ops; the whole op through the \
                 peer's adapter, user space only), exact and independent of the load"
            } else {
                "n/a: not counted (valgrind not on PATH, --quick or --no-icount)"
            }
        )?;
        Ok(())
    }

    /// One cell's row of the main table, its notes last.
    fn row(&self, c: &Cell) -> Vec<String> {
        let m = &self.machine;
        let mut notes = Vec::new();
        if c.oversubscribed {
            notes.push(format!(
                "oversubscribed: {} threads > {} cores",
                c.threads, m.logical_cores
            ));
        }
        let (ops_s, ns, cpu, pages) = match &c.outcome {
            Outcome::Measured {
                summary: s,
                counters,
                ..
            } => {
                if let Some(k) = counters {
                    notes.push(format!("PCP hits {:.0}%", k.pcp_hit_pct));
                }
                if s.spread_pct > 20.0 {
                    notes.push(format!("spread {:.0}%", s.spread_pct));
                }
                if s.failures > 0 {
                    notes.push(format!("{} failed allocations", s.failures));
                }
                (
                    si(s.ops_per_s),
                    fmt_ns(s.ns_per_op),
                    fmt_ns(s.cpu_ns_per_op),
                    si(s.pages_per_s),
                )
            }
            Outcome::Skipped(why) => {
                notes.push(format!("skipped: {why}"));
                ("-".into(), "-".into(), "-".into(), "-".into())
            }
            Outcome::Failed(why) => {
                notes.push(format!("FAILED: {why}"));
                ("-".into(), "-".into(), "-".into(), "-".into())
            }
        };
        let ratio = c.ratio.map_or_else(|| "-".into(), fmt_ratio);
        let cpu_ratio = c.cpu_ratio.map_or_else(|| "-".into(), fmt_ratio);
        let instr = match &c.instructions_per_op {
            Some(Ok(n)) => format!("{n:.0}"),
            Some(Err(why)) => {
                notes.push(format!("no instruction count: {why}"));
                "n/a".into()
            }
            None => "n/a".into(),
        };
        vec![
            c.workload.name().to_owned(),
            c.threads.to_string(),
            c.peer.name().to_owned(),
            ops_s,
            ns,
            instr,
            cpu,
            pages,
            ratio,
            cpu_ratio,
            notes.join("; "),
        ]
    }

    /// The ratios alone, one row per workload and thread count, one column per peer: the
    /// table to quote.
    fn ratio_matrix(&self, out: &mut String) -> std::fmt::Result {
        let peers: Vec<Peer> = self
            .opts
            .peers
            .iter()
            .copied()
            .filter(|p| *p != Peer::Zonealloc)
            .collect();
        let mut rows: Vec<(Workload, usize, bool)> = Vec::new();
        for c in &self.cells {
            if !rows.iter().any(|r| r.0 == c.workload && r.1 == c.threads) {
                rows.push((c.workload, c.threads, c.oversubscribed));
            }
        }
        if peers.is_empty() || rows.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "\nRatios to zonealloc: peer ns/op / zonealloc ns/op (wall clock), CPU ns/op ratio \
             in brackets; above 1 zonealloc is faster. `*`: more threads than cores.\n"
        )?;
        let mut head: Vec<String> = ["workload", "threads", "zonealloc ns/op (CPU)"]
            .map(String::from)
            .to_vec();
        head.extend(peers.iter().map(|p| p.name().to_owned()));
        let mut lines = Vec::new();
        for &(wl, threads, over) in &rows {
            let cell = |p: Peer| {
                self.cells
                    .iter()
                    .find(|c| c.workload == wl && c.threads == threads && c.peer == p)
            };
            let base = cell(Peer::Zonealloc).and_then(Cell::summary).map_or_else(
                || "-".to_owned(),
                |s| format!("{} ({})", fmt_ns(s.ns_per_op), fmt_ns(s.cpu_ns_per_op)),
            );
            let mut line = vec![
                wl.name().to_owned(),
                format!("{threads}{}", if over { "*" } else { "" }),
                base,
            ];
            for &p in &peers {
                let text = match cell(p) {
                    Some(Cell {
                        ratio: Some(r),
                        cpu_ratio,
                        ..
                    }) => match cpu_ratio {
                        Some(c) => format!("{} ({})", fmt_ratio(*r), fmt_ratio(*c)),
                        None => fmt_ratio(*r),
                    },
                    _ => "-".to_owned(),
                };
                line.push(text);
            }
            lines.push(line);
        }
        // Everything right-aligned but the workload.
        out.push_str(&table::markdown(&head, &[Align::Left], &lines));
        Ok(())
    }
}

/// `12.3 M`-style: three significant digits and an SI prefix.
pub fn si(v: f64) -> String {
    let (x, unit) = if v >= 1e9 {
        (v / 1e9, " G")
    } else if v >= 1e6 {
        (v / 1e6, " M")
    } else if v >= 1e3 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    format!("{}{unit}", sig3(x))
}

/// Nanoseconds: three significant digits below 1000, whole numbers above.
pub fn fmt_ns(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else {
        sig3(v)
    }
}

/// A ratio, to three significant digits.
pub fn fmt_ratio(v: f64) -> String {
    sig3(v)
}

fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::runner::Plan;
    use super::*;

    fn measured(ns: f64) -> Outcome {
        Outcome::Measured {
            summary: Summary {
                ops_per_s: 1e9 / ns,
                ns_per_op: ns,
                pages_per_s: 1e9 / ns,
                cpu_ns_per_op: ns / 2.0,
                spread_pct: 1.0,
                failures: 0,
            },
            reps: vec![],
            counters: None,
        }
    }

    fn report() -> BenchReport {
        let cell = |workload, peer, threads, outcome| Cell {
            workload,
            peer,
            threads,
            oversubscribed: threads > 2,
            outcome,
            ratio: None,
            cpu_ratio: None,
            instructions_per_op: None,
        };
        let opts = BenchOpts {
            workloads: vec![Workload::Pair0, Workload::Local],
            peers: vec![Peer::Zonealloc, Peer::Mmap],
            threads: vec![4],
            plan: Plan {
                ops: OpsPlan::DurationMs(100),
                repetitions: 5,
                pool_pages: 65536,
                seed: 1,
            },
            quick: false,
            icount: false,
        };
        BenchReport::new(
            "zonealloc bench".into(),
            Machine {
                cpu_model: "cpu".into(),
                logical_cores: 2,
                kernel: "6.0".into(),
                os_arch: "linux x86_64".into(),
            },
            opts,
            vec![
                Cell {
                    instructions_per_op: Some(Ok(123.4)),
                    ..cell(Workload::Pair0, Peer::Zonealloc, 1, measured(20.0))
                },
                Cell {
                    instructions_per_op: Some(Err("valgrind failed".into())),
                    ..cell(Workload::Pair0, Peer::Mmap, 1, measured(1500.0))
                },
                cell(Workload::Local, Peer::Zonealloc, 4, measured(10.0)),
                cell(
                    Workload::Local,
                    Peer::Mmap,
                    4,
                    Outcome::Failed("a | b".into()),
                ),
            ],
            vec!["producer-consumer at 1 thread(s): why".into()],
        )
    }

    #[test]
    fn ratios_are_against_zonealloc_in_the_same_workload_and_threads() {
        let r = report();
        assert_eq!(r.cells[0].ratio, Some(1.0));
        assert_eq!(r.cells[1].ratio, Some(75.0));
        assert_eq!(r.cells[3].ratio, None);
        assert_eq!(r.failures().count(), 1);
    }

    #[test]
    fn table_rows_show_rates_ratios_and_flags() {
        let md = report().render();
        assert!(
            md.contains(
                "| pair0 | 1 | mmap | 667 k | 1500 | n/a | 750 | 667 k | 75.0 | 75.0 | no \
                 instruction count: valgrind failed |"
            ),
            "{md}"
        );
        assert!(md.contains(
            "| pair0 | 1 | zonealloc | 50.0 M | 20.0 | 123 | 10.0 | 50.0 M | 1.00 | 1.00 |"
        ));
        assert!(
            md.contains("| local | 4 | zonealloc | 100 M | 10.0 | n/a |"),
            "{md}"
        );
        assert!(md.contains("oversubscribed: 4 threads > 2 cores"), "{md}");
        assert!(md.contains("FAILED: a \\| b"), "{md}");
        assert!(md.contains("Machine: cpu, 2 logical cores"));
        assert!(md.contains("256 MiB"));
        assert!(md.contains("- `mmap`: "));
        assert!(md.contains("Not run: producer-consumer at 1 thread(s): why."));
        assert!(
            md.contains("| workload | threads | zonealloc ns/op (CPU) | mmap |"),
            "{md}"
        );
        assert!(
            md.contains("| pair0 | 1 | 20.0 (10.0) | 75.0 (75.0) |"),
            "{md}"
        );
        assert!(md.contains("| local | 4* | 10.0 (5.00) | - |"), "{md}");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(si(1234.0), "1.23 k");
        assert_eq!(si(52_300_000.0), "52.3 M");
        assert_eq!(si(7.0), "7.00");
        assert_eq!(fmt_ns(19.14), "19.1");
        assert_eq!(fmt_ns(123_456.7), "123457");
        assert_eq!(fmt_ratio(0.4567), "0.46");
    }
}
