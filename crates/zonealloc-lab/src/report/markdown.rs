//! `report.md`: the seeds' verdicts first (one table: seed | claim | seed's figure | lab's
//! figure | criterion | verdict), the run (commit, compiler, date, load) and the machine, then
//! per experiment a compare-kernels style table (one row per
//! metric summary, Stddev and CoeffVar rows, a baseline column and one column per variant),
//! its own tables, the expected shape, its configuration and links to its plots.

use std::fmt::Write as _;

use super::compare::{change_text, fmt_value, MetricComparison};
use super::table::{self, Align};
use super::verdict::Judgement;
use super::{plot_file_name, ExperimentReport, LabReport};

/// Renders the whole report. `plot_errors` are `(file stem key, error)` of plots that failed.
pub fn render(report: &LabReport, plot_errors: &[(String, String)]) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; `let _ =` keeps that explicit.
    let _ = render_into(&mut out, report, plot_errors);
    out
}

fn render_into(
    out: &mut String,
    report: &LabReport,
    plot_errors: &[(String, String)],
) -> std::fmt::Result {
    writeln!(out, "# zonealloc lab report\n")?;
    let nodes = report.opts.nodes;
    if nodes > 1 {
        writeln!(
            out,
            "> **Run on {nodes} NUMA nodes (`--nodes {nodes}`).** The claims are judged as on \
             one node; each experiment's configuration (`numa`) says how its CPUs, \
             allocations, frees and drains cross the nodes and which figures compare with a \
             one-node run.\n"
        )?;
    }
    if !report.verdicts.is_empty() {
        verdicts(out, &report.verdicts)?;
    }
    writeln!(out, "Command: `{}` ({})\n", report.command, report.tool)?;
    let r = &report.run;
    writeln!(out, "## Run\n")?;
    writeln!(out, "- Date (UTC): {}", r.date_utc)?;
    writeln!(out, "- Commit: {}", r.commit)?;
    writeln!(out, "- Compiler: {}", r.rustc)?;
    let load = |l: Option<[f64; 3]>| {
        l.map_or("unknown".to_owned(), |l| {
            format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
        })
    };
    writeln!(
        out,
        "- Load average (1/5/15 min): {} before, {} after, on {} cores",
        load(r.load_before),
        load(r.load_after),
        r.cores
    )?;
    if let Some(w) = &r.busy_warning {
        writeln!(out, "\n> **Warning: {w}.**")?;
    }
    writeln!(out)?;
    let m = &report.machine;
    writeln!(out, "## Machine\n")?;
    writeln!(out, "- CPU: {}", m.cpu_model)?;
    writeln!(out, "- Logical cores: {}", m.logical_cores)?;
    writeln!(out, "- Kernel: {}", m.kernel)?;
    writeln!(out, "- OS/arch: {}\n", m.os_arch)?;
    let o = &report.opts;
    writeln!(out, "## Options\n")?;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "experiment default".to_owned());
    writeln!(out, "- quick: {}", o.quick)?;
    writeln!(out, "- seed: {}", o.seed)?;
    writeln!(out, "- threads: {}", opt(o.threads.map(|v| v.to_string())))?;
    writeln!(
        out,
        "- iterations: {}",
        opt(o.iterations.map(|v| v.to_string()))
    )?;
    writeln!(
        out,
        "- zone pages: {}",
        opt(o.zone_pages.map(|v| v.to_string()))
    )?;
    writeln!(out, "- NUMA nodes: {}\n", o.nodes)?;
    writeln!(out, "## How to read the tables\n")?;
    writeln!(
        out,
        "As in mmtests' compare-kernels: Hmean (harmonic mean) for rates, Amean (arithmetic \
         mean) for latencies and counts; each variant's cell is followed by its change against \
         the baseline: the signed percentage of its value against the baseline's (`-49.75%`: \
         lower), or the ratio (`×30.6`, `÷12.5`) where they differ by more than a factor of \
         two, then `better` or `worse` by the metric's direction; the verdicts print the same \
         figure. `*` marks a difference that is significant at 95% by the experiment's test, named \
         under its heading: where the design is paired, {}; otherwise Welch's unpaired \
         t-test. `exact` marks a difference that is the same in every \
         repetition (deterministic for the seeds), which is a fact of those seeds rather than a \
         test. Stddev is the sample standard deviation, CoeffVar the stddev as a percentage of \
         the mean. Rates and latencies hold the samples of every round the repetition \
         driver ran; counts and indices those of the first round's fixed seeds only (more \
         rounds would only change which seeds they are judged on).\n",
        report.significance_test
    )?;
    if report.experiments.is_empty() && report.failures.is_empty() {
        writeln!(out, "No experiments were run (none registered).\n")?;
    }
    for e in &report.experiments {
        experiment(out, e, plot_errors)?;
    }
    if !report.failures.is_empty() {
        writeln!(out, "## Failed experiments\n")?;
        for f in &report.failures {
            writeln!(out, "- `{}`: {}", f.experiment, f.error)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn experiment(
    out: &mut String,
    e: &ExperimentReport,
    plot_errors: &[(String, String)],
) -> std::fmt::Result {
    let r = &e.result;
    writeln!(out, "## {} (seed {})\n", r.name, r.seed)?;
    writeln!(out, "{}\n", r.change)?;
    writeln!(
        out,
        "Variants: {} (baseline `{}`); ran in {:.1} s.\n",
        r.variants
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", "),
        r.baseline,
        e.wall_s
    )?;
    writeln!(out, "Test: {}.\n", e.design.test_name())?;
    if let Some(rep) = &e.repetition {
        writeln!(out, "Repetition: {}.\n", rep.describe())?;
    }
    if r.oversubscribed {
        writeln!(
            out,
            "> **Warning: oversubscribed: more threads than cores.** Timings include \
             scheduler effects.\n"
        )?;
    }
    comparison_table(out, &e.comparisons)?;
    for t in &r.tables {
        writeln!(out, "### {}\n", t.title)?;
        if t.header.is_empty() && t.rows.is_empty() {
            writeln!(out, "(empty)\n")?;
            continue;
        }
        let width = t
            .rows
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(t.header.len()))
            .max()
            .unwrap_or(0);
        let pad = |cells: &[String]| -> Vec<String> {
            let mut v = cells.to_vec();
            v.resize(width, String::new());
            v
        };
        let rows: Vec<Vec<String>> = t.rows.iter().map(|r| pad(r)).collect();
        out.push_str(&table::markdown(&pad(&t.header), &[Align::Left], &rows));
        writeln!(out)?;
    }
    writeln!(out, "### Expected shape\n")?;
    writeln!(out, "{}\n", r.expected_shape)?;
    writeln!(out, "### Configuration\n")?;
    let config = super::json::to_string(&r.config).unwrap_or_else(|e| e.to_string());
    writeln!(out, "```json\n{config}\n```\n")?;
    if !r.plots.is_empty() {
        writeln!(out, "### Plots\n")?;
        for p in &r.plots {
            let file = plot_file_name(&r.name, &p.file_stem);
            let key = file.trim_end_matches(".svg");
            match plot_errors.iter().find(|(k, _)| k == key) {
                Some((_, err)) => writeln!(out, "- {} (not rendered: {err})", p.title)?,
                None => writeln!(out, "- [{}]({file})\n\n  ![{}]({file})", p.title, p.title)?,
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The opening tables: every claim judged, and every entry of a seed's text not modelled,
/// one table per seed under its links; the tally above them.
fn verdicts(out: &mut String, verdicts: &[Judgement]) -> std::fmt::Result {
    writeln!(out, "## Seeds against this run\n")?;
    writeln!(
        out,
        "Each seed's own words and figure beside the lab's, judged by the criterion from this \
         run's numbers (see `report::verdict` for the rules). An *experiment* is the seed's \
         measured outcome, which the model could fail; a *mechanism* is true of any faithful \
         implementation (checked so that a regression shows, not counted as a \
         reproduction). A *proxy* is a deterministic count judged in place of a timing this \
         machine cannot resolve, and says what it stands for.\n"
    )?;
    for line in super::verdict::tally(verdicts).text().lines() {
        writeln!(out, "- {line}")?;
    }
    writeln!(out)?;
    let head: Vec<String> = [
        "kind",
        "claim",
        "the seed's words",
        "seed's figure",
        "lab's figure",
        "criterion",
        "verdict",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut seeds: Vec<&str> = verdicts.iter().map(|j| j.claim.seed).collect();
    seeds.dedup();
    for seed in seeds {
        let mine: Vec<&Judgement> = verdicts.iter().filter(|j| j.claim.seed == seed).collect();
        let c0 = &mine[0].claim;
        writeln!(out, "### {} `{}` ({})\n", seed, c0.experiment, c0.seed_file)?;
        for l in c0.links {
            writeln!(out, "Link: <{l}>  ")?;
        }
        writeln!(out)?;
        let rows: Vec<Vec<String>> = mine.iter().map(|j| verdict_row(j)).collect();
        out.push_str(&table::markdown(&head, &[Align::Left; 7], &rows));
        writeln!(out)?;
    }
    Ok(())
}

/// One judged claim as a row of the verdict table.
fn verdict_row(j: &Judgement) -> Vec<String> {
    let c = &j.claim;
    let kind = if j.verdict == super::verdict::Verdict::NotModelled {
        "-".to_owned()
    } else {
        c.kind.label().to_owned()
    };
    let mut lab = j.lab_figure.clone();
    if let Some(p) = c.proxy {
        lab = format!("{lab} (proxy: {p})");
    }
    if let Some(m) = &j.mainline {
        lab = format!(
            "{lab}; mainline's rule ({}): {} ({})",
            m.variant,
            m.lab_figure,
            m.verdict.label()
        );
    }
    let criterion = if c.criterion.metric().is_empty() {
        j.criterion_text.clone()
    } else {
        format!("{} on `{}`", j.criterion_text, c.criterion.metric())
    };
    vec![
        kind,
        format!("{}: {}", c.item, c.claim),
        format!("\"{}\" ({}: {})", c.quote, c.seed_file, c.source),
        c.seed_figure.to_owned(),
        lab,
        criterion,
        if j.reason.is_empty() {
            format!("**{}**", j.verdict.label())
        } else {
            format!("**{}**: {}", j.verdict.label(), j.reason)
        },
    ]
}

/// The compare-kernels table: per metric a summary row, then Stddev and CoeffVar rows, in
/// mmtests' fixed-width form (a text block, variants as columns, values right-aligned): a
/// change in the lab's notation ([`change_text`]: `(-1.23% better)`, `*-1.23% better*` where
/// it is significant at 95%, `exact` where every pair differs alike).
fn comparison_table(out: &mut String, comparisons: &[MetricComparison]) -> std::fmt::Result {
    let Some(first) = comparisons.first() else {
        writeln!(out, "(no metrics)\n")?;
        return Ok(());
    };
    let mut head = vec![String::new()];
    for (i, c) in first.cells.iter().enumerate() {
        head.push(if i == 0 {
            format!("{} (baseline)", c.variant)
        } else {
            c.variant.clone()
        });
    }
    let mut rows = vec![head];
    for m in comparisons {
        let name = format!("{} ({})", m.metric.name, m.metric.unit);
        let mut summary = vec![format!("{} {name}", m.summary_kind.label())];
        let mut sd = vec![format!("Stddev {name}")];
        let mut cv = vec![format!("CoeffVar {name}")];
        for (i, c) in m.cells.iter().enumerate() {
            let change = change_text(m, i);
            summary.push(if change.is_empty() {
                fmt_value(c.summary)
            } else {
                format!("{} {change}", fmt_value(c.summary))
            });
            sd.push(fmt_value(c.stddev));
            cv.push(match c.coeffvar {
                Some(v) => format!("{v:.2}%"),
                None => "n/a".to_owned(),
            });
        }
        rows.extend([summary, sd, cv]);
    }
    writeln!(out, "```text")?;
    out.push_str(&table::plain(&rows, 1, true));
    writeln!(out, "```\n")?;
    writeln!(
        out,
        "Change: the variant's value against the baseline's, better or worse by the metric's \
         direction; `*...*`: significant at 95% (compare-kernels' mark); `exact`: every pair \
         differs alike.\n"
    )?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::report::{ExperimentResult, MetricDef, MetricKind, Sample, Table};

    /// A small report of one experiment, `exp`, without plots.
    pub(crate) fn report(oversubscribed: bool) -> LabReport {
        let samples = [("off", 10.0), ("off", 10.1), ("on", 5.0), ("on", 5.1)]
            .iter()
            .enumerate()
            .map(|(i, &(v, x))| Sample {
                variant: v.into(),
                metric: "hold".into(),
                repetition: i % 2,
                seed: None,
                value: x,
            })
            .collect();
        let result = ExperimentResult {
            name: "exp".into(),
            seed: "000_abc".into(),
            change: "the change".into(),
            baseline: "off".into(),
            variants: vec!["off".into(), "on".into()],
            metrics: vec![MetricDef {
                name: "hold".into(),
                unit: "ns".into(),
                kind: MetricKind::Latency,
            }],
            samples,
            tables: vec![Table {
                title: "extra | table".into(),
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["1".into()], vec!["2".into(), "3".into(), "4".into()]],
            }],
            plots: vec![],
            expected_shape: "on is faster".into(),
            config: serde_json::json!({ "zone_pages": 1024 }),
            oversubscribed,
        };
        LabReport {
            tool: "t".into(),
            command: "zonealloc lab".into(),
            machine: Machine {
                cpu_model: "cpu".into(),
                logical_cores: 2,
                kernel: "6.0".into(),
                os_arch: "linux x86_64".into(),
            },
            run: crate::machine::RunInfo::start(),
            verdicts: Vec::new(),
            opts: crate::report::LabOpts::quick_test(1),
            significance_test: crate::report::compare::SIGNIFICANCE_TEST.into(),
            experiments: vec![ExperimentReport::new(result, 0.5)],
            failures: vec![],
        }
    }

    #[test]
    fn compare_table_has_summary_spread_and_marker_rows() {
        let md = render(&report(false), &[]);
        assert!(
            md.lines()
                .any(|l| l.contains("off (baseline)") && l.ends_with(" on")),
            "{md}"
        );
        // Fixed-width, compare-kernels' marks: `*change*` where significant.
        assert!(
            md.contains("Amean hold (ns)              10.05  5.05 *-49.75% better*"),
            "{md}"
        );
        assert!(md.contains("```text\n"));
        assert!(md.contains("Stddev hold (ns)"));
        assert!(md.contains("CoeffVar hold (ns)"));
        assert!(md.contains("\"zone_pages\": 1024"));
        assert!(md.contains("on is faster"));
        assert!(!md.contains("oversubscribed"));
    }

    /// A claim judged on `hold` (off → on, expected down) in a report whose `on` samples are
    /// `on`: the report and the judgement.
    fn judged(on: [f64; 2]) -> (LabReport, crate::report::verdict::Judgement) {
        use crate::report::verdict::{self, Claim, ClaimKind, Criterion, Expect};
        let mut r = report(false);
        let e = &mut r.experiments[0];
        let mut samples = e.result.samples.iter_mut().filter(|s| s.variant == "on");
        for v in on {
            samples.next().unwrap().value = v;
        }
        *e = ExperimentReport::new(e.result.clone(), e.wall_s);
        let claim = Claim {
            seed: "000",
            seed_file: "000_x.txt",
            source: "table",
            experiment: "exp",
            item: "000 table",
            kind: ClaimKind::Experiment,
            quote: "q",
            links: &[],
            proxy: None,
            mainline: None,
            resolution: None,
            claim: "on holds shorter",
            seed_figure: "f",
            deterministic: false,
            caveat: None,
            noise_floor: None,
            bound: None,
            tail_of: None,
            criterion: Criterion::Direction {
                metric: "hold",
                against: "off",
                variant: "on",
                expect: Expect::Decrease,
                min_ratio: 1.0,
            },
        };
        let j = verdict::judge(&claim, &r.experiments[0]);
        r.verdicts = vec![j.clone()];
        (r, j)
    }

    /// The change a verdict line prints is the string the comparison table prints for the same
    /// two figures (the table adds better or worse); a doubling of a latency is `+100.00%
    /// worse`, never compare-kernels' `-100.00%`.
    #[test]
    fn verdict_and_table_print_one_change_figure() {
        for (on, want) in [
            ([5.0, 5.1], "-49.75%"),
            ([20.2, 20.3], "×2.01"),
            ([20.0, 20.2], "+100.00%"),
        ] {
            let (r, j) = judged(on);
            // `10.05 ns → 5.05 ns (-49.75%, ...)`: the figure in the verdict's parentheses.
            let open = j.lab_figure.find('(').unwrap() + 1;
            let figure: String = j.lab_figure[open..]
                .chars()
                .take_while(|&c| c != ',' && c != ')')
                .collect();
            assert_eq!(figure, want, "{}", j.lab_figure);
            let md = render(&r, &[]);
            assert!(md.contains(&j.lab_figure), "{md}");
            let row = md.lines().find(|l| l.starts_with("Amean hold")).unwrap();
            let mark = if want.starts_with('-') {
                "better"
            } else {
                "worse"
            };
            assert!(row.contains(&format!("{figure} {mark}")), "{row}");
            assert!(!row.contains("-100.00%"), "{row}");
            let summary = super::super::summary_table(&r);
            assert!(summary.contains(&format!("{figure} {mark}")), "{summary}");
        }
    }

    #[test]
    fn ragged_tables_are_padded_and_pipes_escaped() {
        let md = render(&report(false), &[]);
        assert!(md.contains("### extra | table"));
        assert!(md.contains("| 1 |  |  |"), "{md}");
        assert!(md.contains("| 2 | 3 | 4 |"));
    }

    #[test]
    fn a_run_on_several_nodes_says_so_first() {
        let md = render(&report(false), &[]);
        assert!(md.contains("- NUMA nodes: 1\n"), "{md}");
        assert!(!md.contains("Run on"), "{md}");
        let mut two = report(false);
        two.opts.nodes = 2;
        let md = render(&two, &[]);
        assert!(md.contains("- NUMA nodes: 2\n"), "{md}");
        let top = md.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(top.contains("Run on 2 NUMA nodes (`--nodes 2`)"), "{top}");
    }

    #[test]
    fn oversubscription_is_flagged() {
        let md = render(&report(true), &[]);
        assert!(md.contains("oversubscribed: more threads than cores"));
    }

    #[test]
    fn summary_table_lists_each_variant_change() {
        let s = super::super::summary_table(&report(false));
        assert!(s.contains("exp"));
        assert!(s.contains("*-49.75% better*"), "{s}");
    }
}
