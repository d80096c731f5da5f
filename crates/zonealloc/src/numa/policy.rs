//! What `mempolicy` hands `__alloc_pages`: a preferred node, a nodemask and `__GFP_THISNODE`
//! (`mm/mempolicy.c`: `policy_node`, `policy_nodemask`, `interleave_nodes`, `offset_il_node`).

use crate::types::ZoneType;

/// A set of node ids below 64 (`nodemask_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct NodeMask(pub u64);

impl NodeMask {
    /// The mask of the given nodes (ids of 64 and more are left out).
    pub fn of(nodes: &[u32]) -> NodeMask {
        NodeMask(
            nodes
                .iter()
                .filter(|&&n| n < 64)
                .fold(0, |m, &n| m | 1u64 << n),
        )
    }

    /// `node_isset`.
    pub fn contains(self, node: u32) -> bool {
        node < 64 && self.0 & (1u64 << node) != 0
    }

    /// `nodes_weight`.
    pub fn weight(self) -> u32 {
        self.0.count_ones()
    }

    /// `first_node`, or `None` for an empty mask.
    pub fn first(self) -> Option<u32> {
        (self.0 != 0).then(|| self.0.trailing_zeros())
    }

    /// `next_node_in(prev, mask)`: the next node after `prev`, wrapping to the first.
    pub fn next_in(self, prev: u32) -> Option<u32> {
        let above = if prev >= 63 {
            0
        } else {
            self.0 & !((2u64 << prev) - 1)
        };
        NodeMask(above).first().or_else(|| self.first())
    }
}

/// A task's memory policy (`set_mempolicy`/`mbind` modes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemPolicy {
    /// `MPOL_LOCAL` (the default): the allocating CPU's node first, any node after.
    Local,
    /// `MPOL_PREFERRED`: this node first, any node after.
    Preferred(u32),
    /// `MPOL_BIND`: only these nodes, the allocating CPU's node's zonelist order.
    Bind(NodeMask),
    /// `MPOL_INTERLEAVE`: one node after another in the mask, as `interleave_nodes` picks.
    Interleave(NodeMask),
}

/// A task's policy and its interleave position (`current->il_prev`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TaskPolicy {
    /// The policy.
    pub policy: MemPolicy,
    /// `current->il_prev`: `do_set_mempolicy` sets it to `MAX_NUMNODES - 1` for an
    /// interleave policy, so the first node is the mask's first.
    pub il_prev: u32,
}

impl TaskPolicy {
    /// A task with `policy`, its interleave position reset as `do_set_mempolicy` does.
    pub const fn new(policy: MemPolicy) -> Self {
        TaskPolicy {
            policy,
            il_prev: 1023,
        }
    }
}

/// The target of one allocation, what `__alloc_pages(gfp, order, preferred_nid, nodemask)`
/// receives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeTarget {
    /// `preferred_nid`: whose zonelist is walked.
    pub preferred: u32,
    /// The nodemask (`None`: every node).
    pub nodemask: Option<NodeMask>,
    /// `__GFP_THISNODE`: the preferred node's `ZONELIST_NOFALLBACK` (its zones only).
    pub this_node: bool,
}

impl NodeTarget {
    /// A request for `node` first, with fallback to every node.
    pub const fn node(preferred: u32) -> Self {
        NodeTarget {
            preferred,
            nodemask: None,
            this_node: false,
        }
    }

    /// `__GFP_THISNODE`: `node`'s zones only.
    pub const fn this_node(node: u32) -> Self {
        NodeTarget {
            preferred: node,
            nodemask: None,
            this_node: true,
        }
    }
}

/// `interleave_nodes`: `next_node_in(il_prev, nodes)`, stored back in `il_prev` (6.1 and
/// 7.2). `None` for an empty mask.
pub fn interleave_nodes(il_prev: &mut u32, nodes: NodeMask) -> Option<u32> {
    let next = nodes.next_in(*il_prev)?;
    *il_prev = next;
    Some(next)
}

/// `offset_il_node`: the `n % weight`-th node of the mask (an interleave by page offset, as
/// `interleave_nid` computes for a VMA policy); `local` for an empty mask, as the kernel
/// returns `numa_node_id()`.
pub fn offset_il_node(nodes: NodeMask, n: u64, local: u32) -> u32 {
    let w = nodes.weight() as u64;
    if w == 0 {
        return local;
    }
    let target = n % w;
    let mut bits = nodes.0;
    for _ in 0..target {
        bits &= bits - 1;
    }
    bits.trailing_zeros()
}

/// `policy_node` + `policy_nodemask` (+ `interleave_nodes`) as `alloc_pages` applies them
/// (6.1 `alloc_pages`, 7.2 `alloc_pages_mpol`): the target and, for an interleave, the node
/// it picked (for `NUMA_INTERLEAVE_HIT`). `local` is `numa_node_id()`; `policy_zone` the
/// highest zone type of any node except Movable (`check_highest_zone`): a bind policy's
/// mask applies only to requests reaching it (`apply_policy_zone`). `None` where the policy
/// names no node.
pub(crate) fn resolve(
    task: &mut TaskPolicy,
    local: u32,
    highest_zone: ZoneType,
    policy_zone: ZoneType,
) -> Option<(NodeTarget, Option<u32>)> {
    match task.policy {
        MemPolicy::Local => Some((NodeTarget::node(local), None)),
        // policy_node: "if (policy->mode == MPOL_PREFERRED) nd = first_node(policy->nodes)".
        MemPolicy::Preferred(n) => Some((NodeTarget::node(n), None)),
        // policy_node keeps the local node; policy_nodemask returns the policy's nodes when
        // apply_policy_zone(policy, gfp_zone(gfp)).
        MemPolicy::Bind(mask) => {
            mask.first()?;
            let nodemask = (highest_zone >= policy_zone).then_some(mask);
            Some((
                NodeTarget {
                    preferred: local,
                    nodemask,
                    this_node: false,
                },
                None,
            ))
        }
        // alloc_page_interleave(gfp, order, interleave_nodes(pol)): no nodemask.
        MemPolicy::Interleave(mask) => {
            let nid = interleave_nodes(&mut task.il_prev, mask)?;
            Some((NodeTarget::node(nid), Some(nid)))
        }
    }
}
