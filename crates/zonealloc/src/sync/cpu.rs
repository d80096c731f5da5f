//! "Which CPU am I on" under `std` (`smp_processor_id`), for [`StdPlatform`]: asked on every
//! `Zone::alloc` and `Zone::free`, so it must cost a few instructions, not a system call.
//!
//! Three answers, cheapest first:
//! 1. **rseq** (Linux, glibc 2.35+, x86-64 and aarch64): glibc registers a restartable-sequences
//!    area for every thread, in which the kernel keeps `cpu_id` current across migrations, and
//!    exports where it is (`__rseq_offset` from the thread pointer, `__rseq_size`). Reading
//!    it is one load off the thread pointer, as tcmalloc and glibc's own `sched_getcpu` do.
//!    The symbols are looked up once with `dlsym`, so a libc without them (older glibc, a
//!    static build) just falls back. glibc leaves `__rseq_size` at 0 when registration failed
//!    (under valgrind, or with `GLIBC_TUNABLES=glibc.pthread.rseq=0`), and a thread whose own
//!    registration failed reads a negative `cpu_id`: both fall back.
//! 2. **A per-thread cached CPU**, refreshed from `sched_getcpu` every
//!    [`CPU_REFRESH_CALLS`] calls: a thread-local read and a decrement. After a migration the
//!    thread keeps naming its old CPU for at most that many operations; harmless, as the CPU
//!    id is only a hint (the PCP lock, not the id, guards the lists: the worst case is a
//!    contended try-lock, which falls back to the buddy).
//! 3. Where `sched_getcpu` cannot answer (not Linux, Miri), a per-thread slot handed out
//!    round-robin, cached the same way.
//!
//! [`StdPlatform`]: crate::platform::StdPlatform

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};

/// Operations a thread's cached CPU serves before it asks `sched_getcpu` again (when rseq is
/// not available).
pub(crate) const CPU_REFRESH_CALLS: u32 = 64;

/// The calling thread's answers, in one thread-local so that a loop keeps one address for
/// all three.
struct ThreadCpu {
    /// Where this thread's rseq `cpu_id` is relative to its thread pointer: 0 until the
    /// thread's first refresh found rseq registered for it, and where there is none. (Never
    /// 0 otherwise: `cpu_id` does not lie at the thread pointer itself.)
    #[cfg_attr(
        not(all(
            target_os = "linux",
            target_env = "gnu",
            any(target_arch = "x86_64", target_arch = "aarch64"),
            not(miri)
        )),
        allow(dead_code)
    )]
    at: Cell<isize>,
    /// The CPU the cache last asked for (answer 2), widened once here rather than on every
    /// call.
    cpu: Cell<usize>,
    /// The calls `cpu` still serves, less one: at 0 it serves one more, then the count
    /// wraps and the next call refreshes.
    left: Cell<u32>,
}

std::thread_local! {
    static THIS: ThreadCpu = const {
        ThreadCpu { at: Cell::new(0), cpu: Cell::new(0), left: Cell::new(0) }
    };
}

/// The CPU the calling thread runs on. Callers reduce it modulo their CPU count. The answer
/// may be stale by the time it is used (the thread can migrate); that is harmless because the
/// PCP lock, not the CPU id, guards the lists.
#[inline(always)]
pub(crate) fn current_cpu() -> u32 {
    current_cpu_index() as u32
}

/// [`current_cpu`] as an index: the value the zone uses, without a zero extension (the
/// `cpu_id` load already clears the upper half of its register).
#[inline(always)]
pub(crate) fn current_cpu_index() -> usize {
    THIS.with(|t| {
        #[cfg(all(
            target_os = "linux",
            target_env = "gnu",
            any(target_arch = "x86_64", target_arch = "aarch64"),
            not(miri)
        ))]
        {
            let at = t.at.get();
            if at != 0 {
                // No sign test: `at` is set only once this thread's registration succeeded,
                // after which the kernel keeps `cpu_id` a CPU number. (A thread that
                // unregisters rseq by hand reads -1 afterwards, which a zone reduces modulo
                // its CPU count like any other id: a hint.)
                return rseq::raw_cpu_index(at);
            }
        }
        cached_cpu(t)
    })
}

/// Answer 2 (and 3): the thread's cached CPU, refreshed every [`CPU_REFRESH_CALLS`] calls.
#[inline(always)]
fn cached_cpu(t: &ThreadCpu) -> usize {
    let left = t.left.get().wrapping_sub(1);
    t.left.set(left);
    if left == u32::MAX {
        return refresh_cached(t);
    }
    t.cpu.get()
}

/// Asks for the CPU and caches it for the next [`CPU_REFRESH_CALLS`] calls (this one
/// included); where rseq answers for this thread, switches it to rseq.
#[cold]
#[inline(never)]
fn refresh_cached(t: &ThreadCpu) -> usize {
    #[cfg(all(
        target_os = "linux",
        target_env = "gnu",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(miri)
    ))]
    t.at.set(rseq::usable_at());
    let cpu = ask_cpu() as usize;
    t.cpu.set(cpu);
    t.left.set(CPU_REFRESH_CALLS - 1);
    cpu
}

/// `sched_getcpu`, or the thread's round-robin slot where it cannot answer.
#[cold]
#[inline(never)]
fn ask_cpu() -> u32 {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: sched_getcpu takes no arguments, touches no caller memory and only returns
        // an int (-1 on error).
        #[allow(unsafe_code)]
        let c = unsafe { libc::sched_getcpu() };
        if c >= 0 {
            return c as u32;
        }
    }
    thread_slot()
}

/// A per-thread number handed out round-robin, for a platform that cannot say.
fn thread_slot() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::thread_local! {
        static SLOT: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

/// Answer 1: `cpu_id` of glibc's rseq area.
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
))]
mod rseq {
    use core::sync::atomic::{AtomicIsize, Ordering};

    /// [`CPU_ID_AT`] before [`probe`] looked the symbols up.
    const UNPROBED: isize = isize::MIN;
    /// [`CPU_ID_AT`] when there is no usable rseq area.
    const NONE: isize = isize::MIN + 1;

    /// Where a thread's `rseq.cpu_id` is, relative to its thread pointer (`__rseq_offset`
    /// plus the field's offset, 4); or one of the two sentinels.
    static CPU_ID_AT: AtomicIsize = AtomicIsize::new(UNPROBED);

    /// The offset for [`read_cpu_id`] where rseq answers for the calling thread, else 0;
    /// looks the symbols up first if nobody has yet.
    pub(super) fn usable_at() -> isize {
        probe();
        let at = CPU_ID_AT.load(Ordering::Relaxed);
        if at > NONE && read_cpu_id(at).is_some() {
            at
        } else {
            0
        }
    }

    /// `cpu_id` at `at` off the thread pointer: `None` when negative (-1, not registered
    /// yet; -2, registration failed).
    #[inline(always)]
    pub(super) fn read_cpu_id(at: isize) -> Option<u32> {
        let cpu = raw_cpu_id(at);
        (cpu >= 0).then_some(cpu as u32)
    }

    /// `cpu_id` at `at` off the thread pointer, as the kernel left it, as a `u32` widened to
    /// `usize`.
    #[inline(always)]
    pub(super) fn raw_cpu_index(at: isize) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            let cpu: usize;
            // SAFETY: `at` came from glibc's `__rseq_offset` (with `__rseq_size` >= 8): every
            // thread's TCB holds a `struct rseq` (32-byte aligned, so `cpu_id` at offset 4 is
            // aligned) at that offset from its thread pointer, the `fs` base, for the thread's
            // whole life. One load relative to `fs`; the kernel writes `cpu_id`
            // asynchronously, so it is read each call (not `pure`). The 32-bit load clears
            // the register's upper half, so `cpu` is the `u32` value.
            #[allow(unsafe_code)]
            unsafe {
                core::arch::asm!("mov {0:e}, dword ptr fs:[{1}]", out(reg) cpu, in(reg) at,
                    options(nostack, readonly, preserves_flags));
            }
            cpu
        }
        #[cfg(target_arch = "aarch64")]
        {
            let tp = thread_pointer();
            // SAFETY: as on x86-64, relative to `tpidr_el0`; a volatile read, as the kernel
            // writes `cpu_id` asynchronously.
            #[allow(unsafe_code)]
            let cpu = unsafe { core::ptr::read_volatile(tp.wrapping_offset(at) as *const u32) };
            cpu as usize
        }
    }

    /// `cpu_id` at `at` off the thread pointer, as the kernel left it.
    #[inline(always)]
    pub(super) fn raw_cpu_id(at: isize) -> i32 {
        raw_cpu_index(at) as u32 as i32
    }

    /// The thread pointer (`__builtin_thread_pointer`) on aarch64: `tpidr_el0`. (x86-64
    /// needs none: its loads go relative to `fs`.)
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    fn thread_pointer() -> *const u8 {
        let tp: *const u8;
        // SAFETY: reads a system register; no side effects, always valid in a thread of a
        // glibc program.
        #[allow(unsafe_code)]
        unsafe {
            core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp,
                options(nostack, nomem, preserves_flags, pure));
        }
        tp
    }

    /// Looks `__rseq_offset` and `__rseq_size` up if nobody has yet (racing first calls
    /// look up the same values).
    fn probe() {
        if CPU_ID_AT.load(Ordering::Relaxed) == UNPROBED {
            CPU_ID_AT.store(lookup(), Ordering::Relaxed);
        }
    }

    /// Whether glibc registered an rseq area (after the first [`usable_at`]).
    #[cfg(test)]
    pub(super) fn registered() -> bool {
        CPU_ID_AT.load(Ordering::Relaxed) > NONE
    }

    fn lookup() -> isize {
        // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks symbols up.
        #[allow(unsafe_code)]
        let (off, size) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize,
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32,
            )
        };
        if off.is_null() || size.is_null() {
            return NONE;
        }
        // SAFETY: glibc defines `__rseq_offset` (ptrdiff_t) and `__rseq_size` (unsigned int)
        // as read-only objects, set before any user code runs.
        #[allow(unsafe_code)]
        let (off, size) = unsafe { (*off, *size) };
        // `cpu_id` (a u32 at offset 4) must lie within the registered area.
        if size < 8 {
            return NONE;
        }
        off + 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn current_cpu_agrees_with_sched_getcpu_when_pinned() {
        // Pin this thread to one CPU; both answers must then name it.
        #[allow(unsafe_code)]
        // SAFETY: plain libc calls on a zeroed cpu_set_t owned here.
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            let cpu = libc::sched_getcpu();
            if cpu < 0 {
                return;
            }
            libc::CPU_SET(cpu as usize, &mut set);
            (libc::sched_setaffinity(0, core::mem::size_of_val(&set), &set) == 0).then_some(cpu)
        };
        let Some(cpu) = pinned else { return };
        for _ in 0..2 * CPU_REFRESH_CALLS {
            assert_eq!(current_cpu(), cpu as u32);
            assert_eq!(current_cpu_index(), cpu as usize);
        }
        // Where glibc registered rseq, its answer is the one used, and the same.
        #[cfg(all(
            target_env = "gnu",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        {
            if rseq::registered() {
                // The refreshes above switched this thread to rseq.
                let at = THIS.with(|t| t.at.get());
                assert_ne!(at, 0, "rseq is registered but not used");
                assert_eq!(rseq::read_cpu_id(at), Some(cpu as u32));
                assert_eq!(rseq::usable_at(), at);
            }
        }
    }
}
