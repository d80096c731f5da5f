//! The registered experiments, in the order `zonealloc lab` runs them.
//!
//! To add one, append `&your_module::YourExperiment` to the vector (its `name()` is the CLI
//! name; names must be unique).

use super::{batch_scale, drain, free_high, pcp_lock, tail_merge, Experiment};

/// Every experiment, in run order.
pub fn all() -> Vec<&'static dyn Experiment> {
    vec![
        &free_high::FreeHighExp,
        &batch_scale::BatchScale,
        &pcp_lock::PcpLockExp,
        &drain::DrainExp,
        &tail_merge::TailMerge,
    ]
}
