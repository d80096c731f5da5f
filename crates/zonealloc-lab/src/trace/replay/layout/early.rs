//! A zone's synthesised layout made before the trace's lists are known, while the parse
//! runs ([`Early`]). [`ZoneLayout::synthesise`] reads the lists' pages per migratetype only
//! through the pageblocks it gives each type ([`room`]): a layout made from a guess of them
//! is the one the inferred lists give wherever the two give every type the same pageblocks,
//! and the set-up takes it there instead of synthesising again ([`Early::fits`]).

use super::canvas::{Targets, ZoneLayout};
use super::synth::room;
use crate::procfs::ZoneSnapshot;

/// A synthesised layout and what it was made from.
#[derive(Clone, Debug)]
pub struct Early {
    layout: ZoneLayout,
    /// The zone's first pfn and its spanned, present and managed pages.
    zone: [u64; 4],
    targets: Targets,
    /// Pageblocks per migratetype index ([`room`]).
    room: [u64; 5],
}

/// What of zone `z` a synthesised layout reads besides the counts.
fn zone_of(z: &ZoneSnapshot) -> [u64; 4] {
    [
        z.start_pfn,
        z.spanned_pages,
        z.present_pages,
        z.managed_pages,
    ]
}

impl Early {
    /// [`ZoneLayout::synthesise`] of zone `z` with the counts `targets`, `pcp` pages of
    /// per-CPU lists per migratetype index (a guess) and the orders given.
    pub fn synthesise(
        z: &ZoneSnapshot,
        targets: Targets,
        pcp: [u64; 5],
        pb_order: u8,
        max_order: u8,
    ) -> Early {
        Early {
            layout: ZoneLayout::synthesise(z, &targets, pcp, pb_order, max_order),
            zone: zone_of(z),
            room: room(&targets, pcp, pb_order, max_order),
            targets,
        }
    }

    /// The layout [`ZoneLayout::synthesise`] gives for these arguments, if this is it: the
    /// same zone, counts and orders, and `pcp` giving each type the same pageblocks.
    pub fn fits(
        &self,
        z: &ZoneSnapshot,
        targets: &Targets,
        pcp: [u64; 5],
        pb_order: u8,
        max_order: u8,
    ) -> Option<ZoneLayout> {
        let l = &self.layout;
        let same = zone_of(z) == self.zone
            && (l.pb_order, l.max_order) == (pb_order, max_order)
            && *targets == self.targets
            && room(targets, pcp, pb_order, max_order) == self.room;
        same.then(|| l.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::super::targets;
    use super::*;
    use crate::procfs::ProcSnapshot;

    #[test]
    fn an_early_layout_fits_only_where_synthesising_again_gives_it() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-6.1-p1-before");
        let snap = ProcSnapshot::read_dir(&dir).unwrap();
        let (pb, max) = (9, 10);
        let (mut taken, mut refused) = (0, 0);
        for z in snap.zones.iter().filter(|z| z.managed_pages > 0) {
            let t = targets(&snap, z, usize::from(max) + 1);
            let guess = [0, 3000, 0, 0, 0];
            let early = Early::synthesise(z, t.clone(), guess, pb, max);
            // The lists' pages as guessed, spread over the types, then more Unmovable or
            // Reclaimable pages than their pageblocks hold.
            let pcps = [
                guess,
                [900, 2000, 100, 0, 0],
                [1 << 30, 0, 0, 0, 0],
                [0, 0, 1 << 30, 0, 0],
            ];
            for pcp in pcps {
                let again = ZoneLayout::synthesise(z, &t, pcp, pb, max);
                match early.fits(z, &t, pcp, pb, max) {
                    Some(l) => {
                        taken += 1;
                        assert_eq!(
                            (&l.pages, &l.blocks, &l.free, l.unplaced, l.absent),
                            (
                                &again.pages,
                                &again.blocks,
                                &again.free,
                                again.unplaced,
                                again.absent
                            ),
                            "{} {pcp:?}",
                            z.label()
                        );
                    }
                    None => refused += 1,
                }
            }
            assert!(early.fits(z, &t, guess, pb, max - 1).is_none());
        }
        assert!(taken > 0 && refused > 0, "{taken} {refused}");
    }
}
