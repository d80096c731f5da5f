//! Output on the virt machine's 16550 UART, and leaving QEMU with a status.
//!
//! OpenSBI has already programmed the UART (baud rate, 8N1), so writing a byte is a wait for
//! an empty transmit holding register and a store. A spin lock keeps lines from different
//! harts whole; the panic path writes without it, so that a panic while a line is being
//! printed still comes out.

use core::fmt::{self, Write};

/// The UART's registers on QEMU's virt machine (`/soc/serial@10000000`, ns16550a).
const UART_BASE: usize = 0x1000_0000;
/// Line status register offset, and its "transmit holding register empty" bit.
const UART_LSR: usize = 5;
const LSR_THRE: u8 = 1 << 5;

/// The virt machine's SiFive test device (`/soc/test@100000`): a 32-bit store ends QEMU.
const TEST_BASE: usize = 0x10_0000;
const TEST_PASS: u32 = 0x5555;
const TEST_FAIL: u32 = 0x3333;

/// The UART, as a `fmt::Write` sink.
pub struct Uart;

impl Uart {
    fn put(&mut self, b: u8) {
        // SAFETY: UART_BASE is the 16550's MMIO window on the virt machine (identity mapped,
        // paging is off); byte loads of LSR and byte stores to THR have no effect on memory.
        unsafe {
            while core::ptr::read_volatile((UART_BASE + UART_LSR) as *const u8) & LSR_THRE == 0 {}
            core::ptr::write_volatile(UART_BASE as *mut u8, b);
        }
    }
}

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

static SERIAL: spin::Mutex<Uart> = spin::Mutex::new(Uart);

/// Prints under the serial lock (used by `println!`).
pub fn print(args: fmt::Arguments<'_>) {
    // A write to the UART cannot fail.
    let _ = SERIAL.lock().write_fmt(args);
}

/// Prints without the lock: for the panic and trap paths, which may interrupt a holder.
pub fn print_unlocked(args: fmt::Arguments<'_>) {
    let _ = Uart.write_fmt(args);
}

/// `println!` to the serial port.
#[macro_export]
macro_rules! println {
    () => { $crate::serial::print(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::serial::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Ends QEMU: status 0 for `code == 0`, else `code` (1..=0xffff) as QEMU's exit status.
pub fn exit(code: u16) -> ! {
    let value = if code == 0 {
        TEST_PASS
    } else {
        (u32::from(code) << 16) | TEST_FAIL
    };
    // SAFETY: TEST_BASE is the virt machine's test device (identity mapped); a 32-bit store
    // of PASS or FAIL|code makes QEMU exit, and touches no memory.
    unsafe { core::ptr::write_volatile(TEST_BASE as *mut u32, value) };
    loop {
        core::hint::spin_loop();
    }
}
