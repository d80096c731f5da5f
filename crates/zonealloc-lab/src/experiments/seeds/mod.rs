//! The seeds beside us: every table and stated result in the five seeds' texts, each either
//! judged by claims (the seed's words quoted, the lab metric and the criterion that judge it;
//! see [`report::verdict`](crate::report::verdict) for the rules) or listed as not modelled,
//! with the reason. `zonealloc lab` opens its report with these claims judged on the run's own
//! numbers.
//!
//! A claim is an *experiment* (the seed's measured outcome, which the model could fail) or a
//! *mechanism* (true of any faithful implementation of the change, checked so that a
//! regression shows). Bands are the seeds' own published ranges. Where the kernel later
//! changed a seed's rule (000's `free_high`), the claim is judged on the seed's rule and
//! mainline's is shown beside it. Where a timing cannot decide a claim on a shared machine, a
//! deterministic proxy (an instruction count under callgrind, a count of pages per lock hold)
//! is judged beside it and says what it stands for.
//!
//! Metric and variant names are the experiments' own (`M_*` constants and variant lists); a
//! claim whose metric or variant a run lacks is judged `not measurable here` and says which.

mod batch_scale;
mod drain;
mod free_high;
mod pcp_lock;
mod tail_merge;

use crate::report::verdict::{Claim, ClaimKind, Criterion};

/// The batch sweep of seed 001, in order (the seed's tables: 63..2047).
const BATCHES: &[&str] = &[
    "batch=63",
    "batch=127",
    "batch=255",
    "batch=511",
    "batch=1023",
    "batch=2047",
];

/// The sweep as scale caps, batch 63 << cap (2047 ≈ 63 << 5), with the seed's 4095 and one
/// step beyond it, so that "the largest cap under 100 µs" is found, not cut off by the sweep.
const CAPS: &[(&str, &str)] = &[
    ("batch=63", "cap 0"),
    ("batch=127", "cap 1"),
    ("batch=255", "cap 2"),
    ("batch=511", "cap 3"),
    ("batch=1023", "cap 4"),
    ("batch=2047", "cap 5"),
    ("batch=4095", "cap 6"),
    ("batch=8191", "cap 7"),
];

/// The variant of free-high that keeps no high-order pages on the per-CPU lists at all (the
/// seed's `5.17-revert-highpcp` kernel).
pub const REVERT_HIGHPCP: &str = "revert-highpcp";
/// free-high with the seed's own `free_high` rule (the judged one).
const SEED_RULE: &str = "free_high=original";
/// free-high with mainline's later rule (shown beside).
const MAINLINE_RULE: &str = "free_high=on";

/// The relative resolution of a zone-lock hold-time quantile: the core's histogram has 16
/// sub-buckets per power of two.
const HIST_RESOLUTION: f64 = 1.0 / 16.0;

const F000: &str = "000_0216ab652fd4cf17.txt";
const F001: &str = "001_3feb33a812804082.txt";
const F002: &str = "002_4dc90ff5f67f3df5.txt";
const F003: &str = "003_6156cd1fe50dd7c6.txt";
const F004: &str = "004_d6fe163515c3f354.txt";

/// Each seed's `Link:` lines (003, from 2009, has none: its commit id is in its file name).
pub fn links(seed: &str) -> &'static [&'static str] {
    match seed {
        "000" => &["https://lkml.kernel.org/r/20220217002227.5739-7-mgorman@techsingularity.net"],
        "001" => &["https://lkml.kernel.org/r/20231016053002.756205-5-ying.huang@intel.com"],
        "002" => &["https://lkml.kernel.org/r/20220512085043.5234-6-mgorman@techsingularity.net"],
        "003" => {
            &["https://git.kernel.org/torvalds/c/6156cd1fe50dd7c6 (no Link: line; the commit)"]
        }
        "004" => &[
            "https://lore.kernel.org/r/20211103170512.2745765-4-nsaenzju@redhat.com",
            "https://lkml.kernel.org/r/20220512085043.5234-7-mgorman@techsingularity.net",
        ],
        _ => &[],
    }
}

/// A claim of `seed` on `experiment` with every optional part empty; the claims below fill
/// in the rest.
fn base(seed: &'static str, experiment: &'static str) -> Claim {
    Claim {
        seed,
        seed_file: match seed {
            "000" => F000,
            "001" => F001,
            "002" => F002,
            "003" => F003,
            _ => F004,
        },
        source: "",
        experiment,
        item: "",
        kind: ClaimKind::Experiment,
        quote: "",
        links: links(seed),
        proxy: None,
        bound: None,
        mainline: None,
        resolution: None,
        claim: "",
        seed_figure: "",
        deterministic: false,
        caveat: None,
        noise_floor: None,
        tail_of: None,
        criterion: Criterion::NotModelled { why: "" },
    }
}

/// An entry of a seed's text the lab does not model, with the reason.
fn not_modelled(
    seed: &'static str,
    experiment: &'static str,
    item: &'static str,
    source: &'static str,
    quote: &'static str,
    why: &'static str,
) -> Claim {
    Claim {
        item,
        source,
        quote,
        claim: "not modelled",
        seed_figure: "see the quote",
        criterion: Criterion::NotModelled { why },
        ..base(seed, experiment)
    }
}

/// Every claim, by seed, and every entry of the seeds' texts not modelled.
pub fn claims() -> Vec<Claim> {
    let mut v = free_high::claims();
    v.extend(batch_scale::claims());
    v.extend(pcp_lock::claims());
    v.extend(tail_merge::claims());
    v.extend(drain::claims());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_claim_names_a_registered_experiment_and_a_seed_file() {
        let names: Vec<&str> = super::super::all().iter().map(|e| e.name()).collect();
        let files = [F000, F001, F002, F003, F004];
        for c in claims() {
            assert!(names.contains(&c.experiment), "{}", c.experiment);
            assert!(files.contains(&c.seed_file), "{}", c.seed_file);
            assert!(c.seed_file.starts_with(c.seed));
            assert!(c.item.starts_with(c.seed), "{}", c.item);
            assert!(!c.quote.is_empty(), "{} has no quote", c.item);
            assert!(!c.links.is_empty(), "{} has no link", c.seed);
        }
        for seed in ["000", "001", "002", "003", "004"] {
            assert!(
                claims().iter().any(|c| c.seed == seed),
                "no claim for {seed}"
            );
        }
    }

    #[test]
    fn every_quote_is_the_seeds_own_text() {
        // The quotes' words (not their elisions) stand in the seed files, so that a reader
        // finds them there; numbers are compared with whitespace collapsed.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
        let Ok(_) = std::fs::read_dir(&dir) else {
            return; // the seeds are not beside this checkout (a packaged crate)
        };
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for c in claims() {
            let text = squash(&std::fs::read_to_string(dir.join(c.seed_file)).expect("seed file"));
            for part in c.quote.split(" ... ").flat_map(|p| p.split(" .. ")) {
                let part = part.trim().trim_end_matches(',');
                if part.contains("pfn=...") || part.contains(['(', ':', ';']) {
                    continue; // a table row abridged with our labels
                }
                assert!(
                    text.contains(&squash(part)),
                    "{}: {part:?} is not in {}",
                    c.item,
                    c.seed_file
                );
            }
        }
    }

    #[test]
    fn mechanisms_are_not_experiments_and_not_modelled_entries_say_why() {
        let all = claims();
        assert!(all.iter().any(|c| c.kind == ClaimKind::Mechanism));
        for c in &all {
            if let Criterion::NotModelled { why } = c.criterion {
                assert!(why.len() > 20, "{}: no reason", c.item);
            }
        }
        // Every judged entry has at least one experiment or mechanism claim.
        let items: std::collections::BTreeSet<&str> = all.iter().map(|c| c.item).collect();
        assert!(items.len() >= 25, "{} entries", items.len());
    }
}
