//! `--whole-file` with `--proc`: the replay starts at the trace's first event, which is the
//! before-snapshot's first read, not its last. `capture-kmem` marks `KT_SNAPSHOT_BEFORE_BEGIN`,
//! reads the pfn layout (`od` of `/proc/kpageflags`, then of `/proc/kpagecount`: a minute or
//! more), then the `/proc` files with a `cat` each, zoneinfo last, and marks
//! `KT_SNAPSHOT_BEFORE_END` (6.12-4g p_prodcons: 12.589 s, the layout 12.62-122.40 s,
//! zoneinfo at 122.78 s, the marker at 122.790 s). Each CPU's `count` zoneinfo prints is that
//! of its read, applied at the file's start it is a minute's events off.
//!
//! This module finds zoneinfo's read in the trace ([`find`]: its reader's last allocation,
//! `snapshot_reads::find_before`), from the text the stream keeps up to the marker
//! ([`crate::trace::ingest::keep_to`]); the start-count walk then runs from the file's start
//! and rolls each CPU's count back from that read ([`super::infer::start_count::roll`]). From
//! 6.7 on, where `high` moves, each CPU's `high` at the file's start is the one the trace
//! before the read bounds, not zoneinfo's (the walk's `start_high`). With a layout, read
//! first, at the file's start, the free blocks are the layout's as read, rolled back over the
//! trace's first events (`layout::ZoneLayout::roll_back`), not matched to pagetypeinfo's
//! later counts (6.12-4g-wq p_pressure: Normal starts 2981 free pages below buddyinfo's, the
//! buddy's net gain between the two reads). Without one, the free pages and the free blocks
//! per order and migratetype are pagetypeinfo's, read just before zoneinfo, and the report
//! says so.
//!
//! On by default with `--whole-file` and `--proc`; `--infer whole-start=off` starts from the
//! snapshot as read (the counts zoneinfo printed at its read, applied at the file's start).

use serde::Serialize;

use super::geometry::Geometry;
use super::infer::first_events::LIST_EVENTS;
use super::infer::start_count::{Found, ReadPoint, StartCounts};
use super::options::ReplayOptions;
use super::replayer::Replayer;
use super::snapshot_reads;
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::Source;
use crate::trace::parse::Parser;
use zonealloc::{CpuId, PcpTuning};

/// The marker the before-snapshot's reads end at.
pub const MARKER: &str = "KT_SNAPSHOT_BEFORE_END";

/// Whether the start state is rolled back to the file's start: `--whole-file` with `--proc`,
/// unless `--infer whole-start=off` (or `--infer off`).
pub fn wanted(opts: &ReplayOptions, snap: Option<&ProcSnapshot>) -> bool {
    snap.is_some() && opts.whole_file && opts.infer_whole_start.or(opts.infer).unwrap_or(true)
}

/// The start state a `--whole-file` replay with `--proc` used (`results.json`'s
/// `whole_file_start`, documented in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct WholeStart {
    /// `rolled_back`: each CPU's count at the file's start, zoneinfo's rolled back from its
    /// read; `snapshot`: the snapshot's counts as read (see `why`).
    pub counts: &'static str,
    /// zoneinfo's reader (`cat-911`), where found.
    pub zoneinfo_reader: Option<String>,
    /// How the reader was found: `marker` (the first `cat` after `capture-kmem`'s
    /// `KT_SNAPSHOT_READ zoneinfo`) or `order` (the before-snapshot's last `cat`, or the
    /// first for a capture without layout or `nodes/`).
    pub zoneinfo_found_by: Option<&'static str>,
    /// When it read (trace seconds), where found.
    pub zoneinfo_read_s: Option<f64>,
    /// CPU lists whose start count is the rolled-back one (not pinned or bounded otherwise).
    pub cpus_rolled_back: usize,
    /// CPU lists whose count at the start differs from zoneinfo's.
    pub cpus_changed: usize,
    /// Why the counts are the snapshot's, where they are.
    pub why: Option<String>,
}

impl WholeStart {
    /// The report's caveat line.
    pub fn caveat(&self) -> String {
        match (&self.why, &self.zoneinfo_reader) {
            (None, Some(reader)) => format!(
                "--whole-file start: each CPU's count at the file's start is zoneinfo's (read by \
                 {reader} at {:.3} s) rolled back over the events before its read ({} lists \
                 differ from zoneinfo's, {} taken as rolled back, the rest bounded by the \
                 trace; from 6.7 on each CPU's `high` too); the free blocks are the \
                 layout's, rolled back to the file's start, where the snapshot has one, else \
                 pagetypeinfo's as read",
                self.zoneinfo_read_s.unwrap_or(0.0),
                self.cpus_changed,
                self.cpus_rolled_back
            ),
            (why, _) => format!(
                "--whole-file start: the snapshot's state as read, applied at the file's start \
                 ({})",
                why.as_deref().unwrap_or("not rolled back")
            ),
        }
    }

    /// Fills in what the walk found.
    pub fn with_counts(mut self, counts: Option<&StartCounts>) -> WholeStart {
        match counts {
            Some(sc) if sc.rolled_from_ns.is_some() => {
                self.counts = "rolled_back";
                self.cpus_rolled_back = sc
                    .cpus
                    .iter()
                    .filter(|c| c.found == Found::RolledBack)
                    .count();
                self.cpus_changed = sc.cpus.iter().filter(|c| c.inferred != c.zoneinfo).count();
            }
            _ => {
                self.counts = "snapshot";
                if self.why.is_none() {
                    self.why = Some(match counts {
                        Some(_) => format!(
                            "zoneinfo's read was not among the file's first {LIST_EVENTS} events"
                        ),
                        None => "the start-count walk is off".to_owned(),
                    });
                }
            }
        }
        self
    }
}

/// Where the before-snapshot's zoneinfo was read in `source`'s trace: the chunks up to
/// [`MARKER`]'s line (at most [`LIST_EVENTS`] events) are taken and put back; the text the
/// stream kept of them ([`Source::kept_text`], opened with `keep_to` [`MARKER`]) names the
/// reader. The shipped captures (no layout, no `nodes/`) read zoneinfo first
/// (`snapshot_reads::find_before`).
pub fn find(source: &mut Source, snap: &ProcSnapshot) -> (Option<ReadPoint>, WholeStart) {
    let mut held = Vec::new();
    let mut text = Vec::new();
    let mut events = 0usize;
    let has_line = |t: &[u8]| {
        memchr::memmem::find(t, MARKER.as_bytes()).is_some_and(|at| t[at..].contains(&b'\n'))
    };
    loop {
        text.extend(source.kept_text());
        if has_line(&text) || events >= LIST_EVENTS {
            break;
        }
        match source.next_chunk() {
            Some(c) => {
                events += c.len();
                held.push(c);
            }
            None => {
                text.extend(source.kept_text());
                break;
            }
        }
    }
    source.unread(held);
    let not = |why: String| {
        (
            None,
            WholeStart {
                why: Some(why),
                ..WholeStart::default()
            },
        )
    };
    if !has_line(&text) {
        return not(format!(
            "no {MARKER} line in the trace's first {LIST_EVENTS} events"
        ));
    }
    let first = snap.layout.is_none() && snap.nodes.is_empty();
    let Some(read) = snapshot_reads::find_before(&text, first) else {
        return not(format!("no `cat` read zoneinfo before {MARKER}"));
    };
    let found_by = read.found_by;
    let reader = read.reader.unwrap_or_default();
    let line_start =
        memchr::memrchr(b'\n', &text[..read.offset.saturating_sub(1)]).map_or(0, |nl| nl + 1);
    let line = &text[line_start..read.offset];
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut parser = Parser::new();
    let at = parser.feed(line).and_then(|ev| {
        let p = ReadPoint::of(&ev)?;
        reader.ends_with(&format!("-{}", p.pid)).then_some(p)
    });
    match at {
        Some(p) => (
            Some(p),
            WholeStart {
                zoneinfo_reader: Some(reader),
                zoneinfo_found_by: Some(found_by),
                zoneinfo_read_s: Some(p.ts_ns as f64 / 1e9),
                ..WholeStart::default()
            },
        ),
        None => not(format!("zoneinfo's reader {reader} made no allocation")),
    }
}

/// Sets each CPU's `free_count` at the walk's start where the start-count walk found one
/// (`start_count/start_free.rs`: a drain named it), over the 0 the walk of the text before
/// the start set where that text showed nothing of the CPU's lists in the zone (`seen`, per
/// zone and CPU: [`super::infer::free_count::FreeState::seen`]; `--whole-file`: no text
/// comes before the file's start).
pub fn set_free_counts(
    sc: &StartCounts,
    geo: &Geometry,
    replayers: &[Replayer],
    seen: &[Vec<bool>],
) {
    for r in replayers {
        for (z, (zone, span)) in r.zones.iter().zip(&geo.zones).enumerate() {
            for cpu in 0..geo.cpus {
                let shown = seen.get(z).and_then(|s| s.get(cpu as usize));
                let Some(fc) = sc.free_count_on(span.node, span.zone_type.name(), cpu) else {
                    continue;
                };
                if shown == Some(&true) {
                    continue;
                }
                let t = PcpTuning {
                    free_count: Some(i32::try_from(fc).unwrap_or(i32::MAX)),
                    ..PcpTuning::default()
                };
                zone.set_pcp_tuning(CpuId(cpu), t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ingest::sniff::Sniff;
    use crate::trace::migratetype::Numbering;
    use crate::trace::replay::infer::start_count::{CpuStart, Found};
    use crate::trace::variant::Variant;

    /// 7.2-3g-16cpu p_file: the window's start reads DMA32 CPU 3's `free_count` (16) off its
    /// first drains, as the text before the window showed nothing of that CPU's lists; where
    /// the text showed a CPU's, its count stands. Fails on the old code (both set).
    #[test]
    fn a_free_count_a_drain_names_stands_only_where_the_text_before_showed_none() {
        let g = Geometry::from_flags(
            None,
            Some(1 << 16),
            None,
            Some(3),
            &Sniff::default(),
            Numbering::Current,
        )
        .unwrap();
        let r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
        let zone = g.zones[0].zone_type.name().to_string();
        let cpu = |cpu| CpuStart {
            zone: zone.clone(),
            node: 0,
            cpu,
            zoneinfo: 0,
            rolled_back: None,
            inferred: 0,
            found: Found::Bounded,
            bounds: (0, None),
            pin_ns: None,
            high: None,
            free_count: Some(16),
            allowed: Vec::new(),
        };
        let mut sc = StartCounts::default();
        sc.cpus.extend([cpu(1), cpu(2)]);
        set_free_counts(
            &sc,
            &g,
            std::slice::from_ref(&r),
            &[vec![false, false, true, false]],
        );
        let fc = |c| r.zones[0].pcp_info(CpuId(c)).free_count;
        assert_eq!((fc(1), fc(2)), (16, 0));
    }
}
