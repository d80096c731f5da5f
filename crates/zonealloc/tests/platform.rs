//! The platform layer and boot-time storage: a named platform's CPU id and zone lock are the
//! ones the zone uses, and `Zone::from_uninit_carved` keeps the table's frames out of the
//! free lists.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use zonealloc::platform::lock_api::{GuardSend, RawMutex};
use zonealloc::platform::{Platform, RawSpinLock, StaticStorage};
use zonealloc::{
    ConfigError, CpuId, FrameMeta, FrameState, MigrateType, Order, PcpSlot, Pfn, RangeError, Zone,
    ZoneConfig, ZoneType,
};

/// The CPU the test platform reports, and the zone-lock acquisitions it has seen.
static CPU: AtomicU32 = AtomicU32::new(0);
static LOCKS: AtomicUsize = AtomicUsize::new(0);

/// A zone lock that counts its acquisitions, to show the zone takes the platform's lock.
struct CountingLock(RawSpinLock);

// SAFETY: every method forwards to `RawSpinLock`, which is a sound raw mutex; counting adds
// no state that exclusion depends on.
unsafe impl RawMutex for CountingLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: CountingLock = CountingLock(RawSpinLock::new());
    type GuardMarker = GuardSend;
    fn lock(&self) {
        self.0.lock();
        LOCKS.fetch_add(1, Ordering::Relaxed);
    }
    fn try_lock(&self) -> bool {
        let ok = self.0.try_lock();
        if ok {
            LOCKS.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock (lock_api's contract), so `self.0` is held.
        unsafe { self.0.unlock() }
    }
}

struct Test;
impl Platform for Test {
    type RawMutex = CountingLock;
    fn current_cpu() -> u32 {
        CPU.load(Ordering::Relaxed)
    }
}

const FRAMES: u64 = 4096;

#[test]
fn the_platform_names_the_cpu_and_the_zone_lock() {
    static TABLE: StaticStorage<FrameMeta, { FRAMES as usize }> = StaticStorage::new();
    static PCPS: StaticStorage<PcpSlot, 4> = StaticStorage::new();
    let zone = Zone::<Test>::from_uninit(
        ZoneType::Normal,
        Pfn(0),
        Pfn(FRAMES),
        ZoneConfig::default(),
        TABLE.take().unwrap(),
        PCPS.take().unwrap(),
    )
    .unwrap();
    assert_eq!(zone.cpus(), 4);
    let before = LOCKS.load(Ordering::Relaxed);
    zone.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap();
    assert!(
        LOCKS.load(Ordering::Relaxed) > before,
        "add_free_range takes P's lock"
    );

    // Every allocation without an explicit CPU lands on the CPU the platform reports.
    for cpu in [3u32, 1, 6] {
        CPU.store(cpu, Ordering::Relaxed);
        let pfn = zone.alloc(Order::ZERO, MigrateType::Movable).unwrap();
        zone.free(pfn, Order::ZERO).unwrap();
    }
    let count = |c: u32| zone.pcp_info(CpuId(c)).count;
    // 6 reduces to 6 % 4 = 2.
    assert!(
        count(3) > 0 && count(1) > 0 && count(2) > 0,
        "lists 3, 1, 2 refilled"
    );
    assert_eq!(count(0), 0, "nothing ran on CPU 0");
    CPU.store(3, Ordering::Relaxed);
    zone.drain_local();
    assert_eq!(count(3), 0, "drain_local drains the platform's CPU");
    assert!(count(1) > 0);
    zone.drain_all();
    let facts = zone.check().unwrap();
    assert_eq!(facts.free_pages, FRAMES);
}

#[test]
fn a_table_carved_from_the_zone_is_reserved() {
    static TABLE: StaticStorage<FrameMeta, { FRAMES as usize }> = StaticStorage::new();
    static PCPS: StaticStorage<PcpSlot, 1> = StaticStorage::new();
    let table_frames = (Pfn(512), Pfn(640));
    let zone = Zone::<Test>::from_uninit_carved(
        ZoneType::Normal,
        Pfn(0),
        Pfn(FRAMES),
        ZoneConfig::without_watermarks(),
        TABLE.take().unwrap(),
        Some(table_frames),
        PCPS.take().unwrap(),
    )
    .unwrap();
    // A range that crosses the reserved frames is refused whole when part of it overlaps
    // memory already added: nothing of it is added.
    assert_eq!(zone.add_free_range(Pfn(0), Pfn(64)).unwrap(), 64);
    assert!(matches!(
        zone.add_free_range(Pfn(32), Pfn(FRAMES)),
        Err(RangeError::Overlap { .. })
    ));
    assert_eq!(zone.managed_pages(), 64);
    // The rest of RAM, table included: the table's 128 frames are skipped.
    assert_eq!(
        zone.add_free_range(Pfn(64), Pfn(FRAMES)).unwrap(),
        FRAMES - 64 - 128
    );
    assert_eq!(zone.managed_pages(), FRAMES - 128);
    assert_eq!(zone.add_free_range(Pfn(520), Pfn(600)).unwrap(), 0);
    assert_eq!(zone.frame_state(Pfn(512)), Some(FrameState::Absent));
    assert_eq!(zone.frame_state(Pfn(639)), Some(FrameState::Absent));
    zone.check().unwrap();
    // Allocate everything: no block touches the table.
    let mut got = Vec::new();
    while let Ok(pfn) = zone.alloc(Order::ZERO, MigrateType::Movable) {
        assert!(
            pfn < table_frames.0 || pfn >= table_frames.1,
            "{pfn:?} is in the table"
        );
        got.push(pfn);
    }
    assert_eq!(got.len() as u64, FRAMES - 128);
    for pfn in got {
        zone.free(pfn, Order::ZERO).unwrap();
    }
    zone.drain_all();
    assert_eq!(zone.check().unwrap().free_pages, FRAMES - 128);
}

#[test]
fn boot_storage_is_checked() {
    static SMALL: StaticStorage<FrameMeta, 100> = StaticStorage::new();
    static TABLE: StaticStorage<FrameMeta, { FRAMES as usize }> = StaticStorage::new();
    let cfg = ZoneConfig::default();
    let err = Zone::<Test>::from_uninit(
        ZoneType::Normal,
        Pfn(0),
        Pfn(FRAMES),
        cfg,
        SMALL.take().unwrap(),
        &mut [],
    )
    .unwrap_err();
    assert_eq!(
        err,
        ConfigError::TableTooSmall {
            needed: FRAMES as usize,
            provided: 100
        }
    );
    let table = TABLE.take().unwrap();
    // The table's frames must be a non-empty range inside the zone.
    let err = Zone::<Test>::from_uninit_carved(
        ZoneType::Normal,
        Pfn(0),
        Pfn(FRAMES),
        cfg,
        table,
        Some((Pfn(FRAMES - 8), Pfn(FRAMES + 8))),
        &mut [],
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::BadSpan { .. }));
}
