//! The replay's zones: their geometry ([`Geometry`], one [`ZoneSpan`] per zone, which frames
//! are [`Online`]) and the CPU count ([`pick_cpus`]).

use serde::Serialize;
use zonealloc::ZoneType;

use crate::trace::ingest::sniff;
use crate::trace::migratetype::Numbering;

/// The smallest span the zone gets from the trace when neither `--proc` nor `--zone-pages`
/// gives one ([`span_from_trace`]): 2^22 pages (16 GiB of 4 KiB pages).
pub const DEFAULT_ZONE_PAGES: u64 = 1 << 22;

/// The zone's span when neither `--proc` nor `--zone-pages` gives one: from the trace, twice
/// the pfns from `start` to the highest pfn of the prefix's events, rounded up to a power of
/// two, and at least [`DEFAULT_ZONE_PAGES`]. Memory comes online as the trace touches it, so
/// a span costs address space (12 bytes a page, mapped lazily), not memory: a 1 TiB span
/// replays the 6.1 sample in the time and memory of a 16 GiB one. A 24 GiB machine's
/// `perf script` trace (pfns to 0x640000) needed `--zone-pages` under the fixed 16 GiB.
pub fn span_from_trace(start: u64, max_pfn: Option<u64>) -> u64 {
    let seen = max_pfn.map_or(0, |p| p.saturating_sub(start).saturating_add(1));
    seen.checked_next_power_of_two()
        .and_then(|p| p.checked_mul(2))
        .unwrap_or(u64::MAX)
        .max(DEFAULT_ZONE_PAGES)
}

/// The most CPUs a replay zone has: the core's limit (`PcpConfig::validate`).
pub const MAX_CPUS: u32 = 4096;

/// Which frames of a zone's span are memory the allocator manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Online {
    /// The whole span is free from the start.
    All,
    /// Memory comes online as the trace first touches it: before an allocation or free of a
    /// frame whose `MAX_PAGE_ORDER` block is not yet online, that block is handed to the
    /// allocator (`add_free_range`, which recomputes watermarks and per-CPU sizes as
    /// `online_pages` does on memory hotplug). The zone then holds the memory the trace
    /// showed, without a first pass over the trace to find it.
    Touched,
    /// Set up from a `/proc` snapshot ([`proc_setup`](super::proc_setup)): the kernel's managed pages, pages in
    /// use, pageblocks and per-CPU lists.
    #[value(skip)]
    Snapshot,
}

/// One replay zone: its node, type and span.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ZoneSpan {
    /// The NUMA node (0 but for a `--proc` snapshot of several nodes).
    #[serde(skip_serializing_if = "is_zero")]
    pub node: u32,
    /// The zone type (DMA, DMA32, Normal, ...).
    #[serde(serialize_with = "zone_type_name")]
    pub zone_type: ZoneType,
    /// First frame.
    pub start: u64,
    /// Frames spanned.
    pub pages: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn zone_type_name<S: serde::Serializer>(t: &ZoneType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{t:?}"))
}

impl ZoneSpan {
    /// One past the last frame.
    pub fn end(&self) -> u64 {
        self.start + self.pages
    }
}

/// Where and how large the replay's zones are.
#[derive(Clone, Debug, Serialize)]
pub struct Geometry {
    /// The zones, lowest first; a traced frame belongs to the zone that spans it (the
    /// kernel's zone choice, read from the pfn it handed out).
    pub zones: Vec<ZoneSpan>,
    /// Which frames are free at the start.
    pub online: Online,
    /// CPUs with per-CPU lists.
    pub cpus: u32,
    /// Where the CPU count came from.
    pub cpus_from: &'static str,
    /// How the trace numbers migratetypes.
    pub numbering: Numbering,
    /// Per replay CPU, its node (`nodes/nodeN/cpulist` of a `--proc` snapshot); empty when
    /// every CPU is node 0's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_nodes: Vec<u32>,
}

impl Geometry {
    /// One zone from the flags: `zone_start` (default 0) and `zone_pages` (default
    /// [`span_from_trace`] of the prefix's highest pfn); without `zone_pages` its memory comes online as the trace
    /// touches it, with it the whole span is free (unless `online` says otherwise). The CPUs
    /// from the flag, else the trace's header, else the highest CPU of its first events
    /// plus one.
    pub fn from_flags(
        zone_start: Option<u64>,
        zone_pages: Option<u64>,
        online: Option<Online>,
        cpus: Option<u32>,
        sniff: &sniff::Sniff,
        numbering: Numbering,
    ) -> Result<Geometry, String> {
        let start = zone_start.unwrap_or(0);
        let pages = zone_pages.unwrap_or_else(|| span_from_trace(start, sniff.max_pfn));
        if pages == 0 || pages >= u64::from(u32::MAX) || start.checked_add(pages).is_none() {
            return Err(format!(
                "a zone of {pages} pages cannot be replayed (1 ..= {} pages); pass --zone-pages",
                u32::MAX - 1
            ));
        }
        let online = online.unwrap_or(if zone_pages.is_some() {
            Online::All
        } else {
            Online::Touched
        });
        let (cpus, cpus_from) = pick_cpus(cpus, sniff);
        if cpus == 0 || cpus > MAX_CPUS {
            return Err(format!(
                "{cpus} CPUs (from {cpus_from}): the replay takes 1..={MAX_CPUS}"
            ));
        }
        Ok(Geometry {
            zones: vec![ZoneSpan {
                node: 0,
                zone_type: ZoneType::Normal,
                start,
                pages,
            }],
            online,
            cpus,
            cpus_from,
            numbering,
            cpu_nodes: Vec::new(),
        })
    }

    /// Whether the zones lie on more than one node.
    pub fn multi_node(&self) -> bool {
        self.zones.iter().any(|z| z.node != 0)
    }

    /// The nodes: one past the highest node of a zone or CPU.
    pub fn nodes(&self) -> u32 {
        let zones = self.zones.iter().map(|z| z.node);
        zones
            .chain(self.cpu_nodes.iter().copied())
            .max()
            .unwrap_or(0)
            + 1
    }

    /// The node of replay CPU `cpu` (0 where not known).
    #[inline]
    pub fn cpu_node(&self, cpu: u32) -> u32 {
        self.cpu_nodes.get(cpu as usize).copied().unwrap_or(0)
    }

    /// The zone an allocation on `cpu` prefers when the trace does not name one (a traced
    /// failure): the highest zone of the CPU's node, the first entry of its node's zonelist
    /// (`numa_node_id()` as the preferred node: the trace does not carry the mempolicy),
    /// else the highest zone of all.
    pub fn preferred_zone(&self, cpu: u32) -> usize {
        let node = self.cpu_node(cpu);
        let last = self.zones.len().saturating_sub(1);
        self.zones
            .iter()
            .rposition(|z| z.node == node)
            .unwrap_or(last)
    }

    /// Zone `z`'s name in reports: its type (`Normal`), with its node where there are
    /// several (`Node 1 Normal`).
    pub fn zone_label(&self, z: usize) -> String {
        match self.zones.get(z) {
            Some(s) if self.multi_node() => format!("Node {} {:?}", s.node, s.zone_type),
            Some(s) => format!("{:?}", s.zone_type),
            None => z.to_string(),
        }
    }

    /// The pfns from the lowest zone's start to the highest zone's end (empty without zones).
    pub fn span(&self) -> std::ops::Range<u64> {
        let start = self.zones.iter().map(|z| z.start).min().unwrap_or(0);
        let end = self.zones.iter().map(ZoneSpan::end).max().unwrap_or(0);
        start..end
    }

    /// The zone spanning `pfn`.
    // `always`: called per event from the replay's loop, which did not inline it once the
    // kernel side's accounting was inlined at two calls.
    #[inline(always)]
    pub fn zone_of(&self, pfn: u64) -> Option<usize> {
        if let [z] = self.zones.as_slice() {
            return (pfn >= z.start && pfn < z.end()).then_some(0);
        }
        self.zones
            .iter()
            .position(|z| pfn >= z.start && pfn < z.end())
    }

    /// The error for a traced frame outside every zone.
    pub fn outside(&self, pfn: u64) -> String {
        let spans: Vec<String> = self
            .zones
            .iter()
            .map(|z| format!("{:?} {:#x}..{:#x}", z.zone_type, z.start, z.end()))
            .collect();
        format!(
            "the trace touches pfn {pfn:#x}, outside the replay's zone ({}); pass --zone-start \
             and --zone-pages to span it (without them the span is twice what the trace's \
             first events reach from pfn 0, at least {DEFAULT_ZONE_PAGES} pages), or --proc \
             with the traced machine's /proc snapshot",
            spans.join(", ")
        )
    }
}

/// The CPU count: the flag, the trace's header, or the highest CPU seen at its start plus one.
pub fn pick_cpus(cpus: Option<u32>, sniff: &sniff::Sniff) -> (u32, &'static str) {
    match (cpus, sniff.header_cpus, sniff.max_cpu) {
        (Some(c), _, _) => (c, "--cpus"),
        (None, Some(c), _) => (c, "the trace's header (#P:)"),
        (None, None, Some(c)) => (
            c.saturating_add(1),
            "the highest CPU in the trace's first events",
        ),
        (None, None, None) => (1, "default"),
    }
}
