//! Kernel `kmem` page-allocator traces: a streaming text parser ([`parse`]) and the
//! `zonealloc trace stats` summary ([`stats`]), reading gzip and zstd ([`zstd`]) input, with either
//! migratetype numbering ([`migratetype`]).

pub mod emit;
pub mod gen;
pub mod migratetype;
pub mod parse;
pub mod record;
pub mod replay;
pub mod replay_report;
pub mod stats;
pub mod variant;
pub mod zstd;
