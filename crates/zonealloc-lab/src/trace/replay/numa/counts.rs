//! Node counters of a replay: `zone_statistics` (`mm/page_alloc.c`, the same rule in 6.1 and
//! 7.2), one event per allocation whatever its order, as `/sys/devices/system/node/nodeN/
//! numastat` counts them.

use zonealloc::numa::NumaStat;

/// Every node's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaCounts {
    /// Per node, by id (`interleave_hit` stays 0: the trace shows no policy).
    pub nodes: Vec<NumaStat>,
}

impl NumaCounts {
    /// Zero for `nodes` nodes.
    pub fn new(nodes: usize) -> NumaCounts {
        NumaCounts {
            nodes: vec![NumaStat::default(); nodes],
        }
    }

    /// `zone_statistics(preferred_zone, z, 1)`: an allocation from node `got` by a CPU of
    /// node `cpu_node`, whose node is the preferred one (local policy). A node beyond the
    /// table is not counted.
    pub fn count(&mut self, got: u32, cpu_node: u32) {
        let preferred = cpu_node;
        if (got.max(preferred) as usize) >= self.nodes.len() {
            return;
        }
        let z = &mut self.nodes[got as usize];
        if got == preferred {
            z.numa_hit += 1;
        } else {
            z.numa_miss += 1;
        }
        // "if (zone_to_nid(z) != numa_node_id()) local_stat = NUMA_OTHER;"
        if got == cpu_node {
            z.local_node += 1;
        } else {
            z.other_node += 1;
        }
        if got != preferred {
            self.nodes[preferred as usize].numa_foreign += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_allocation_is_a_miss_there_and_foreign_here() {
        let mut c = NumaCounts::new(2);
        c.count(0, 0);
        c.count(1, 0);
        c.count(1, 1);
        let [n0, n1] = [c.nodes[0], c.nodes[1]];
        assert_eq!((n0.numa_hit, n0.numa_foreign, n0.local_node), (1, 1, 1));
        assert_eq!(
            (n1.numa_hit, n1.numa_miss, n1.other_node, n1.local_node),
            (1, 1, 1, 1)
        );
        // Out of the table: not counted, no panic.
        c.count(5, 0);
        assert_eq!(c.nodes.len(), 2);
    }
}
