//! A minimal reader of the flattened device tree (Devicetree Specification v0.4, chapter 5)
//! for what the kernel needs: RAM (`/memory@*` `reg`), reserved memory (the memory
//! reservation block and `/reserved-memory/*` `reg`), the harts (`/cpus/cpu@*` `reg`), the
//! timebase frequency, and the NUMA layout as Linux's `drivers/of/of_numa.c` reads it: the
//! `numa-node-id` of each memory and cpu node (`of_numa_parse_memory_nodes`,
//! `of_numa_parse_cpu_nodes`) and `/distance-map`'s `distance-matrix` of (from, to,
//! distance) triplets (`of_numa_parse_distance_map_v1`). QEMU's virt machine writes all three
//! for `-numa node,...` and `-numa dist,...`. Safe code over a byte slice; every offset is
//! bounds-checked.

/// A physical address range `start..end` in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// Most RAM banks, reserved ranges and harts the kernel records.
pub const MAX_RANGES: usize = 16;
/// Most harts the kernel records.
pub const MAX_HARTS: usize = 8;
/// Most NUMA nodes the kernel records.
pub const MAX_NODES: usize = 4;
/// Most `distance-matrix` entries the kernel records (every pair of nodes).
pub const MAX_DISTANCES: usize = MAX_NODES * MAX_NODES;

/// What the kernel reads from the device tree.
#[derive(Debug, Default)]
pub struct MachineInfo {
    /// RAM banks.
    pub ram: [Range; MAX_RANGES],
    /// The `numa-node-id` of each RAM bank's memory node (0 where it has none).
    pub ram_node: [u32; MAX_RANGES],
    /// Used entries of `ram`.
    pub ram_len: usize,
    /// Reserved ranges (memory reservation block, `/reserved-memory`, the blob itself).
    pub reserved: [Range; MAX_RANGES],
    /// Used entries of `reserved`.
    pub reserved_len: usize,
    /// Hart ids of the enabled CPUs, in device tree order.
    pub harts: [u32; MAX_HARTS],
    /// The `numa-node-id` of each of `harts` (0 where its cpu node has none).
    pub hart_node: [u32; MAX_HARTS],
    /// Used entries of `harts`.
    pub harts_len: usize,
    /// `/distance-map` `distance-matrix` entries: (from, to, distance).
    pub distances: [(u32, u32, u32); MAX_DISTANCES],
    /// Used entries of `distances`.
    pub distances_len: usize,
    /// Whether any memory or cpu node carries a `numa-node-id`.
    pub numa: bool,
    /// `/cpus/timebase-frequency`, the `time` CSR's rate.
    pub timebase_hz: u64,
}

impl MachineInfo {
    /// Records a reserved range.
    pub fn reserve(&mut self, r: Range) -> Result<(), &'static str> {
        push(&mut self.reserved, &mut self.reserved_len, r)
    }
}

fn push<T: Copy>(arr: &mut [T], len: &mut usize, v: T) -> Result<(), &'static str> {
    *arr.get_mut(*len).ok_or("device tree: too many entries")? = v;
    *len += 1;
    Ok(())
}

const MAGIC: u32 = 0xd00d_feed;
const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;
const FDT_END: u32 = 9;
const MAX_DEPTH: usize = 16;

fn be32(b: &[u8], off: usize) -> Result<u32, &'static str> {
    let s = b.get(off..off + 4).ok_or("device tree: truncated")?;
    Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be64(b: &[u8], off: usize) -> Result<u64, &'static str> {
    Ok(u64::from(be32(b, off)?) << 32 | u64::from(be32(b, off + 4)?))
}

/// A number of `cells` 32-bit cells (1 or 2) at `off`.
fn cells(b: &[u8], off: usize, cells: u32) -> Result<u64, &'static str> {
    match cells {
        1 => Ok(u64::from(be32(b, off)?)),
        2 => be64(b, off),
        _ => Err("device tree: unsupported cell count"),
    }
}

/// The blob's total size from its header at `addr`, so that it can be sliced.
pub fn total_size(header: &[u8; 8]) -> Result<usize, &'static str> {
    if be32(header, 0)? != MAGIC {
        return Err("device tree: bad magic");
    }
    Ok(be32(header, 4)? as usize)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Root,
    Memory,
    ReservedMemory,
    Reserved,
    Cpus,
    Cpu,
    DistanceMap,
    Other,
}

/// Reads the machine description from the blob.
pub fn parse(blob: &[u8]) -> Result<MachineInfo, &'static str> {
    let mut info = MachineInfo::default();
    let off_struct = be32(blob, 8)? as usize;
    let off_strings = be32(blob, 12)? as usize;
    let off_rsvmap = be32(blob, 16)? as usize;

    // The memory reservation block: (address, size) pairs up to a zero pair.
    let mut off = off_rsvmap;
    loop {
        let (addr, size) = (be64(blob, off)?, be64(blob, off + 8)?);
        if addr == 0 && size == 0 {
            break;
        }
        info.reserve(Range {
            start: addr,
            end: addr + size,
        })?;
        off += 16;
    }

    // The structure block. Per depth: the node's kind, and the #address-cells/#size-cells it
    // sets for its children (defaults 2 and 1).
    let mut kind = [Kind::Other; MAX_DEPTH];
    let mut addr_cells = [2u32; MAX_DEPTH];
    let mut size_cells = [1u32; MAX_DEPTH];
    let mut cpu_reg: Option<u32> = None;
    let mut cpu_disabled = false;
    // The `numa-node-id` of the memory or cpu node being read, and the first RAM bank it
    // added (the property may come before or after `reg`).
    let mut node_id: Option<u32> = None;
    let mut first_bank = 0;
    let mut depth = 0usize;
    let mut off = off_struct;
    loop {
        let token = be32(blob, off)?;
        off += 4;
        match token {
            FDT_BEGIN_NODE => {
                let rest = blob.get(off..).ok_or("device tree: truncated")?;
                let len = rest
                    .iter()
                    .position(|&c| c == 0)
                    .ok_or("device tree: name")?;
                let name = &rest[..len];
                off += (len + 1).next_multiple_of(4);
                if depth + 1 >= MAX_DEPTH {
                    return Err("device tree: too deep");
                }
                let parent = if depth == 0 { None } else { Some(kind[depth]) };
                depth += 1;
                kind[depth] = match (parent, name) {
                    (None, _) => Kind::Root,
                    (Some(Kind::Root), n) if n.starts_with(b"memory") => Kind::Memory,
                    (Some(Kind::Root), b"reserved-memory") => Kind::ReservedMemory,
                    (Some(Kind::Root), b"cpus") => Kind::Cpus,
                    (Some(Kind::ReservedMemory), _) => Kind::Reserved,
                    (Some(Kind::Cpus), n) if n.starts_with(b"cpu@") => Kind::Cpu,
                    (Some(Kind::Root), b"distance-map") => Kind::DistanceMap,
                    _ => Kind::Other,
                };
                addr_cells[depth] = 2;
                size_cells[depth] = 1;
                if kind[depth] == Kind::Cpu {
                    cpu_reg = None;
                    cpu_disabled = false;
                }
                if matches!(kind[depth], Kind::Cpu | Kind::Memory) {
                    node_id = None;
                    first_bank = info.ram_len;
                }
            }
            FDT_END_NODE => {
                if depth == 0 {
                    return Err("device tree: unbalanced nodes");
                }
                if kind[depth] == Kind::Cpu && !cpu_disabled {
                    if let Some(hart) = cpu_reg {
                        push(&mut info.harts, &mut info.harts_len, hart)?;
                        info.hart_node[info.harts_len - 1] = node_id.unwrap_or(0);
                    }
                }
                if kind[depth] == Kind::Memory {
                    for n in &mut info.ram_node[first_bank..info.ram_len] {
                        *n = node_id.unwrap_or(0);
                    }
                }
                depth -= 1;
            }
            FDT_PROP => {
                let len = be32(blob, off)? as usize;
                let name_off = be32(blob, off + 4)? as usize;
                let value = off + 8;
                off = value + len.next_multiple_of(4);
                let names = blob
                    .get(off_strings + name_off..)
                    .ok_or("device tree: name")?;
                let name_len = names
                    .iter()
                    .position(|&c| c == 0)
                    .ok_or("device tree: name")?;
                let name = &names[..name_len];
                let (ac, sc) = if depth >= 1 {
                    (addr_cells[depth - 1], size_cells[depth - 1])
                } else {
                    (2, 1)
                };
                match (kind[depth], name) {
                    (_, b"#address-cells") => addr_cells[depth] = be32(blob, value)?,
                    (_, b"#size-cells") => size_cells[depth] = be32(blob, value)?,
                    (Kind::Memory | Kind::Reserved, b"reg") => {
                        let entry = 4 * (ac + sc) as usize;
                        for e in 0..len / entry {
                            let at = value + e * entry;
                            let start = cells(blob, at, ac)?;
                            let size = cells(blob, at + 4 * ac as usize, sc)?;
                            let r = Range {
                                start,
                                end: start + size,
                            };
                            if kind[depth] == Kind::Memory {
                                push(&mut info.ram, &mut info.ram_len, r)?;
                            } else {
                                info.reserve(r)?;
                            }
                        }
                    }
                    (Kind::Cpus, b"timebase-frequency") => {
                        info.timebase_hz = cells(blob, value, (len / 4) as u32)?;
                    }
                    (Kind::Cpu, b"reg") => cpu_reg = Some(cells(blob, value, ac)? as u32),
                    (Kind::Cpu | Kind::Memory, b"numa-node-id") => {
                        let id = be32(blob, value)?;
                        if id as usize >= MAX_NODES {
                            return Err("device tree: numa-node-id beyond MAX_NODES");
                        }
                        node_id = Some(id);
                        info.numa = true;
                    }
                    (Kind::DistanceMap, b"distance-matrix") => {
                        for e in 0..len / 12 {
                            let at = value + e * 12;
                            let t = (be32(blob, at)?, be32(blob, at + 4)?, be32(blob, at + 8)?);
                            push(&mut info.distances, &mut info.distances_len, t)?;
                        }
                    }
                    (Kind::Cpu, b"status") => {
                        cpu_disabled = blob
                            .get(value..value + len)
                            .is_some_and(|s| !(s.starts_with(b"okay") || s.starts_with(b"ok")));
                    }
                    _ => {}
                }
            }
            FDT_NOP => {}
            FDT_END => break,
            _ => return Err("device tree: bad token"),
        }
    }
    if info.ram_len == 0 {
        return Err("device tree: no memory node");
    }
    if info.harts_len == 0 {
        return Err("device tree: no cpu node");
    }
    Ok(info)
}
