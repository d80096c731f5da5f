//! `zonealloc buddyinfo|zoneinfo|pagetypeinfo`: the kernel's `/proc` text after a workload.

use zonealloc_lab::inspect::{self, View};

use super::{emit, Exit};
use crate::cli::InspectArgs;

/// Prints `view` after the chosen workload.
pub fn inspect(view: View, args: &InspectArgs) -> Result<(), Exit> {
    let text = inspect::run(view, args.workload, args.seed).map_err(Exit::Failure)?;
    emit(&text)
}
