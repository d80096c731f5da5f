//! The kernel's layout rolled forward to the window's start: the walk over the trace between
//! the layout's read and the start marker ([`super::layout::RollWalk`], whose module docs give
//! the rules), with the kernel side's word on which refilled pages were allocated untraced
//! ([`KernelSide`]'s `untraced_now`). One walk for every zone; each zone's set-up takes its
//! own roll (`StartHints::roll`).

use super::geometry::Geometry;
use super::infer::kernel::KernelSide;
use super::infer::start_count::Walk;
use super::layout::{after_layout_read, Roll, RollWalk};
use crate::trace::ingest::before::BEFORE_BYTES;
use crate::trace::ingest::Kept;
use crate::trace::parse::{lines, Parser};

/// The roll of `text` (the trace before the window's start marker, as kept: its last
/// [`BEFORE_BYTES`]) from the layout's read on, as it is fed: `None` where the text does not
/// show when the layout was read (no `KT_SNAPSHOT_BEFORE_BEGIN`, and not cut: a capture
/// without it). A text cut to its last bytes began after the read: all of it counts.
/// `thp_order`: the THP order that has lists; `extfrag_names_page`: the kernel family's
/// `mm_page_alloc_extfrag` (`KernelSide::set_extfrag_names_page`).
pub fn start(
    text: &[u8],
    geo: &Geometry,
    thp_order: Option<u8>,
    extfrag_names_page: bool,
) -> Option<Rolls> {
    let cut = text.len() >= BEFORE_BYTES;
    let from = text.len() - after_layout_read(text, cut)?.len();
    let spans: Vec<_> = geo.zones.iter().map(|z| z.start..z.end()).collect();
    let walk = RollWalk::new(&spans, geo.cpus, geo.numbering, thp_order);
    let mut kernel = KernelSide::new(spans.len(), geo.cpus.max(1));
    kernel.set_extfrag_names_page(extfrag_names_page);
    Some(Rolls { from, walk, kernel })
}

/// A roll being fed ([`start`]): the lines of its text from byte `from` on.
pub struct Rolls {
    from: usize,
    walk: RollWalk,
    kernel: KernelSide,
}

impl Rolls {
    /// Per zone of `geo`, its roll.
    pub fn finish(self) -> Vec<Roll> {
        self.walk.finish()
    }
}

/// One parse of `text` (the trace before the window's start marker) feeds the start counts'
/// carry (`carry`, [`super::carry_start::walk`]) and the roll (`roll`, from the layout's read
/// on): each walk parsed the text on its own, 11 M instructions a walk on 6.12-4g p_thp.
/// Where either walks, every event goes to `keep` too, for the walks that need the
/// replayers first (`free_factor`, `free_count`, `worker_runs`); whether it did.
pub fn walk_before(
    text: &[u8],
    geo: &Geometry,
    (mut carry, mut roll): (Option<&mut Walk>, Option<&mut Rolls>),
    mut keep: Option<&mut Kept>,
) -> bool {
    if carry.is_none() && roll.is_none() {
        return false;
    }
    let mut parser = Parser::new();
    let mut at = 0usize;
    for line in lines(text) {
        let start = at;
        at += line.len();
        let Some(ev) = parser.feed(line) else {
            continue;
        };
        if let Some(k) = keep.as_deref_mut() {
            k.push(&ev);
        }
        if let Some(w) = carry.as_deref_mut() {
            w.feed(&ev);
        }
        if let Some(r) = roll.as_deref_mut().filter(|r| start >= r.from) {
            let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
            r.kernel.add_counts(&ev, zone);
            r.walk.feed(&ev, &r.kernel.untraced_now);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ingest::sniff::Sniff;
    use crate::trace::migratetype::Numbering;

    fn line(ts: &str, ev: &str) -> String {
        format!("            x-1     [000] .....    {ts}: {ev}\n")
    }

    /// One zone of 64 Ki pages on 4 CPUs.
    fn geo() -> Geometry {
        Geometry::from_flags(
            None,
            Some(1 << 16),
            None,
            Some(4),
            &Sniff::default(),
            Numbering::Current,
        )
        .unwrap()
    }

    /// The one parse feeds the roll only the lines after the layout's read: of three frees,
    /// the one before `KT_SNAPSHOT_BEFORE_BEGIN` sets no state.
    #[test]
    fn the_roll_beside_the_carry_reads_from_the_layouts_read_on() {
        let geo = geo();
        let free = |pfn: u32| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
        let mut t = line("1.000000", &free(0x100));
        t += &line("1.500000", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p");
        t += &line("2.000000", &free(0x200));
        t += &line("2.500000", &free(0x300));
        let text = t.as_bytes();
        let mut roll = start(text, &geo, Some(9), false).unwrap();
        walk_before(text, &geo, (None, Some(&mut roll)), None);
        let rolls = roll.finish();
        assert_eq!(rolls.iter().map(|r| r.events).sum::<u64>(), 2);
    }

    /// The events the one parse keeps for the walks after the replayers' set-up are the
    /// text's own, from its start (not the roll's lines only), as a parse of it gives them:
    /// a malformed line none, the last line without its LF one.
    #[test]
    fn the_parse_before_keeps_every_event_of_the_text_for_the_later_walks() {
        let geo = geo();
        let free = |pfn: u32| format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
        let alloc = |gfp: &str| {
            format!("mm_page_alloc: page=(____ptrval____) pfn=0x400 order=1 migratetype=1 gfp_flags={gfp}")
        };
        let mut t = line("1.000000", &free(0x100));
        t += &line("1.200000", &alloc("GFP_KERNEL"));
        t += &line("1.500000", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p");
        t += "not a trace line\n";
        t += &line("2.000000", &alloc("GFP_HIGHUSER_MOVABLE|__GFP_ZERO"));
        t += line("2.500000", &free(0x300)).trim_end();
        let text = t.as_bytes();
        let mut roll = start(text, &geo, Some(9), false).unwrap();
        let mut kept = Kept::default();
        assert!(walk_before(
            text,
            &geo,
            (None, Some(&mut roll)),
            Some(&mut kept)
        ));
        let mut parsed = Vec::new();
        crate::trace::replay::infer::free_factor::each_event(text, |ev| {
            parsed.push(format!("{ev:?}"))
        });
        assert_eq!(parsed.len(), 4);
        assert_eq!(
            kept.events()
                .map(|ev| format!("{ev:?}"))
                .collect::<Vec<_>>(),
            parsed
        );
        // Nothing walks: nothing is parsed or kept.
        let mut none = Kept::default();
        assert!(!walk_before(text, &geo, (None, None), Some(&mut none)));
        assert_eq!(none.events().count(), 0);
    }
}
