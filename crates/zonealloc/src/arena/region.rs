//! The memory under an arena: one region, aligned to the arena's largest block, from an
//! anonymous private `mmap` (optionally `MAP_HUGETLB`, `MAP_POPULATE`, or `madvise`d with
//! `MADV_HUGEPAGE`) or, for [`Backing::Heap`], from the global allocator.
//!
//! Alignment comes from over-mapping: map `len + align - granule` bytes, keep the aligned
//! `len` bytes inside and `munmap` the head and tail around them (the way
//! `mm/mmap.c`'s `thp_get_unmapped_area` pads a request to find an aligned address). The
//! granule is the base page, or the huge page for `MAP_HUGETLB`, whose mappings can only be
//! unmapped in whole huge pages.

use core::ptr::NonNull;
use std::alloc::Layout;

use super::error::ArenaError;
use super::{Backing, HugePages};

/// An owned, aligned, read-write region. Unmapped (or deallocated) on drop.
#[derive(Debug)]
pub(crate) struct Region {
    /// Start of the usable region, aligned to `align` bytes.
    base: NonNull<u8>,
    /// Usable bytes from `base`.
    len: usize,
    /// What to give back on drop.
    owner: Owner,
}

#[derive(Debug)]
enum Owner {
    /// The mapping to unmap on drop: `base..base + len` once the head and tail were trimmed
    /// at creation, or (under Miri, whose `munmap` takes only whole mappings) all of it.
    Mmap { start: NonNull<u8>, len: usize },
    /// `std::alloc::alloc_zeroed` with this layout, starting at `base`.
    Heap(Layout),
}

// SAFETY: a `Region` is the sole owner of its memory (like a `Box<[u8]>`); it hands out only
// its base address, and the arena's zone decides who may touch which page. Moving the owner
// to another thread and unmapping it there is sound.
unsafe impl Send for Region {}
// SAFETY: `&Region` gives only the base address and the length, both immutable.
unsafe impl Sync for Region {}

/// `sysconf(_SC_PAGESIZE)`: the base page size of the machine.
pub(crate) fn system_page_size() -> usize {
    // SAFETY: `sysconf` reads a configuration value; it takes no pointers.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

/// The default huge page size (`Hugepagesize` in `/proc/meminfo`), 2 MiB if it cannot be read.
pub(crate) fn huge_page_size() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Hugepagesize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(2 << 20, |kb| kb << 10)
}

/// `vm.nr_hugepages`, if readable.
pub(crate) fn nr_hugepages() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Region {
    /// A region of `len` bytes aligned to `align` (a power of two, a multiple of the page
    /// size; `len` a multiple of `align`).
    pub(crate) fn new(
        len: usize,
        align: usize,
        backing: Backing,
        huge: HugePages,
        populate: bool,
    ) -> Result<Region, ArenaError> {
        debug_assert!(align.is_power_of_two() && len % align == 0);
        match backing {
            Backing::Heap => Self::heap(len, align),
            Backing::Mmap => Self::mmap(len, align, huge, populate),
        }
    }

    fn heap(len: usize, align: usize) -> Result<Region, ArenaError> {
        let layout = Layout::from_size_align(len, align)
            .map_err(|_| ArenaError::TooLarge { bytes: len as u64 })?;
        // SAFETY: `layout` has a non-zero size (the arena has at least one block).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(p).ok_or(ArenaError::Map {
            bytes: len as u64,
            errno: libc::ENOMEM,
        })?;
        Ok(Region {
            base,
            len,
            owner: Owner::Heap(layout),
        })
    }

    fn mmap(
        len: usize,
        align: usize,
        huge: HugePages,
        populate: bool,
    ) -> Result<Region, ArenaError> {
        let explicit = matches!(huge, HugePages::Explicit);
        let granule = if explicit {
            huge_page_size()
        } else {
            system_page_size()
        };
        let align = align.max(granule);
        let map_len = len
            .checked_add(align - granule)
            .ok_or(ArenaError::TooLarge { bytes: len as u64 })?;
        let flags = mmap_flags(explicit, populate);
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing: it
        // cannot overlap any memory Rust knows about. The result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(map_error(errno(), explicit, map_len, granule));
        }
        // Pointer arithmetic, not integer casts, so that the pointers keep the mapping's
        // provenance (strict provenance, which Miri checks).
        let start = p.cast::<u8>();
        let head = (start as usize).wrapping_neg() & (align - 1);
        let tail = map_len - head - len;
        let aligned = start.wrapping_add(head);
        // The trims cannot fail on ranges inside our own mapping, both multiples of the
        // granule; should one fail, the bytes stay mapped and are merely wasted. Miri cannot
        // unmap part of a mapping, so there the padding stays mapped until drop.
        let trim = !cfg!(miri);
        let owned = if trim {
            (aligned, len)
        } else {
            (start, map_len)
        };
        if trim && head > 0 {
            // SAFETY: `start..aligned` is the head of the mapping just created, used by no one.
            unsafe { libc::munmap(p, head) };
        }
        if trim && tail > 0 {
            // SAFETY: `aligned + len..start + map_len` is the tail of the same fresh mapping.
            unsafe { libc::munmap(aligned.wrapping_add(len).cast(), tail) };
        }
        // `aligned` and `start` lie inside a successful mapping, so they are not null.
        let not_null = |q: *mut u8| {
            NonNull::new(q).ok_or(ArenaError::Map {
                bytes: map_len as u64,
                errno: libc::EFAULT,
            })
        };
        let base = not_null(aligned)?;
        let owned = (not_null(owned.0)?, owned.1);
        let region = Region {
            base,
            len,
            owner: Owner::Mmap {
                start: owned.0,
                len: owned.1,
            },
        };
        if matches!(huge, HugePages::Transparent) {
            // SAFETY: the range is exactly our mapping; MADV_HUGEPAGE only changes how the
            // kernel backs it (khugepaged may collapse it), never its contents.
            let r = unsafe {
                libc::madvise(region.base.as_ptr().cast(), region.len, libc::MADV_HUGEPAGE)
            };
            if r != 0 {
                // `region` is dropped here and unmaps itself.
                return Err(ArenaError::Madvise {
                    advice: "MADV_HUGEPAGE",
                    errno: errno(),
                });
            }
        }
        Ok(region)
    }

    /// Start of the region.
    #[inline]
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        match self.owner {
            Owner::Mmap { start, len } => {
                // SAFETY: `start..start + len` is the mapping this region owns (it contains
                // `base..base + len`); the arena that owns the region is being dropped, so no
                // `PageBlock` (which borrows it) is alive. Raw blocks still outstanding
                // dangle, as documented on `PageArena`.
                unsafe { libc::munmap(start.as_ptr().cast(), len) };
            }
            Owner::Heap(layout) => {
                // SAFETY: `base` came from `alloc_zeroed(layout)` and is freed once, here.
                unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
            }
        }
    }
}

/// The flags of an anonymous private mapping: `MAP_HUGETLB` for explicit huge pages (else
/// `MAP_NORESERVE`), `MAP_POPULATE` where asked.
fn mmap_flags(explicit: bool, populate: bool) -> libc::c_int {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if explicit {
        // Without MAP_NORESERVE the kernel reserves the huge pages now and fails the
        // mmap with ENOMEM if the pool is short; with it, the first touch would SIGBUS.
        flags |= libc::MAP_HUGETLB;
    } else if !cfg!(miri) {
        // (Miri accepts only MAP_PRIVATE | MAP_ANONYMOUS.)
        flags |= libc::MAP_NORESERVE;
    }
    if populate {
        flags |= libc::MAP_POPULATE;
    }
    flags
}

/// The error of a failed `mmap` of `map_len` bytes with `errno` `e`: for explicit huge pages
/// of `granule` bytes, ENOMEM or EINVAL is a short huge-page pool.
fn map_error(e: libc::c_int, explicit: bool, map_len: usize, granule: usize) -> ArenaError {
    if explicit && (e == libc::ENOMEM || e == libc::EINVAL) {
        return ArenaError::NoHugePages {
            bytes: map_len as u64,
            huge_page_bytes: granule as u64,
            nr_hugepages: nr_hugepages(),
            errno: e,
        };
    }
    ArenaError::Map {
        bytes: map_len as u64,
        errno: e,
    }
}
