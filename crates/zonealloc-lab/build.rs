//! Records what built the lab, for `results.json`'s `run`: the compiler (`run.rustc`) and the
//! commit of the source tree (`run.commit`), both as the binary was built, so a run spawns no
//! `git` (two processes, some 10–30 ms of a core the replay needs) and reports the commit the
//! binary holds, not whatever the checkout holds when it runs. `zonealloc --version` prints
//! the crate's version with that commit (`ZONEALLOC_LONG_VERSION`).
//!
//! Outside a git checkout of this repository (a crate unpacked by `cargo package` or from a
//! registry) the commit is the one `cargo package` recorded in `.cargo_vcs_info.json`, else
//! `unknown`: the build never fails for want of git.

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
    let commit = commit();
    println!("cargo:rustc-env=ZONEALLOC_GIT_COMMIT={commit}");
    println!(
        "cargo:rustc-env=ZONEALLOC_LONG_VERSION={}",
        long_version(&commit)
    );
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}

/// What `--version` prints after the program's name: `0.1.0 (commit 4328bfe0c1a2)`, with
/// `-dirty` where the tree differed from the commit, or `0.1.0 (commit unknown)`.
fn long_version(commit: &str) -> String {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "unknown".to_owned());
    let (hash, dirty) = match commit.strip_suffix("-dirty") {
        Some(hash) => (hash, "-dirty"),
        None => (commit, ""),
    };
    let short = hash.get(..12).unwrap_or(hash);
    format!("{version} (commit {short}{dirty})")
}

/// `git rev-parse HEAD` of the workspace, with `-dirty` when tracked files differ from it;
/// outside a checkout, the commit `cargo package` recorded, else `unknown` (a source
/// tarball). The build script runs again when HEAD, the branch, the index or any file of the
/// workspace's crates changes, so the mark follows every rebuild.
fn commit() -> String {
    // Read when the script runs, not when it was compiled (`env!`): a compiled script reused
    // from a `target/` copied beside another checkout must look at its own checkout.
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return "unknown".to_owned();
    };
    let dir = dir.as_str();
    let vcs_info = Path::new(dir).join(".cargo_vcs_info.json");
    if vcs_info.exists() {
        // A packaged crate: unpacked under `target/package/` it would otherwise report the
        // enclosing checkout's HEAD, whatever that is by then.
        println!("cargo:rerun-if-changed={}", vcs_info.display());
        return packaged_commit(&vcs_info).unwrap_or_else(|| "unknown".to_owned());
    }
    // No optional locks: `git status` would otherwise refresh (write) the index it watches.
    let git = |args: &[&str]| {
        output(
            Command::new("git")
                .args(["--no-optional-locks", "-C"])
                .arg(dir)
                .args(args),
        )
    };
    // This crate's manifest must be tracked by the checkout git finds: a copy of the sources
    // inside some other repository (a vendored tree) is not that repository's commit.
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_none() {
        return "unknown".to_owned();
    }
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

/// `git.sha1` of a `.cargo_vcs_info.json` (`{"git": {"sha1": "...", "dirty": true}, ...}`),
/// with `-dirty` where cargo marked it so; read by hand, a build script has no JSON parser.
fn packaged_commit(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let after = text.split_once("\"sha1\"")?.1;
    let hash: String = after
        .split_once('"')?
        .1
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    if hash.len() < 7 {
        return None;
    }
    let dirty = text.contains("\"dirty\": true") || text.contains("\"dirty\":true");
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}
