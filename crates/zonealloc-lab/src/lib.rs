//! The lab's library half: what the `zonealloc` binary and the lab's criterion benches share.
//!
//! - [`bench`](mod@bench): `zonealloc bench`, zonealloc against other allocators on the same workloads;
//!   `benches/peers.rs` runs those workloads under criterion;
//! - [`machine`]: the machine a run was taken on, named in every report;
//! - [`rng`]: the one deterministic generator of experiments and workloads.
//!
//! The lab's experiments, reports and trace tools live in the binary (`src/main.rs`).

pub mod bench;
pub mod machine;
pub mod procfs;
pub mod rng;
