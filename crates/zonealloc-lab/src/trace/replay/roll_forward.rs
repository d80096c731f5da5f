//! The kernel's layout rolled forward to the window's start: the walk over the trace between
//! the layout's read and the start marker ([`super::layout::RollWalk`], whose module docs give
//! the rules), with the kernel side's word on which refilled pages were allocated untraced
//! ([`KernelSide`]'s `untraced_now`). One walk for every zone; each zone's set-up takes its
//! own roll (`StartHints::roll`).

use super::geometry::Geometry;
use super::infer::kernel::KernelSide;
use super::infer::start_count::Walk;
use super::layout::{after_layout_read, Roll, RollWalk};
use super::snapshot_reads::ReadAt;
use crate::trace::ingest::before::BEFORE_BYTES;
use crate::trace::ingest::Kept;
use crate::trace::parse::{lines, Parser};

/// The roll of `text` (the trace before the window's start marker, as kept: its last
/// [`BEFORE_BYTES`]) from the layout's read on, as it is fed: `None` where the text does not
/// show when the layout was read (no `KT_SNAPSHOT_BEFORE_BEGIN`, and not cut: a capture
/// without it). A text cut to its last bytes began after the read: all of it counts.
/// `thp_order`: the THP order that has lists; `extfrag_names_page`: the kernel family's
/// `mm_page_alloc_extfrag` (`KernelSide::set_extfrag_names_page`); `contig_free`: 7.2's
/// contiguous-range frees are read ([`RollWalk::set_contig_free`]). `counts_read`: where in
/// `text` pagetypeinfo was read (`snapshot_reads::find_before_of`).
pub fn start(
    text: &[u8],
    geo: &Geometry,
    (thp_order, extfrag_names_page, contig_free): (Option<u8>, bool, bool),
    counts_read: Option<&ReadAt>,
) -> Option<Rolls> {
    let cut = text.len() >= BEFORE_BYTES;
    let from = text.len() - after_layout_read(text, cut)?.len();
    // `capture-kmem` reads pagetypeinfo, whose counts the start is matched to, after the
    // layout and before the window's start: where its reader is found, the roll is kept
    // there too ([`Roll::at_counts`]).
    let counts_at = counts_read.map(|r| r.offset);
    let spans: Vec<_> = geo.zones.iter().map(|z| z.start..z.end()).collect();
    let mut walk = RollWalk::new(&spans, geo.cpus, geo.numbering, thp_order);
    walk.set_contig_free(contig_free);
    let mut kernel = KernelSide::new(spans.len(), geo.cpus.max(1));
    kernel.set_extfrag_names_page(extfrag_names_page);
    Some(Rolls {
        from,
        counts_at,
        walk,
        kernel,
    })
}

/// A roll being fed ([`start`]): the lines of its text from byte `from` on.
pub struct Rolls {
    from: usize,
    /// Where pagetypeinfo was read (the end of its reader's last allocation's line), until
    /// the walk passes it.
    counts_at: Option<usize>,
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
            if r.counts_at.is_some_and(|c| start >= c) {
                r.walk.counts_read();
                r.counts_at = None;
            }
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
    use crate::trace::replay::snapshot_reads::{self, SnapFile};

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

    /// The rolls of `text` on [`geo`], fed by the one parse, pagetypeinfo's read found.
    fn rolls_of(text: &[u8]) -> Vec<Roll> {
        let geo = geo();
        let read = snapshot_reads::find_before_of(text, SnapFile::Pagetypeinfo, false);
        let mut roll = start(text, &geo, (Some(9), false, false), read.as_ref()).unwrap();
        walk_before(text, &geo, (None, Some(&mut roll)), None);
        roll.finish()
    }

    fn free(pfn: u32) -> String {
        format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
    }

    /// The one parse feeds the roll only the lines after the layout's read: of three frees,
    /// the one before `KT_SNAPSHOT_BEFORE_BEGIN` sets no state.
    #[test]
    fn the_roll_beside_the_carry_reads_from_the_layouts_read_on() {
        let mut t = line("1.000000", &free(0x100));
        t += &line("1.500000", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p");
        t += &line("2.000000", &free(0x200));
        t += &line("2.500000", &free(0x300));
        let rolls = rolls_of(t.as_bytes());
        assert_eq!(rolls.iter().map(|r| r.events).sum::<u64>(), 2);
    }

    /// The roll is kept where pagetypeinfo's `cat` read it, the events after that read
    /// apart: of three frees after the layout's marker, the first before the read.
    #[test]
    fn the_roll_is_kept_at_pagetypeinfos_read() {
        let alloc = "mm_page_alloc: page=(____ptrval____) pfn=0x400 order=0 migratetype=0 \
                     gfp_flags=GFP_KERNEL";
        let cat = |ts: &str, ev: &str| format!("           cat-9     [001] .....    {ts}: {ev}\n");
        let mut t = line("1.500000", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p");
        t += &line("2.000000", &free(0x200));
        t += &line(
            "2.100000",
            "tracing_mark_write: KT_SNAPSHOT_READ pagetypeinfo p",
        );
        t += &cat("2.200000", alloc);
        t += &cat("2.300000", &free(0x300));
        t += &line("2.400000", &free(0x500));
        let rolls = rolls_of(t.as_bytes());
        // The free at 0x200 and the cat's allocation, read: not the cat's free after it.
        let at = rolls[0].at_counts.as_deref().unwrap();
        assert_eq!((at.events, rolls[0].events), (2, 4));
        // Without the read in the text (no marker, no cat), no roll is kept apart.
        let plain = t
            .replace("pagetypeinfo", "vmstat")
            .replace("cat-9", "awk-9");
        assert!(rolls_of(plain.as_bytes())[0].at_counts.is_none());
    }

    /// The events the one parse keeps for the walks after the replayers' set-up are the
    /// text's own, from its start (not the roll's lines only), as a parse of it gives them:
    /// a malformed line none, the last line without its LF one.
    #[test]
    fn the_parse_before_keeps_every_event_of_the_text_for_the_later_walks() {
        let geo = geo();
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
        let mut roll = start(text, &geo, (Some(9), false, false), None).unwrap();
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
