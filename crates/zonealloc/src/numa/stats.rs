//! Node counters: `zone_statistics` / `__count_numa_events` (`mm/page_alloc.c`) and the text
//! of `/sys/devices/system/node/nodeN/numastat` (`node_read_numastat`,
//! `drivers/base/node.c`, the same in 6.1 and 7.2).

use crate::sync::{AtomicU64, Ordering};

/// One node's NUMA events, summed over its zones (`sum_zone_numa_event_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct NumaStat {
    /// `numa_hit`: allocated here, and here was the preferred zone's node.
    pub numa_hit: u64,
    /// `numa_miss`: allocated here although another node was preferred.
    pub numa_miss: u64,
    /// `numa_foreign`: preferred here but allocated on another node.
    pub numa_foreign: u64,
    /// `interleave_hit`: an interleave policy picked this node and got it.
    pub interleave_hit: u64,
    /// `local_node`: allocated here by a CPU of this node.
    pub local_node: u64,
    /// `other_node`: allocated here by a CPU of another node.
    pub other_node: u64,
}

impl NumaStat {
    /// Writes the `numastat` file's text, as `node_read_numastat` prints it
    /// (`sysfs_emit(buf, "numa_hit %lu\n" "numa_miss %lu\n" ...)`).
    pub fn write_numastat(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        write!(
            out,
            "numa_hit {}\nnuma_miss {}\nnuma_foreign {}\ninterleave_hit {}\nlocal_node {}\nother_node {}\n",
            self.numa_hit,
            self.numa_miss,
            self.numa_foreign,
            self.interleave_hit,
            self.local_node,
            self.other_node
        )
    }

    /// The `numastat` file's text ([`NumaStat::write_numastat`]).
    #[cfg(feature = "std")]
    pub fn numastat_text(&self) -> std::string::String {
        let mut s = std::string::String::new();
        // Writing to a String cannot fail.
        let _ = self.write_numastat(&mut s);
        s
    }
}

/// The counters of one node, updated without a lock.
#[derive(Default)]
pub(crate) struct NodeCounters {
    hit: AtomicU64,
    miss: AtomicU64,
    foreign: AtomicU64,
    interleave_hit: AtomicU64,
    local: AtomicU64,
    other: AtomicU64,
}

impl NodeCounters {
    pub(crate) fn read(&self) -> NumaStat {
        NumaStat {
            numa_hit: self.hit.load(Ordering::Relaxed),
            numa_miss: self.miss.load(Ordering::Relaxed),
            numa_foreign: self.foreign.load(Ordering::Relaxed),
            interleave_hit: self.interleave_hit.load(Ordering::Relaxed),
            local_node: self.local.load(Ordering::Relaxed),
            other_node: self.other.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn interleave_hit(&self) {
        self.interleave_hit.fetch_add(1, Ordering::Relaxed);
    }
}

/// `zone_statistics(preferred_zone, z, 1)` (one per allocation, whatever its order, as
/// `rmqueue_pcplist` and `rmqueue` call it): the `i`-th of `counters` is node `i`'s.
pub(crate) fn zone_statistics<'a>(
    counters: impl Iterator<Item = &'a NodeCounters> + Clone,
    preferred: u32,
    got: u32,
    cpu_node: u32,
) {
    let (Some(z), Some(p)) = (
        counters.clone().nth(got as usize),
        counters.clone().nth(preferred as usize),
    ) else {
        return;
    };
    if got == preferred {
        z.hit.fetch_add(1, Ordering::Relaxed);
    } else {
        z.miss.fetch_add(1, Ordering::Relaxed);
        p.foreign.fetch_add(1, Ordering::Relaxed);
    }
    // "if (zone_to_nid(z) != numa_node_id()) local_stat = NUMA_OTHER;"
    if got == cpu_node {
        z.local.fetch_add(1, Ordering::Relaxed);
    } else {
        z.other.fetch_add(1, Ordering::Relaxed);
    }
}
