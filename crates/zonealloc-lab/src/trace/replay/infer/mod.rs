//! What the trace does not show but the kernel did, inferred from what it does show, one
//! inference per module, each named for the kernel behaviour it stands for:
//!
//! - [`kernel`]: the kernel's own refills, drains and fallbacks per zone and CPU, and the
//!   causes the trace leaves out: `drain_all_pages`/`decay_pcp_high` drains (unexplained
//!   drain runs) and `alloc_pages_bulk`'s untraced allocations;
//! - [`pcp_state`]: which per-CPU lists zoneinfo's `count` pages were on at the start;
//! - [`start_count`]: each CPU's `count` at the start marker, which zoneinfo read earlier;
//! - [`free_factor`]: each CPU's `free_factor` (before 6.7) at the start marker, from the
//!   trace before it;
//! - [`free_count`]: each CPU's `free_count` and `PCPF_PREV_FREE_HIGH_ORDER` (6.7 on) at
//!   the start marker, from the trace before it;
//! - [`worker_runs`]: each CPU's last vmstat worker run before the start marker, for the
//!   workers' timers (6.7 on), from the trace before it;
//! - [`first_events`]: the window's first events, read once for the two before the replay.

#[cfg(test)]
mod crafted_tests;
pub mod first_events;
mod fold;
pub mod free_count;
pub mod free_factor;
pub mod kernel;
mod list_tops;
pub mod pcp_state;
pub mod start_count;
pub mod worker_runs;
