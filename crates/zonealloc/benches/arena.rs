//! Order-0 page alloc+free pairs: a `PageArena` (owning `PageBlock`s, and the raw API)
//! against `posix_memalign(4096)`/`free` and against `mmap`/`munmap` of one page, in the same
//! run, on one thread and on two threads at once.
//!
//! `cargo bench -p zonealloc --features arena --bench arena` (add `-- --quick` for a short
//! run). Each case runs `PAIRS` alloc+free pairs per thread, each pair touching one byte of
//! the page (so `mmap` pays its page fault, as a user of a fresh page would), seven times;
//! the table gives the median nanoseconds per pair per thread and the minimum. Not a test:
//! nothing here asserts a time.

use std::hint::black_box;
use std::time::Instant;

use zonealloc::arena::{ArenaConfig, PageArena};
use zonealloc::{MigrateType, Order, Zone, ZoneType};

const PAGE: usize = 4096;

/// One pair: allocate a page, write a byte, free it.
type Pair = fn(&Ctx, u64);

struct Ctx {
    arena: PageArena,
    /// A zone like the arena's (same configuration and span), with no memory behind it: the
    /// arena's own zone is not reachable for frees (`PageArena::zone` is read-only).
    zone: Zone,
}

fn arena_block(c: &Ctx, i: u64) {
    let mut b = c
        .arena
        .alloc(Order::ZERO, MigrateType::Movable)
        .expect("page");
    b.as_mut_slice()[0] = i as u8;
    black_box(&b);
}

fn arena_raw(c: &Ctx, i: u64) {
    let p = c
        .arena
        .alloc_raw(Order::ZERO, MigrateType::Movable)
        .expect("page");
    // SAFETY: a fresh order-0 block of the arena, owned here; freed once below.
    unsafe {
        p.as_ptr().write_volatile(i as u8);
        c.arena.free_raw(p.as_ptr(), Order::ZERO).expect("free");
    }
}

/// A zone like the arena's, alone: frame numbers, no memory touched. Tells the zone's share
/// of the arena's time apart from the memory's.
fn zone_only(c: &Ctx, _: u64) {
    let z = &c.zone;
    let pfn = z.alloc(Order::ZERO, MigrateType::Movable).expect("frame");
    z.free(black_box(pfn), Order::ZERO).expect("free");
}

fn posix_memalign(_: &Ctx, i: u64) {
    let mut p: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out-pointer; 4096 is a power of two multiple of the pointer size.
    let r = unsafe { libc::posix_memalign(&mut p, PAGE, PAGE) };
    assert_eq!(r, 0, "posix_memalign failed");
    // SAFETY: `p` is a fresh 4096-byte allocation, freed once.
    unsafe {
        p.cast::<u8>().write_volatile(i as u8);
        libc::free(p);
    }
}

fn mmap_page(_: &Ctx, i: u64) {
    // SAFETY: an anonymous private mapping of one page at an address the kernel chooses.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap failed");
    // SAFETY: `p` is the fresh one-page mapping, unmapped once.
    unsafe {
        p.cast::<u8>().write_volatile(i as u8);
        libc::munmap(p, PAGE);
    }
}

/// Nanoseconds per pair per thread for `threads` threads running `pairs` pairs each.
fn run(ctx: &Ctx, f: Pair, threads: usize, pairs: u64) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for i in 0..pairs {
                    f(ctx, i);
                }
            });
        }
    });
    start.elapsed().as_nanos() as f64 / pairs as f64
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (pairs, reps) = if quick { (20_000, 3) } else { (400_000, 7) };
    let arena = PageArena::new(ArenaConfig::with_pages(1 << 14)).expect("arena");
    let (start, end) = arena.zone().span();
    let zone = Zone::new(ZoneType::Normal, start, end, *arena.zone().config()).expect("zone");
    zone.add_free_range(start, end).expect("zone range");
    let ctx = Ctx { arena, zone };
    let cases: [(&str, Pair); 5] = [
        ("PageArena::alloc + drop (PageBlock)", arena_block),
        ("PageArena::alloc_raw + free_raw", arena_raw),
        (
            "Zone::alloc + free, the arena's zone alone (no memory)",
            zone_only,
        ),
        ("posix_memalign(4096) + free", posix_memalign),
        ("mmap + munmap, one page", mmap_page),
    ];
    println!("order-0 alloc+free pair, ns per pair per thread (median of {reps}, min)");
    println!("| case | 1 thread | 2 threads |");
    println!("|---|---:|---:|");
    for (name, f) in cases {
        let mut cols = Vec::new();
        for threads in [1, 2] {
            run(&ctx, f, threads, pairs / 10); // warm up: fault in, fill caches and lists
            let mut t: Vec<f64> = (0..reps).map(|_| run(&ctx, f, threads, pairs)).collect();
            t.sort_by(f64::total_cmp);
            cols.push(format!("{:.1} (min {:.1})", t[t.len() / 2], t[0]));
        }
        println!("| {name} | {} | {} |", cols[0], cols[1]);
    }
    ctx.arena.check().expect("arena invariants after the run");
    ctx.zone.check().expect("zone invariants after the run");
}
