//! Seed 002 ("protect PCP lists with a spinlock"): the lock adds instructions to the hit path.
//! Counted under callgrind by `zonealloc lab pcp-lock`, which runs its own binary as the
//! hit-path loop: exact for a build, so the direction is asserted, not a size.

mod common;

use std::process::Command;

use common::{json, s, zonealloc};

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_spinlock_adds_instructions_to_the_hit_path() {
    if !valgrind_available() {
        // The experiment then reports "not measurable here"; there is nothing to compare.
        eprintln!("skipped: valgrind is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let o = zonealloc(&[
        "lab",
        "pcp-lock",
        "--quick",
        "--iterations",
        "1",
        "--json",
        "--out",
        s(&out),
    ]);
    let doc = json(&o);
    let exp = &doc["experiments"][0];
    let count = |variant: &str| -> f64 {
        exp["samples"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["metric"] == "instructions/op" && x["variant"] == variant)
            .unwrap_or_else(|| panic!("no instructions/op for {variant}: {}", exp["config"]))
            ["value"]
            .as_f64()
            .unwrap()
    };
    let (owner, spin) = (count("owner-only"), count("spinlock"));
    assert!(owner > 0.0, "{owner}");
    assert!(
        spin > owner,
        "spinlock {spin} instructions/op, owner-only {owner}"
    );
}
