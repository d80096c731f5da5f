//! Records what built the lab, for `results.json`'s `run`: the compiler (`run.rustc`) and the
//! commit of the source tree (`run.commit`), both as the binary was built, so a run spawns no
//! `git` (two processes, some 10–30 ms of a core the replay needs) and reports the commit the
//! binary holds, not whatever the checkout holds when it runs.

use std::path::Path;
use std::process::Command;

/// `cmd`'s trimmed standard output, or `None` where it fails.
fn output(cmd: &mut Command) -> Option<String> {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = output(Command::new(rustc).arg("-V")).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=ZONEALLOC_RUSTC_VERSION={version}");
    println!("cargo:rustc-env=ZONEALLOC_GIT_COMMIT={}", commit());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}

/// `git rev-parse HEAD` of the workspace, with `-dirty` when tracked files differ from it, or
/// `unknown` (a source tarball). The build script runs again when HEAD, the branch, the index
/// or any file of the workspace's crates changes, so the mark follows every rebuild.
fn commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    // No optional locks: `git status` would otherwise refresh (write) the index it watches.
    let git = |args: &[&str]| {
        output(
            Command::new("git")
                .args(["--no-optional-locks", "-C"])
                .arg(dir)
                .args(args),
        )
    };
    let Some(head) = git(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty()) else {
        return "unknown".to_owned();
    };
    for what in ["HEAD", "index", "packed-refs", "refs/heads"] {
        if let Some(p) = git(&["rev-parse", "--git-path", what]) {
            let p = Path::new(dir).join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    // The sources of every crate of the workspace (cargo scans a folder's files).
    let crates = Path::new(dir).join("..");
    println!("cargo:rerun-if-changed={}", crates.display());
    for top in ["Cargo.toml", "Cargo.lock"] {
        println!(
            "cargo:rerun-if-changed={}",
            crates.join("..").join(top).display()
        );
    }
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{head}-dirty")
    } else {
        head
    }
}
