//! Unit tests of the side table: encoding, claims, geometry, deferred init.

use super::state::{FrameMeta, FrameState};
use super::table::FrameTable;
use crate::sync::Ordering;
use crate::types::{MigrateType, Order, Pfn};

#[test]
fn state_encoding_round_trips() {
    let o = Order::of::<7>();
    for s in [
        FrameState::Absent,
        FrameState::Tail,
        FrameState::Buddy(o),
        FrameState::Pcp(o),
        FrameState::Allocated(o, MigrateType::Reclaimable),
        FrameState::Allocated(Order::of::<20>(), MigrateType::Movable),
    ] {
        assert_eq!(FrameState::decode(s.encode()), s);
    }
}

/// The guessed claim succeeds exactly where the plain one does, whatever the guess, and
/// leaves the same state.
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn a_guessed_claim_matches_the_plain_one() {
    let (o, o2) = (Order::of::<0>(), Order::of::<3>());
    let mts = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];
    let mut states = std::vec![
        FrameState::Absent,
        FrameState::Tail,
        FrameState::Buddy(o),
        FrameState::Pcp(o),
        FrameState::Allocated(o2, MigrateType::Movable),
    ];
    states.extend(mts.iter().map(|&mt| FrameState::Allocated(o, mt)));
    for s in states {
        for guess in mts {
            let (a, b) = (FrameMeta::new(), FrameMeta::new());
            a.state.store(s.encode(), Ordering::Relaxed);
            b.state.store(s.encode(), Ordering::Relaxed);
            let to = FrameState::Pcp(o);
            assert_eq!(
                a.try_claim_allocated_as(o, guess, to),
                b.try_claim_allocated(o, to),
                "{s:?} guess {guess:?}"
            );
            assert_eq!(
                a.state.load(Ordering::Relaxed),
                b.state.load(Ordering::Relaxed)
            );
        }
    }
}

#[cfg(not(loom))]
#[test]
fn metadata_is_at_most_sixteen_bytes_per_frame() {
    assert!(FrameTable::bytes_per_frame() <= 16);
    assert_eq!(FrameTable::bytes_per_frame(), 12);
}

/// Issue 13, item 2: `end + mask` wrapped near 2^64 (a panic in debug, an empty table and
/// `Ok` in release).
#[cfg(feature = "std")]
#[test]
fn spans_whose_blocks_would_pass_2_pow_64_are_refused() {
    use crate::{ConfigError, Zone, ZoneConfig, ZoneType};
    let top = u64::MAX;
    let near = |k: u64| Pfn(top - k);
    for (start, end) in [
        (Pfn(0), Pfn(top)),
        (near(1000), Pfn(top)),
        (near(1 << 12), near(1 << 11)), // a 2^10 block at the top, below the last pageblock
        (near(1 << 20), near(1 << 19)),
        // The last order-10 block, half of it: `pfn + (1 << 10)` in `add_free_range` wrapped.
        (near(1023), near(511)),
    ] {
        let e = ConfigError::SpanOverflow { start, end };
        assert_eq!(FrameTable::geometry(start, end, 9), Err(e));
        assert_eq!(FrameTable::entries_needed(start, end, 9), u64::MAX);
        let z = Zone::new(ZoneType::Normal, start, end, ZoneConfig::default());
        assert_eq!(z.err(), Some(e), "{start}..{end}");
        assert_eq!(
            Zone::table_entries(start, end, &ZoneConfig::default()),
            u64::MAX
        );
    }
    // The highest span that fits: its last largest block ends exactly at 2^64 - 2^20.
    let end = Pfn(top - (1 << 20) + 1);
    let start = Pfn(end.0 - 1024);
    assert_eq!(FrameTable::geometry(start, end, 9), Ok(1024));
    let z = Zone::new(ZoneType::Normal, start, end, ZoneConfig::default()).unwrap();
    assert_eq!(z.add_free_range(start, end), Ok(1024));
    z.check().unwrap();
}

#[cfg(not(loom))]
#[test]
fn the_initial_entry_is_all_zero_bytes() {
    static ONE: [FrameMeta; 1] = [FrameMeta::new()];
    let e = &ONE[0];
    assert_eq!(e.next.load(Ordering::Relaxed), 0);
    assert_eq!(e.prev.load(Ordering::Relaxed), 0);
    assert_eq!(e.state.load(Ordering::Relaxed), 0);
    assert_eq!(e.block.load(Ordering::Relaxed), 0);
    // ... and a zone over it reads it as absent, in a movable pageblock.
    let t = FrameTable::borrowed(Pfn(0), Order::ZERO, 1, &ONE).unwrap();
    assert_eq!(t.state(0), FrameState::Absent);
    assert_eq!(t.block_type(0), MigrateType::Movable);
}

/// The slice walks read a state word as [`FrameTable::state`] does, for every value the
/// word can hold (kinds 5 to 7 read as absent; order and migratetype bits ignored).
#[cfg(all(feature = "std", not(loom)))]
#[test]
fn slice_walks_read_states_as_state_does() {
    let t = FrameTable::allocate(Pfn(0), Order::ZERO, 3).unwrap();
    for v in 0..=u16::MAX >> 5 {
        // Every kind and migratetype bit pattern, with orders up to the limit (`state`
        // decodes the order, which must be in range).
        let v = v << 5 | (v % (u16::from(crate::MAX_ORDER_LIMIT) + 1));
        t.entries()[1].state.store(v, Ordering::Relaxed);
        for s in [FrameState::Absent, FrameState::Tail] {
            t.set_state(0, s);
            t.set_state(2, s);
            let differs = t.state(1) != s;
            assert_eq!(
                t.first_not_of_kind(0..3, s),
                differs.then_some(1),
                "{v:#x} {s:?}"
            );
            assert_eq!(
                t.first_not_of_kind(1..2, s),
                differs.then_some(1),
                "{v:#x} {s:?}"
            );
            assert_eq!(t.first_not_of_kind(2..3, s), None);
        }
    }
    t.set_states(0..3, FrameState::Tail);
    assert_eq!(t.first_not_of_kind(0..3, FrameState::Tail), None);
    // A range past the table's end is clamped.
    assert_eq!(t.first_not_of_kind(2..9, FrameState::Absent), Some(2));
}

#[test]
fn entries_needed_rounds_to_pageblocks() {
    assert_eq!(FrameTable::entries_needed(Pfn(1), Pfn(513), 9), 1024);
    assert_eq!(FrameTable::entries_needed(Pfn(0), Pfn(512), 9), 512);
}
