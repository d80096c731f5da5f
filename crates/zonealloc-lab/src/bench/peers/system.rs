//! The system's allocators: glibc's `posix_memalign`, mimalloc (feature `mimalloc`) and the
//! kernel's own page allocator through `mmap`. They keep no state here, so after a run only
//! the runner's count of live blocks says that everything came back.

#[cfg(feature = "mimalloc")]
use std::alloc::GlobalAlloc;

#[cfg(feature = "mimalloc")]
use super::block_layout;
use super::{PageSource, PageWorker, Token, PAGE_BYTES};

/// glibc `posix_memalign` + `free`. Stateless: conservation is the runner's count only.
#[derive(Debug, Default)]
pub struct PosixMemalign;

impl PageWorker for PosixMemalign {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer; the alignment is a power of two and a multiple
        // of `sizeof(void *)`.
        let rc = unsafe { libc::posix_memalign(&mut p, PAGE_BYTES, PAGE_BYTES << o) };
        (rc == 0 && !p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, _o: u8) {
        // SAFETY: `token` came from `posix_memalign` and is freed once.
        unsafe { libc::free(token as *mut libc::c_void) };
    }
}

impl PageSource for PosixMemalign {
    type Worker<'a> = PosixMemalign;

    fn worker(&self, _thread: usize) -> PosixMemalign {
        PosixMemalign
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}

/// mimalloc's aligned allocation. Stateless: conservation is the runner's count only.
#[cfg(feature = "mimalloc")]
#[derive(Debug, Default)]
pub struct Mimalloc;

#[cfg(feature = "mimalloc")]
impl PageWorker for Mimalloc {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { GlobalAlloc::alloc(&mimalloc::MiMalloc, block_layout(o)) };
        (!p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token` came from `MiMalloc::alloc` with this layout and is freed once.
        unsafe { GlobalAlloc::dealloc(&mimalloc::MiMalloc, token as *mut u8, block_layout(o)) };
    }
}

#[cfg(feature = "mimalloc")]
impl PageSource for Mimalloc {
    type Worker<'a> = Mimalloc;

    fn worker(&self, _thread: usize) -> Mimalloc {
        Mimalloc
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `mmap` + touch + `munmap`. Stateless: conservation is the runner's count only.
#[derive(Debug, Default)]
pub struct Mmap;

impl PageWorker for Mmap {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        let len = PAGE_BYTES << o;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing
        // aliases nothing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let base = p.cast::<u8>();
        for page in 0..(1usize << o) {
            // SAFETY: `page * PAGE_BYTES < len`, inside the fresh writable mapping; the
            // volatile write makes sure each page is really faulted in.
            unsafe { base.add(page * PAGE_BYTES).write_volatile(1) };
        }
        Some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token..token + len` is a mapping made by `alloc` and unmapped once.
        let rc = unsafe { libc::munmap(token as *mut libc::c_void, PAGE_BYTES << o) };
        assert_eq!(rc, 0, "munmap failed: {}", std::io::Error::last_os_error());
    }
}

impl PageSource for Mmap {
    type Worker<'a> = Mmap;

    fn worker(&self, _thread: usize) -> Mmap {
        Mmap
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}
