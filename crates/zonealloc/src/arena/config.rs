//! An arena's configuration ([`ArenaConfig`]): its size, zone, huge pages, backing, and what
//! it does to pages on allocation and free.

use crate::config::ZoneConfig;

/// Huge page backing for the arena's region.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum HugePages {
    /// No request: base pages, unless the system's transparent huge page mode is `always`.
    #[default]
    Off,
    /// Transparent huge pages: `madvise(MADV_HUGEPAGE)` on the region (THP mode `madvise`
    /// or `always`). Fails with [`ArenaError::Madvise`](super::ArenaError::Madvise) on
    /// kernels without THP.
    Transparent,
    /// Explicit huge pages: `mmap(MAP_HUGETLB)` from the hugetlb pool. Fails with
    /// [`ArenaError::NoHugePages`](super::ArenaError::NoHugePages), which names the
    /// `vm.nr_hugepages` sysctl, when the pool is too small. The region is then aligned to the
    /// huge page size too.
    Explicit,
}

/// Where the region's memory comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Backing {
    /// An anonymous private `mmap` (the default, and the only backing huge pages and
    /// `populate` apply to).
    #[default]
    Mmap,
    /// The global allocator (`alloc_zeroed` with the region's alignment): for small arenas in
    /// tests, and for platforms or checkers without `mmap`.
    Heap,
}

/// How to build a [`PageArena`](super::PageArena).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ArenaConfig {
    /// Pages in the arena, rounded up to a whole number of largest blocks
    /// (`2^zone.max_order`).
    pub pages: u64,
    /// The zone over the region: orders, pageblocks, per-CPU lists, page size (at least the
    /// system's). [`ArenaConfig::with_pages`] starts from [`ZoneConfig::without_watermarks`]
    /// (a buffer pool has no reclaim behind it) with one per-CPU list set per CPU.
    pub zone: ZoneConfig,
    /// Huge page backing.
    pub huge_pages: HugePages,
    /// Where the memory comes from.
    pub backing: Backing,
    /// Fault every page in at creation (`MAP_POPULATE`) instead of on first touch.
    pub populate: bool,
    /// Zero every block on allocation (`init_on_alloc=1`).
    pub zero_on_alloc: bool,
    /// Fill freed blocks with [`PAGE_POISON`](super::PAGE_POISON) and check the fill when they
    /// are next allocated.
    pub poison_on_free: bool,
}

impl ArenaConfig {
    /// An arena of (at least) `pages` pages with the default options: base pages, `mmap`,
    /// no populate, no zeroing, no poisoning.
    pub fn with_pages(pages: u64) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        ArenaConfig {
            pages,
            zone: ZoneConfig::without_watermarks().with_cpus(cpus),
            huge_pages: HugePages::Off,
            backing: Backing::Mmap,
            populate: false,
            zero_on_alloc: false,
            poison_on_free: false,
        }
    }

    /// An arena of at least `bytes` bytes (in pages of the default zone's page size).
    pub fn with_bytes(bytes: u64) -> Self {
        let c = Self::with_pages(0);
        ArenaConfig {
            pages: bytes.div_ceil(c.zone.page_size),
            ..c
        }
    }

    /// This configuration over another zone configuration.
    pub fn zone(self, zone: ZoneConfig) -> Self {
        ArenaConfig { zone, ..self }
    }

    /// This configuration with another huge page backing.
    pub fn huge_pages(self, huge_pages: HugePages) -> Self {
        ArenaConfig { huge_pages, ..self }
    }

    /// This configuration with another backing.
    pub fn backing(self, backing: Backing) -> Self {
        ArenaConfig { backing, ..self }
    }

    /// This configuration with every page faulted in at creation.
    pub fn populated(self) -> Self {
        ArenaConfig {
            populate: true,
            ..self
        }
    }

    /// This configuration with every block zeroed on allocation.
    pub fn zeroed_on_alloc(self) -> Self {
        ArenaConfig {
            zero_on_alloc: true,
            ..self
        }
    }

    /// This configuration with freed blocks poisoned and checked on their next allocation.
    pub fn poisoned_on_free(self) -> Self {
        ArenaConfig {
            poison_on_free: true,
            ..self
        }
    }
}
