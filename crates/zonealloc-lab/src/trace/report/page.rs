//! A replay's own pages: `report.md`, which leads with one screen (the trace, the kernel's
//! rules, the window, how close the model came to the kernel per event kind, the best and
//! worst variant per headline metric, the caveats), then the headline table, the tables and
//! the plots; and `report.txt`, the first screen and the headline table in fixed width
//! (<= 100 columns, compare-kernels' form, pasteable into a mail). The configuration is in
//! `results.json` only.

use std::path::Path;

use super::metrics::fidelity_metric;
use crate::report::change::{judged, Better};
use crate::report::compare::fmt_value;
use crate::report::table::{self, Align};
use crate::report::{plot_file_name, ExperimentResult, MetricDef, MetricKind, Pages};
use crate::trace::replay::preset::Kernel;
use crate::trace::replay::ReplayRun;

/// The event kinds the first screen names (the others are in the table below it).
const SCREEN_KINDS: [(&str, &str, &str); 2] = [
    ("refills", "refill events", "refill pages"),
    ("drains", "drain events", "drain pages"),
];

/// The columns of `report.txt` (compare-kernels' width, pasteable into a mail).
const TEXT_WIDTH: usize = 100;

/// The caveats the first screen lists (the rest are counted).
const MAX_CAVEATS: usize = 5;

/// A replay's `report.md` and `report.txt`.
pub(super) fn pages(result: &ExperimentResult, run: &ReplayRun, file: &Path) -> Pages {
    let mut md = first_screen(result, run, file, false);
    md.push_str("\n## Headline metrics\n\n");
    md.push_str(&table::markdown(
        &headline_header(result),
        &[Align::Left],
        &headline_rows(result),
    ));
    md.push_str(
        "\nA replay is deterministic: one value per variant and metric, each change exact \
         (against the first variant, the baseline).\n",
    );
    for t in &result.tables {
        md.push_str(&format!("\n### {}\n\n", t.title));
        let width = t.rows.iter().map(Vec::len).fold(t.header.len(), usize::max);
        let pad = |cells: &[String]| {
            let mut v = cells.to_vec();
            v.resize(width, String::new());
            v
        };
        let rows: Vec<Vec<String>> = t.rows.iter().map(|r| pad(r)).collect();
        md.push_str(&table::markdown(&pad(&t.header), &[Align::Left], &rows));
    }
    md.push_str(&format!("\n## Notes\n\n{}\n", result.expected_shape));
    if !result.plots.is_empty() {
        md.push_str("\n## Plots\n\n");
        for p in &result.plots {
            let f = plot_file_name(&result.name, &p.file_stem);
            md.push_str(&format!("- [{}]({f})\n\n  ![{}]({f})\n", p.title, p.title));
        }
    }
    md.push_str(
        "\nThe configuration (zones, CPUs, inferences, set-up), the kernel's raw counts and \
         the run's record are in `results.json`.\n",
    );
    let mut text = wrap(&first_screen(result, run, file, true), TEXT_WIDTH);
    text.push_str("\nHeadline metrics\n\n");
    text.push_str(&headline_text(result));
    Pages { markdown: md, text }
}

/// The headline table in fixed width (blocks of at most [`TEXT_WIDTH`] columns).
pub(super) fn headline_text(result: &ExperimentResult) -> String {
    let mut rows = vec![headline_header(result)];
    rows.extend(headline_rows(result));
    plain_within(&rows, TEXT_WIDTH)
}

/// Which way of a metric is the better one.
fn better(m: &MetricDef) -> Better {
    match m.kind {
        MetricKind::Rate
        | MetricKind::Count {
            higher_is_better: true,
        } => Better::Higher,
        _ => Better::Lower,
    }
}

/// A metric's name with its unit.
fn named(m: &MetricDef) -> String {
    format!("{} [{}]", m.name, m.unit)
}

/// A value of `m`: a count as a whole number, anything else as the lab writes it.
fn fmt_metric(m: &MetricDef, x: Option<f64>) -> String {
    match x {
        Some(v) if m.unit != "%" && v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        _ => fmt_value(x),
    }
}

/// One variant's value of `metric` (`None` where it has none).
fn value(result: &ExperimentResult, variant: &str, metric: &str) -> Option<f64> {
    result.samples_of(variant, metric).next().map(|s| s.value)
}

fn headline_header(result: &ExperimentResult) -> Vec<String> {
    let mut h = vec!["metric".to_owned()];
    for (i, v) in result.variants.iter().enumerate() {
        h.push(if i == 0 {
            format!("{v} (baseline)")
        } else {
            v.clone()
        });
    }
    h
}

/// One row per metric: the baseline's value, then each variant's with its change.
fn headline_rows(result: &ExperimentResult) -> Vec<Vec<String>> {
    let base_name = result.variants.first().map_or("", String::as_str);
    result
        .metrics
        .iter()
        .map(|m| {
            let base = value(result, base_name, &m.name);
            let mut row = vec![named(m)];
            for (i, v) in result.variants.iter().enumerate() {
                let x = value(result, v, &m.name);
                let change = match (i, base, x) {
                    (0, ..) | (_, None, _) | (_, _, None) => None,
                    (_, Some(b), Some(x)) if b == x => Some("=".to_owned()),
                    (_, Some(b), Some(x)) => judged(b, x, better(m)),
                };
                row.push(match change {
                    Some(c) => format!("{} ({c})", fmt_metric(m, x)),
                    None => fmt_metric(m, x),
                });
            }
            row
        })
        .collect()
}

/// `rows` under `header` as a markdown table, or in fixed width (`text`).
fn render_table(header: Vec<String>, rows: Vec<Vec<String>>, text: bool) -> String {
    if text {
        let mut all = vec![header];
        all.extend(rows);
        table::plain(&all, 1, true)
    } else {
        table::markdown(&header, &[Align::Left], &rows)
    }
}

/// `rows` (the first column the labels) in fixed width, as many of the other columns beside
/// the labels as fit in `width`, the rest in further blocks below (as compare-kernels splits
/// a wide comparison).
fn plain_within(rows: &[Vec<String>], width: usize) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let w = |c: usize| {
        rows.iter()
            .filter_map(|r| r.get(c))
            .map(|x| x.chars().count())
            .max()
            .unwrap_or(0)
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = w(0);
    for c in 1..cols {
        match groups.last_mut() {
            Some(g) if used + 2 + w(c) <= width => g.push(c),
            _ => {
                groups.push(vec![c]);
                used = w(0);
            }
        }
        used += 2 + w(c);
    }
    let blocks: Vec<String> = groups
        .iter()
        .map(|g| {
            let picked: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    std::iter::once(0)
                        .chain(g.iter().copied())
                        .map(|c| r.get(c).cloned().unwrap_or_default())
                        .collect()
                })
                .collect();
            table::plain(&picked, 1, true)
        })
        .collect();
    blocks.join("\n")
}

/// A heading of the first screen: markdown's `##`, or the bare words in text.
fn heading(title: &str, text: bool) -> String {
    if text {
        format!("\n{title}\n\n")
    } else {
        format!("\n## {title}\n\n")
    }
}

/// `s` with every line longer than `width` columns broken at spaces, continuation lines
/// indented by two.
fn wrap(s: &str, width: usize) -> String {
    let mut out = String::new();
    for line in s.lines() {
        let mut cur = String::new();
        for word in line.split(' ') {
            if !cur.trim().is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
                out.push_str(cur.trim_end());
                out.push('\n');
                cur = "  ".to_owned();
            } else if !cur.is_empty() && cur != "  " {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        out.push_str(cur.trim_end());
        out.push('\n');
    }
    out
}

/// Which kernel's rules the replay ran under and where that came from, in words, as the
/// summary and the first screen print them: `7.2 (mainline), from --proc's zoneinfo`,
/// `6.1, chosen by --kernel`, or mainline's defaults. The source follows a comma, since a
/// family's name may hold parentheses of its own.
pub(super) fn kernel_rules(kernel: Kernel, given: bool, from_proc: bool) -> String {
    if given {
        format!("{}, chosen by --kernel", kernel.name())
    } else if from_proc {
        format!("{}, from --proc's zoneinfo", kernel.name())
    } else {
        "mainline, the ZoneConfig defaults (--kernel to choose)".to_owned()
    }
}

/// The first screen (<= 40 lines): in markdown, or in fixed width (`text`).
fn first_screen(result: &ExperimentResult, run: &ReplayRun, file: &Path, text: bool) -> String {
    let p = &run.parser;
    let mut s = if text {
        format!("Trace replay: {}\n\n", file.display())
    } else {
        format!("# Trace replay: {}\n\n", file.display())
    };
    let (kernel, given) = run.preset;
    let rules = kernel_rules(kernel, given, run.setup_from_proc);
    let zones: Vec<String> = run
        .geo
        .zones
        .iter()
        .map(|z| format!("{:?} {} pages", z.zone_type, z.pages))
        .collect();
    s.push_str(&format!(
        "- Trace: {} events ({} lines, {} malformed), replayed in {:.2} s\n\
         - Kernel rules: {rules}; zones {}; {} CPUs\n",
        p.events,
        p.lines,
        p.malformed,
        run.replay_s,
        zones.join(", "),
        run.geo.cpus,
    ));
    let w = &run.window.0;
    s.push_str(&format!(
        "- Window: {} to {}\n",
        match (&w.from, run.window.1) {
            (None, _) => "the start".to_owned(),
            (Some(f), Some(true)) => format!("after `{f}`"),
            (Some(f), _) =>
                format!("the start (`{f}` not in the first 4 MiB, nor looked for after it)"),
        },
        w.to.as_deref()
            .map_or("the end".to_owned(), |t| format!("`{t}`")),
    ));
    s.push_str(&format!(
        "- Variants: {} (the first is the baseline)\n",
        result
            .variants
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    s.push_str(&closeness(result, run, text));
    s.push_str(&best_worst(result, text));
    s.push_str(&caveats(run, text));
    s
}

/// How close each variant came to the kernel: refills, drains, end state.
fn closeness(result: &ExperimentResult, run: &ReplayRun, text: bool) -> String {
    let pct = |v: &str, kind: &str| {
        value(result, v, &fidelity_metric(kind))
            .map_or_else(|| "n/a".to_owned(), |x| format!("{x:.1}%"))
    };
    let mut rows: Vec<Vec<String>> = SCREEN_KINDS
        .iter()
        .map(|(what, events, pages)| {
            let mut row = vec![format!("{what}: events / pages off")];
            for v in &result.variants {
                row.push(format!("{} / {}", pct(v, events), pct(v, pages)));
            }
            row
        })
        .collect();
    let zones: Vec<&str> = run
        .end_states
        .first()
        .map(|e| e.iter().map(|z| z.zone.as_str()).collect())
        .unwrap_or_default();
    for (z, zone) in zones.iter().enumerate() {
        let start = run
            .end_states
            .first()
            .and_then(|e| e.get(z))
            .map_or("synthesised", |e| e.start_layout);
        let mut row = vec![format!(
            "end state, {zone}: free blocks off (start layout {start})"
        )];
        for ends in &run.end_states {
            row.push(
                ends.get(z)
                    .and_then(|e| e.free_blocks_off_pct)
                    .map_or_else(|| "n/a".to_owned(), |x| format!("{x:.1}%")),
            );
        }
        rows.push(row);
    }
    if zones.is_empty() {
        let mut row = vec!["end state".to_owned()];
        row.extend(
            result
                .variants
                .iter()
                .map(|_| "- (no --proc-after)".to_owned()),
        );
        rows.push(row);
    }
    let mut header = vec!["against the kernel (0% is exact)".to_owned()];
    header.extend(result.variants.iter().cloned());
    format!(
        "{}{}",
        heading("How close the model came to the kernel", text),
        render_table(header, rows, text)
    )
}

/// Per headline metric, the best and the worst variant (or that they all agree).
fn best_worst(result: &ExperimentResult, text: bool) -> String {
    let mut out = heading("Best and worst variant per headline metric", text);
    let headline = result
        .metrics
        .iter()
        .filter(|m| !m.name.ends_with(" off the kernel"));
    for m in headline {
        let vals: Vec<(&String, f64)> = result
            .variants
            .iter()
            .filter_map(|v| value(result, v, &m.name).map(|x| (v, x)))
            .collect();
        let b = better(m);
        let key = |x: f64| if b == Better::Higher { -x } else { x };
        let best = vals.iter().min_by(|a, c| key(a.1).total_cmp(&key(c.1)));
        let worst = vals.iter().max_by(|a, c| key(a.1).total_cmp(&key(c.1)));
        let line = match (best, worst) {
            (Some(bv), Some(wv)) if bv.1 == wv.1 => {
                format!("all variants {}", fmt_metric(m, Some(bv.1)))
            }
            (Some(bv), Some(wv)) => format!(
                "best `{}` {}, worst `{}` {} ({})",
                bv.0,
                fmt_metric(m, Some(bv.1)),
                wv.0,
                fmt_metric(m, Some(wv.1)),
                judged(bv.1, wv.1, b).unwrap_or_else(|| "n/a".to_owned()),
            ),
            _ => "n/a".to_owned(),
        };
        out.push_str(&format!("- {}: {line}\n", named(m)));
    }
    out
}

/// The caveats that change how the figures read.
fn caveats(run: &ReplayRun, text: bool) -> String {
    let mut c = Vec::new();
    let synthesised = run
        .replayers
        .first()
        .is_some_and(|r| r.setup.iter().any(|f| f.layout == "synthesised"));
    if run.setup_from_proc && synthesised {
        c.push(
            "free-page layout synthesised from counts: the --proc folder has no `layout`, so \
             the free blocks per order and migratetype are the kernel's but not their frames, \
             and which frame an allocation gets is ours"
                .to_owned(),
        );
    } else if run.setup_from_proc {
        c.push(
            "free-page layout from the kernel's `layout`: the free blocks at the kernel's \
             frames; pageblock types and which pages were on per-CPU lists are inferred"
                .to_owned(),
        );
    } else {
        c.push(
            "no --proc: the zones start empty of the pages the kernel had in use, so frees of \
             those are skipped, and the sizes and watermarks are ours"
                .to_owned(),
        );
    }
    if run.end_states.is_empty() {
        c.push("no --proc-after: the end state is not compared".to_owned());
    } else if let Some(reads) = &run.end_reads {
        c.push(format!(
            "end state: the replay goes on past the window's end (refills and drains are \
             counted in the window only) to where each --proc-after file was read: {}",
            reads.describe()
        ));
    } else {
        c.push(format!(
            "end state where the replayed part ends ({}), not at each --proc-after file's read",
            run.window.0.to.as_deref().unwrap_or("the trace's end")
        ));
    }
    if let Some(w) = &run.whole_start {
        c.push(w.caveat());
    }
    for u in run.preset.0.unmodelled() {
        c.push(format!("not modelled: {u}"));
    }
    if run.window.0.from.is_some() && run.window.1 != Some(true) {
        c.push("the start marker was not found: replayed from the trace's start".to_owned());
    }
    if run.parser.malformed > 0 {
        c.push(format!("{} malformed lines skipped", run.parser.malformed));
    }
    if let Some(r) = run.replayers.first().filter(|r| r.counts.decay_runs > 0) {
        let c_ = &r.counts;
        let t = c_.decay_traced;
        c.push(if t.runs + t.shepherd > 0 {
            format!(
                "vmstat workers' decay (decay_pcp_high): {} runs draining {} pages, each at \
                 the trace's run (workqueue_execute_start: {} vmstat_update runs, {} of a \
                 worker the model had stopped; {} vmstat_shepherd runs)",
                c_.decay_runs, c_.decay_drained_pages, t.runs, t.unexpected, t.shepherd
            )
        } else {
            let k = c_.decay_check;
            format!(
                "vmstat workers' decay (decay_pcp_high): {} runs draining {} pages, timers {}; \
                 {} worker runs in the trace ({} already run by the simulation){}",
                c_.decay_runs,
                c_.decay_drained_pages,
                if c_.decay_phase_from_trace {
                    "aligned to the trace's worker runs"
                } else {
                    "simulated, phase assumed (no worker run in the trace)"
                },
                c_.decay_marks,
                c_.decay_marks_early,
                if k.traced > 0 {
                    format!(
                        "; of the trace's {} vmstat_update runs (workqueue_execute_start, not \
                         taken as the runs), {} had one of the model's {} runs on their CPU \
                         within 50 ms, {} within 1 ms; of the {} that drained nothing (the \
                         timers' own), {} within 50 ms, {} within 1 ms",
                        k.traced,
                        k.near,
                        k.modelled,
                        k.exact,
                        k.traced - k.drained,
                        k.quiet_near,
                        k.quiet_exact
                    )
                } else {
                    String::new()
                }
            )
        });
    }
    if run.kernel.inferred_drains > 0 {
        c.push(format!(
            "{} drains inferred from drain runs no free explains",
            run.kernel.inferred_drains
        ));
    }
    c.extend(run.proc_warnings.iter().cloned());
    let mut out = heading("Caveats", text);
    for line in c.iter().take(MAX_CAVEATS) {
        out.push_str(&format!("- {line}\n"));
    }
    if c.len() > MAX_CAVEATS {
        out.push_str(&format!(
            "- and {} more (the replay's stderr, results.json)\n",
            c.len() - MAX_CAVEATS
        ));
    }
    out
}
