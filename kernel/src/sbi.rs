//! The two SBI calls the kernel makes to OpenSBI (RISC-V SBI specification v1.0).

/// Hart State Management extension ("HSM").
const EID_HSM: usize = 0x0048_534D;
const FID_HART_START: usize = 0;

/// `sbi_hart_start(hartid, start_addr, opaque)`: OpenSBI starts the stopped hart `hartid`
/// in S-mode at `start_addr` with a0 = its hart id, a1 = `opaque`, paging off. Returns the
/// SBI error code (0 on success).
pub fn hart_start(hartid: usize, start_addr: usize, opaque: usize) -> isize {
    let error: isize;
    // SAFETY: an `ecall` into the SBI firmware; it clobbers only a0/a1 (the return pair),
    // reads a0..a2, a6, a7, and touches no memory of ours.
    unsafe {
        core::arch::asm!(
            "ecall",
            inlateout("a0") hartid => error,
            inlateout("a1") start_addr => _,
            in("a2") opaque,
            in("a6") FID_HART_START,
            in("a7") EID_HSM,
            options(nostack),
        );
    }
    error
}

/// The `time` CSR: ticks at the device tree's `/cpus/timebase-frequency`.
pub fn rdtime() -> u64 {
    let t: u64;
    // SAFETY: reading the `time` CSR has no side effect (OpenSBI delegates or emulates it).
    unsafe { core::arch::asm!("rdtime {}", out(reg) t, options(nomem, nostack)) };
    t
}

/// This hart's dense CPU index, which the entry code keeps in `tp` (see `boot.rs`).
pub fn cpu_index() -> usize {
    let tp: usize;
    // SAFETY: reading a register; `tp` is set once by the entry code and never changed.
    unsafe { core::arch::asm!("mv {}, tp", out(reg) tp, options(nomem, nostack)) };
    tp
}
