//! The kernel's side computed once: the start-count walk ([`super::super::start_count`]) runs
//! a [`KernelSide`] over the window's first events before the replay's pass, which ran one of
//! its own over the same events again (6.1 p1 `--proc`: 55 M instructions twice). The walk
//! keeps what its side inferred per event ([`Notes`]) and hands the side over
//! ([`Handover`]); the pass goes on from it, reading the notes for the events the walk saw
//! ([`KernelSide::add_noted`]) and adding the rest as before.
//!
//! The two sides differ in one thing: the pass's names each pageblock's migratetype from the
//! head's first naming before any event ([`super::BlockTypes`], seeded in the set-up), which
//! only [`Inferred::FreeOfType`] reads and the walk does not know yet. So the walk's side keeps
//! its own pageblock types and its notes leave out `FreeOfType`; the pass keeps the seeded
//! types named by the same events as [`KernelSide::add`] names them, answers a free's type
//! from them, and puts them into the handed side at its first event.

use super::{Inferred, KernelSide, Untraced};
use crate::trace::parse::{Event, EventKind};

/// Per event of a [`KernelSide`]'s, what it inferred beyond a free's type, and the pages it
/// found taken untraced ([`KernelSide::untraced_now`]): only the events with either, by their
/// index from the side's first event.
#[derive(Clone, Debug, Default)]
pub struct Notes {
    inferred: Vec<(u64, Inferred)>,
    untraced: Vec<(u64, Untraced)>,
    /// The next entries of each to read ([`KernelSide::add_noted`]).
    at: (usize, usize),
}

impl Notes {
    /// After event `i` (from 0): what `kernel` inferred for it (`inferred`) and found untraced.
    #[inline]
    pub fn note(&mut self, i: u64, inferred: Inferred, kernel: &KernelSide) {
        if !matches!(inferred, Inferred::None | Inferred::FreeOfType { .. }) {
            self.inferred.push((i, inferred));
        }
        for &p in &kernel.untraced_now {
            self.untraced.push((i, p));
        }
    }
}

/// A kernel side after the first [`Handover::events`] events of the window, with its notes.
pub struct Handover {
    /// The side, its pageblock types its own (see the module's docs).
    pub kernel: KernelSide,
    /// Events it has taken.
    pub events: u64,
    /// What it inferred for each.
    pub notes: Notes,
}

impl Handover {
    /// The side the pass goes on from, its pageblock types replaced by `kernel`'s (the pass's
    /// own, seeded, none of its events taken yet), and the notes of the events it has taken.
    pub fn into_pass(self, kernel: &mut KernelSide) -> (u64, Notes) {
        let types = std::mem::take(&mut kernel.block_types);
        *kernel = self.kernel;
        kernel.block_types = types;
        (self.events, self.notes)
    }
}

impl KernelSide {
    /// [`KernelSide::add`] for an event the handed side has taken already
    /// ([`Handover`]): its inference from `notes`, a free's type from the pass's own pageblock
    /// types, which it names as `add` does; [`KernelSide::untraced_now`] as `add` left it.
    #[inline]
    pub fn add_noted(&mut self, ev: &Event<'_>, i: u64, notes: &mut Notes) -> Inferred {
        self.untraced_now.clear();
        while let Some(&(_, p)) = notes.untraced.get(notes.at.1).filter(|u| u.0 == i) {
            self.untraced_now.push(p);
            notes.at.1 += 1;
        }
        let noted = match notes.inferred.get(notes.at.0) {
            Some(&(at, inferred)) if at == i => {
                notes.at.0 += 1;
                Some(inferred)
            }
            _ => None,
        };
        // As `account` names them and reads a free's type.
        self.block_types.name_by(ev);
        match (noted, &ev.kind) {
            (Some(inferred), _) => inferred,
            (None, &EventKind::Free { pfn, .. } | &EventKind::FreeBatched { pfn }) => {
                self.block_types.free_of_type(pfn)
            }
            (None, _) => Inferred::None,
        }
    }
}
