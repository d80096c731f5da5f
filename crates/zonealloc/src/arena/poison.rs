//! Page poisoning (`CONFIG_PAGE_POISONING`, `mm/page_poison.c`): a freed page is filled with
//! [`PAGE_POISON`]; when it is next allocated, every byte is checked, and a byte that changed
//! means something wrote to the page after it was freed. Like the kernel's `check_poison_mem`,
//! the allocation still succeeds and the corruption is *reported*: it is recorded as a
//! [`PoisonReport`] for [`PageArena::take_poison_reports`](super::PageArena::take_poison_reports)
//! and counted.
//!
//! # Locking
//! One bit per page says "poisoned since its last free" (the kernel keeps no such bit: it
//! poisons every free page at boot; here pages never freed are not checked, so an arena need
//! not touch all its memory up front). A page's bit is written only by the page's owner: set
//! by the thread that frees it, before the zone takes the block back, and read and cleared by
//! the thread the zone next hands it to. The zone's locks order the two (a free releases the
//! PCP or zone lock the allocation then acquires), so `Relaxed` read-modify-writes suffice;
//! they are atomic only because one word holds the bits of 64 pages with different owners.
//! Reports go to a list under a spinlock, taken only when corruption is found.

use std::boxed::Box;
use std::vec::Vec;

use crate::sync::{AtomicU64, Ordering, SpinLock};
use crate::types::Pfn;

/// The byte freed pages are filled with (`PAGE_POISON` in `include/linux/poison.h`).
pub const PAGE_POISON: u8 = 0xaa;

/// A write after free found when a poisoned page was allocated again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoisonReport {
    /// The corrupted page.
    pub pfn: Pfn,
    /// Offset in the page of the first byte that is not [`PAGE_POISON`].
    pub first_offset: usize,
    /// The value found there.
    pub found: u8,
    /// How many bytes of the page differ from the poison.
    pub corrupted_bytes: usize,
}

/// The poison bitmap and the reports.
#[derive(Debug)]
pub(crate) struct Poison {
    /// Bit `i` set: page `i` of the arena was poisoned when freed and not allocated since.
    bits: Box<[AtomicU64]>,
    /// Reports not yet taken.
    reports: SpinLock<Vec<PoisonReport>>,
    /// Reports ever made.
    count: AtomicU64,
}

impl Poison {
    pub(crate) fn new(pages: usize) -> Poison {
        Poison {
            bits: (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            reports: SpinLock::new(Vec::new()),
            count: AtomicU64::new(0),
        }
    }

    /// Fills a block being freed with poison and marks its pages. `block` is the whole
    /// block, owned by the caller; `first` is the arena index of its first page.
    pub(crate) fn poison(&self, first: usize, block: &mut [u8], page_size: usize) {
        block.fill(PAGE_POISON);
        for i in first..first + block.len() / page_size {
            self.bits[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }

    /// Checks the poisoned pages of a block just allocated and clears their marks. Pages
    /// that were never poisoned are not checked.
    pub(crate) fn check(&self, first: usize, block: &[u8], base_pfn: u64, page_size: usize) {
        for (k, page) in block.chunks_exact(page_size).enumerate() {
            let i = first + k;
            let bit = 1u64 << (i % 64);
            if self.bits[i / 64].fetch_and(!bit, Ordering::Relaxed) & bit == 0 {
                continue;
            }
            if let Some(first_offset) = page.iter().position(|&b| b != PAGE_POISON) {
                let report = PoisonReport {
                    pfn: Pfn(base_pfn + i as u64),
                    first_offset,
                    found: page[first_offset],
                    corrupted_bytes: page[first_offset..]
                        .iter()
                        .filter(|&&b| b != PAGE_POISON)
                        .count(),
                };
                self.count.fetch_add(1, Ordering::Relaxed);
                self.reports.lock().push(report);
            }
        }
    }

    /// Takes the reports recorded so far.
    pub(crate) fn take_reports(&self) -> Vec<PoisonReport> {
        core::mem::take(&mut *self.reports.lock())
    }

    /// Reports ever made.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}
