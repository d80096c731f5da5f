//! The arena's typed errors: creating one ([`ArenaError`]) and freeing a raw pointer
//! ([`ArenaFreeError`]). Allocation failures are the zone's [`AllocError`](crate::AllocError).

use core::fmt;

use crate::error::{ConfigError, FreeError};

/// Why a [`PageArena`](super::PageArena) could not be created.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ArenaError {
    /// The zone configuration was rejected.
    Config(ConfigError),
    /// The arena would hold no pages.
    Empty,
    /// The region's size does not fit the address space (or the zone's 2^32 frames).
    TooLarge {
        /// Bytes asked for.
        bytes: u64,
    },
    /// The zone's page size is below the machine's base page size, so pages could not be
    /// mapped, advised or protected one by one.
    PageSizeBelowSystem {
        /// The configured page size in bytes.
        page_size: u64,
        /// `sysconf(_SC_PAGESIZE)`.
        system_page_size: u64,
    },
    /// `mmap` (or the global allocator, for [`Backing::Heap`](super::Backing::Heap)) failed.
    Map {
        /// Bytes asked for, including the padding that aligns the region.
        bytes: u64,
        /// The `errno` it failed with.
        errno: i32,
    },
    /// `mmap` with `MAP_HUGETLB` failed: the hugetlb pool has too few free huge pages.
    NoHugePages {
        /// Bytes asked for, including the padding that aligns the region.
        bytes: u64,
        /// The huge page size (`Hugepagesize` in `/proc/meminfo`).
        huge_page_bytes: u64,
        /// `vm.nr_hugepages` at the time, if it could be read.
        nr_hugepages: Option<u64>,
        /// The `errno` `mmap` failed with.
        errno: i32,
    },
    /// `madvise` failed (for `MADV_HUGEPAGE`: a kernel without transparent huge pages).
    Madvise {
        /// The advice given.
        advice: &'static str,
        /// The `errno` it failed with.
        errno: i32,
    },
}

impl ArenaError {
    /// Huge pages a `MAP_HUGETLB` arena of this size needs in the pool.
    fn huge_pages_needed(bytes: u64, huge_page_bytes: u64) -> u64 {
        bytes.div_ceil(huge_page_bytes.max(1))
    }
}

impl fmt::Display for ArenaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArenaError::Config(e) => write!(f, "arena zone configuration: {e}"),
            ArenaError::Empty => write!(f, "an arena needs at least one page"),
            ArenaError::TooLarge { bytes } => {
                write!(
                    f,
                    "an arena of {bytes} bytes does not fit the address space"
                )
            }
            ArenaError::PageSizeBelowSystem {
                page_size,
                system_page_size,
            } => write!(
                f,
                "page size {page_size} is below the system page size {system_page_size}"
            ),
            ArenaError::Map { bytes, errno } => write!(
                f,
                "mapping {bytes} bytes failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ),
            ArenaError::NoHugePages {
                bytes,
                huge_page_bytes,
                nr_hugepages,
                errno,
            } => {
                let need = Self::huge_pages_needed(bytes, huge_page_bytes);
                write!(
                    f,
                    "MAP_HUGETLB mapping of {bytes} bytes failed ({}): it needs {need} free \
                     huge pages of {} KiB, and vm.nr_hugepages is ",
                    std::io::Error::from_raw_os_error(errno),
                    huge_page_bytes >> 10
                )?;
                match nr_hugepages {
                    Some(n) => write!(f, "{n}")?,
                    None => write!(f, "unreadable")?,
                }
                write!(
                    f,
                    "; reserve them with `sysctl -w vm.nr_hugepages={need}` (or more), or use \
                     transparent huge pages instead"
                )
            }
            ArenaError::Madvise { advice, errno } => write!(
                f,
                "madvise({advice}) failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ),
        }
    }
}

impl std::error::Error for ArenaError {}

impl From<ConfigError> for ArenaError {
    fn from(e: ConfigError) -> Self {
        ArenaError::Config(e)
    }
}

/// Why [`PageArena::free_raw`](super::PageArena::free_raw) refused a pointer. The arena and
/// the memory are left untouched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ArenaFreeError {
    /// The pointer is null.
    Null,
    /// The pointer is outside the arena's region (another allocator's memory).
    Foreign {
        /// The address passed.
        addr: usize,
    },
    /// The pointer is inside the arena but not at the start of a page.
    Misaligned {
        /// The address passed.
        addr: usize,
        /// The arena's page size in bytes.
        page_size: usize,
    },
    /// The page is not the head of an allocated block of that order: the zone's verdict
    /// (double free, inside another block, wrong order, misaligned for the order, ...).
    Free(FreeError),
}

impl fmt::Display for ArenaFreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArenaFreeError::Null => write!(f, "null pointer"),
            ArenaFreeError::Foreign { addr } => {
                write!(f, "pointer {addr:#x} is not inside the arena")
            }
            ArenaFreeError::Misaligned { addr, page_size } => write!(
                f,
                "pointer {addr:#x} is not at the start of a {page_size}-byte page"
            ),
            ArenaFreeError::Free(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ArenaFreeError {}

impl From<FreeError> for ArenaFreeError {
    fn from(e: FreeError) -> Self {
        ArenaFreeError::Free(e)
    }
}
