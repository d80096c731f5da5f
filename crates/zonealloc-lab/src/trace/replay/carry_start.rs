//! The default window's start: each CPU's count at `KT_SNAPSHOT_BEFORE_END` is zoneinfo's
//! carried forward over the events between zoneinfo's print and the marker.
//!
//! zoneinfo prints each CPU's `count` when its reader's `read` runs (`zoneinfo_show_print`),
//! and the reader goes on after it: from 6.5 `cat` reads through `copy_splice_read`
//! (fs/splice.c), which takes 16 pages off its CPU's list with `alloc_pages_bulk` before the
//! print and gives them back after it, then it exits (its page tables and pages freed onto the
//! same list: `free_unref_folios`). The marker comes after all that. 6.12-4g p_thp: `cat-634`
//! prints CPU 0's Normal count 1182 at 329.2140 s (its first re-free, 329.215462, is the 16
//! pages coming back) and the marker is at 329.232601; the 16 pages and 20 exit frees put the
//! count at 1218 there. Carried forward from the print to the after-snapshot's print
//! (`cat-646`, 330.7723), the window's events give 7174, zoneinfo's after count exactly; from
//! 1182 they give 7138.
//!
//! The walk is `start_count::roll`'s, over the text before the marker. Only where the reader
//! shows its print (its re-frees of the bulk's pages, `Walk::note_print`): a reader without
//! them (6.1, whose splice allocates page by page, traced) has only its last allocation, an
//! estimate of the print (6.1-4g p_thp: Normal's CPU 0, bounded to 1040..=1050, zoneinfo
//! 1022, carried from that allocation 1043: the window's drains 0.00 -> 0.05% off). A pinned
//! CPU keeps its pin; the rest are held in the window walk's bounds.

use super::geometry::Geometry;
use super::infer::start_count::{Found, ReadPoint, StartCounts, Walk};
use super::preset::Kernel;
use super::snapshot_reads::ReadAt;
use crate::procfs::ProcSnapshot;
use crate::trace::parse::Parser;
use zonealloc::ZoneConfig;

/// The walk that carries the start counts over `text` (the trace before the start marker,
/// as kept) from zoneinfo's print, where `text` shows zoneinfo's reader (`read`); `base` as
/// the replay's zones have it. Fed each event of `text`, then [`carry`].
pub fn walk(
    text: &[u8],
    (snap, geo, read): (&ProcSnapshot, &Geometry, Option<&ReadAt>),
    (preset, base): (Kernel, &ZoneConfig),
) -> Option<Walk> {
    let at = read_point(text, read?)?;
    let mut walk = Walk::new(
        geo,
        snap,
        preset.fixed_high(),
        base.pcp.batch_scale_max,
        base.pcp.thp_order,
        base.pageblock_order,
    );
    walk.set_extfrag_names_page(preset.extfrag_names_page());
    walk.set_free_high(base.pcp.free_high);
    walk.roll_back_from(at);
    Some(walk)
}

/// Carries each not-pinned CPU's start count in `counts` forward from zoneinfo's print to the
/// end of the text `walk` ([`walk`]) was fed.
pub fn carry(walk: &Walk, geo: &Geometry, counts: &mut StartCounts) {
    let (Some(since), Some(moved)) = (walk.since_print(), walk.high_moved_since_print()) else {
        return;
    };
    for c in counts.cpus.iter_mut() {
        if !matches!(c.found, Found::Zoneinfo | Found::Bounded) {
            continue;
        }
        let Some(z) = geo
            .zones
            .iter()
            .position(|s| s.node == c.node && s.zone_type.name() == c.zone)
        else {
            continue;
        };
        let i = z * geo.cpus.max(1) as usize + c.cpu as usize;
        let d = since.get(i).copied().unwrap_or(0);
        // The window walk's reachable `high` values start from zoneinfo's (`start_count`'s
        // `reach.rs`): a refill (`nr_pcp_alloc`) or `free_high` drain between the print and
        // the marker may have moved it, and the range alone holds.
        let moved = !c.allowed.is_empty() && moved.get(i).copied().unwrap_or(true);
        if moved {
            c.allowed.clear();
        }
        let (lo, hi) = (c.bounds.0 as i64, c.bounds.1.map_or(i64::MAX, |h| h as i64));
        let carried = (c.zoneinfo as i64 + d).clamp(lo, hi.max(lo));
        // Moved to the nearest start a reachable `high` allows, where the pin names them.
        let allowed: Vec<(i64, i64)> = c
            .allowed
            .iter()
            .map(|&(a, b)| (a as i64, b as i64))
            .collect();
        let carried = super::infer::start_count::nearest_allowed(carried, &allowed, (lo, hi));
        if (d != 0 || moved) && carried as u64 != c.inferred {
            c.inferred = carried.max(0) as u64;
            c.found = Found::Carried;
        }
    }
}

/// Whether the before-snapshot `snap` read zoneinfo first (`snapshot_reads::find_before`'s
/// `first`: the shipped captures, no layout and no `nodes/`).
pub fn zoneinfo_first(snap: &ProcSnapshot) -> bool {
    snap.layout.is_none() && snap.nodes.is_empty()
}

/// Zoneinfo's read `read` in `text` (`snapshot_reads::find_before`) as the point of its
/// reader's last allocation.
fn read_point(text: &[u8], read: &ReadAt) -> Option<ReadPoint> {
    let reader = read.reader.as_ref()?;
    let start = memchr::memrchr(b'\n', &text[..read.offset.saturating_sub(1)]).map_or(0, |n| n + 1);
    let line = &text[start..read.offset];
    let ev = Parser::new().feed(line.strip_suffix(b"\n").unwrap_or(line))?;
    let p = ReadPoint::of(&ev)?;
    reader.ends_with(&format!("-{}", p.pid)).then_some(p)
}
