//! `zonealloc trace replay`: drive zones from a kernel trace, one zone per policy variant, in
//! one pass over the file.
//!
//! Each traced `mm_page_alloc` becomes an allocation of the same order and migratetype on the
//! same CPU (CPU `c` of the trace is CPU `c % cpus` of the zone); each traced `mm_page_free`
//! frees the block that allocation returned. The zone spans the trace's frames (aligned to
//! `MAX_PAGE_ORDER` blocks) unless `--zone-start`/`--zone-pages` say otherwise, so our frame
//! numbers are the kernel's and "the same frame as the kernel" can be counted.
//!
//! The trace is not a closed world (spec §10), and the replay says how it was not:
//! - a free of a frame the trace never showed allocated (allocated before the trace began, or
//!   by the untraced `alloc_pages_bulk`) is counted and skipped;
//! - a free that covers only part of a traced block (a block split with `split_page`, freed
//!   page by page) is counted, and the block is freed once all of it has been;
//! - a frame allocated again without a traced free is freed first (counted);
//! - a free logged both as `mm_page_free` and `mm_page_free_batched` is replayed once;
//! - a traced failure (pfn 0, NULL page) is attempted too; if it succeeds here it is counted
//!   and freed at once;
//! - an order above the zone's `MAX_PAGE_ORDER` or a requested migratetype that is not one of
//!   the three GFP types is counted and skipped.
//!
//! `gfp_flags` printed symbolically set the request: `__GFP_HIGH` (also in `GFP_ATOMIC`) may
//! use part of the reserve, and a request without `__GFP_DIRECT_RECLAIM` (`GFP_ATOMIC`,
//! `GFP_NOWAIT`, `GFP_TRANSHUGE_LIGHT`) is atomic. Hex `gfp_flags` carry no portable meaning
//! (the bits moved between kernels) and replay as `GFP_KERNEL`-like requests.
//!
//! While replaying, the zones record their own `mm_page_alloc_zone_locked`,
//! `mm_page_pcpu_drain` and `mm_page_alloc_extfrag` events, which are counted per CPU against
//! the trace's and, with `--emit`, written with the replay's `mm_page_alloc`/`mm_page_free`
//! in ftrace format ([`super::emit`]).

//!
//! # Layout
//! [`setup`](Setup) builds the zones from the [`ReplayOptions`] and what the
//! [`Source`](crate::trace::ingest::Source) shows (snapshots, preset, [`Geometry`], variants);
//! [`run()`] opens the source, builds the set-up and runs the pass (`pass.rs`), one
//! [`Replayer`] per variant beside the kernel's side ([`infer::kernel`]), into a
//! [`ReplayRun`]. [`infer`] holds each inference, one module each;
//! [`tally`], [`counts`](ReplayCounts), `frames`, `gfp`, [`geometry`](Geometry),
//! `sampling` and [`preset`] are the pieces below them; [`numa`] what a machine of several
//! nodes adds (node counters, the remote pagesets' expiry).

mod carry_start;
mod counts;
mod end_state;
mod frames;
mod geometry;
mod gfp;
pub mod infer;
mod kswapd_nap;
pub mod layout;
pub mod numa;
mod options;
mod pass;
pub mod preset;
pub mod proc_setup;
mod replayer;
mod roll_forward;
mod run;
mod sampling;
mod setup;
mod snapshot_reads;
mod snapshots;
pub mod tally;
mod to_reads;
pub mod vmstat;
pub mod whole_start;

pub use counts::{FragSample, ReplayCounts};
pub use end_state::{end_state, EndState, LayoutEnd};
pub use geometry::{
    pick_cpus, span_from_trace, Geometry, Online, ZoneSpan, DEFAULT_ZONE_PAGES, MAX_CPUS,
};
pub use gfp::request;
pub use infer::{first_events, kernel, pcp_state, start_count};
pub use options::{ReplayOptions, DEFAULT_SAMPLES};
pub use replayer::Replayer;
pub use run::{check_zones, run, run_unchecked, ReplayRun, Reused, REUSE_ROWS};
pub use sampling::FRAG_ORDERS;
pub use setup::{emit_path, Setup};
pub use snapshot_reads::ReadAt;
pub use snapshots::Snapshots;
pub use to_reads::EndReads;
