//! The per-frame metadata side table: zonealloc's `struct page`.
//!
//! Linux keeps 64 bytes of `struct page` per frame inside the memory it manages. zonealloc keeps
//! 12 bytes per frame in a separate table, so a zone can manage memory it cannot touch (device
//! memory, disk blocks, another process's pages):
//!
//! | field   | bytes | Linux equivalent |
//! |---------|-------|------------------|
//! | `next`  | 4     | `page->buddy_list.next` / `page->pcp_list.next` (as a frame index) |
//! | `prev`  | 4     | `.prev` |
//! | `state` | 2     | `PageBuddy` + `page_private` (order), plus allocation state, a free block's list and 6.1's cached type (`page->index`) |
//! | `block` | 1     | the pageblock bitmap entry, repeated in every frame of the pageblock |
//! | `claim` | 1     | (no Linux equivalent) the entry belongs to a live zone's table |
//!
//! `claim` lives in what was padding, so an entry is still 12 bytes. A table the caller
//! provides (`&'static [FrameMeta]`) can be handed to two zones; each zone claims every entry
//! it uses when it is built and releases them when dropped, so the second zone over an entry
//! in use is an error ([`ConfigError::TableInUse`](crate::ConfigError::TableInUse)) instead of
//! two allocators handing out the same frames.
//!
//! # The all-zero entry
//! [`FrameMeta::new`] is all zero bytes, so a static table goes to `.bss`, not into the
//! image: absent (`state` 0), unlinked (the links of a frame on no list mean nothing and the
//! next push overwrites them). Its `block` byte, 0, is `MIGRATE_UNMOVABLE`; the entries a
//! zone takes become a `MIGRATE_MOVABLE` pageblock, the type `memmap_init` gives every
//! pageblock (`init_pageblock_migratetype`): a table over caller storage in the pass that
//! makes them absent and unlinked, a heap table (zero bytes, never written) a pageblock at a
//! time as memory is added to it (`Pending`, Linux's deferred `struct page` init). The
//! `block` byte keeps the migratetype's own number: an encoding with `Movable` at 0 (so that
//! the zero entry would need no initialising) was measured at two instructions more per PCP
//! hit pair, for the permutation on the free path.
//!
//! Free lists link frames by index (`u32`, relative to the table's base frame), never by
//! pointer, so the buddy and per-CPU code need no `unsafe`.
//!
//! # Locking
//! A frame's fields are guarded by the lock of the list the frame is on (zone lock for the
//! buddy free lists and pageblock types, a PCP lock for a per-CPU list) or by its owner while
//! allocated. Code under the zone lock may *read* the state of a frame that sits on a PCP list
//! (to learn that it is not a free buddy), so every field is an atomic accessed with
//! `Relaxed` ordering: plain loads and stores on x86, ordered by the locks around them.
//! The one read-modify-write is the state transition on free ([`FrameTable::claim_allocated`]),
//! which makes two racing frees of one block detect each other.
//!
//! By concern: `state` (the 16-bit state encoding and the [`FrameMeta`] entry), `table` (the
//! [`FrameTable`] over a zone's frames: storage, indexing, links, states, pageblock types),
//! `deferred` (the pageblocks of a heap table not initialised yet, settled as memory is
//! added: Linux's deferred `struct page` init).

mod deferred;
mod state;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use state::NIL;
pub use state::{FrameMeta, FrameState};
pub(crate) use table::FrameTable;
