//! The report folder's rule, the lab's and `trace replay`'s alike: an explicit `--out` must be
//! absent or empty unless `--force` is given, and `--force` removes only what an earlier report
//! wrote there.

use std::path::Path;

/// The rule for an explicit `--out` (the lab's and `trace replay`'s): a folder that is
/// absent or empty, or any folder with `force`; `other` names another way out for the
/// message. Creates nothing.
pub fn check_out(dir: &Path, force: bool, other: &str) -> Result<(), String> {
    let non_empty = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if non_empty && !force {
        return Err(format!(
            "--out {}: the folder is not empty; refusing to overwrite an earlier run \
             (give another folder, {other}, or add --force)",
            dir.display()
        ));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--out {}: not a folder", dir.display()));
    }
    Ok(())
}

/// Removes what an earlier report wrote into `dir` (for `--force`).
pub fn clear_report(dir: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "report.md"
            || name == "report.txt"
            || name == "results.json"
            || name.ends_with(".svg")
        {
            std::fs::remove_file(e.path())
                .map_err(|err| format!("--force: removing {}: {err}", e.path().display()))?;
        }
    }
    Ok(())
}
