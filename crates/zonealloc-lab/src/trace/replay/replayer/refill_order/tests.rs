//! Two CPUs' refills in the order of their `zone_locked` lines.

use super::super::tests::{alloc0, ev, four_cpus, locked};
use super::super::Replayer;
use crate::trace::parse::{Ctx, Event, EventKind};
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::variant::Variant;

/// Batch 4, `high` fixed at 16: a refill puts 4 pages on a list.
const FIXED: &str = "high_mode=fixed,batch=4,high_min=16,high_max=16";

/// The traced pages CPU 0's and CPU 2's refills serve.
const FIRST: u64 = 0x6000;
const SECOND: u64 = 0x7000;

/// `cpu`'s task `10 + cpu` refills 4 pages of `base` (`zone_locked ... percpu_refill=1`)
/// from `ts`.
fn refill(r: &mut Replayer, cpu: u32, base: u64, ts: u64) {
    for i in 0..4 {
        let kind = EventKind::ZoneLocked {
            pfn: base + i,
            order: 0,
            migratetype: 0,
            percpu_refill: true,
        };
        feed(r, &ev(cpu, ts + i, 10 + cpu, locked(), kind));
    }
}

/// `cpu`'s task `10 + cpu` allocates `pfn` at `ts`.
fn alloc(r: &mut Replayer, cpu: u32, pfn: u64, ts: u64) {
    let e = ev(cpu, ts, 10 + cpu, Ctx::NONE, alloc0(pfn, 0, "GFP_KERNEL"));
    feed(r, &e);
}

fn feed(r: &mut Replayer, e: &Event<'static>) {
    r.feed(e, Inferred::None).unwrap();
}

fn replayer(on: bool) -> Replayer {
    let mut r = Replayer::new(Variant::parse(FIXED).unwrap(), &four_cpus(), None).unwrap();
    r.commit_at_batched = true;
    r.set_lock_order(true, false);
    r.set_refill_order(on);
    r
}

/// Our frames for the two allocations.
fn ours(r: &Replayer) -> (u64, u64) {
    let of = |p| r.frames.live(p).map(|l| l.ours).unwrap();
    (of(FIRST), of(SECOND))
}

/// 7.2-6g-12cpu-wq p_sock (144.822677-.826714): CPU 0's refill holds the zone lock first,
/// its task is preempted before its `mm_page_alloc` line; CPU 2's refill and allocation come
/// between. On, CPU 0's refill is made at CPU 2's first line and gets the buddy's first
/// page; off, CPU 2's allocation refilled first and got it.
#[test]
fn a_refill_begun_first_takes_the_buddys_pages_first() {
    let run = |on: bool| {
        let mut r = replayer(on);
        refill(&mut r, 0, FIRST, 1_000_000);
        refill(&mut r, 2, SECOND, 1_000_080);
        alloc(&mut r, 2, SECOND, 1_000_100);
        alloc(&mut r, 0, FIRST, 5_000_000);
        r.zones[0].check().unwrap();
        (ours(&r), r.refills_ordered)
    };
    let ((first_on, second_on), made) = run(true);
    let ((first_off, second_off), none) = run(false);
    assert_eq!(made, 1, "CPU 0's refill made at CPU 2's first line");
    assert_eq!(none, 0);
    assert_eq!(first_on, second_off, "CPU 0 gets what CPU 2 got off");
    assert_eq!(second_on, first_off, "and CPU 2 what CPU 0 got");
    assert_ne!(first_on, first_off);
}

/// A refill whose last line came more than 1 ms before the other CPU's (its allocation
/// untraced, `alloc_pages_bulk`) is not made; nor one whose list ours still holds pages
/// for (ours makes no refill there).
#[test]
fn a_stale_refill_or_one_ours_would_not_make_waits_for_its_line() {
    let mut r = replayer(true);
    refill(&mut r, 0, FIRST, 1_000_000);
    refill(&mut r, 2, SECOND, 2_100_000);
    assert_eq!(r.refills_ordered, 0, "stale: 1.1 ms");

    let mut r = replayer(true);
    // CPU 0's list holds a page: its allocation then takes it, and refills nothing.
    alloc(&mut r, 0, 0x5000, 900_000);
    feed(
        &mut r,
        &ev(
            0,
            900_010,
            10,
            Ctx::NONE,
            EventKind::Free {
                pfn: 0x5000,
                order: 0,
            },
        ),
    );
    feed(
        &mut r,
        &ev(
            0,
            900_020,
            10,
            Ctx::NONE,
            EventKind::FreeBatched { pfn: 0x5000 },
        ),
    );
    refill(&mut r, 0, FIRST, 1_000_000);
    refill(&mut r, 2, SECOND, 1_000_080);
    assert_eq!(r.refills_ordered, 0, "ours holds CPU 0's pages");
    r.zones[0].check().unwrap();
}

/// A refill's own later lines, and a second CPU's lines in another order of the same
/// section, make nothing twice: each open refill is made once.
#[test]
fn each_open_refill_is_made_once() {
    let mut r = replayer(true);
    refill(&mut r, 0, FIRST, 1_000_000);
    refill(&mut r, 2, SECOND, 1_000_080);
    refill(&mut r, 3, 0x8000, 1_000_160);
    assert_eq!(
        r.refills_ordered, 2,
        "CPU 0's at CPU 2's line, CPU 2's at CPU 3's"
    );
    alloc(&mut r, 0, FIRST, 1_000_300);
    alloc(&mut r, 2, SECOND, 1_000_310);
    r.zones[0].check().unwrap();
}
