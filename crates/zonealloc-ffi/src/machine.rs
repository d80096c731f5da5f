//! `za_machine`: several NUMA nodes (`zonealloc::Machine`), built from a memory map with node
//! ids, a distance table (ACPI SLIT) and each CPU's node; allocated from by CPU and preferred
//! node (with `__GFP_THISNODE` and a nodemask, what `__alloc_pages` takes), freed to a CPU's
//! pageset of the page's own node, with the vmstat worker's expiry and per-node `numastat`.

use zonealloc::config::WatermarkConfig;
use zonealloc::numa::{Distances, NodeMask, NodeRegion, NodeTarget, NumaConfig};
use zonealloc::{AllocRequest, CpuId, Machine, MemoryRegion, Pfn, ZoneConfig};

use crate::handle::{self, Handle};
use crate::status::za_status::{self, *};
use crate::status::{guard, migratetype_arg, order_arg};
use crate::zone::ZA_ZONE_WATERMARKS;
use crate::{stats_of, text, za_stats};

/// `node` of `za_machine_alloc`: the calling CPU's node (`numa_node_id()`, `MPOL_LOCAL`).
pub const ZA_NODE_LOCAL: i32 = -1;

/// Flag of `za_machine_alloc`: `__GFP_THISNODE`, the preferred node's zones only
/// (`ZONELIST_NOFALLBACK`).
pub const ZA_ALLOC_THISNODE: u32 = 1;

/// Most regions and CPUs a `za_machine_config` may name (arrays the library reads).
pub const ZA_MACHINE_MAX_ENTRIES: usize = 1 << 16;

/// One region of usable RAM and its node (an ACPI SRAT memory affinity entry, or a device
/// tree memory node's `numa-node-id`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct za_node_region {
    /// The node id, below `za_machine_config::nodes`.
    pub node: u32,
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// How to build a machine. Every node needs memory and every CPU a node; zones are laid out
/// as on x86-64 (DMA below 16 MiB, DMA32 below 4 GiB, Normal above), 4 KiB pages.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct za_machine_config {
    /// `region_count` regions of usable RAM.
    pub regions: *const za_node_region,
    /// Entries of `regions` (at most `ZA_MACHINE_MAX_ENTRIES`).
    pub region_count: usize,
    /// The node count, 1 to 64.
    pub nodes: u32,
    /// `nodes * nodes` distances, row `from`, column `to` (10 on the diagonal, more than 10
    /// and at most 255 elsewhere).
    pub distances: *const u32,
    /// The CPU count (at least 1, at most `ZA_MACHINE_MAX_ENTRIES`).
    pub cpus: u32,
    /// `cpus` node ids: CPU `c` is on node `cpu_node[c]`.
    pub cpu_node: *const u32,
    /// `ZA_ZONE_WATERMARKS` (the kernel's watermarks, split over every node), or 0.
    pub flags: u32,
}

/// One node's `numastat` counters (`/sys/devices/system/node/nodeN/numastat`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct za_numastat {
    /// Allocated here, and here was the preferred node.
    pub numa_hit: u64,
    /// Allocated here although another node was preferred.
    pub numa_miss: u64,
    /// Preferred here but allocated on another node.
    pub numa_foreign: u64,
    /// An interleave policy picked this node and got it.
    pub interleave_hit: u64,
    /// Allocated here by a CPU of this node.
    pub local_node: u64,
    /// Allocated here by a CPU of another node.
    pub other_node: u64,
}

/// An opaque machine handle: `za_machine_create` makes one, `za_machine_destroy` frees it.
///
/// cbindgen:ignore
#[repr(C)]
pub struct za_machine {
    tag: u64,
    machine: Machine,
}

impl Handle for za_machine {
    const TAG: u64 = u64::from_le_bytes(*b"za_mach\0");
    fn tag_ptr(p: *const Self) -> *const u64 {
        // The tag is at offset 0 (`repr(C)`, first field): a cast, no read.
        p.cast()
    }
}

/// Reads `n` entries at `p`.
///
/// # Safety
/// `p` is NULL or readable for `n` entries (the caller's contract).
unsafe fn array<'a, T>(p: *const T, n: usize) -> Result<&'a [T], za_status> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(ZA_ERR_NULL);
    }
    if !p.is_aligned() {
        return Err(ZA_ERR_MISALIGNED);
    }
    // SAFETY: non-null, aligned, readable for `n` entries by the contract; the entries are
    // plain integers, valid for any bit pattern.
    Ok(unsafe { core::slice::from_raw_parts(p, n) })
}

/// Creates a machine from `config` and stores its handle in `*out` (left untouched on
/// error): each node's zones from its regions, pagesets for every CPU with `high` split over
/// the node's own CPUs, watermarks over all nodes, zonelists by distance.
///
/// # Safety
/// `config` is NULL or points to a `za_machine_config` whose arrays are readable for the
/// counts it gives; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_create(
    config: *const za_machine_config,
    out: *mut *mut za_machine,
) -> za_status {
    guard(|| {
        if config.is_null() || out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !config.is_aligned() || !out.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        // SAFETY: checked non-null and aligned; readable by the contract (integers and
        // pointers, valid for any bit pattern).
        let c = unsafe { config.read() };
        if c.flags & !ZA_ZONE_WATERMARKS != 0
            || c.region_count > ZA_MACHINE_MAX_ENTRIES
            || c.cpus as usize > ZA_MACHINE_MAX_ENTRIES
            || c.nodes > 64
        {
            return Err(ZA_ERR_INVALID_ARGUMENT);
        }
        let n = c.nodes as usize;
        // SAFETY: forwarded contract, counts bounded above.
        let (regions, dist, cpu_node) = unsafe {
            (
                array(c.regions, c.region_count)?,
                array(c.distances, n * n)?,
                array(c.cpu_node, c.cpus as usize)?,
            )
        };
        let regions: Vec<NodeRegion> = regions
            .iter()
            .map(|r| NodeRegion {
                node: r.node,
                region: MemoryRegion::usable(r.start, r.len),
            })
            .collect();
        let dist = Distances::new(n, dist)?;
        let cfg = if c.flags & ZA_ZONE_WATERMARKS != 0 {
            ZoneConfig::new().with_watermarks(WatermarkConfig::AUTO)
        } else {
            ZoneConfig::without_watermarks()
        };
        let machine =
            Machine::from_memory_map(&regions, dist, cpu_node, cfg, NumaConfig::default())?;
        let h = za_machine {
            tag: za_machine::TAG,
            machine,
        };
        // SAFETY: `out` is writable by the contract.
        unsafe { handle::publish(out, h) }
    })
}

/// Destroys a machine. Blocks still allocated are forgotten with it.
///
/// # Safety
/// `machine` is NULL or a live handle, used by no other thread during or after this call.
#[no_mangle]
pub unsafe extern "C" fn za_machine_destroy(machine: *mut za_machine) -> za_status {
    // SAFETY: forwarded contract.
    guard(|| unsafe { handle::destroy(machine) })
}

/// Checks a CPU index against the machine.
fn cpu_arg(m: &Machine, cpu: u32) -> Result<CpuId, za_status> {
    if (cpu as usize) < m.cpus() {
        Ok(CpuId(cpu))
    } else {
        Err(ZA_ERR_INVALID_ARGUMENT)
    }
}

/// Allocates `2^order` frames of `migratetype` for CPU `cpu`, preferring node `node`
/// (`ZA_NODE_LOCAL`: the CPU's own node) and falling back along its zonelist (node order by
/// distance, zones high to low), or only its own zones with `ZA_ALLOC_THISNODE`; `nodemask`
/// (bit `n` for node `n`; 0 for every node) limits the nodes, as `MPOL_BIND` does. Counts
/// the nodes' `numastat`. The first frame goes to `*pfn_out`, its node to `*node_out` (if not
/// NULL).
///
/// # Safety
/// `machine` is NULL or a live handle; `pfn_out` is NULL or writable; `node_out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_alloc(
    machine: *const za_machine,
    cpu: u32,
    node: i32,
    nodemask: u64,
    flags: u32,
    order: u32,
    migratetype: u32,
    pfn_out: *mut u64,
    node_out: *mut u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        if pfn_out.is_null() {
            return Err(ZA_ERR_NULL);
        }
        if !pfn_out.is_aligned() || (!node_out.is_null() && !node_out.is_aligned()) {
            return Err(ZA_ERR_MISALIGNED);
        }
        let cpu = cpu_arg(m, cpu)?;
        let nodes = m.nodes().len() as u32;
        let preferred = match node {
            ZA_NODE_LOCAL => m.cpu_to_node(cpu).ok_or(ZA_ERR_INVALID_ARGUMENT)?,
            n if n >= 0 && (n as u32) < nodes => n as u32,
            _ => return Err(ZA_ERR_INVALID_ARGUMENT),
        };
        let all = if nodes == 64 {
            u64::MAX
        } else {
            (1u64 << nodes) - 1
        };
        if flags & !ZA_ALLOC_THISNODE != 0 || (nodemask != 0 && nodemask & all == 0) {
            return Err(ZA_ERR_INVALID_ARGUMENT);
        }
        let target = NodeTarget {
            preferred,
            nodemask: (nodemask != 0).then_some(NodeMask(nodemask)),
            this_node: flags & ZA_ALLOC_THISNODE != 0,
        };
        let req = AllocRequest::new(migratetype_arg(migratetype)?).on_cpu(cpu);
        let pfn = m.alloc(order_arg(order)?, req, target)?;
        let got = m.node_of(pfn).map_or(0, |x| x.id());
        // SAFETY: checked non-null (pfn_out) and aligned; writable by the contract.
        unsafe {
            pfn_out.write(pfn.get());
            if !node_out.is_null() {
                node_out.write(got);
            }
        }
        Ok(())
    })
}

/// Frees the block of `2^order` frames at `pfn` on CPU `cpu`: to that CPU's pageset of the
/// block's own zone, whichever node it is on (`free_unref_page`). Bad frees return their
/// error code and change nothing.
///
/// # Safety
/// `machine` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_machine_free(
    machine: *const za_machine,
    cpu: u32,
    pfn: u64,
    order: u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let cpu = cpu_arg(m, cpu)?;
        Ok(m.free_on(cpu, Pfn(pfn), order_arg(order)?)?)
    })
}

/// Stores the node of frame `pfn` in `*node_out`; `ZA_ERR_OUT_OF_ZONE` where no node spans it.
///
/// # Safety
/// `machine` is NULL or a live handle; `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_node_of(
    machine: *const za_machine,
    pfn: u64,
    node_out: *mut u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let node = m.node_of(Pfn(pfn)).ok_or(ZA_ERR_OUT_OF_ZONE)?.id();
        // SAFETY: forwarded contract.
        unsafe { text::write_out(node_out, node) }
    })
}

/// Stores CPU `cpu`'s node in `*node_out` (`cpu_to_node`).
///
/// # Safety
/// `machine` is NULL or a live handle; `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_cpu_node(
    machine: *const za_machine,
    cpu: u32,
    node_out: *mut u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let node = m
            .cpu_to_node(cpu_arg(m, cpu)?)
            .ok_or(ZA_ERR_INVALID_ARGUMENT)?;
        // SAFETY: forwarded contract.
        unsafe { text::write_out(node_out, node) }
    })
}

/// Fills `*out` with node `node`'s `numastat` counters.
///
/// # Safety
/// `machine` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_numastat(
    machine: *const za_machine,
    node: u32,
    out: *mut za_numastat,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let s = m.numastat(node).ok_or(ZA_ERR_INVALID_ARGUMENT)?;
        let v = za_numastat {
            numa_hit: s.numa_hit,
            numa_miss: s.numa_miss,
            numa_foreign: s.numa_foreign,
            interleave_hit: s.interleave_hit,
            local_node: s.local_node,
            other_node: s.other_node,
        };
        // SAFETY: forwarded contract.
        unsafe { text::write_out(out, v) }
    })
}

/// Fills `*out` with node `node`'s counters, summed over its zones.
///
/// # Safety
/// `machine` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_node_stats(
    machine: *const za_machine,
    node: u32,
    out: *mut za_stats,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let x = m.node(node).ok_or(ZA_ERR_INVALID_ARGUMENT)?;
        let mut t = za_stats::default();
        for s in x.zones().map(stats_of) {
            t.managed_pages += s.managed_pages;
            t.free_pages += s.free_pages;
            t.pcp_pages += s.pcp_pages;
            t.allocs += s.allocs;
            t.frees += s.frees;
            t.alloc_failures += s.alloc_failures;
            t.splits += s.splits;
            t.merges += s.merges;
            t.fallbacks += s.fallbacks;
        }
        // SAFETY: forwarded contract.
        unsafe { text::write_out(out, t) }
    })
}

/// One run of CPU `cpu`'s vmstat worker (`refresh_cpu_vm_stats`): a pageset of a remote
/// node's zone is drained by a batch three runs after the CPU last moved pages there
/// (`pcp->expire`, `drain_zone_pages`). `*changes` (if not NULL) gets the kernel's count of
/// changes.
///
/// # Safety
/// `machine` is NULL or a live handle; `changes` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn za_machine_vmstat_tick(
    machine: *const za_machine,
    cpu: u32,
    changes: *mut u32,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        if !changes.is_null() && !changes.is_aligned() {
            return Err(ZA_ERR_MISALIGNED);
        }
        let n = m.vmstat_tick(cpu_arg(m, cpu)?);
        if !changes.is_null() {
            // SAFETY: checked non-null and aligned; writable by the contract.
            unsafe { changes.write(n) };
        }
        Ok(())
    })
}

/// Drains every CPU's pagesets in every zone of every node.
///
/// # Safety
/// `machine` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_machine_drain(machine: *const za_machine) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        unsafe { handle::live(machine)? }.machine.drain_all();
        Ok(())
    })
}

/// Checks every invariant of every zone of every node; `ZA_ERR_CHECK_FAILED` if one is broken.
///
/// # Safety
/// `machine` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn za_machine_check(machine: *const za_machine) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        m.check().map(|_| ()).map_err(|_| ZA_ERR_CHECK_FAILED)
    })
}

/// Writes node `node`'s `numastat` file text (`node < nodes`) or, for `node` = -1, the
/// machine's `/proc/buddyinfo` (a line per zone of every node), NUL-terminated, into `buf`
/// with the protocol of `za_zone_buddyinfo`.
///
/// # Safety
/// As for `za_zone_buddyinfo`.
#[no_mangle]
pub unsafe extern "C" fn za_machine_text(
    machine: *const za_machine,
    node: i32,
    buf: *mut core::ffi::c_char,
    len: usize,
    needed: *mut usize,
) -> za_status {
    guard(|| {
        // SAFETY: forwarded contract.
        let m = &unsafe { handle::live(machine)? }.machine;
        let s = if node == -1 {
            let snaps: Vec<_> = m.nodes().flat_map(|x| x.snapshots()).collect();
            let mut s = String::new();
            // Writing to a `String` cannot fail.
            let _ = zonealloc::stats::write_buddyinfo(&mut s, &snaps);
            s
        } else {
            let n = u32::try_from(node).map_err(|_| ZA_ERR_INVALID_ARGUMENT)?;
            m.numastat_text(n).ok_or(ZA_ERR_INVALID_ARGUMENT)?
        };
        // SAFETY: forwarded contract.
        unsafe { text::copy_out(&s, buf, len, needed) }
    })
}
