//! The kernel's layout rolled forward to the window's start.
//!
//! `capture-kmem` reads the `layout` (a walk of `/proc/kpageflags`, pfn by pfn in pfn order)
//! first of the before-snapshot, right after `KT_SNAPSHOT_BEFORE_BEGIN`, and the window starts
//! at `KT_SNAPSHOT_BEFORE_END`, up to two minutes later (6.12-4g p_prodcons: the walk runs
//! 12.62-55.13 s, the marker is at 122.790 s). What the kernel allocated and freed in between
//! (the snapshot's own `od`, `awk` and `cat`s) is in the trace, and the layout does not show
//! it: pfn 0x10b136 is free in that layout, yet `cat-351` freed it onto CPU 2's list at
//! 122.621816. [`RollWalk`] reads those events and keeps, per pfn, the state its LAST event
//! left it in ([`After`]); `rolled.rs` puts that on the canvas.
//!
//! Events set absolute states, so the last one is right however the walk's reading is spread
//! in time: a pfn read after its last event was read in the state that event left, which
//! applying it again gives; a pfn read before it is brought to it.
//!
//! - `mm_page_alloc`, and `mm_page_alloc_zone_locked` without `percpu_refill`: in use;
//! - `mm_page_alloc_zone_locked percpu_refill=1`: on that CPU's list of the event's type,
//!   at its tail (`rmqueue_bulk` adds with `list_add_tail`);
//! - `mm_page_free` of an order the lists take (`pcp_allowed_order`) and
//!   `mm_page_free_batched`: on the freeing CPU's list, at its head (`free_unref_page_commit`,
//!   7.2 `free_frozen_page_commit`: `list_add`), the list of its pageblock's type
//!   (`get_pfnblock_migratetype` at the free); another order goes straight to the buddy
//!   (`__free_pages_ok`): free;
//! - on 7.2 ([`RollWalk::set_contig_free`]), a kworker's order-0 frees of consecutive pfns
//!   (`vfree` -> `free_pages_bulk` -> `__free_contig_range`, read as the replay reads them:
//!   `replayer/contig_free.rs`): the aligned blocks `free_prepared_contig_range` frees them
//!   as, a block of a list's order on the freeing CPU's list of that order, a larger one
//!   free. 7.2-4g-6cpu p_idle: `kworker/3:1` frees 0x126430-0x126433 at 280.944894-900
//!   (trace lines 19787-19790), an order-2 `vmalloc` block of 280.879261; `cat-945`'s first
//!   Unmovable order-0 allocation after the window takes 0x104144 (line 67041), freed onto
//!   CPU 3's list at 280.944790, before them: they were not on its order-0 list;
//! - `mm_page_pcpu_drain`: free (`free_pcppages_bulk` gives the block back to the buddy), unless
//!   another CPU's refill at the drain's own timestamp listed it (the merged trace prints such
//!   a refill first: `KernelSide::refilled_after`);
//! - a page a refill listed that the kernel side finds taken untraced (`alloc_pages_bulk`:
//!   `KernelSide::untraced_now`): in use.
//!
//! The free blocks then re-form from the canvas's free pages as the buddy merges them, and
//! the blocks still on a list at the window's start are handed to the lists' set-up first
//! (`rolled.rs`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use zonealloc::{MigrateType, Order};

use crate::trace::migratetype::Numbering;
use crate::trace::parse::{Event, EventKind, Who};
use crate::trace::replay::infer::kernel::Untraced;
use crate::trace::replay::replayer::{contig_blocks, extends_range, range_freer};

#[cfg(test)]
mod tests;

/// The marker the before-snapshot writes before it reads the layout.
pub const LAYOUT_MARKER: &[u8] = b"KT_SNAPSHOT_BEFORE_BEGIN";

/// What a pfn's last event before the window left it as (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Allocated.
    InUse,
    /// In the buddy's free lists.
    Free,
    /// On a CPU's list.
    Listed(Listed),
}

/// A block on a CPU's list ([`After::Listed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The CPU (trace CPU modulo the zone's CPUs).
    pub cpu: u32,
    /// The block's first pfn.
    pub head: u64,
    /// Its order.
    pub order: u8,
    /// The list's migratetype index (current numbering) where the event prints it (a refill);
    /// a free's list is its pageblock's type.
    pub mt: Option<usize>,
    /// Put there by a refill (at the list's tail), else by a free (at its head).
    pub refilled: bool,
    /// The event's place among the walk's events.
    pub seq: u64,
    /// Its timestamp (ns), if printed.
    pub ts: Option<u64>,
}

/// One zone's roll: disjoint pfn ranges and what their last event left them as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roll {
    /// First pfn -> (one past the last, state).
    spans: BTreeMap<u64, (u64, After)>,
    /// Events that set a state.
    pub events: u64,
    /// The free lists the events took blocks off, as `(pfn, migratetype index)` in the
    /// events' order: the pageblock's type then ([`Roll::block_types`]).
    pub named: Vec<(u64, usize)>,
    /// The roll as it stood where the counts the start is matched to were read
    /// (pagetypeinfo's `cat`, [`RollWalk::counts_read`]): the events after it moved the
    /// counts too (`ZoneLayout::counts_at_start`).
    pub at_counts: Option<Box<Roll>>,
}

impl Roll {
    /// `range` is `state` from now on (later events overwrite earlier ones).
    pub fn set(&mut self, range: Range<u64>, state: After) {
        if range.is_empty() {
            return;
        }
        let (s, e) = (range.start, range.end);
        // A span starting before `s` that reaches into the range: cut at `s` (and at `e`).
        if let Some((&a, &(b, st))) = self.spans.range(..s).next_back() {
            if b > s {
                self.spans.insert(a, (s, st));
                if b > e {
                    self.spans.insert(e, (b, st));
                }
            }
        }
        let inside: Vec<u64> = self.spans.range(s..e).map(|(&a, _)| a).collect();
        for a in inside {
            if let Some((b, st)) = self.spans.remove(&a) {
                if b > e {
                    self.spans.insert(e, (b, st));
                }
            }
        }
        self.spans.insert(s, (e, state));
    }

    /// The pfns of `range` no span holds yet are `state` (the others keep theirs).
    pub fn set_unset(&mut self, range: Range<u64>, state: After) {
        let (s, e) = (range.start, range.end);
        let mut gaps = Vec::new();
        let mut at = s;
        let first = self.spans.range(..s).next_back().map(|(_, &(b, _))| b);
        if let Some(b) = first.filter(|&b| b > s) {
            at = b.min(e);
        }
        for (&a, &(b, _)) in self.spans.range(s..e) {
            if a > at {
                gaps.push(at..a);
            }
            at = at.max(b);
        }
        if at < e {
            gaps.push(at..e);
        }
        for g in gaps {
            self.spans.insert(g.start, (g.end, state));
        }
    }

    /// What `pfn`'s last event left it as, if any.
    pub fn get(&self, pfn: u64) -> Option<After> {
        let (_, &(end, st)) = self.spans.range(..=pfn).next_back()?;
        (pfn < end).then_some(st)
    }

    /// The spans, in pfn order.
    pub fn spans(&self) -> impl Iterator<Item = (Range<u64>, After)> + '_ {
        self.spans.iter().map(|(&a, &(b, st))| (a..b, st))
    }

    /// The blocks still whole on a list: the listing event is the last of each of its pages.
    pub fn listed(&self) -> Vec<Listed> {
        self.spans()
            .filter_map(|(r, st)| match st {
                After::Listed(l) if r.start == l.head && r.end == l.head + (1u64 << l.order) => {
                    Some(l)
                }
                _ => None,
            })
            .collect()
    }

    /// Pageblock number (`pfn >> pb_order`) -> its type as the last event before the window
    /// that names it says: `mm_page_alloc_zone_locked` prints the free list the block came
    /// off (`__rmqueue_smallest`; from 6.10 a free block sits on its pageblock's list, and a
    /// claim's line names the type it gave), `mm_page_alloc_extfrag` without
    /// `change_ownership` the type fallen back to, which the pageblock keeps
    /// (`__rmqueue_steal`). 7.2-3g-16cpu-wq p_compact: `dash-1320`'s Unmovable order-2
    /// refills at 122.829505-506 take 0x29570 and 0x295c8 between pagetypeinfo's read and
    /// the window, and the window never names their pageblocks, so the layout had typed them
    /// Movable.
    pub fn block_types(&self, pb_order: u8) -> HashMap<u64, MigrateType> {
        let mut types = HashMap::new();
        for &(pfn, t) in &self.named {
            if let Some(mt) = MigrateType::from_index(t) {
                types.insert(pfn >> pb_order, mt);
            }
        }
        types
    }

    /// Whether nothing was rolled.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// The walk over the events between the layout's read and the window's start (module docs).
pub struct RollWalk {
    zones: Vec<Range<u64>>,
    cpus: u32,
    numbering: Numbering,
    thp_order: Option<u8>,
    rolls: Vec<Roll>,
    seq: u64,
    /// 7.2's contiguous-range frees are read ([`RollWalk::set_contig_free`]).
    contig: bool,
    /// Per CPU: the kworker's run of order-0 frees of consecutive pfns it has open.
    runs: Vec<Option<Run>>,
}

/// A run of a kworker's order-0 frees of consecutive pfns on one CPU, in one zone: each
/// page listed as it was freed, until the run ends ([`RollWalk::end_run`]).
#[derive(Clone, Copy, Debug)]
struct Run {
    zone: usize,
    first: u64,
    pages: u64,
    who: Who,
    /// The last free's place among the walk's events, and its timestamp.
    seq: u64,
    ts: Option<u64>,
}

impl RollWalk {
    /// Nothing fed yet: zones spanning `zones`, on `cpus` CPUs (trace CPU `c` is `c % cpus`),
    /// the lists taking the orders `pcp_allowed_order` gives with `thp_order`.
    pub fn new(
        zones: &[Range<u64>],
        cpus: u32,
        numbering: Numbering,
        thp_order: Option<u8>,
    ) -> RollWalk {
        RollWalk {
            zones: zones.to_vec(),
            cpus: cpus.max(1),
            numbering,
            thp_order,
            rolls: vec![Roll::default(); zones.len()],
            seq: 0,
            contig: false,
            runs: vec![None; cpus.max(1) as usize],
        }
    }

    /// Reads 7.2's contiguous-range frees (module docs; off by default).
    pub fn set_contig_free(&mut self, on: bool) {
        self.contig = on;
    }

    /// Ends `cpu`'s run, if any: two pages or more, not a folio batch's (`batched`: a
    /// `mm_page_free_batched` ends it, and its frees went one by one), are the aligned blocks
    /// `free_prepared_contig_range` frees, where each page is still as its free left it.
    fn end_run(&mut self, cpu: u32, batched: bool) {
        let Some(run) = self.runs.get_mut(cpu as usize).and_then(Option::take) else {
            return;
        };
        if run.pages < 2 || batched {
            return;
        }
        let roll = &mut self.rolls[run.zone];
        let as_freed = (run.first..run.first + run.pages).all(|p| {
            matches!(roll.get(p), Some(After::Listed(l))
                if l.cpu == cpu && l.head == p && l.order == 0 && !l.refilled)
        });
        if !as_freed {
            return;
        }
        for (head, order) in contig_blocks(run.first, run.pages) {
            let to_list =
                Order::new(order).is_some_and(|o| zonealloc::pcp_allowed_order(o, self.thp_order));
            let state = match to_list {
                true => After::Listed(Listed {
                    cpu,
                    head,
                    order,
                    mt: None,
                    refilled: false,
                    seq: run.seq,
                    ts: run.ts,
                }),
                false => After::Free,
            };
            roll.set(head..head + (1u64 << order), state);
        }
    }

    /// `ev` on `cpu` in zone `z`, with 7.2's contiguous-range frees read: whether it extends
    /// the CPU's run; otherwise the run ends, and an order-0 free by a kworker opens one.
    fn step_run(&mut self, ev: &Event<'_>, cpu: u32, z: usize) {
        let free0 = match ev.kind {
            EventKind::Free { pfn, order: 0 } if range_freer(ev.who) => Some(pfn),
            _ => None,
        };
        let slot = &mut self.runs[cpu as usize];
        if let (Some(pfn), Some(r)) = (free0, slot.as_mut()) {
            if r.who == ev.who && r.zone == z && extends_range(r.first + r.pages - 1, pfn) {
                r.pages += 1;
                (r.seq, r.ts) = (self.seq, ev.ts_ns);
                return;
            }
        }
        let batched = matches!(ev.kind, EventKind::FreeBatched { .. });
        self.end_run(cpu, batched);
        if let Some(first) = free0 {
            self.runs[cpu as usize] = Some(Run {
                zone: z,
                first,
                pages: 1,
                who: ev.who,
                seq: self.seq,
                ts: ev.ts_ns,
            });
        }
    }

    fn zone(&self, pfn: u64) -> Option<usize> {
        self.zones.iter().position(|r| r.contains(&pfn))
    }

    /// Takes one event; `untraced`: the pages the kernel side found allocated untraced just
    /// before it (`KernelSide::untraced_now`).
    pub fn feed(&mut self, ev: &Event<'_>, untraced: &[Untraced]) {
        // A page freed before its take was read (`Untraced::freed`) is where that free put it.
        for u in untraced.iter().filter(|u| !u.freed) {
            if let Some(z) = self.zone(u.pfn) {
                self.rolls[z].set(u.pfn..u.pfn + 1, After::InUse);
            }
        }
        let pfn = ev.kind.pfn();
        let Some(z) = self.zone(pfn) else {
            return;
        };
        self.seq += 1;
        let cpu = ev.cpu.unwrap_or(0) % self.cpus;
        if self.contig && !ev.kind.is_work() {
            self.step_run(ev, cpu, z);
        }
        let listed = |order: u8, mt: Option<u8>, refilled: bool| {
            After::Listed(Listed {
                cpu,
                head: pfn,
                order,
                mt: mt.map(|m| usize::from(self.numbering.to_current(m))),
                refilled,
                seq: self.seq,
                ts: ev.ts_ns,
            })
        };
        let current = |m: u8| usize::from(self.numbering.to_current(m));
        let (order, state) = match ev.kind {
            EventKind::Alloc { order, .. } if !ev.is_failed_alloc() => (order, After::InUse),
            EventKind::Extfrag {
                fallback_migratetype,
                change_ownership: false,
                ..
            } => {
                self.rolls[z]
                    .named
                    .push((pfn, current(fallback_migratetype)));
                return;
            }
            EventKind::ZoneLocked {
                order,
                migratetype,
                percpu_refill,
                ..
            } => match percpu_refill {
                true => (order, listed(order, Some(migratetype), true)),
                false => (order, After::InUse),
            },
            EventKind::Free { order, .. } => {
                let to_list = Order::new(order)
                    .is_some_and(|o| zonealloc::pcp_allowed_order(o, self.thp_order));
                match to_list {
                    true => (order, listed(order, None, false)),
                    false => (order, After::Free),
                }
            }
            EventKind::FreeBatched { .. } => (0, listed(0, None, false)),
            EventKind::PcpuDrain { order, .. } => {
                // Another CPU's refill at the drain's own timestamp came after it.
                let after = match self.rolls[z].get(pfn) {
                    Some(After::Listed(l)) => {
                        l.refilled && l.cpu != cpu && l.ts.is_some() && l.ts == ev.ts_ns
                    }
                    _ => false,
                };
                if after {
                    return;
                }
                (order, After::Free)
            }
            _ => return,
        };
        if let EventKind::ZoneLocked { migratetype, .. } = ev.kind {
            self.rolls[z].named.push((pfn, current(migratetype)));
        }
        let end = pfn.saturating_add(1u64 << order.min(20));
        self.rolls[z].set(pfn..end, state);
        self.rolls[z].events += 1;
    }

    /// The before-snapshot's counts (pagetypeinfo) are read here, before the events fed
    /// next: each zone's roll as it stands is kept ([`Roll::at_counts`]).
    pub fn counts_read(&mut self) {
        for r in &mut self.rolls {
            let now = Roll {
                at_counts: None,
                ..r.clone()
            };
            r.at_counts = Some(Box::new(now));
        }
    }

    /// The rolls per zone (as the `zones` given to [`RollWalk::new`]), every run ended.
    pub fn finish(mut self) -> Vec<Roll> {
        for cpu in 0..self.cpus {
            self.end_run(cpu, false);
        }
        self.rolls
    }
}

/// The part of `text` (the trace before the window's start marker) after the layout's read
/// began: after the line holding [`LAYOUT_MARKER`]; all of it where the text kept was cut
/// before the marker (`cut`: its front was dropped, so the read began earlier); `None` where
/// neither shows when the layout was read.
pub fn after_layout_read(text: &[u8], cut: bool) -> Option<&[u8]> {
    match memchr::memmem::rfind(text, LAYOUT_MARKER) {
        Some(at) => {
            let nl = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |k| at + k + 1);
            Some(&text[nl..])
        }
        None => cut.then_some(text),
    }
}
