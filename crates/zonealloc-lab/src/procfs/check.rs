//! The cross-file checks C2..C5 of the module docs, and how much live skew they accept.

use zonealloc::ZoneType;

use super::error::{ProcError, ProcFile};
use super::ZoneSnapshot;

/// How far the free counts of the three files may disagree (checks C2 and C3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tolerance {
    /// Only what the formats allow: capped pagetypeinfo counts and the vmstat drift.
    Exact,
    /// Also the pages that moved between the reads of the files on a live machine, at most
    /// one PCP batch per CPU (`rmqueue_bulk` or `free_pcppages_bulk` moving `batch` pages
    /// between the buddy and a PCP list) per zone. Real captures need it: a boot snapshot of
    /// 7.2 shows `pages free` 124 pages above buddyinfo's, with 4 CPUs of batch 63.
    #[default]
    Live,
    /// [`Live`](Self::Live)'s allowance, and beyond it C2 and C3 accepted with a warning that
    /// gives the measured difference ([`ProcSnapshot::warnings`](super::ProcSnapshot)): on a
    /// busy machine more than a batch per CPU moves between the reads (a user's capture:
    /// `pages free` 276587, the free lists 277008, vmstat drift 56). The set-up then follows
    /// the free lists (pagetypeinfo's, or buddyinfo's where a count is capped).
    Busy,
}

/// A disagreement between two files that the [`Tolerance`] accepted, kept so that a replay
/// can report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skew {
    /// The zone.
    pub node: u32,
    /// The zone.
    pub zone: ZoneType,
    /// The two files compared.
    pub files: (ProcFile, ProcFile),
    /// Pages by which they differ beyond what the formats allow.
    pub pages: u64,
}

/// C2..C5 for one zone; records the skew C2 and C3 accepted.
pub(super) fn check_zone(
    z: &ZoneSnapshot,
    pageblock_order: Option<u8>,
    tolerance: Tolerance,
    skews: &mut Vec<Skew>,
    warnings: &mut Vec<String>,
) -> Result<(), ProcError> {
    let allowance = match tolerance {
        Tolerance::Exact => 0,
        Tolerance::Live | Tolerance::Busy => z
            .pagesets
            .iter()
            .map(|p| u64::from(p.batch))
            .fold(0, u64::saturating_add),
    };
    let mut c = ZoneCheck {
        z,
        tolerance,
        allowance,
        skews,
        warnings,
    };
    c.buddy_against_pagetypes()?;
    c.free_against_buddy()?;
    c.pageblocks_in_span(pageblock_order)
}

/// One zone's checks, and where they record what they accepted.
struct ZoneCheck<'a> {
    z: &'a ZoneSnapshot,
    tolerance: Tolerance,
    /// Pages the files may differ by: the CPUs' batches while the machine runs.
    allowance: u64,
    skews: &'a mut Vec<Skew>,
    warnings: &'a mut Vec<String>,
}

impl ZoneCheck<'_> {
    /// Beyond the allowance: an error, or under `Busy` a warning and the check passes.
    fn beyond_allowance(&mut self, e: ProcError) -> Result<(), ProcError> {
        match self.tolerance {
            Tolerance::Busy => {
                self.warnings.push(format!(
                    "{e}; accepted (a busy machine's snapshot), the set-up follows the free lists"
                ));
                Ok(())
            }
            Tolerance::Exact | Tolerance::Live => Err(e),
        }
    }

    /// Records that `files` differ by `pages` (none: nothing).
    fn skew(&mut self, files: (ProcFile, ProcFile), pages: u64) {
        if pages > 0 {
            self.skews.push(Skew {
                node: self.z.node,
                zone: self.z.zone,
                files,
                pages,
            });
        }
    }

    /// C2: buddyinfo against pagetypeinfo, order by order, in pages.
    fn buddy_against_pagetypes(&mut self) -> Result<(), ProcError> {
        let (z, allowance) = (self.z, self.allowance);
        if let (Some(buddy), Some(area)) = (&z.buddy_free, &z.free_area) {
            let mut moved = 0u64;
            let mut first_bad = None;
            for (order, &nr_free) in buddy.iter().enumerate() {
                let sum = area
                    .free
                    .iter()
                    .map(|c| c[order].blocks)
                    .fold(0, u64::saturating_add);
                let capped = area.free.iter().any(|c| c[order].capped);
                if nr_free != sum && !(capped && nr_free > sum) {
                    moved = moved.saturating_add(nr_free.abs_diff(sum).saturating_mul(1 << order));
                    first_bad.get_or_insert((order, nr_free, sum));
                }
            }
            if let Some((order, nr_free, sum)) = first_bad {
                if moved > allowance {
                    self.beyond_allowance(ProcError::inconsistent(
                        ProcFile::Buddyinfo,
                        z.lines.buddyinfo,
                        format!(
                            "{} order {order}: {nr_free} free blocks, but pagetypeinfo's \
                             migratetypes (line {}) sum to {sum}; {moved} pages differ over all \
                             orders, {allowance} allowed",
                            z.label(),
                            z.lines.pagetype_free
                        ),
                    ))?;
                }
                self.skew((ProcFile::Pagetypeinfo, ProcFile::Buddyinfo), moved);
            }
        }
        Ok(())
    }

    /// C3: the buddy's pages against `nr_free_pages`, within the vmstat drift; and C5: free
    /// plus PCP pages fit in the managed pages.
    fn free_against_buddy(&mut self) -> Result<(), ProcError> {
        let (z, allowance) = (self.z, self.allowance);
        if let Some(buddy_pages) = z.buddy_free_pages() {
            let threshold = z
                .pagesets
                .iter()
                .filter_map(|p| p.stat_threshold)
                .max()
                .unwrap_or(0);
            let drift = u64::from(threshold).saturating_mul(z.pagesets.len() as u64);
            // A capped pagetypeinfo count without buddyinfo makes the sum a lower bound.
            let lower_bound = z.buddy_free.is_none()
                && z.free_area
                    .as_ref()
                    .is_some_and(|a| a.free.iter().flatten().any(|c| c.capped));
            let beyond = if buddy_pages > z.free_pages {
                buddy_pages - z.free_pages
            } else if lower_bound {
                0
            } else {
                z.free_pages - buddy_pages
            }
            .saturating_sub(drift);
            if beyond > allowance {
                self.beyond_allowance(ProcError::inconsistent(
                    ProcFile::Zoneinfo,
                    z.lines.pages_free,
                    format!(
                        "{}: {} free pages, but the free lists hold {buddy_pages}: {} apart, \
                         {beyond} beyond the vmstat drift {drift} ({allowance} moved pages allowed)",
                        z.label(),
                        z.free_pages,
                        buddy_pages.abs_diff(z.free_pages)
                    ),
                ))?;
            }
            let other = if z.buddy_free.is_some() {
                ProcFile::Buddyinfo
            } else {
                ProcFile::Pagetypeinfo
            };
            self.skew((ProcFile::Zoneinfo, other), beyond);
            // C5: free plus PCP pages fit in the managed pages.
            if buddy_pages.saturating_add(z.pcp_pages()) > z.managed_pages {
                return Err(ProcError::inconsistent(
                    ProcFile::Zoneinfo,
                    z.lines.pages_free,
                    format!(
                        "{}: {buddy_pages} free and {} PCP pages exceed {} managed",
                        z.label(),
                        z.pcp_pages(),
                        z.managed_pages
                    ),
                ));
            }
        }
        Ok(())
    }

    /// C4: pageblocks fit in the span.
    fn pageblocks_in_span(&self, pageblock_order: Option<u8>) -> Result<(), ProcError> {
        let z = self.z;
        if let (Some(area), Some(order)) = (&z.free_area, pageblock_order) {
            let per_block = 1u64 << order;
            let walked = z.spanned_pages.div_ceil(per_block);
            let counted = area.pageblocks.iter().copied().fold(0, u64::saturating_add);
            if counted > walked {
                return Err(ProcError::inconsistent(
                    ProcFile::Pagetypeinfo,
                    z.lines.pagetype_blocks,
                    format!(
                        "{}: {counted} pageblocks, but {} spanned pages hold at most {walked}",
                        z.label(),
                        z.spanned_pages
                    ),
                ));
            }
        }
        Ok(())
    }
}
