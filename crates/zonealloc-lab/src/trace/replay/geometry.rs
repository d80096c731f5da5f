//! The replay's zones: their geometry ([`Geometry`], one [`ZoneSpan`] per zone, which frames
//! are [`Online`]) and the CPU count ([`pick_cpus`]).

use serde::Serialize;
use zonealloc::ZoneType;

use crate::trace::ingest::input;
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

/// One replay zone: its type and span.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ZoneSpan {
    /// The zone type (DMA, DMA32, Normal, ...).
    #[serde(serialize_with = "zone_type_name")]
    pub zone_type: ZoneType,
    /// First frame.
    pub start: u64,
    /// Frames spanned.
    pub pages: u64,
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
        sniff: &input::Sniff,
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
                zone_type: ZoneType::Normal,
                start,
                pages,
            }],
            online,
            cpus,
            cpus_from,
            numbering,
        })
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
pub fn pick_cpus(cpus: Option<u32>, sniff: &input::Sniff) -> (u32, &'static str) {
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
