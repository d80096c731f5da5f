//! `zonealloc lab` around its runs: a run never destroys an earlier one, a usage error writes
//! nothing, `results.json` says where and how the run was taken and opens with the seeds'
//! verdicts, progress shows on stderr without a terminal, and `lab compare` reads runs back.

mod common;

use std::path::Path;

use common::{assert_no_panic, ok, s, stderr, stdout, zonealloc, zonealloc_in};

/// The smallest lab run: one experiment, tiny sizes.
const QUICK: &[&str] = &["lab", "free-high", "--quick", "--iterations", "2"];

/// The quick run with `extra` flags.
fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    QUICK.iter().chain(extra).copied().collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn each_default_run_gets_its_own_folder_and_latest_points_at_the_newest() {
    let cwd = tempfile::tempdir().unwrap();
    let first = ok(&zonealloc_in(cwd.path(), QUICK));
    let second = ok(&zonealloc_in(cwd.path(), QUICK));
    let runs = cwd.path().join("lab-report");
    let names = entries(&runs);
    let folders: Vec<&String> = names.iter().filter(|n| n.as_str() != "latest").collect();
    assert_eq!(folders.len(), 2, "{names:?}");
    assert!(names.contains(&"latest".to_owned()), "{names:?}");
    for (out, folder) in [(&first, folders[0]), (&second, folders[1])] {
        assert!(out.trim_end().ends_with(folder.as_str()), "{out}");
        assert!(runs.join(folder).join("report.md").is_file());
        assert!(runs.join(folder).join("results.json").is_file());
    }
    let latest = std::fs::read_to_string(runs.join("latest").join("results.json")).unwrap();
    let newest = std::fs::read_to_string(runs.join(folders[1]).join("results.json")).unwrap();
    assert_eq!(latest, newest);
}

#[test]
fn a_usage_error_writes_nothing_and_keeps_the_earlier_run() {
    let cwd = tempfile::tempdir().unwrap();
    for args in [
        with(&["--variants", "nope"]),
        vec!["lab", "no-such-experiment"],
    ] {
        let o = zonealloc_in(cwd.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_no_panic(&o);
        assert!(
            entries(cwd.path()).is_empty(),
            "{args:?} wrote {:?}",
            entries(cwd.path())
        );
    }
    assert!(
        stderr(&zonealloc_in(cwd.path(), &with(&["--variants", "nope"])))
            .contains("no variant 'nope'")
    );

    // An earlier run in an explicit folder survives a bad one aimed at it.
    let out = cwd.path().join("good");
    ok(&zonealloc(&with(&["--out", s(&out)])));
    let before: Vec<(String, Vec<u8>)> = entries(&out)
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(out.join(&n)).unwrap()))
        .collect();
    assert!(before.iter().any(|(n, _)| n == "report.md"));
    let o = zonealloc(&with(&["--variants", "nope", "--out", s(&out)]));
    assert_eq!(o.status.code(), Some(2));
    let after: Vec<(String, Vec<u8>)> = entries(&out)
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(out.join(&n)).unwrap()))
        .collect();
    assert_eq!(before, after);
}

#[test]
fn an_explicit_non_empty_out_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    ok(&zonealloc(&with(&["--out", s(&out)])));
    let report = std::fs::read(out.join("results.json")).unwrap();
    let o = zonealloc(&with(&["--out", s(&out)]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), report);
    // A stray plot from an older run goes with --force.
    std::fs::write(out.join("stale.svg"), "<svg/>").unwrap();
    ok(&zonealloc(&with(&["--out", s(&out), "--force"])));
    assert!(!out.join("stale.svg").exists());
    assert!(out.join("report.md").is_file());
    let o = zonealloc(&["lab", "--quick", "--force"]);
    assert_eq!(o.status.code(), Some(2), "--force needs --out");
}

#[test]
fn results_name_commit_compiler_date_load_and_open_with_the_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = zonealloc(&with(&["--out", s(&out)]));
    ok(&o);
    // Without a terminal, progress comes as lines on stderr.
    let err = stderr(&o);
    assert!(err.contains("lab: free-high started"), "{err}");
    assert!(err.contains("lab: free-high done in"), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let run = &json["run"];
    for key in ["commit", "rustc", "date_utc"] {
        assert!(
            run[key].as_str().is_some_and(|v| !v.is_empty()),
            "run.{key}: {run}"
        );
    }
    assert!(
        run["rustc"].as_str().unwrap().starts_with("rustc "),
        "{run}"
    );
    assert!(run["date_utc"].as_str().unwrap().ends_with('Z'));
    assert!(run["cores"].as_u64().unwrap() >= 1);
    assert!(run.get("load_before").is_some() && run.get("load_after").is_some());
    let verdicts = json["verdicts"].as_array().unwrap();
    assert!(!verdicts.is_empty());
    let labels = [
        "reproduced",
        "partly",
        "not reproduced",
        "not measurable here",
        "undecided here",
        "not modelled",
    ];
    // Every sample carries its repetition and seed (free-high draws from one per repetition).
    for e in json["experiments"].as_array().unwrap() {
        for smp in e["samples"].as_array().unwrap() {
            assert!(smp["repetition"].is_u64() && smp["seed"].is_u64(), "{smp}");
        }
    }
    for v in verdicts {
        assert_eq!(v["seed"], "000", "only free-high ran: {v}");
        assert!(labels.contains(&v["verdict"].as_str().unwrap()), "{v}");
        assert!(v["lab_figure"].is_string() && v["seed_figure"].is_string());
        assert!(v["quote"].is_string() && v["links"].is_array(), "{v}");
        assert!(["experiment", "mechanism"].contains(&v["kind"].as_str().unwrap()));
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.starts_with("# zonealloc lab report\n\n## Seeds against this run"),
        "{md}"
    );
    assert!(md.contains(
        "| kind | claim | the seed's words | seed's figure | lab's figure | criterion | verdict |"
    ));
    assert!(
        md.contains("Link: <https://lkml.kernel.org/r/20220217002227"),
        "{md}"
    );
    assert!(md.contains("- Experiments: "), "{md}");
    assert!(stdout(&o).starts_with("Seeds against this run"));
}

#[test]
fn lab_compare_shows_each_run_against_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(&zonealloc(&with(&["--out", s(&a)])));
    ok(&zonealloc(&with(&["--out", s(&b), "--seed", "7"])));
    let o = zonealloc(&["lab", "compare", s(&a), s(&b.join("results.json"))]);
    let text = ok(&o);
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("experiment") && header.contains("a (") && header.contains("b ("),
        "{text}"
    );
    assert!(text.contains("top-5 reuse mean (allocs)"), "{text}");
    assert!(text.contains("free_high=on"), "{text}");
    // The change notation: a percentage or ratio, better or worse by the metric's kind.
    assert!(
        text.contains("% better)") || text.contains("% worse)"),
        "{text}"
    );
    assert!(text.contains("verdicts: the"), "{text}");
    let missing = zonealloc(&["lab", "compare", s(&dir.path().join("nope"))]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("no results.json"));
    assert_eq!(zonealloc(&["lab", "compare"]).status.code(), Some(2));
}
