//! Opaque handles with a type tag, and their checks: NULL, alignment, then the tag.
//!
//! A handle is a `Box` of a `repr(C)` struct whose first field is a tag naming its type;
//! `*_destroy` overwrites the tag before freeing. Checking the tag catches a handle of the wrong type and a
//! handle destroyed while its memory is still mapped. It cannot make a wild pointer safe to
//! read: a pointer to memory that is not mapped at all still faults, as in any C library.

use crate::status::za_status::{self, *};

/// A type handed to C behind a pointer.
pub(crate) trait Handle: Sized {
    /// The tag a live handle of this type carries.
    const TAG: u64;
    /// The tag of a destroyed handle.
    const DEAD: u64 = 0xdead_dead_dead_dead;

    /// Address of the tag of the handle at `p`.
    fn tag_ptr(p: *const Self) -> *const u64;
}

/// Checks `p` and borrows the handle.
///
/// # Safety
/// `p` is NULL or points to readable memory at least as large as `T` (the caller's
/// contract: a handle of this library, live or a pointer the C caller believes to be one).
pub(crate) unsafe fn live<'a, T: Handle>(p: *const T) -> Result<&'a T, za_status> {
    if p.is_null() {
        return Err(ZA_ERR_NULL);
    }
    if !p.is_aligned() {
        return Err(ZA_ERR_MISALIGNED);
    }
    // SAFETY: `p` is non-null and aligned, and by the contract points to readable memory of
    // `T`'s size; the tag is a plain `u64`, valid for any bit pattern.
    let tag = unsafe { T::tag_ptr(p).read() };
    if tag != T::TAG {
        return Err(ZA_ERR_BAD_HANDLE);
    }
    // SAFETY: the tag says this is a live `T` made by `publish`, which is only freed by
    // `destroy` (after which the tag no longer matches while the memory stays readable).
    Ok(unsafe { &*p })
}

/// Checks `out`, moves `value` to the heap and stores its handle in `*out` for C.
///
/// # Safety
/// `out` is NULL or points to memory writable for a pointer.
pub(crate) unsafe fn publish<T: Handle>(out: *mut *mut T, value: T) -> Result<(), za_status> {
    if out.is_null() {
        return Err(ZA_ERR_NULL);
    }
    if !out.is_aligned() {
        return Err(ZA_ERR_MISALIGNED);
    }
    // SAFETY: checked non-null and aligned; writable by the contract.
    unsafe { out.write(Box::into_raw(Box::new(value))) };
    Ok(())
}

/// Checks `p`, clears its tag and frees it (a handle made by [`publish`]).
///
/// # Safety
/// As for [`live`]; and no other thread uses the handle during or after this call.
pub(crate) unsafe fn destroy<T: Handle>(p: *mut T) -> Result<(), za_status> {
    // SAFETY: forwarded contract.
    unsafe { live(p.cast_const())? };
    // SAFETY: `p` is a live handle made by `publish` (`Box::into_raw`), used by no one
    // else (the contract); clearing the tag first makes a later use of the dangling handle
    // fail the tag check while the allocator has not reused the memory.
    unsafe {
        T::tag_ptr(p).cast_mut().write(T::DEAD);
        drop(Box::from_raw(p));
    }
    Ok(())
}
