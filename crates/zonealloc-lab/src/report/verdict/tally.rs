//! The count a run's verdicts come to: experiments reproduced (the figure the lab stands on),
//! mechanisms that hold (checked, not counted as reproductions), and how many of the seeds'
//! entries (tables and stated results) were judged against how many their texts hold.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::claim::{ClaimKind, Judgement, Verdict};

/// Counts of a run's verdicts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Experiment claims judged, by verdict: reproduced, partly, not reproduced, not
    /// measurable here, undecided here.
    pub experiments: [usize; 5],
    /// Mechanism claims judged, by verdict (the same order).
    pub mechanisms: [usize; 5],
    /// Entries of the seeds' texts in the run's experiments.
    pub entries: usize,
    /// Of them, those judged by at least one claim.
    pub entries_judged: usize,
    /// Of those, the ones judged by at least one claim with a verdict other than
    /// `not measurable here` and `undecided here`.
    pub entries_decided: usize,
}

fn slot(v: Verdict) -> Option<usize> {
    match v {
        Verdict::Reproduced => Some(0),
        Verdict::Partly => Some(1),
        Verdict::NotReproduced => Some(2),
        Verdict::NotMeasurable => Some(3),
        Verdict::Undecided => Some(4),
        Verdict::NotModelled => None,
    }
}

/// Counts `verdicts`.
pub fn tally(verdicts: &[Judgement]) -> Tally {
    let mut t = Tally::default();
    let mut entries = BTreeSet::new();
    let mut judged = BTreeSet::new();
    let mut decided = BTreeSet::new();
    for j in verdicts {
        let c = &j.claim;
        entries.insert(c.item);
        let Some(k) = slot(j.verdict) else { continue };
        judged.insert(c.item);
        if !matches!(j.verdict, Verdict::NotMeasurable | Verdict::Undecided) {
            decided.insert(c.item);
        }
        match c.kind {
            ClaimKind::Experiment => t.experiments[k] += 1,
            ClaimKind::Mechanism => t.mechanisms[k] += 1,
        }
    }
    t.entries = entries.len();
    t.entries_judged = judged.len();
    t.entries_decided = decided.len();
    t
}

impl Tally {
    /// The summary lines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let e = &self.experiments;
        let m = &self.mechanisms;
        let _ = writeln!(
            out,
            "Experiments: {} of {} reproduced ({} partly, {} not reproduced, {} not measurable here, {} undecided here)",
            e[0],
            e.iter().sum::<usize>(),
            e[1],
            e[2],
            e[3],
            e[4]
        );
        let _ = writeln!(
            out,
            "Mechanisms (true of any faithful model; checked, not counted): {} of {} hold",
            m[0],
            m.iter().sum::<usize>()
        );
        let _ = writeln!(
            out,
            "Seed entries (tables and stated results): {} of {} judged ({} decided), {} not modelled",
            self.entries_judged,
            self.entries,
            self.entries_decided,
            self.entries - self.entries_judged
        );
        out
    }
}
