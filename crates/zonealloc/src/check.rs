//! The error every invariant check reports, shared by the layers that check something (the
//! frame lists, the buddy, the per-CPU lists, the zone): it sits below all of them so that each
//! can fail a check without importing a layer above it.

use core::fmt;

use crate::types::Pfn;

/// A violated invariant: its id (`"Z3"`, `"P1"`, `"G1"`...), the frame involved if any, and
/// what was found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CheckError {
    /// Invariant id, as numbered in the module documentation.
    pub invariant: &'static str,
    /// The frame where the violation was found, if it concerns one.
    pub pfn: Option<Pfn>,
    /// What was wrong.
    pub what: &'static str,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pfn {
            Some(p) => write!(f, "{}: {} (frame {})", self.invariant, self.what, p),
            None => write!(f, "{}: {}", self.invariant, self.what),
        }
    }
}

impl core::error::Error for CheckError {}

/// A [`CheckError`] for invariant `invariant`, at frame `pfn` if the violation concerns one.
pub(crate) fn check_fail(
    invariant: &'static str,
    pfn: Option<Pfn>,
    what: &'static str,
) -> CheckError {
    CheckError {
        invariant,
        pfn,
        what,
    }
}
