//! Kernel `kmem` page-allocator traces: a streaming text parser ([`parse`]) and the
//! `zonealloc trace stats` summary ([`stats`]), reading gzip and zstd ([`zstd`]) input, with either
//! migratetype numbering ([`migratetype`]).

pub mod migratetype;
pub mod parse;
pub mod stats;
pub mod zstd;
