//! A free's drain at its traced lines, after the refills other CPUs began under the zone
//! lock before them.

use std::collections::HashSet;

use super::super::tests::{alloc0, ev, four_cpus, locked};
use super::super::Replayer;
use crate::trace::parse::{Ctx, Event, EventKind, Task, Who};
use crate::trace::replay::infer::kernel::Inferred;
use crate::trace::variant::Variant;
use zonealloc::{CpuId, FrameState, Pfn};

/// Batch 4, `high` fixed at 16: CPU 1's frees of `FREED` drain in chunks of 4 (7.2).
const CHUNKED: &str = "high_mode=fixed,batch=4,high_min=16,high_max=16";

/// As [`CHUNKED`], the drain in one `free_pcppages_bulk` call (6.1, 6.12).
const ONE_CALL: &str = "high_mode=fixed,batch=4,high_min=16,high_max=16,drain_in_batches=off";

/// The traced pages CPU 1's task allocates and frees.
const FREED: std::ops::Range<u64> = 0x1000..0x1010;

/// The traced page CPU 0's refill serves.
const REFILLED: u64 = 0x6000;

const TASK: Ctx = Ctx::NONE;

/// CPU 1's task 11 drains a page (`mm_page_pcpu_drain`) at `ts`.
fn drain_line(ts: u64) -> Event<'static> {
    let kind = EventKind::PcpuDrain {
        pfn: 0x5000 + ts % 0x100,
        order: 0,
        migratetype: 0,
    };
    ev(1, ts, 11, locked(), kind)
}

/// CPU 0's task 12 refills a page (`mm_page_alloc_zone_locked ... percpu_refill=1`) at `ts`.
fn refill_line(ts: u64) -> Event<'static> {
    let kind = EventKind::ZoneLocked {
        pfn: REFILLED + ts % 0x100,
        order: 0,
        migratetype: 0,
        percpu_refill: true,
    };
    ev(0, ts, 12, locked(), kind)
}

/// CPU 0's task 12 allocates `REFILLED` at `ts`.
fn refilled_alloc(ts: u64) -> Event<'static> {
    ev(0, ts, 12, TASK, alloc0(REFILLED, 0, "GFP_KERNEL"))
}

/// A replay of `variant` committing at `mm_page_free_batched`, the lock order `on` (no
/// refills made ahead), in which CPU 1's task 11 allocated `FREED` (from 1.000 ms)
/// and traced its frees of them (the single-free path: their commits wait for CPU 1's next
/// event).
fn freed_on_cpu1(variant: &str, on: bool) -> Replayer {
    let mut r = Replayer::new(Variant::parse(variant).unwrap(), &four_cpus(), None).unwrap();
    r.commit_at_batched = true;
    r.set_lock_order(on, false);
    for (i, pfn) in FREED.enumerate() {
        let e = ev(
            1,
            1_000_000 + i as u64,
            11,
            TASK,
            alloc0(pfn, 0, "GFP_KERNEL"),
        );
        r.feed(&e, Inferred::None).unwrap();
    }
    for (i, pfn) in FREED.enumerate() {
        let e = ev(
            1,
            1_000_100 + i as u64,
            11,
            TASK,
            EventKind::Free { pfn, order: 0 },
        );
        r.feed(&e, Inferred::None).unwrap();
    }
    r
}

fn feed(r: &mut Replayer, e: &Event<'static>) {
    r.feed(e, Inferred::None).unwrap();
}

fn count(r: &Replayer, cpu: u32) -> i32 {
    r.zones[0].pcp_info(CpuId(cpu)).count
}

/// The frames on some CPU's list.
fn on_lists(r: &Replayer) -> HashSet<u64> {
    (0..1u64 << 16)
        .filter(|&f| matches!(r.zones[0].frame_state(Pfn(f)), Some(FrameState::Pcp(_))))
        .collect()
}

/// Our frame for CPU 0's allocation of `REFILLED`.
fn refilled(r: &Replayer) -> u64 {
    r.frames.live(REFILLED).map(|l| l.ours).unwrap()
}

/// CPU 1's task 11 allocates one more page at `ts`: its next event after its drain.
fn cpu1_moves_on(r: &mut Replayer, ts: u64) {
    feed(r, &ev(1, ts, 11, TASK, alloc0(0x2000, 0, "GFP_KERNEL")));
}

/// 7.2-8g-8cpu p_prodcons (71.246447-.246629): CPU 1's free drains a chunk of `batch`
/// pages, CPU 0's refill holds the zone lock, CPU 1's second chunk starts after it and
/// before CPU 0's `mm_page_alloc`. The first line applies one chunk; the second chunk waits
/// for CPU 0's allocation, whose refill takes none of its pages. Drained whole at the
/// commit (the rule off), the refill took a page the second chunk put back.
#[test]
fn a_chunk_waits_for_the_refill_another_cpu_began_before_it() {
    let run = |on: bool| {
        let mut r = freed_on_cpu1(CHUNKED, on);
        feed(&mut r, &drain_line(2_000_000));
        let first = count(&r, 1);
        for t in 0..4 {
            feed(&mut r, &refill_line(2_000_010 + t));
        }
        // Lines 2 to 4 of the first chunk, then the second chunk's first line.
        for t in 0..4 {
            feed(&mut r, &drain_line(2_000_020 + t));
        }
        let waiting = count(&r, 1);
        let lists = on_lists(&r);
        feed(&mut r, &refilled_alloc(2_000_030));
        let after = count(&r, 1);
        let got = refilled(&r);
        cpu1_moves_on(&mut r, 2_000_040);
        r.zones[0].check().unwrap();
        (first, waiting, after, lists, got, count(&r, 1))
    };
    let (first, waiting, after, lists, got, end) = run(true);
    assert_eq!(waiting, first, "the second chunk waits for the refill");
    assert_eq!(
        after,
        first - 4,
        "applied after the allocation: one chunk of 4"
    );
    assert!(
        !lists.contains(&got),
        "the refill took no page of CPU 1's list"
    );
    let (.., got_off, end_off) = run(false);
    assert!(
        lists.contains(&got_off),
        "drained whole: a second-chunk page"
    );
    // CPU 1's allocation took a page of its list: `end` counts the drain and that take.
    assert_eq!(end, end_off, "the same pages drained in all");
}

/// The same in one `free_pcppages_bulk` call (6.1, 6.12): the drain's first line comes
/// after CPU 0's refill began (the commit waited for the zone lock), and is applied after
/// CPU 0's allocation. Off, the drain went first and the refill took one of its pages.
#[test]
fn a_one_call_drain_waits_for_a_refill_begun_before_its_first_line() {
    let run = |on: bool| {
        let mut r = freed_on_cpu1(ONE_CALL, on);
        for t in 0..4 {
            feed(&mut r, &refill_line(2_000_010 + t));
        }
        feed(&mut r, &drain_line(2_000_020));
        let at_line = count(&r, 1);
        let lists = on_lists(&r);
        feed(&mut r, &refilled_alloc(2_000_030));
        let got = refilled(&r);
        let after = count(&r, 1);
        r.zones[0].check().unwrap();
        (at_line, lists, got, after)
    };
    let (at_line, lists, got, after) = run(true);
    let (_, _, got_off, after_off) = run(false);
    assert!(
        at_line > after,
        "nothing drained at the line: {at_line} -> {after}"
    );
    assert_eq!(after, after_off, "all of it drained after the allocation");
    assert!(
        !lists.contains(&got),
        "the refill took no page of CPU 1's list"
    );
    assert!(lists.contains(&got_off), "drained first: one of its pages");
}

/// Where the trace shows no drain lines (ours drains where the kernel did not), the drain
/// is applied at the CPU's next event, and at the end of the input: the lists end as with
/// the drain at the commit.
#[test]
fn a_drain_the_trace_does_not_show_is_applied_at_the_cpus_next_event_or_the_end() {
    for variant in [CHUNKED, ONE_CALL] {
        let next = |on: bool| {
            let mut r = freed_on_cpu1(variant, on);
            cpu1_moves_on(&mut r, 2_000_000);
            r.zones[0].check().unwrap();
            (count(&r, 1), on_lists(&r))
        };
        assert_eq!(next(true), next(false), "{variant}: at the next event");
        let end = |on: bool| {
            let mut r = freed_on_cpu1(variant, on);
            // A drain line commits the frees; the rest of the drain has no lines.
            feed(&mut r, &drain_line(2_000_000));
            r.finish().unwrap();
            r.zones[0].check().unwrap();
            (count(&r, 1), on_lists(&r))
        };
        assert_eq!(end(true), end(false), "{variant}: at the end");
    }
}

/// An interrupt's free on the draining CPU (it found the lists held) does not end the
/// drain: the chunk its lines show next is still applied at its line.
#[test]
fn an_interrupts_free_leaves_the_drain_pending() {
    let mut r = freed_on_cpu1(CHUNKED, true);
    feed(&mut r, &drain_line(2_000_000));
    let first = count(&r, 1);
    let softirq = Ctx::new(true, true, false, 3);
    let irq_free = ev(
        1,
        2_000_001,
        11,
        softirq,
        EventKind::Free {
            pfn: 0x100f,
            order: 0,
        },
    );
    feed(&mut r, &irq_free);
    assert_eq!(count(&r, 1), first, "not flushed by the interrupt's free");
    for t in 0..4 {
        feed(&mut r, &drain_line(2_000_010 + t));
    }
    assert_eq!(
        count(&r, 1),
        first - 4,
        "the second chunk at its first line"
    );
}

/// 7.2-2g p_prodcons (110.673088-.675353): CPU 0's refill holds the zone lock, CPU 1's
/// drain follows, and CPU 1 moves on (more commits) before CPU 0's `mm_page_alloc`. The
/// drain is applied at CPU 1's next event, and CPU 0's refill, with its allocation's take,
/// is made ahead of it: the allocation line then gets that block, none of the drain's.
/// Without the refill made ahead, the refill at the line takes a page the drain put back.
#[test]
fn a_refill_waited_for_is_made_ahead_when_the_draining_cpu_moves_on() {
    let run = |ahead: bool| {
        let mut r = freed_on_cpu1(ONE_CALL, true);
        r.set_lock_order(true, ahead);
        for t in 0..4 {
            feed(&mut r, &refill_line(2_000_010 + t));
        }
        feed(&mut r, &drain_line(2_000_020));
        let lists = on_lists(&r);
        cpu1_moves_on(&mut r, 2_000_030);
        feed(&mut r, &refilled_alloc(2_000_040));
        r.zones[0].check().unwrap();
        (lists, refilled(&r), r.lock.ahead, r.lock.given_back)
    };
    let (lists, got, ahead, back) = run(true);
    assert!(
        !lists.contains(&got),
        "the block taken ahead, no page of the drain"
    );
    assert_eq!((ahead, back), (1, 0));
    let (lists, got, ahead, _) = run(false);
    assert!(
        lists.contains(&got),
        "refilled after the drain: one of its pages"
    );
    assert_eq!(ahead, 0);
}

/// A block taken ahead that the refilling task's next event does not claim (an allocation
/// of another order) goes back on the CPU's list: nothing is lost.
#[test]
fn a_block_taken_ahead_and_not_claimed_goes_back() {
    let mut r = freed_on_cpu1(ONE_CALL, true);
    r.set_lock_order(true, true);
    for t in 0..4 {
        feed(&mut r, &refill_line(2_000_010 + t));
    }
    feed(&mut r, &drain_line(2_000_020));
    cpu1_moves_on(&mut r, 2_000_030);
    assert_eq!(r.lock.ahead, 1);
    let taken = r.lock.taken[0].unwrap().ours;
    assert_eq!(
        r.zones[0].frame_state(Pfn(taken)),
        Some(FrameState::Allocated(
            zonealloc::Order::ZERO,
            zonealloc::MigrateType::Unmovable
        ))
    );
    let other = EventKind::Alloc {
        pfn: 0x7000,
        order: 1,
        migratetype: 0,
        gfp_flags: "GFP_KERNEL",
    };
    feed(&mut r, &ev(0, 2_000_040, 12, TASK, other));
    assert_eq!(r.lock.given_back, 1);
    let back = r.zones[0].frame_state(Pfn(taken));
    assert!(
        matches!(back, Some(FrameState::Pcp(_))),
        "back on CPU 0's list: {back:?}"
    );
    r.zones[0].check().unwrap();
}

/// An interrupt's drain lines are its own free's drain (an interrupt that cut into a
/// task's drain found the lists held and drained nothing): they wait for a refill begun
/// before them as a task's do. 7.2-4g-6cpu-wq p_prodcons: the RCU softirq's free on CPU 1
/// drains at `d.s4.` (28.168604-.168692) after CPU 0's refill (28.168146-.168513), whose
/// allocation comes at 28.168693.
#[test]
fn an_interrupts_own_drain_waits_for_a_refill_begun_before_it() {
    let mut r = freed_on_cpu1(ONE_CALL, true);
    for t in 0..4 {
        feed(&mut r, &refill_line(2_000_010 + t));
    }
    let mut line = drain_line(2_000_020);
    line.who = Who::new(Task::Idle, Some(0), Ctx::new(true, true, false, 4));
    feed(&mut r, &line);
    let at_line = count(&r, 1);
    let lists = on_lists(&r);
    feed(&mut r, &refilled_alloc(2_000_030));
    assert!(at_line > count(&r, 1), "drained after the allocation");
    assert!(
        !lists.contains(&refilled(&r)),
        "the refill took no page of the drain"
    );
    r.zones[0].check().unwrap();
}
