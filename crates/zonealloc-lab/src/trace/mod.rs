//! Kernel `kmem` page-allocator traces: a streaming text parser ([`parse`]) and the
//! `zonealloc trace stats` summary ([`stats`]).

pub mod parse;
pub mod stats;
