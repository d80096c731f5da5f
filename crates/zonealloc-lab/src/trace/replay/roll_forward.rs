//! The kernel's layout rolled forward to the window's start: the walk over the trace between
//! the layout's read and the start marker ([`super::layout::RollWalk`], whose module docs give
//! the rules), with the kernel side's word on which refilled pages were allocated untraced
//! ([`KernelSide`]'s `untraced_now`). One walk for every zone; each zone's set-up takes its
//! own roll (`StartHints::roll`).

use super::geometry::Geometry;
use super::infer::kernel::KernelSide;
use super::layout::{after_layout_read, Roll, RollWalk};
use crate::trace::ingest::before::BEFORE_BYTES;
use crate::trace::parse::{lines, Parser};

/// Per zone of `geo`, the roll of `text` (the trace before the window's start marker, as
/// kept: its last [`BEFORE_BYTES`]) from the layout's read on; `None` where the text does not
/// show when the layout was read (no `KT_SNAPSHOT_BEFORE_BEGIN`, and not cut: a capture
/// without it). A text cut to its last bytes began after the read: all of it counts.
/// `thp_order`: the THP order that has lists; `extfrag_names_page`: the kernel family's
/// `mm_page_alloc_extfrag` (`KernelSide::set_extfrag_names_page`).
pub fn rolls(
    text: &[u8],
    geo: &Geometry,
    thp_order: Option<u8>,
    extfrag_names_page: bool,
) -> Option<Vec<Roll>> {
    let cut = text.len() >= BEFORE_BYTES;
    let text = after_layout_read(text, cut)?;
    let spans: Vec<_> = geo.zones.iter().map(|z| z.start..z.end()).collect();
    let mut walk = RollWalk::new(&spans, geo.cpus, geo.numbering, thp_order);
    let mut kernel = KernelSide::new(spans.len(), geo.cpus.max(1));
    kernel.set_extfrag_names_page(extfrag_names_page);
    let mut parser = Parser::new();
    for line in lines(text) {
        if let Some(ev) = parser.feed(line) {
            let zone = geo.zone_of(ev.kind.pfn()).unwrap_or(0);
            kernel.add_counts(&ev, zone);
            walk.feed(&ev, &kernel.untraced_now);
        }
    }
    Some(walk.finish())
}
