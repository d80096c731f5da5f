//! The page layout a `--proc` zone starts from: what each pfn of the zone's span is (free,
//! absent, in use, on a per-CPU list), each pageblock's migratetype and the free blocks, so
//! that [`ZoneLayout::apply`] can put a fresh replay zone in that state
//! ([`zonealloc::Zone::add_free_blocks`] and its siblings).
//!
//! Two sources:
//! - the kernel's own layout (`--proc DIR` with `DIR/layout`, [`ZoneLayout::from_kernel`]):
//!   the free blocks at the kernel's pfns and orders, its holes and reserved pages absent;
//!   pageblock types chosen to agree with pagetypeinfo (`assign.rs`);
//! - without it, one synthesised from the snapshot's counts ([`ZoneLayout::synthesise`]): the
//!   free blocks per order and migratetype exactly as pagetypeinfo has them, at pfns chosen
//!   so that no two free buddies of one order lie side by side (`synth.rs`).
//!
//! The kernel's layout is read up to two minutes before the window's start; with the default
//! window the events in between bring it to the start first (`roll.rs`): the pages they last
//! allocated in use, those they last freed or drained to the buddy free, those they last put
//! on a CPU's list there.
//!
//! With the kernel's layout, the window's first events name some pageblocks' types and some
//! blocks on per-CPU lists at the start (`hints.rs`), and the text after the window (kept
//! for the end state) the blocks on lists the window never names; those come first, then the
//! blocks the roll leaves on lists. Either way the pages
//! on per-CPU lists are then chosen among the pages in use (`pcp.rs`), a kernel layout's
//! pageblock types first swapped so that each list's type has room for them (`room.rs`).
//! The canvas is one byte per pfn of the span (24 MB for a 96 GiB zone), built once per zone
//! and variant and dropped after the set-up.

mod assign;
mod canvas;
mod early;
mod hints;
mod pcp;
mod reconcile;
mod retype;
mod roll;
mod rolled;
mod room;
mod synth;
#[cfg(test)]
mod tests;

pub use canvas::{Page, Targets, ZoneLayout};
pub use early::Early;
pub use hints::{HintCollector, PcpHint, StartHints};
pub use pcp::CpuLists;
pub use roll::{after_layout_read, After, Listed, Roll, RollWalk, LAYOUT_MARKER};

use zonealloc::MigrateType;

use crate::procfs::{MigrateTypeName, ProcSnapshot, ZoneSnapshot};

/// Free blocks per order and pageblocks, per migratetype index, as pagetypeinfo prints them
/// (`CMA` counted as Movable, other names dropped); without pagetypeinfo, buddyinfo's free
/// blocks as Movable.
pub fn targets(snap: &ProcSnapshot, z: &ZoneSnapshot, orders: usize) -> Targets {
    let mut free: [Vec<u64>; 5] = std::array::from_fn(|_| vec![0u64; orders]);
    let mut blocks = [0u64; 5];
    let movable = MigrateType::Movable.index();
    let Some(area) = &z.free_area else {
        for (o, &n) in z.free_blocks().unwrap_or_default().iter().enumerate() {
            if let Some(f) = free[movable].get_mut(o) {
                *f = n;
            }
        }
        return (free, blocks);
    };
    for (i, name) in snap.migratetypes.iter().enumerate() {
        let t = match name {
            MigrateTypeName::Known(mt) => mt.index(),
            MigrateTypeName::Cma => movable,
            MigrateTypeName::Other(_) => continue,
        };
        blocks[t] += area.pageblocks.get(i).copied().unwrap_or(0);
        for (o, c) in area.free.get(i).into_iter().flatten().enumerate() {
            if let Some(f) = free[t].get_mut(o) {
                *f += c.blocks;
            }
        }
    }
    // A count pagetypeinfo capped (`>100000`): buddyinfo's total for the order, the
    // difference on Movable.
    if let Some(total) = z.free_blocks() {
        for (o, &n) in total.iter().enumerate().take(orders) {
            let sum: u64 = free.iter().map(|f| f[o]).sum();
            if n > sum {
                free[movable][o] += n - sum;
            }
        }
    }
    (free, blocks)
}
