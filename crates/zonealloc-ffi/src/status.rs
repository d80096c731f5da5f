//! Status codes, their messages (`za_strerror`), the mapping from the allocator's typed
//! errors, and the `catch_unwind` guard every exported function runs under, with the
//! message of the last panic it caught (`za_last_panic_message`).

use core::cell::{Cell, RefCell};
use core::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe, PanicHookInfo};
use std::string::String;
use std::sync::Once;

use zonealloc::arena::{ArenaError, ArenaFreeError};
use zonealloc::{AllocError, ConfigError, FreeError, MigrateType, Order};

/// What a libzonealloc call did. `ZA_OK` is 0; every error is positive.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum za_status {
    /// Success.
    ZA_OK = 0,
    /// A required pointer argument was NULL.
    ZA_ERR_NULL = 1,
    /// A handle was not aligned for its type, or an arena pointer was not at a page start.
    ZA_ERR_MISALIGNED = 2,
    /// The handle is not a live handle of the expected type (destroyed, or another type).
    ZA_ERR_BAD_HANDLE = 3,
    /// An argument is out of range (unknown flag bits, say).
    ZA_ERR_INVALID_ARGUMENT = 4,
    /// The configuration was rejected (orders, page size, span, per-CPU settings).
    ZA_ERR_CONFIG = 5,
    /// No free block of the requested order.
    ZA_ERR_OUT_OF_MEMORY = 6,
    /// The order exceeds the zone's maximum order.
    ZA_ERR_ORDER_TOO_LARGE = 7,
    /// The migratetype is not 0 (unmovable), 1 (movable) or 2 (reclaimable).
    ZA_ERR_INVALID_MIGRATETYPE = 8,
    /// The block is already free.
    ZA_ERR_DOUBLE_FREE = 9,
    /// The frame is inside an allocated block but is not its first frame.
    ZA_ERR_NOT_BLOCK_HEAD = 10,
    /// The block was allocated with another order.
    ZA_ERR_WRONG_ORDER = 11,
    /// The frame is outside the zone.
    ZA_ERR_OUT_OF_ZONE = 12,
    /// The frame is in a hole: never handed to the allocator.
    ZA_ERR_NOT_MANAGED = 13,
    /// The frame is not aligned to the order given.
    ZA_ERR_BLOCK_MISALIGNED = 14,
    /// The pointer is not inside the arena.
    ZA_ERR_FOREIGN_POINTER = 15,
    /// Mapping the arena's memory failed.
    ZA_ERR_MAP_FAILED = 16,
    /// Too few huge pages are reserved for `ZA_ARENA_HUGETLB` (see `vm.nr_hugepages`).
    ZA_ERR_NO_HUGE_PAGES = 17,
    /// `madvise` failed (`ZA_ARENA_THP` on a kernel without transparent huge pages).
    ZA_ERR_MADVISE = 18,
    /// The text does not fit the buffer; the size needed was stored.
    ZA_ERR_BUFFER_TOO_SMALL = 19,
    /// An invariant check failed (a bug in libzonealloc, or memory corruption).
    ZA_ERR_CHECK_FAILED = 20,
    /// libzonealloc panicked; the call was abandoned (a bug in libzonealloc).
    /// `za_last_panic_message` gives the message.
    ZA_ERR_PANIC = 21,
    /// The zone's span ends so close to 2^64 that its largest blocks would pass 2^64.
    ZA_ERR_SPAN_OVERFLOW = 22,
}

use za_status::*;

/// A static, NUL-terminated English description of a status code (the integer value of a
/// `za_status`); "unknown status" for any other value. Never NULL.
#[no_mangle]
pub extern "C" fn za_strerror(status: i32) -> *const c_char {
    let s: &'static core::ffi::CStr = match status {
        0 => c"success",
        1 => c"a required pointer argument is NULL",
        2 => c"pointer or handle is misaligned (arena pointers must be at a page start)",
        3 => c"not a live handle of this type",
        4 => c"invalid argument",
        5 => c"invalid configuration",
        6 => c"out of memory: no free block of this order",
        7 => c"order exceeds the maximum order",
        8 => c"invalid migratetype (use 0 unmovable, 1 movable, 2 reclaimable)",
        9 => c"double free",
        10 => c"not the head of an allocated block",
        11 => c"block was allocated with another order",
        12 => c"frame outside the zone",
        13 => c"frame in a hole, never managed",
        14 => c"frame not aligned to the order",
        15 => c"pointer is not inside the arena",
        16 => c"mapping memory failed",
        17 => c"not enough huge pages reserved: raise the vm.nr_hugepages sysctl",
        18 => c"madvise failed (no transparent huge pages?)",
        19 => c"buffer too small",
        20 => c"invariant check failed",
        21 => c"internal panic (bug in libzonealloc; see za_last_panic_message)",
        22 => c"zone span ends too close to 2^64",
        _ => c"unknown status",
    };
    s.as_ptr()
}

thread_local! {
    /// Whether this thread is inside `guard`: its panics are the library's, recorded and not
    /// printed.
    static IN_GUARD: Cell<bool> = const { Cell::new(false) };
    /// The message of the last panic `guard` caught on this thread.
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

static HOOK: Once = Once::new();

/// Puts the library's panic hook in front of the host's, once per process: a panic inside
/// `guard` is recorded in `LAST_PANIC` and prints nothing (the host's stderr is the host's);
/// any other panic goes to the hook that was installed before, exactly as without the library.
fn install_hook() {
    HOOK.call_once(|| {
        let host = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_GUARD.try_with(Cell::get).unwrap_or(false) {
                let msg = panic_message(info);
                let _ = LAST_PANIC.try_with(|m| *m.borrow_mut() = msg);
            } else {
                host(info);
            }
        }));
    });
}

/// "message at file:line:column", as the default hook prints it.
fn panic_message(info: &PanicHookInfo<'_>) -> String {
    let p = info.payload();
    let what = p
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("Box<dyn Any>");
    match info.location() {
        Some(l) => format!("{what} at {}:{}:{}", l.file(), l.line(), l.column()),
        None => what.to_owned(),
    }
}

/// Runs an exported function's body: a panic becomes `ZA_ERR_PANIC` instead of unwinding
/// into C (undefined behaviour) or aborting, prints nothing, and leaves its message for
/// `za_last_panic_message`.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), za_status>) -> za_status {
    install_hook();
    let outer = IN_GUARD.replace(true);
    let r = catch_unwind(AssertUnwindSafe(f));
    IN_GUARD.set(outer);
    match r {
        Ok(Ok(())) => ZA_OK,
        Ok(Err(e)) => e,
        Err(_) => ZA_ERR_PANIC,
    }
}

/// Copies the message of the last panic libzonealloc caught on the calling thread (the call
/// returned `ZA_ERR_PANIC`) into `buf`, NUL-terminated, as `za_zone_buddyinfo` copies text:
/// `ZA_ERR_BUFFER_TOO_SMALL` (nothing written) when `len` is too small, with the size needed
/// stored in `*needed` if `needed` is not NULL. The message is empty when no call panicked
/// on this thread. libzonealloc never prints a panic itself.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes; `needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_last_panic_message(
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    let msg = LAST_PANIC.with(|m| m.borrow().clone());
    guard(|| {
        // SAFETY: forwarded contract.
        unsafe { crate::text::copy_out(&msg, buf, len, needed) }
    })
}

/// An order from C, checked against the library-wide limit (the zone checks its own).
pub(crate) fn order_arg(order: u32) -> Result<Order, za_status> {
    u8::try_from(order)
        .ok()
        .and_then(Order::new)
        .ok_or(ZA_ERR_ORDER_TOO_LARGE)
}

/// A migratetype from C: its kernel number.
pub(crate) fn migratetype_arg(mt: u32) -> Result<MigrateType, za_status> {
    usize::try_from(mt)
        .ok()
        .and_then(MigrateType::from_index)
        .ok_or(ZA_ERR_INVALID_MIGRATETYPE)
}

impl From<AllocError> for za_status {
    fn from(e: AllocError) -> Self {
        match e {
            AllocError::OutOfMemory { .. } | AllocError::NoZone => ZA_ERR_OUT_OF_MEMORY,
            AllocError::OrderTooLarge { .. } => ZA_ERR_ORDER_TOO_LARGE,
            AllocError::InvalidMigrateType(_) => ZA_ERR_INVALID_MIGRATETYPE,
            // `AllocError` is `#[non_exhaustive]`: a variant added later is still a failed
            // allocation.
            _ => ZA_ERR_OUT_OF_MEMORY,
        }
    }
}

impl From<FreeError> for za_status {
    fn from(e: FreeError) -> Self {
        match e {
            FreeError::DoubleFree { .. } => ZA_ERR_DOUBLE_FREE,
            FreeError::NotBlockHead { .. } => ZA_ERR_NOT_BLOCK_HEAD,
            FreeError::WrongOrder { .. } => ZA_ERR_WRONG_ORDER,
            FreeError::OutOfZone { .. } => ZA_ERR_OUT_OF_ZONE,
            FreeError::NotManaged { .. } => ZA_ERR_NOT_MANAGED,
            FreeError::Misaligned { .. } => ZA_ERR_BLOCK_MISALIGNED,
            FreeError::OrderTooLarge { .. } => ZA_ERR_ORDER_TOO_LARGE,
            // `#[non_exhaustive]`: a refusal added later is a bad argument.
            _ => ZA_ERR_INVALID_ARGUMENT,
        }
    }
}

impl From<ArenaFreeError> for za_status {
    fn from(e: ArenaFreeError) -> Self {
        match e {
            ArenaFreeError::Null => ZA_ERR_NULL,
            ArenaFreeError::Foreign { .. } => ZA_ERR_FOREIGN_POINTER,
            ArenaFreeError::Misaligned { .. } => ZA_ERR_MISALIGNED,
            ArenaFreeError::Free(f) => f.into(),
            // `#[non_exhaustive]`: a refusal added later is a bad argument.
            _ => ZA_ERR_INVALID_ARGUMENT,
        }
    }
}

impl From<ConfigError> for za_status {
    fn from(e: ConfigError) -> Self {
        match e {
            // The config was valid; the heap could not hold its metadata table.
            ConfigError::TableAllocation { .. } => ZA_ERR_OUT_OF_MEMORY,
            ConfigError::SpanOverflow { .. } => ZA_ERR_SPAN_OVERFLOW,
            _ => ZA_ERR_CONFIG,
        }
    }
}

impl From<ArenaError> for za_status {
    fn from(e: ArenaError) -> Self {
        match e {
            ArenaError::Config(_)
            | ArenaError::Empty
            | ArenaError::TooLarge { .. }
            | ArenaError::PageSizeBelowSystem { .. } => ZA_ERR_CONFIG,
            ArenaError::Map { .. } => ZA_ERR_MAP_FAILED,
            ArenaError::NoHugePages { .. } => ZA_ERR_NO_HUGE_PAGES,
            ArenaError::Madvise { .. } => ZA_ERR_MADVISE,
            // `#[non_exhaustive]`: a reason added later is a rejected configuration.
            _ => ZA_ERR_CONFIG,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ffi::CStr;

    /// The highest status code.
    const LAST: za_status = ZA_ERR_SPAN_OVERFLOW;

    #[test]
    fn every_status_has_its_own_message_and_unknown_codes_are_named() {
        let mut seen = std::collections::HashSet::new();
        for code in 0..=LAST as i32 {
            // SAFETY: za_strerror returns a pointer to a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(za_strerror(code)) };
            assert!(seen.insert(s.to_owned()), "duplicate message for {code}");
            assert_ne!(s.to_str().unwrap(), "unknown status");
        }
        for code in [-1, LAST as i32 + 1, i32::MAX, i32::MIN] {
            // SAFETY: as above.
            let s = unsafe { CStr::from_ptr(za_strerror(code)) };
            assert_eq!(s.to_str().unwrap(), "unknown status");
        }
    }

    /// Issue 13, item 5: the message of a caught panic is kept for `za_last_panic_message`
    /// (no hook swapping by the test: the library's own hook keeps it quiet).
    #[test]
    fn a_panic_becomes_a_status_and_its_message_is_kept() {
        let got = guard(|| panic!("boom {}", 7));
        assert_eq!(got, ZA_ERR_PANIC);
        let mut needed = 0usize;
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` is writable for its length; `needed` is a valid out-pointer.
        let s = unsafe { za_last_panic_message(buf.as_mut_ptr(), buf.len(), &mut needed) };
        assert_eq!(s, ZA_OK);
        // SAFETY: NUL-terminated by the successful call.
        let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert!(msg.starts_with("boom 7 at "), "{msg}");
        assert!(msg.contains("status.rs"), "{msg}");
        assert_eq!(needed, msg.len() + 1);
        // Too small: nothing written, the size needed stored.
        let mut tiny = [b'x' as c_char; 4];
        // SAFETY: as above.
        let s = unsafe { za_last_panic_message(tiny.as_mut_ptr(), tiny.len(), &mut needed) };
        assert_eq!(s, ZA_ERR_BUFFER_TOO_SMALL);
        assert_eq!(tiny[0], b'x' as c_char);
        assert_eq!(needed, msg.len() + 1);
        assert_eq!(guard(|| Err(ZA_ERR_NULL)), ZA_ERR_NULL);
        assert_eq!(guard(|| Ok(())), ZA_OK);
        // Per thread: another thread has no message.
        std::thread::spawn(|| {
            let mut needed = 0usize;
            // SAFETY: NULL buffer of length 0 asks for the size only.
            let s = unsafe { za_last_panic_message(core::ptr::null_mut(), 0, &mut needed) };
            assert_eq!((s, needed), (ZA_ERR_BUFFER_TOO_SMALL, 1));
        })
        .join()
        .unwrap();
    }

    /// Issue 13, item 5: a panic inside the library prints nothing on stderr, while a panic
    /// outside it still reaches the host's hook. Runs itself as a child process (stderr of the
    /// test process is what is checked), with `--nocapture` so that output would show.
    #[test]
    #[cfg_attr(miri, ignore = "spawns a process")]
    fn a_caught_panic_prints_nothing_and_host_panics_still_print() {
        const CHILD: &str = "ZA_PANIC_CHILD";
        if std::env::var_os(CHILD).is_some() {
            assert_eq!(guard(|| panic!("inside-the-library")), ZA_ERR_PANIC);
            let host = std::panic::catch_unwind(|| panic!("outside-the-library"));
            assert!(host.is_err());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "status::tests::a_caught_panic_prints_nothing_and_host_panics_still_print",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
        assert!(out.status.success(), "{all}");
        assert!(all.contains("1 passed"), "the child ran no test: {all}");
        assert!(!err.contains("inside-the-library"), "stderr: {err}");
        assert!(err.contains("outside-the-library"), "stderr: {err}");
    }

    #[test]
    fn orders_and_migratetypes_from_c_are_range_checked() {
        assert_eq!(order_arg(3).unwrap().get(), 3);
        assert_eq!(order_arg(21), Err(ZA_ERR_ORDER_TOO_LARGE));
        assert_eq!(order_arg(256), Err(ZA_ERR_ORDER_TOO_LARGE));
        assert_eq!(migratetype_arg(1), Ok(MigrateType::Movable));
        assert_eq!(migratetype_arg(5), Err(ZA_ERR_INVALID_MIGRATETYPE));
        assert_eq!(migratetype_arg(u32::MAX), Err(ZA_ERR_INVALID_MIGRATETYPE));
    }
}
