//! What describes the command line itself: `--version` (the crate's version and the commit),
//! `zonealloc completions SHELL` and `zonealloc man`. The subcommands they must cover are read
//! off the binary's own `--help`, not listed here, so a new subcommand is covered unasked.

mod common;

use std::process::Command;

use common::{assert_no_panic, ok, stderr, zonealloc};

/// Every subcommand as the path of names that reaches it (`["trace", "replay"]`), read from
/// the `Commands:` section of each `--help`, depth first; clap's own `help` left out.
fn subcommand_paths() -> Vec<Vec<String>> {
    fn walk(prefix: &[String], found: &mut Vec<Vec<String>>) {
        let mut args: Vec<&str> = prefix.iter().map(String::as_str).collect();
        args.push("--help");
        let help = ok(&zonealloc(&args));
        let names: Vec<String> = help
            .lines()
            .skip_while(|l| l.trim_end() != "Commands:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n != "help")
            .map(str::to_owned)
            .collect();
        for name in names {
            let mut path = prefix.to_vec();
            path.push(name);
            found.push(path.clone());
            walk(&path, found);
        }
    }
    let mut found = Vec::new();
    walk(&[], &mut found);
    found
}

#[test]
fn the_help_lists_the_subcommands_the_tests_below_need() {
    let paths = subcommand_paths();
    for want in [
        &["lab"][..],
        &["lab", "compare"],
        &["trace", "replay"],
        &["bench"],
        &["completions"],
        &["man"],
    ] {
        assert!(paths.iter().any(|p| p == want), "{want:?} not in {paths:?}");
    }
}

#[test]
fn version_names_the_crate_version_and_the_commit() {
    for flag in ["--version", "-V"] {
        let out = ok(&zonealloc(&[flag]));
        let line = out.trim_end();
        let prefix = concat!("zonealloc ", env!("CARGO_PKG_VERSION"), " (commit ");
        let commit = line
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{flag}: {line:?}"));
        let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
        assert!(
            hash == "unknown" || (hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit())),
            "{flag}: {line:?}"
        );
        // The binary names the commit its build script read, which is the one this test was
        // built at too (the build script's `rustc-env` reaches every target of the crate).
        // Comparing with `git rev-parse HEAD` now would fail whenever HEAD moves while the
        // tests run.
        let built = env!("ZONEALLOC_GIT_COMMIT");
        let (built_hash, built_dirty) = match built.strip_suffix("-dirty") {
            Some(h) => (h, true),
            None => (built, false),
        };
        assert_eq!(
            (hash, commit.ends_with("-dirty")),
            (&built_hash[..built_hash.len().min(12)], built_dirty),
            "{flag}: {line:?}"
        );
        // In a checkout that commit is one of the repository's, and HEAD or an ancestor of it.
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(env!("CARGO_MANIFEST_DIR"))
                .args(args)
                .status()
                .ok()
        };
        if hash != "unknown" && git(&["rev-parse", "--git-dir"]).is_some_and(|s| s.success()) {
            let ancestor = git(&["merge-base", "--is-ancestor", hash, "HEAD"]);
            assert!(
                ancestor.is_some_and(|s| s.success()),
                "{flag}: {hash} is not HEAD or an ancestor of it"
            );
        }
    }
}

#[test]
fn completions_name_every_subcommand_in_every_shell() {
    let paths = subcommand_paths();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ok(&zonealloc(&["completions", shell]));
        for path in &paths {
            let name = path.last().expect("a path names a subcommand");
            assert!(
                script.contains(name.as_str()),
                "{shell}: no {path:?} in its completions"
            );
        }
        // Flags of a nested subcommand too (trace replay's).
        assert!(script.contains("proc-after"), "{shell}: no --proc-after");
    }
    // bash parses what it would source, where bash is there.
    let bash = ok(&zonealloc(&["completions", "bash"]));
    if let Ok(o) = Command::new("bash").args(["-n", "-c", &bash]).output() {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let o = zonealloc(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tcsh"), "{}", stderr(&o));
    assert_no_panic(&o);
}

#[test]
fn the_man_page_names_every_subcommand_and_the_folder_has_a_page_for_each() {
    let paths = subcommand_paths();
    let page = ok(&zonealloc(&["man"]));
    assert!(page.contains(".TH zonealloc 1"), "{page}");
    for path in paths.iter().filter(|p| p.len() == 1) {
        assert!(
            page.contains(&format!("zonealloc\\-{}(1)", path[0])),
            "zonealloc.1 does not name {path:?}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("man1");
    let o = zonealloc(&["man", "--out", out.to_str().expect("utf-8")]);
    ok(&o);
    let mut want = vec!["zonealloc.1".to_owned()];
    want.extend(paths.iter().map(|p| format!("zonealloc-{}.1", p.join("-"))));
    let mut have: Vec<String> = std::fs::read_dir(&out)
        .expect("the folder was made")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    want.sort();
    have.sort();
    assert_eq!(have, want);
    // Each page's synopsis reads as the command is typed.
    let replay = std::fs::read_to_string(out.join("zonealloc-trace-replay.1")).expect("a page");
    assert!(replay.contains(".TH zonealloc-trace-replay 1"), "{replay}");
    assert!(replay.contains(env!("CARGO_PKG_VERSION")), "{replay}");
    assert!(replay.contains("zonealloc trace replay"), "{replay}");
    assert!(replay.contains("proc\\-after"), "{replay}");
}
