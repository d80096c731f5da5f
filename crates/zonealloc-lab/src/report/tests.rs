use super::*;

/// [`markdown::tests::report`] with two plots, `a` and `b`.
fn with_plots() -> LabReport {
    let mut r = markdown::tests::report(false);
    let plot = |stem: &str| Plot {
        file_stem: stem.into(),
        title: format!("plot {stem}"),
        x_label: "x".into(),
        y_label: "y".into(),
        kind: PlotKind::Lines,
        series: vec![Series {
            name: "s".into(),
            points: vec![(1.0, 2.0), (2.0, 3.0)],
        }],
    };
    r.experiments[0].result.plots = vec![plot("a"), plot("b")];
    r
}

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("za-report-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

#[test]
fn every_file_is_written_once_the_check_passes() {
    let (r, d) = (with_plots(), dir("ok"));
    let warnings = write_checked(&d, &r, || Ok(())).unwrap().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let json = fs::read_to_string(d.join("results.json")).unwrap();
    assert_eq!(json, super::json::to_string(&r).unwrap());
    assert_eq!(
        fs::read_to_string(d.join("report.md")).unwrap(),
        markdown::render(&r, &[])
    );
    for stem in ["a", "b"] {
        let svg = fs::read_to_string(d.join(format!("exp-{stem}.svg"))).unwrap();
        assert!(svg.contains(&format!("plot {stem}")), "{svg}");
    }
    fs::remove_dir_all(&d).unwrap();
}

/// `results.json` opens with its schema version, then every field of the report; each
/// sample carries its repetition and unit (docs/results-schema.md).
#[test]
fn results_json_opens_with_its_schema_version() {
    let r = with_plots();
    let json = super::json::to_string(&r).unwrap();
    assert!(
        json.starts_with(&format!("{{\n  \"schema_version\": {SCHEMA_VERSION},")),
        "{json}"
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["tool", "command", "machine", "run", "verdicts", "opts"] {
        assert!(keys.contains(&key), "{key} missing: {keys:?}");
    }
    let e = &v["experiments"][0];
    assert!(e["name"].is_string() && e["metrics"].is_array(), "{e}");
    let samples = e["samples"].as_array().unwrap();
    assert!(!samples.is_empty());
    for s in samples {
        assert!(s["repetition"].is_u64(), "{s}");
        let unit = s["unit"].as_str().unwrap();
        let def = e["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == s["metric"])
            .unwrap();
        assert_eq!(unit, def["unit"].as_str().unwrap(), "{s}");
    }
}

#[test]
fn nothing_is_written_when_the_check_fails() {
    let (r, d) = (with_plots(), dir("check"));
    let got = write_checked(&d, &r, || Err("zone check failed: Z1".to_owned()));
    assert_eq!(got, Err("zone check failed: Z1".to_owned()));
    assert!(!d.exists());
}

/// A check that panics is a panic here, and no thread waits for it forever.
#[test]
fn a_check_that_panics_is_a_panic_not_a_hang() {
    let (r, d) = (with_plots(), dir("panic"));
    let got = std::panic::catch_unwind(|| {
        write_checked(&d, &r, || -> Result<(), String> { panic!("check broke") })
    });
    assert!(got.is_err());
    assert!(!d.exists());
}

/// A report written into a folder a run before wrote replaces each file by a new one, with
/// the new contents: another name for the old file (a hard link) keeps the old, and
/// what a link at a file's name pointed to is left as it was.
#[cfg(unix)]
#[test]
fn a_report_replaces_the_files_of_a_run_before_and_writes_through_no_link() {
    let (r, d) = (with_plots(), dir("again"));
    write(&d, &r).unwrap();
    let json = d.join("results.json");
    fs::write(&json, "stale").unwrap();
    let old = dir("again-old");
    fs::hard_link(&json, &old).unwrap();
    let target = dir("again-target");
    fs::write(&target, "not a plot").unwrap();
    fs::remove_file(d.join("exp-a.svg")).unwrap();
    std::os::unix::fs::symlink(&target, d.join("exp-a.svg")).unwrap();
    let warnings = write(&d, &r).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        fs::read_to_string(&json).unwrap(),
        super::json::to_string(&r).unwrap()
    );
    assert_eq!(fs::read_to_string(&old).unwrap(), "stale");
    let svg = fs::symlink_metadata(d.join("exp-a.svg")).unwrap();
    assert!(svg.is_file(), "the link was replaced by the plot");
    assert_eq!(fs::read_to_string(&target).unwrap(), "not a plot");
    fs::remove_dir_all(&d).unwrap();
    fs::remove_file(&old).unwrap();
    fs::remove_file(&target).unwrap();
}

/// A plot that cannot be written is a warning, named in `report.md` (rendered again with
/// it, after the other pieces), not an error.
#[test]
fn a_plot_that_fails_is_a_warning_named_in_the_report() {
    let (r, d) = (with_plots(), dir("plot"));
    // A directory where plot `b`'s file should go.
    fs::create_dir_all(d.join("exp-b.svg")).unwrap();
    let warnings = write(&d, &r).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("exp-b.svg"), "{warnings:?}");
    let md = fs::read_to_string(d.join("report.md")).unwrap();
    assert_eq!(
        md,
        markdown::render(&r, &[("exp-b".to_owned(), warnings[0].clone())])
    );
    assert_ne!(md, markdown::render(&r, &[]));
    assert!(d.join("exp-a.svg").is_file());
    fs::remove_dir_all(&d).unwrap();
}
