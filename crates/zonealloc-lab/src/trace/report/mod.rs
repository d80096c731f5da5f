//! The replay's third stage: a finished [`ReplayRun`](super::replay::ReplayRun) as the lab's
//! report shapes ([`to_result`]: metrics per variant, the kernel beside us, tables, plots over
//! time, the configuration) and the report folder written ([`Context::write`]), with the
//! stdout [`summary()`].
//!
//! Below the result: `diff` (how a figure of ours compares with the kernel's), then
//! `tables`, `plots`, `metrics` and `config`, each of which `result` assembles;
//! `page` renders `report.md` and `report.txt` from them; `write` ([`Context::write`]) sits on top.

mod config;
mod diff;
mod metrics;
mod numa;
mod page;
mod plots;
mod result;
mod summary;
mod tables;
mod write;

pub use metrics::fidelity_metric;
pub use result::to_result;
pub use summary::summary;
pub use write::{Context, OutDir, Reported};
