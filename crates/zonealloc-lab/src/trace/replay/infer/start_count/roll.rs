//! `--whole-file`: each CPU's count at the file's start, zoneinfo's rolled back from its read.
//!
//! `capture-kmem` reads the before-snapshot's zoneinfo last, after the pfn layout's `od`s,
//! which take a minute or more (6.12-4g p_prodcons: the trace starts at 12.589 s, zoneinfo's
//! `cat` reads at 122.4 s): the counts it prints are those of its read, not of the file's
//! start. The walk ([`super::Walk`]) keeps each CPU's `delta`, the pages the events put on the
//! CPU's lists since the walk's start, classified as the replay's kernel side classifies them;
//! at the event of the read ([`ReadPoint`]) it notes every CPU's, and the count at the start is
//! zoneinfo's less that delta (`count(start) = count(read) - delta(start..read)`).
//!
//! Where the walk knows how `high` moves (one fixed `high` before 6.7; 7.2's printed
//! `high_min`/`high_max`), the rolled-back count is then held in the bounds the walk finds, as
//! zoneinfo's is for any start count (a pin's exact value wins). 6.7 to 6.14 print only the
//! current `high`, which the walk takes as fixed: its bounds are not the kernel's there
//! (6.12-2g p_idle: CPU 1 rolls back to 3323 from zoneinfo's 3087, the bounds contradict
//! each other and gave 0, 65% more refills than the kernel), so the rolled-back count stands,
//! held only by the count's never being negative. Measured on every capture
//! (`scripts/fidelity-table`, whole-file columns, BENCHMARKS.md): rolled back and bounded
//! everywhere, 29 rows above 2%; rolled back alone everywhere, 29; as here, fewer (6.1-2g
//! p_prodcons 0.39% -> 0.00% refills, 7.2-4g p_idle 15.9/14.6% -> 4.2/0.5%).
//!
//! A free the walk has not committed yet at the read (it commits a free at the CPU's next
//! event, or at its batch's `mm_page_free_batched`) is in the delta: the kernel commits a
//! single free as it prints it, and a batch's within the same call.

use crate::trace::parse::{Event, EventKind};

/// The event at which a `/proc` file was read: its reader's last allocation
/// (`replay::snapshot_reads`), as the parse gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPoint {
    /// The reader's pid.
    pub pid: u32,
    /// The allocation's timestamp (ns).
    pub ts_ns: u64,
    /// Its pfn.
    pub pfn: u64,
}

impl ReadPoint {
    /// The read point of the allocation `ev`, if it names its task and time.
    pub fn of(ev: &Event<'_>) -> Option<ReadPoint> {
        let EventKind::Alloc { pfn, .. } = ev.kind else {
            return None;
        };
        Some(ReadPoint {
            pid: ev.who.pid()?,
            ts_ns: ev.ts_ns?,
            pfn,
        })
    }

    /// Whether `ev` is the read's event.
    pub fn is(&self, ev: &Event<'_>) -> bool {
        ReadPoint::of(ev) == Some(*self)
    }
}
