//! Entry code: the boot hart from OpenSBI, the other harts from `sbi_hart_start`.
//!
//! OpenSBI enters `_start` in S-mode on one hart (chosen by lottery, not necessarily hart 0),
//! paging off, interrupts off, with a0 = hart id and a1 = the device tree. The boot hart
//! zeroes `.bss`, then every hart takes the stack of its dense CPU index, keeps that index in
//! `tp` (the per-hart register the Rust code reads its CPU id from, see
//! [`crate::sbi::cpu_index`]), enables the FPU state (so compiler-generated code may use it),
//! installs the trap vector and calls Rust. The boot hart has index 0; the others get their
//! index as the `opaque` argument of `sbi_hart_start`.

use crate::{boot_main, secondary_main, MAX_CPUS};

/// Stack bytes per hart, as a shift (the entry code has no `mul`): 256 KiB (a NUMA node,
/// some 45 KiB, passes through the boot hart's stack while the machine is built).
const STACK_SHIFT: usize = 18;

core::arch::global_asm!(
    r#"
    .section .text.entry, "ax"
    .globl _start
_start:
    la      t0, __bss_start
    la      t1, __bss_end
1:  bgeu    t0, t1, 2f
    sd      zero, 0(t0)
    addi    t0, t0, 8
    j       1b
2:  li      a2, 0
    la      t2, {boot}
    j       3f

    .globl _secondary_start
_secondary_start:
    mv      a2, a1
    li      a1, 0
    la      t2, {secondary}
3:  la      sp, __stacks
    addi    t0, a2, 1
    slli    t0, t0, {stack_shift}
    add     sp, sp, t0
    mv      tp, a2
    li      t0, 0x2000
    csrs    sstatus, t0
    csrw    sie, zero
    la      t0, __trap_vector
    csrw    stvec, t0
    jalr    t2
4:  wfi
    j       4b

    .align 2
__trap_vector:
    csrr    a0, scause
    csrr    a1, sepc
    csrr    a2, stval
    call    {trap}

    .section .bss.stacks, "aw", @nobits
    .align 12
    .globl __stacks
__stacks:
    .space {stacks_total}
"#,
    boot = sym boot_main,
    secondary = sym secondary_main,
    trap = sym trap,
    stack_shift = const STACK_SHIFT,
    stacks_total = const MAX_CPUS << STACK_SHIFT,
);

extern "C" {
    /// The secondary harts' entry point above (a0 = hart id, a1 = CPU index).
    fn _secondary_start();
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// Where `sbi_hart_start` should start a secondary hart.
pub fn secondary_entry() -> usize {
    _secondary_start as *const () as usize
}

/// The kernel image's physical extent (text to the end of `.bss` and the stacks).
pub fn kernel_extent() -> (u64, u64) {
    // Only the symbols' addresses are taken, never their contents.
    (
        core::ptr::addr_of!(__kernel_start) as u64,
        core::ptr::addr_of!(__kernel_end) as u64,
    )
}

/// No trap is expected (interrupts are off, nothing faults on purpose): report it and fail.
extern "C" fn trap(scause: usize, sepc: usize, stval: usize) -> ! {
    crate::serial::print_unlocked(format_args!(
        "\nTRAP on cpu {}: scause {scause:#x} sepc {sepc:#x} stval {stval:#x}\n",
        crate::sbi::cpu_index()
    ));
    crate::serial::exit(3)
}
