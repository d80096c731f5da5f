//! Earlier runs side by side (`zonealloc lab compare RUN...`): each run's `results.json` is
//! read back and printed as compare-kernels prints kernels, one column per run: per
//! experiment, metric and variant the run's summary, and in the later columns the change
//! against the first run; then each seed claim's verdict per run, and whether they agree.
//!
//! Runs are read as plain JSON, so runs written before a field existed still compare.
//!
//! Any file may be handed over, so reading is bounded: a file over [`MAX_RESULTS_BYTES`] is
//! refused, text is never sliced at a byte offset (a commit may hold any character), the rows
//! of every run are matched through one hash index (linear in the input: 40,000 cells used to
//! take 21 s in pairwise searches), and every name is escaped when printed
//! ([`table::plain`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::change::{self, Better};
use super::compare::fmt_value;
use super::table;

/// One run read back.
#[derive(Clone, Debug)]
pub struct Run {
    /// The column label: the folder's name.
    pub label: String,
    /// Its `results.json`.
    pub json: Value,
}

/// The `results.json` of `path`: the file itself, `path/results.json`, or (a runs folder)
/// `path/latest/results.json`.
pub fn results_path(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_owned());
    }
    [
        path.join("results.json"),
        path.join("latest").join("results.json"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The largest `results.json` read back (64 MiB): a lab run writes about 130 KB, and a file
/// beyond this is not one the lab wrote (its parsed form would take several times as much).
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;

/// The text of a `results.json` parsed: JSON whose top level is an object. `lab compare`'s
/// reader (and its fuzz target's entry point); the error says what is wrong, the caller adds
/// the file.
pub fn parse_results(text: &str) -> Result<Value, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("not a results.json: {e}"))?;
    if !json.is_object() {
        return Err("not a results.json: its top level is not a JSON object".into());
    }
    Ok(json)
}

/// The text of `file`, refused beyond [`MAX_RESULTS_BYTES`] (read no further than that).
fn read_bounded(file: &Path) -> Result<String, String> {
    let name = file.display();
    let f = std::fs::File::open(file).map_err(|e| format!("{name}: {e}"))?;
    let too_big = || {
        format!(
            "{name}: over {} MiB, not a results.json the lab wrote",
            MAX_RESULTS_BYTES >> 20
        )
    };
    // The size first (nothing read), then a bounded read: a file may grow meanwhile.
    if f.metadata().is_ok_and(|m| m.len() > MAX_RESULTS_BYTES) {
        return Err(too_big());
    }
    let mut text = String::new();
    f.take(MAX_RESULTS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{name}: {e}"))?;
    if text.len() as u64 > MAX_RESULTS_BYTES {
        return Err(too_big());
    }
    Ok(text)
}

/// Reads every run; an error names the run that could not be read.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Run>, String> {
    paths
        .iter()
        .map(|p| {
            let file =
                results_path(p).ok_or_else(|| format!("{}: no results.json there", p.display()))?;
            let text = read_bounded(&file)?;
            let json = parse_results(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let dir = file.parent().unwrap_or(Path::new("."));
            let label = std::fs::canonicalize(dir)
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| p.display().to_string());
            Ok(Run { label, json })
        })
        .collect()
}

/// A row of the comparison: experiment, metric (unit), variant.
type RowKey = (String, String, String);

/// A row's summary and, where the run names the metric's kind, which way is better.
type RowValue = (Option<f64>, Option<Better>);

/// Which way is better for a metric as `results.json` writes its kind (`"Rate"`, `"Latency"`,
/// `{"Count": {"higher_is_better": true}}`); `None` for a kind it does not name.
fn better_of(kind: &Value) -> Option<Better> {
    match kind {
        Value::String(k) if k == "Rate" => Some(Better::Higher),
        Value::String(k) if k == "Latency" => Some(Better::Lower),
        _ => match kind["Count"]["higher_is_better"].as_bool()? {
            true => Some(Better::Higher),
            false => Some(Better::Lower),
        },
    }
}

/// `(experiment, metric (unit), variant)` → summary and direction, in the run's order.
fn summaries(run: &Value) -> Vec<(RowKey, RowValue)> {
    let mut out = Vec::new();
    let empty = Vec::new();
    for e in run["experiments"].as_array().unwrap_or(&empty) {
        let name = e["name"].as_str().unwrap_or("?").to_owned();
        for m in e["comparisons"].as_array().unwrap_or(&empty) {
            let metric = format!(
                "{} ({})",
                m["metric"]["name"].as_str().unwrap_or("?"),
                m["metric"]["unit"].as_str().unwrap_or("")
            );
            let better = better_of(&m["metric"]["kind"]);
            for c in m["cells"].as_array().unwrap_or(&empty) {
                let variant = c["variant"].as_str().unwrap_or("?").to_owned();
                out.push((
                    (name.clone(), metric.clone(), variant),
                    (c["summary"].as_f64(), better),
                ));
            }
        }
    }
    out
}

/// `(seed, claim)` → verdict label. Claims that share their words (a timing and its proxy)
/// are told apart by the metric they are judged on, and by the seed's entry where a run names
/// it.
fn verdicts(run: &Value) -> Vec<((String, String), String)> {
    let empty = Vec::new();
    run["verdicts"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|j| {
            let mut claim = j["claim"].as_str().unwrap_or("?").to_owned();
            if let Some(item) = j["item"].as_str() {
                claim = format!("{item}: {claim}");
            }
            if let Some(m) = j["criterion"]["metric"].as_str() {
                claim = format!("{claim} [{m}]");
            }
            (
                (j["seed"].as_str().unwrap_or("?").to_owned(), claim),
                j["verdict"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// The settings that decide which claims a run judges and on how much: the options every
/// experiment received and the experiments run.
fn settings(run: &Value) -> Vec<(&'static str, String)> {
    let o = &run["opts"];
    let names: Vec<&str> = run["experiments"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["name"].as_str()).collect())
        .unwrap_or_default();
    [
        "quick",
        "seed",
        "threads",
        "iterations",
        "zone_pages",
        "nodes",
        "variants",
    ]
    .into_iter()
    // Runs from before `--nodes` ran on one node.
    .map(|k| match &o[k] {
        Value::Null if k == "nodes" => (k, "1".to_owned()),
        v => (k, v.to_string()),
    })
    .chain(std::iter::once(("experiments", names.join(","))))
    .collect()
}

/// A line per setting that differs between the runs, e.g.
/// `quick: a=false b=true`; empty when they were made alike.
fn settings_differ(runs: &[Run]) -> Vec<String> {
    let all: Vec<Vec<(&str, String)>> = runs.iter().map(|r| settings(&r.json)).collect();
    let mut out = Vec::new();
    for (i, (key, first)) in all[0].iter().enumerate() {
        if all.iter().any(|s| &s[i].1 != first) {
            let each: Vec<String> = runs
                .iter()
                .zip(&all)
                .map(|(r, s)| format!("{}={}", r.label, s[i].1))
                .collect();
            out.push(format!("{key}: {}", each.join(" ")));
        }
    }
    out
}

/// The distinct keys of `lists` in first-seen order (the first list's order first), and per
/// list the value of each key's first occurrence there, by key position. One hash lookup per
/// entry: linear in the size of the lists.
fn align<K: Hash + Eq, V: Clone>(lists: &[Vec<(K, V)>]) -> (Vec<&K>, Vec<Vec<Option<V>>>) {
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut keys: Vec<&K> = Vec::new();
    for (k, _) in lists.iter().flatten() {
        index.entry(k).or_insert_with(|| {
            keys.push(k);
            keys.len() - 1
        });
    }
    let columns = lists
        .iter()
        .map(|list| {
            let mut column: Vec<Option<V>> = vec![None; keys.len()];
            for (k, v) in list {
                column[index[k]].get_or_insert_with(|| v.clone());
            }
            column
        })
        .collect();
    (keys, columns)
}

/// The first 9 characters of a commit (characters, not bytes: the file may hold any text).
fn short_commit(commit: &str) -> String {
    commit.chars().take(9).collect()
}

/// The comparison as text: the metric table, then the verdict table.
pub fn compare_table(runs: &[Run]) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        return "no runs\n".into();
    }
    let mut head = vec![
        "experiment".to_owned(),
        "metric".to_owned(),
        "variant".to_owned(),
    ];
    for r in runs {
        let commit = r.json["run"]["commit"].as_str().unwrap_or("unknown");
        head.push(format!("{} ({})", r.label, short_commit(commit)));
    }
    // Rows: the union of every run's keys, the first run's order first.
    let all: Vec<Vec<(RowKey, RowValue)>> = runs.iter().map(|r| summaries(&r.json)).collect();
    let (keys, columns) = align(&all);
    let mut rows = vec![head];
    for (at, k) in keys.iter().enumerate() {
        let get = |i: usize| columns[i][at].unwrap_or((None, None));
        let (base, better) = get(0);
        let mut row = vec![k.0.clone(), k.1.clone(), k.2.clone(), fmt_value(base)];
        for i in 1..runs.len() {
            let (v, b) = get(i);
            // The change notation, better or worse where the run names the metric's kind.
            let cell = change::cell(base, v, better.or(b));
            row.push(format!("{} {cell}", fmt_value(v)));
        }
        rows.push(row);
    }
    out.push_str(&table::plain(&rows, 3, true));
    out.push_str("later runs: value (change against the first run)\n");

    let vs: Vec<Vec<((String, String), String)>> = runs.iter().map(|r| verdicts(&r.json)).collect();
    let (claims, columns) = align(&vs);
    if !claims.is_empty() {
        let mut head = vec!["seed".to_owned(), "claim".to_owned()];
        head.extend(runs.iter().map(|r| r.label.clone()));
        let mut rows = vec![head];
        let mut disagree = 0;
        for (at, k) in claims.iter().enumerate() {
            let mut row = vec![k.0.clone(), k.1.clone()];
            let cells: Vec<String> = columns
                .iter()
                .map(|c| c[at].clone().unwrap_or_else(|| "-".to_owned()))
                .collect();
            // A claim a run did not judge (its experiment not run) is no disagreement.
            let judged: Vec<&String> = cells.iter().filter(|c| *c != "-").collect();
            if judged.iter().any(|c| *c != judged[0]) {
                disagree += 1;
            }
            row.extend(cells);
            rows.push(row);
        }
        out.push('\n');
        let differ = settings_differ(runs);
        if !differ.is_empty() {
            out.push_str("the runs were made with different settings; verdicts of claims a run did not judge are '-' and not counted as disagreements:\n");
            for d in &differ {
                out.push_str(&format!("  {d}\n"));
            }
        }
        out.push_str(&table::plain(&rows, usize::MAX, true));
        out.push_str(&if disagree == 0 {
            format!("verdicts: the {} runs agree on every claim\n", runs.len())
        } else {
            format!(
                "verdicts: the runs disagree on {disagree} of {} claims\n",
                claims.len()
            )
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, v: f64, verdict: &str) -> Run {
        Run {
            label: label.into(),
            json: serde_json::json!({
                "run": { "commit": "0123456789abcdef" },
                "experiments": [{
                    "name": "drain",
                    "comparisons": [{
                        "metric": { "name": "drain avg", "unit": "ns" },
                        "cells": [
                            { "variant": "owner drain", "summary": 1000.0 },
                            { "variant": "remote drain", "summary": v }
                        ]
                    }]
                }],
                "verdicts": [{ "seed": "004", "claim": "faster", "verdict": verdict }]
            }),
        }
    }

    #[test]
    fn later_runs_show_their_change_against_the_first() {
        let t = compare_table(&[
            run("a", 100.0, "reproduced"),
            run("b", 3100.0, "reproduced"),
        ]);
        assert!(t.contains("a (012345678)"), "{t}");
        assert!(t.contains("1000 (0.00%)"), "{t}");
        assert!(t.contains("3100 (×31.0)"), "{t}");
        assert!(t.contains("agree on every claim"), "{t}");
        let t = compare_table(&[run("a", 100.0, "reproduced"), run("b", 100.0, "partly")]);
        assert!(t.contains("disagree on 1 of 1"), "{t}");
        assert!(!t.contains("different settings"), "{t}");
    }

    /// Where a run names the metric's kind, a later run's change says better or worse, in the
    /// notation of the lab's own tables: a latency doubled is `+100.00% worse`, halved
    /// `-50.00% better`; a rate doubled `+100.00% better`.
    #[test]
    fn later_runs_say_better_or_worse_by_the_metrics_kind() {
        let with_kind = |label: &str, v: f64, kind: Value| {
            let mut r = run(label, v, "reproduced");
            r.json["experiments"][0]["comparisons"][0]["metric"]["kind"] = kind;
            r
        };
        let lat = || serde_json::json!("Latency");
        let t = compare_table(&[with_kind("a", 100.0, lat()), with_kind("b", 200.0, lat())]);
        assert!(t.contains("200.00 (+100.00% worse)"), "{t}");
        let t = compare_table(&[with_kind("a", 100.0, lat()), with_kind("b", 50.0, lat())]);
        assert!(t.contains("50.00 (-50.00% better)"), "{t}");
        let rate = || serde_json::json!("Rate");
        let t = compare_table(&[with_kind("a", 100.0, rate()), with_kind("b", 200.0, rate())]);
        assert!(t.contains("200.00 (+100.00% better)"), "{t}");
        let count = || serde_json::json!({ "Count": { "higher_is_better": false } });
        let t = compare_table(&[
            with_kind("a", 100.0, count()),
            with_kind("b", 25.0, count()),
        ]);
        assert!(t.contains("25.00 (×0.25 better)"), "{t}");
        assert!(!t.contains("-100.00%"), "{t}");
    }

    #[test]
    fn runs_with_different_settings_are_flagged_and_skipped_claims_not_counted() {
        let mut quick = run("q", 100.0, "reproduced");
        quick.json["opts"] = serde_json::json!({ "quick": true, "seed": 1 });
        quick.json["verdicts"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({ "seed": "001", "claim": "grows", "verdict": "partly" }));
        let mut full = run("f", 100.0, "reproduced");
        full.json["opts"] = serde_json::json!({ "quick": false, "seed": 1 });
        let t = compare_table(&[quick, full]);
        assert!(t.contains("different settings"), "{t}");
        assert!(t.contains("quick: q=true f=false"), "{t}");
        // The claim only the quick run judged is no disagreement.
        assert!(t.contains("agree on every claim"), "{t}");
    }

    #[test]
    fn runs_on_different_node_counts_are_flagged() {
        let mut one = run("one", 100.0, "reproduced");
        // A run from before `--nodes` ran on one node: no difference from nodes = 1.
        one.json["opts"] = serde_json::json!({ "quick": true, "seed": 1 });
        let mut same = run("same", 100.0, "reproduced");
        same.json["opts"] = serde_json::json!({ "quick": true, "seed": 1, "nodes": 1 });
        let t = compare_table(&[one.clone(), same]);
        assert!(!t.contains("nodes:"), "{t}");
        let mut two = run("two", 100.0, "reproduced");
        two.json["opts"] = serde_json::json!({ "quick": true, "seed": 1, "nodes": 2 });
        let t = compare_table(&[one, two]);
        assert!(t.contains("nodes: one=1 two=2"), "{t}");
    }

    #[test]
    fn claims_sharing_words_are_told_apart_by_metric() {
        let mut r = run("a", 100.0, "reproduced");
        r.json["verdicts"] = serde_json::json!([
            { "seed": "001", "claim": "flat", "verdict": "reproduced", "criterion": { "metric": "pages/s" } },
            { "seed": "001", "claim": "flat", "verdict": "not measurable here", "criterion": { "metric": "instructions" } }
        ]);
        let v = verdicts(&r.json);
        assert_eq!(v.len(), 2);
        assert_ne!(v[0].0, v[1].0);
    }

    #[test]
    fn a_commit_of_multi_byte_characters_is_cut_at_a_character() {
        let mut a = run("a", 100.0, "reproduced");
        a.json["run"]["commit"] = "ééééé€€€€€".into();
        let t = compare_table(&[a.clone(), a]);
        assert!(t.contains("a (ééééé€€€€)"), "{t}");
    }

    #[test]
    fn names_from_the_file_are_printed_escaped() {
        let mut a = run("a", 100.0, "reproduced");
        a.json["experiments"][0]["name"] = "\x1b]0;pwned\x07\x1b[2Jdrain".into();
        a.json["verdicts"][0]["claim"] = "fast\rer\u{9b}".into();
        a.json["run"]["commit"] = "\x1b[31m".into();
        let t = compare_table(&[a.clone(), a]);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        assert!(t.contains("\\x1b]0;pwned\\x07\\x1b[2Jdrain"), "{t}");
        assert!(t.contains("fast\\rer\\u{9b}"), "{t}");
        assert!(t.contains("a (\\x1b[31m)"), "{t}");
    }

    /// A run of `n` cells (variants `v0..`), summaries `i * scale`.
    fn wide_run(label: &str, n: usize, scale: f64) -> Run {
        let cells: Vec<Value> = (0..n)
            .map(|i| serde_json::json!({ "variant": format!("v{i}"), "summary": i as f64 * scale }))
            .collect();
        let claims: Vec<Value> = (0..n)
            .map(|i| serde_json::json!({ "seed": "001", "claim": format!("c{i}"), "verdict": "reproduced" }))
            .collect();
        Run {
            label: label.into(),
            json: serde_json::json!({
                "run": { "commit": "abc" },
                "experiments": [{ "name": "e", "comparisons": [{
                    "metric": { "name": "m", "unit": "ns" }, "cells": cells }] }],
                "verdicts": claims,
            }),
        }
    }

    #[test]
    fn forty_thousand_cells_compare_row_by_row() {
        // Pairwise searches took 21 s on this (release build), minutes in a debug one: the
        // rows are matched through one index instead. Run b lists its cells in reverse, so
        // that each row must find its own value, and has one more cell and claim.
        const N: usize = 40_000;
        let a = wide_run("a", N, 1.0);
        let mut b = wide_run("b", N + 1, 3.0);
        // One claim both runs judged, judged differently: the one disagreement. The claim
        // only b has is not one (a did not judge it).
        b.json["verdicts"][N / 2]["verdict"] = "not reproduced".into();
        for key in ["experiments", "verdicts"] {
            let list = match key {
                "experiments" => &mut b.json[key][0]["comparisons"][0]["cells"],
                _ => &mut b.json[key],
            };
            list.as_array_mut().unwrap().reverse();
        }
        let t = compare_table(&[a, b]);
        let lines: Vec<&str> = t.lines().collect();
        // Header, rule, N + 1 rows, the note; blank, header, rule, N + 1 claims, the summary.
        assert_eq!(lines.len(), 2 * (N + 1) + 7, "{}", lines[..5].join("\n"));
        let row = |v: &str| {
            lines
                .iter()
                .find(|l| l.split_whitespace().nth(3) == Some(v))
                .copied()
                .unwrap()
        };
        let cells = |v: &str| {
            row(v)
                .split_whitespace()
                .skip(4)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(cells("v0"), "0.00 0.00 (=)");
        assert_eq!(cells("v1"), "1.00 3.00 (×3.00)");
        assert_eq!(cells("v39999"), "39999 119997 (×3.00)");
        assert_eq!(cells("v40000"), "n/a 120000 (n/a)");
        let last = lines.last().copied();
        assert_eq!(
            last,
            Some("verdicts: the runs disagree on 1 of 40001 claims")
        );
    }

    #[test]
    fn only_a_json_object_of_bounded_size_is_a_results_json() {
        assert!(parse_results("{\"run\": {}}").is_ok());
        assert!(parse_results("[1, 2]")
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(parse_results("{\"run\": ")
            .unwrap_err()
            .contains("not a results.json"));
        let dir = std::env::temp_dir().join(format!("za-runs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("results.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_RESULTS_BYTES + 1).unwrap(); // sparse: no disk used
        let e = load_all(std::slice::from_ref(&dir)).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("over 64 MiB"), "{e}");
    }
}
