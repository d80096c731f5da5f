//! The C API called from Rust, so that Miri checks its unsafe code (handles, out-pointers,
//! caller buffers): `cargo +nightly miri test -p zonealloc-ffi --lib`. The C programs in
//! `tests/c/` cover the same functions from C, under ASan.

use core::ffi::c_void;
use core::ptr;

use crate::*;
use za_status::*;

fn zone_cfg() -> za_zone_config {
    let mut c = core::mem::MaybeUninit::<za_zone_config>::uninit();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { za_zone_config_default(c.as_mut_ptr()) }, ZA_OK);
    // SAFETY: initialised by the successful call above.
    let mut c = unsafe { c.assume_init() };
    c.end_pfn = 1 << 10;
    c.cpus = 2;
    c
}

#[test]
fn zone_handle_round_trip_with_bad_inputs_refused() {
    let c = zone_cfg();
    let mut z: *mut za_zone = ptr::null_mut();
    // SAFETY: valid pointers to a config and an out-pointer.
    assert_eq!(unsafe { za_zone_create(&c, &mut z) }, ZA_OK);
    let mut pfn = u64::MAX;
    // SAFETY: `z` is live; `pfn` is a valid out-pointer.
    unsafe {
        assert_eq!(za_zone_alloc(z, 2, 1, &mut pfn), ZA_OK);
        assert_eq!(pfn % 4, 0);
        assert_eq!(za_zone_free(z, pfn + 1, 0), ZA_ERR_NOT_BLOCK_HEAD);
        assert_eq!(za_zone_free(z, pfn, 1), ZA_ERR_WRONG_ORDER);
        assert_eq!(za_zone_alloc(z, 0, 1, ptr::null_mut()), ZA_ERR_NULL);
        assert_eq!(za_zone_free(ptr::null(), pfn, 2), ZA_ERR_NULL);
        assert_eq!(
            za_zone_free(z.cast::<u8>().wrapping_add(1).cast(), pfn, 2),
            ZA_ERR_MISALIGNED
        );
        let not_a_zone = [0u64; 4];
        assert_eq!(
            za_zone_free(not_a_zone.as_ptr().cast(), pfn, 2),
            ZA_ERR_BAD_HANDLE
        );
        assert_eq!(za_zone_free(z, pfn, 2), ZA_OK);
        assert_eq!(za_zone_free(z, pfn, 2), ZA_ERR_DOUBLE_FREE);
        let mut pending = 9u32;
        assert_eq!(za_zone_tick(z, &mut pending), ZA_OK);
        assert!(pending <= 1);
        assert_eq!(za_zone_drain(z), ZA_OK);
        let mut st = za_stats::default();
        assert_eq!(za_zone_stats(z, &mut st), ZA_OK);
        assert_eq!(st.free_pages, 1 << 10);
        assert_eq!(za_zone_check(z), ZA_OK);
        assert_eq!(za_zone_destroy(z), ZA_OK);
    }
}

#[test]
fn text_goes_into_caller_buffers_only_when_it_fits() {
    let c = zone_cfg();
    let mut z: *mut za_zone = ptr::null_mut();
    // SAFETY: valid pointers; `z` is live until destroyed at the end; every buffer pointer
    // comes with its true length.
    unsafe {
        assert_eq!(za_zone_create(&c, &mut z), ZA_OK);
        let mut needed = 0usize;
        assert_eq!(
            za_zone_zoneinfo(z, ptr::null_mut(), 0, &mut needed),
            ZA_ERR_BUFFER_TOO_SMALL
        );
        let mut small = [b'x' as core::ffi::c_char; 8];
        assert_eq!(
            za_zone_zoneinfo(z, small.as_mut_ptr(), small.len(), &mut needed),
            ZA_ERR_BUFFER_TOO_SMALL
        );
        assert!(small.iter().all(|&b| b == b'x' as core::ffi::c_char));
        let mut buf = vec![0 as core::ffi::c_char; needed];
        assert_eq!(
            za_zone_zoneinfo(z, buf.as_mut_ptr(), buf.len(), &mut needed),
            ZA_OK
        );
        let text = core::ffi::CStr::from_ptr(buf.as_ptr()).to_str().unwrap();
        assert_eq!(text.len() + 1, needed);
        assert!(text.starts_with("Node 0, zone"));
        assert_eq!(za_zone_destroy(z), ZA_OK);
    }
}

#[test]
fn arena_pointers_are_checked_before_anything_is_freed() {
    let mut c = core::mem::MaybeUninit::<za_arena_config>::uninit();
    let mut a: *mut za_arena = ptr::null_mut();
    // SAFETY: valid out-pointers; `a` is live until destroyed at the end; `p` is a block
    // of the arena owned here, freed once.
    unsafe {
        assert_eq!(za_arena_config_default(c.as_mut_ptr()), ZA_OK);
        let mut c = c.assume_init();
        c.pages = 16;
        c.max_order = 3;
        c.pageblock_order = 2;
        c.cpus = 1;
        c.flags = ZA_ARENA_POISON | ZA_ARENA_ZERO;
        assert_eq!(za_arena_create(&c, &mut a), ZA_OK);
        let mut p: *mut c_void = ptr::null_mut();
        assert_eq!(za_arena_alloc(a, 1, 1, &mut p), ZA_OK);
        p.cast::<u8>().write_bytes(0x5a, 8192);
        let local = 0u64;
        assert_eq!(
            za_arena_free(a, ptr::addr_of!(local).cast_mut().cast(), 0),
            ZA_ERR_FOREIGN_POINTER
        );
        assert_eq!(
            za_arena_free(a, p.cast::<u8>().add(8).cast(), 1),
            ZA_ERR_MISALIGNED
        );
        assert_eq!(za_arena_free(a, ptr::null_mut(), 1), ZA_ERR_NULL);
        assert_eq!(za_arena_free(a, p, 0), ZA_ERR_WRONG_ORDER);
        assert_eq!(*p.cast::<u8>(), 0x5a, "a refused free wrote nothing");
        assert_eq!(za_arena_free(a, p, 1), ZA_OK);
        assert_eq!(za_arena_free(a, p, 1), ZA_ERR_DOUBLE_FREE);
        // A zone handle is not an arena handle.
        let zc = zone_cfg();
        let mut z: *mut za_zone = ptr::null_mut();
        assert_eq!(za_zone_create(&zc, &mut z), ZA_OK);
        assert_eq!(za_arena_drain(z.cast()), ZA_ERR_BAD_HANDLE);
        assert_eq!(za_zone_destroy(z), ZA_OK);
        assert_eq!(za_arena_check(a), ZA_OK);
        assert_eq!(za_arena_destroy(a), ZA_OK);
    }
}

/// Issue 13, item 2: a span ending near 2^64 wrapped the core's frame arithmetic
/// (`ZA_ERR_PANIC` in a debug build, a hang in a release one); now a typed code.
#[test]
fn spans_ending_near_2_pow_64_are_a_config_error() {
    for (start, end) in [(0, u64::MAX), (u64::MAX - 4096, u64::MAX - 2048)] {
        let c = za_zone_config {
            start_pfn: start,
            end_pfn: end,
            ..zone_cfg()
        };
        let mut z: *mut za_zone = ptr::null_mut();
        // SAFETY: valid pointers to a config and an out-pointer.
        assert_eq!(unsafe { za_zone_create(&c, &mut z) }, ZA_ERR_SPAN_OVERFLOW);
        assert!(z.is_null());
    }
}

#[test]
fn machine_handle_round_trip_with_bad_inputs_refused() {
    let regions = [
        za_node_region {
            node: 0,
            start: 16 << 20,
            len: 4 << 20,
        },
        za_node_region {
            node: 1,
            start: 4 << 30,
            len: 4 << 20,
        },
    ];
    let (dist, cpu_node) = ([10u32, 20, 20, 10], [0u32, 1]);
    let c = za_machine_config {
        regions: regions.as_ptr(),
        region_count: 2,
        nodes: 2,
        distances: dist.as_ptr(),
        cpus: 2,
        cpu_node: cpu_node.as_ptr(),
        flags: 0,
    };
    let mut m: *mut za_machine = ptr::null_mut();
    // SAFETY: valid pointers to a config (its arrays live above) and an out-pointer.
    assert_eq!(unsafe { za_machine_create(&c, &mut m) }, ZA_OK);
    let (mut pfn, mut node) = (0u64, 9u32);
    // SAFETY: `m` is live; the out-pointers are valid.
    unsafe {
        assert_eq!(
            za_machine_alloc(m, 1, ZA_NODE_LOCAL, 0, 0, 1, 1, &mut pfn, &mut node),
            ZA_OK
        );
        assert_eq!(node, 1);
        assert_eq!(
            za_machine_alloc(m, 2, ZA_NODE_LOCAL, 0, 0, 0, 1, &mut pfn, ptr::null_mut()),
            ZA_ERR_INVALID_ARGUMENT
        );
        let mut s = za_numastat::default();
        assert_eq!(za_machine_numastat(m, 1, &mut s), ZA_OK);
        assert_eq!((s.numa_hit, s.local_node), (1, 1));
        // CPU 0 frees node 1's block to its own pageset of node 1's zone.
        assert_eq!(za_machine_free(m, 0, pfn, 0), ZA_ERR_WRONG_ORDER);
        assert_eq!(za_machine_free(m, 0, pfn, 1), ZA_OK);
        let mut changes = 0;
        assert_eq!(za_machine_vmstat_tick(m, 0, &mut changes), ZA_OK);
        let mut buf = [0 as core::ffi::c_char; 256];
        let mut needed = 0usize;
        assert_eq!(
            za_machine_text(m, 1, buf.as_mut_ptr(), buf.len(), &mut needed),
            ZA_OK
        );
        assert_eq!(
            za_machine_text(m, -1, buf.as_mut_ptr(), 2, &mut needed),
            ZA_ERR_BUFFER_TOO_SMALL
        );
        assert_eq!(za_machine_drain(m), ZA_OK);
        assert_eq!(za_machine_check(m), ZA_OK);
        let mut z: *mut za_zone = ptr::null_mut();
        assert_eq!(za_zone_create(&zone_cfg(), &mut z), ZA_OK);
        assert_eq!(za_machine_check(z.cast()), ZA_ERR_BAD_HANDLE);
        assert_eq!(za_zone_destroy(z), ZA_OK);
        assert_eq!(za_machine_destroy(m), ZA_OK);
    }
}
