//! The kernel's zonealloc platform: each hart's CPU index (kept in `tp` by the entry code),
//! an IRQ-saving zone lock, and `rdtime` as the clock.
//!
//! The zone lock saves and clears `sstatus.SIE` while held (`spin_lock_irqsave`), which is
//! what zonealloc's interrupt rule asks of a kernel whose interrupt handlers allocate or free
//! (see `zonealloc::platform`): the per-CPU locks are only try-locked on those paths, so a
//! handler never waits for them, and with interrupts off while the zone lock is held, no
//! handler can interrupt its holder. This kernel runs with interrupts off throughout, so here
//! the lock only shows the shape; the workload runs through it all the same.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use zonealloc::platform::lock_api::{GuardSend, RawMutex};
use zonealloc::platform::Platform;

/// The platform of this kernel's zone: `Zone<Hart>`.
pub struct Hart;

/// Ticks of the `time` CSR per second, from the device tree (set once at boot).
static TIMEBASE_HZ: AtomicU64 = AtomicU64::new(0);

/// Records the timebase read from the device tree, for [`Hart::now_ns`].
pub fn set_timebase(hz: u64) {
    TIMEBASE_HZ.store(hz, Ordering::Relaxed);
}

impl Platform for Hart {
    type RawMutex = IrqSpinLock;

    #[inline(always)]
    fn current_cpu() -> u32 {
        crate::sbi::cpu_index() as u32
    }

    fn now_ns() -> u64 {
        let hz = TIMEBASE_HZ.load(Ordering::Relaxed).max(1);
        (u128::from(crate::sbi::rdtime()) * 1_000_000_000 / u128::from(hz)) as u64
    }
}

/// `sstatus.SIE`: supervisor interrupts enabled.
const SSTATUS_SIE: usize = 1 << 1;

/// Clears `sstatus.SIE` and returns whether it was set (`local_irq_save`).
#[inline(always)]
fn irq_save() -> bool {
    let old: usize;
    // SAFETY: clears one bit of this hart's `sstatus` and reads the old value; the only
    // effect is that supervisor interrupts are masked until `irq_restore`.
    unsafe { core::arch::asm!("csrrc {}, sstatus, {}", out(reg) old, in(reg) SSTATUS_SIE) };
    old & SSTATUS_SIE != 0
}

/// Sets `sstatus.SIE` again if `enabled` (`local_irq_restore`).
#[inline(always)]
fn irq_restore(enabled: bool) {
    if enabled {
        // SAFETY: sets one bit of this hart's `sstatus`, restoring the state `irq_save` saw.
        unsafe { core::arch::asm!("csrs sstatus, {}", in(reg) SSTATUS_SIE) };
    }
}

/// A spinlock that masks supervisor interrupts on its hart while held and restores them on
/// unlock: `spin_lock_irqsave` / `spin_unlock_irqrestore`.
pub struct IrqSpinLock {
    locked: AtomicBool,
    /// Whether the holder had interrupts on; written by the holder only, under the lock.
    irqs_were_on: AtomicBool,
}

// SAFETY: `locked` goes from false to true by a compare-and-swap with `Acquire` and back by
// a `Release` store in `unlock`, so one holder at a time, ordered after the previous one;
// the saved interrupt state is written after the swap and read before the release, by the
// holder only.
unsafe impl RawMutex for IrqSpinLock {
    #[allow(clippy::declare_interior_mutable_const)] // lock_api's initialiser, copied
    const INIT: IrqSpinLock = IrqSpinLock {
        locked: AtomicBool::new(false),
        irqs_were_on: AtomicBool::new(false),
    };
    type GuardMarker = GuardSend;

    fn lock(&self) {
        loop {
            if self.try_lock() {
                return;
            }
            // Wait with interrupts as they were, as `spin_lock_irqsave` does.
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    fn try_lock(&self) -> bool {
        let on = irq_save();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            self.irqs_were_on.store(on, Ordering::Relaxed);
            true
        } else {
            irq_restore(on);
            false
        }
    }

    unsafe fn unlock(&self) {
        let on = self.irqs_were_on.load(Ordering::Relaxed);
        self.locked.store(false, Ordering::Release);
        irq_restore(on);
    }
}
