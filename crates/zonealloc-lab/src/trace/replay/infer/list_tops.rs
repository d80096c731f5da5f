//! The pages a list's head held above an allocation's page: `__rmqueue_pcplist` takes a
//! list's first entry (`list_first_entry`), so the pages frees put on the head after the
//! allocated one and still there were taken untraced before it (`alloc_pages_bulk`). Read
//! the same way by the replay's kernel side ([`super::kernel`]) and by the start-list walk
//! ([`super::pcp_state`]), each over its own record of the list.

/// Pops `top` (the pfns frees put on one CPU's list's head, oldest first) down to `at`, the
/// page an order-0 allocation took: the pages above it that `still` says the CPU's frees
/// still hold there, each once, in the order they were freed last first. `listed`: `at` is
/// a page the list is known to hold; where it is not, and the list's refill run did not
/// bring it either (`from_run`), our record may be out of step and nothing is read. The
/// record above `at` is gone either way.
pub(super) fn taken_above(
    top: &mut Vec<u64>,
    at: u64,
    listed: bool,
    from_run: bool,
    still: impl Fn(u64) -> bool,
) -> Vec<u64> {
    let mut taken: Vec<u64> = Vec::new();
    let mut found = false;
    while let Some(e) = top.pop() {
        if e == at && listed {
            found = true;
            break;
        }
        if e == at || !still(e) || taken.contains(&e) {
            continue;
        }
        taken.push(e);
    }
    if !found && !from_run {
        taken.clear();
    }
    taken
}
