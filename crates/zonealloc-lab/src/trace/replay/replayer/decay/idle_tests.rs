//! An idle CPU's vmstat worker: every run due in a stretch with no event is done at its
//! expiry.

use super::tests::{feed_at, filled, movable};
use super::*;

#[test]
fn each_run_due_in_a_stretch_with_no_event_is_done() {
    // CPU 1's lists filled ([`filled`]) at 2 µs, 1000 of their pages allocated at 3 µs;
    // then no event on any CPU until CPU 0's at 4.5 s. CPU 1's worker, re-queued by each
    // run while `high` is above `high_min`, ran at 1, 2, 3 and 4 s: four decays, none of
    // which drains (its count stays below `high`). Asked once per event, it ran once.
    let mut r = filled(true);
    for pfn in 0..1000 {
        feed_at(&mut r, 1, 3000, movable(pfn));
    }
    let mut want = r.zones[0].pcp_info(CpuId(1));
    for _ in 0..4 {
        want.high = (want.high - (want.high >> 3)).max(want.high_min);
    }
    assert!(
        want.high > want.high_min && want.count < want.high,
        "{want:?}"
    );
    feed_at(&mut r, 0, 4_500_000_000, movable(30_000));
    assert_eq!(r.zones[0].pcp_info(CpuId(1)).high, want.high);
}
