//! The lab's library: everything the `zonealloc` binary does, reusable by tests, benches and
//! other commands. The binary (`src/main.rs`, `src/cli.rs`, `src/commands/`) is argument
//! parsing and dispatch only.
//!
//! - [`experiments`]: the five seed experiments behind one interface, and their registry;
//! - [`report`]: the result model every producer fills ([`report::ExperimentResult`]),
//!   statistics, comparisons, tables, markdown, plots and the report folder;
//! - [`trace`]: kernel `kmem` traces: parse, stats, replay, record, emit, generate;
//! - [`bench`](mod@bench): `zonealloc bench`, zonealloc against other allocators on the same
//!   workloads; `benches/peers.rs` runs those workloads under criterion;
//! - [`inspect`]: the `/proc` views (`buddyinfo`, `zoneinfo`, `pagetypeinfo`) after a workload;
//! - [`machine`]: the machine a run was taken on, named in every report;
//! - [`procfs`]: the kernel's `/proc/zoneinfo`, `pagetypeinfo` and `buddyinfo` read back, for
//!   replays set up as the kernel was;
//! - [`rng`]: the one deterministic generator of experiments and workloads;
//! - [`mix`]: the mixed request workload that `inspect` and `trace gen` share;
//! - [`gate`]: threads that start together, and a clear error (never a hang) when one of
//!   them cannot be started.
//!
//! Dependencies point one way: `experiments`, `trace` and `bench` produce results and use
//! `report` (the result model, statistics, tables) and `rng`; `trace` and `bench` never use
//! `experiments` (which uses [`trace::record`] to write its runs as kernel traces).
//! Judging a run against the seeds' published figures is report work ([`report::verdict`]),
//! over the claims that [`experiments::seeds`] holds as data; a new subcommand is a file in
//! the binary's `commands/`.

pub mod bench;
pub mod experiments;
pub mod gate;
pub mod inspect;
pub mod machine;
pub mod mix;
pub mod procfs;
pub mod report;
pub mod rng;
pub mod trace;

// The repository README's snippets run as doctests here, not in the core: the core's package
// holds only its own files (its README is its crate docs), and this crate is never published.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
