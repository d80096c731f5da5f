//! Kernel `kmem` page-allocator traces.
//!
//! - Reading: [`input`] (a file or standard input, plain, gzip, zstd ([`zstd`]) or xz, with
//!   bounded buffers), [`parse`] (the streaming text parser: ftrace, perf script, trace-cmd
//!   report; bounded lines, LF, CRLF or CR), with either migratetype numbering
//!   ([`migratetype`]); [`stats`] is `zonealloc trace stats`.
//! - Replaying: [`variant`] (the policy sets), [`replay`] (the options, the geometry chosen
//!   from the trace or the flags, one pass of a trace through a zone per variant, on a
//!   [`replay::Geometry`]), [`report`] (the run as the lab's report shapes, handed to
//!   [`crate::report`]). Another way to set a replay's zone up (from a `/proc` snapshot, a
//!   kernel-version preset) is a new module of [`replay`] that yields a [`replay::Geometry`]
//!   and zone configuration for [`replay::ReplayOptions`].
//! - Writing: [`record`] (a zone's own events as ftrace text), [`emit`] (the line format),
//!   [`gen`] (synthetic traces of the lab's workloads).

pub mod emit;
pub mod gen;
pub mod gfp_memo;
pub mod ingest;
pub mod input;
pub mod migratetype;
pub mod parse;
pub mod record;
pub mod replay;
pub mod report;
pub mod stats;
pub mod variant;
pub mod zstd;
