//! Each CPU's PCP `count` at the trace's start marker, inferred from the trace: `/proc/zoneinfo`
//! is read some time before the marker (the shared captures read it first), so the `count` it
//! prints is a few pages off, and 7.2's scaled refills (`batch << CONFIG_PCP_BATCH_SCALE_MAX`)
//! and 6.1's `free_factor` drains turn a few pages into ±2016-page events.
//!
//! # The inference
//! Per zone and CPU, walk the trace from the start and keep `delta`, the pages the events put on
//! that CPU's lists since the start, classified as the replay classifies them
//! ([`KernelSide`]): `+` a free of a PCP order on the CPU, `+` a refilled block
//! (`mm_page_alloc_zone_locked` with `percpu_refill=1`), `-` an allocation of a PCP order that the
//! buddy did not serve directly (off the lists of the CPU whose refill listed its page, where
//! the trace stamps another: `start_count/alloc.rs`), `-` a drained block of the CPU's lists
//! (the owner [`KernelSide`] gives it: `drain_all_pages` drains other CPUs' lists), `-` the pages
//! `alloc_pages_bulk` took untraced (the bulk inference). The count at the start, `c0`, is then
//! bounded by the kernel's own arithmetic:
//! - `c0 + delta >= 0` after every event (a count is never negative);
//! - a free that no drain follows left the count below `high` (`free_unref_page_commit` in 6.1,
//!   `free_frozen_page_commit` in 7.2 drain when `count >= nr_pcp_high(...)`): `c0 + delta <
//!   high`;
//!   from 6.7, where an allocation a lower zone served shows the zone below its high mark
//!   (`ZONE_BELOW_HIGH`: `nr_pcp_high` returns `max(count, high_min)`), `c0 + delta <
//!   high_min` (`below_high.rs`);
//! - the *pin*: the first drain on the CPU that a free of order 0 or of an order above
//!   `PAGE_ALLOC_COSTLY_ORDER` (3) triggered: that free took the count from below `high` to
//!   `high` or above, so `high <= c0 + delta <= high + (1 << order) - 1` just after it (an
//!   order-0 free: `c0 + delta == high`; after a higher order's refill, which may have taken
//!   the count past `high` with no free, only `c0 + delta >= high`:
//!   `start_count/over_high.rs`). Frees of orders 1..=3 may take the `free_high` path, which
//!   drains whatever the count is, so they pin only where 6.1's arithmetic tells the two
//!   apart: 6.1's `nr_pcp_free` drains at most `high - batch` pages (`free_pcppages_bulk`
//!   may pass it by the last block drained, less a page), and `free_high` drains the whole count, so a drain of more than that emptied
//!   the lists: `c0 + delta == drained pages`.
//!
//! `high` is the zone's one fixed value before 6.7 (`pageset_update`); from 6.7 it is tuned per
//! CPU, and the walk keeps it between `high_min` (where `decay_pcp_high` and
//! `ZONE_BELOW_HIGH` take it down to) and zoneinfo's current `high` raised by each refill as
//! `nr_pcp_alloc` raises it (an order-0 refill by at most `batch <<
//! CONFIG_PCP_BATCH_SCALE_MAX`, a higher order's, THP's included, by `batch`; capped at
//! `high_max`). With kswapd's pass on the zone's node (`ZONE_RECLAIM_ACTIVE`, from the
//! trace's wake to the nap before its sleep), `nr_pcp_high` returns at most `batch << 2`;
//! the pass's start drops `high` under lists that may hold far more, so until a free on the
//! CPU drains nothing, a drain bounds the count from below only (`start_count/reclaim.rs`).
//!
//! An order-1..=3 free's drain of no more than that pins once the CPU's next allocation
//! comes off a list with no refill before it: `free_high` would have emptied the lists (in 7.2
//! only when it drained less than `batch << CONFIG_PCP_BATCH_SCALE_MAX`, which is then all).
//!
//! The count used is zoneinfo's clamped into the bounds (zoneinfo's where the trace does not
//! bound it, the pin's value where the pin is exact). The walk stops once every CPU with lists
//! is pinned, at the window's end, or after the window's first
//! [`super::first_events::LIST_EVENTS`] events: it reads the events the replay's own parse
//! holds before the replay starts ([`super::first_events`], which also feed the list inference
//! of [`super::pcp_state`]), so a pipe gets the same counts as a file. Its memory is the
//! replay's kernel-side maps, bounded by the frames the trace names.
//!
//! A free reaches the list at its commit: `free_pages_prepare` prints `mm_page_free`, and on
//! the batched path (`free_unref_page_list`, `free_unref_folios`) every page of the batch is
//! prepared before the first commit, each commit printing `mm_page_free_batched`; a drain
//! mid-batch sees only the pages committed so far. The walk counts a free at its commit, as
//! the replay does with `--proc` (`super::Replayer::commit_at_batched`).
//!
//! With `--whole-file` and `--proc` the walk runs from the file's start, and rolls zoneinfo's
//! counts back from their read ([`roll`], [`crate::trace::replay::whole_start`]).
//!
//! On by default for 6.1, 6.12 and 7.2 in the snapshot's window ([`on_by_default`]), else off
//! unless `--infer start-count=on`. BENCHMARKS.md has the figures.

pub use counts::{CpuStart, Found, StartCounts};
pub use reach::nearest as nearest_allowed;
pub use roll::ReadPoint;

use high::{High, ZoneHigh};
use zonealloc::FreeHigh;

use super::kernel::{Handover, Inferred, KernelSide, Notes};
use super::worker_runs::Pauses;
use crate::procfs::ProcSnapshot;
use crate::trace::parse::{Event, EventKind};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::preset::Kernel;
use crate::trace::replay::vmstat::{tick_ns, DEFAULT_HZ};

/// Whether the walk runs unless `--infer start-count=` says otherwise: for 6.1, 6.12 and 7.2 (5.15
/// and 6.6 have no capture to check it on), in the snapshot's window. On 6.1 every capture's refills
/// and drains come as close to the kernel's as with zoneinfo's counts or closer, but for
/// 6.1-4g-2node p_pressure's refill events (1.47% -> 1.72%; its drains 11.9% -> 5.3%): 6.1-8g
/// p_idle drains 26.2% -> 0.00%, 6.1-4g p_pressure 5.8% -> 0.00%, 6.1-2g p_prodcons 3.6/3.0% ->
/// 1.2/0.9%. With `--whole-file` the walk bounds the count at the file's start, before the snapshot
/// read that the rest of the set-up comes from: better on most captures but worse on 6.1-2g
/// p_pressure (drains 0.7% -> 16%), so off there. On 6.12 (6.7 to 6.14) it is on in the window:
/// zoneinfo is read before its reader's exit frees, and 6.12-8g p_pressure's CPU 2 held 1666 Normal
/// pages at the marker, not zoneinfo's 1629 (pinned by the free-triggered drain at 1735.393063), so
/// each of its teardown refills (`nr_pcp_alloc`: `high - count - batch` under `ZONE_BELOW_HIGH`)
/// was 37 pages too big and one refill of 925 went missing (refill events 4.02% -> 0.28%, drains
/// 0.72% -> 0.14%); no 6.12 window figure gets worse. On 7.2 (6.15 on) it is on again since the
/// held-out `*-4g-more` captures: 7.2 p_sock's window refills go 6.93% -> 1.46%, drains 3.07% ->
/// 0.00% and its Normal end state 22.7% -> 4.4% (CPU 2's count at the marker, where zoneinfo read
/// it 30 ms before, decides whether its first run of order-3 frees in softirq, 63.739978, reaches
/// `high`). Over the 27 7.2 rows the window's errors sum 19.1/20.7% -> 16.0/14.0% (refills/drains;
/// p1 drains 0.85% -> 0.00%, p2 0.53% -> 0.10%, 4g-wq p_pressure 4.76% -> 3.78% and its Normal end
/// 28.8% -> 18.7%). Worse: 7.2-4g-loads p_fork, refill events 8.81% -> 10.42% and the Normal end
/// state 6.7% -> 17.9% (Normal CPU 2's count is bounded at 1286, zoneinfo 1232, and the 54 pages
/// more sit on lists the set-up guesses: the layout does not say which CPU's list, order or type
/// a page is on), 4g-wq p_pressure refills 0.72% -> 1.48%, 4g-wq p_prodcons end 5.6% -> 6.2%. An
/// allocation the trace stamps on a CPU the task moved to is booked to the list that held its
/// page (`alloc.rs`).
pub fn on_by_default(preset: Kernel, whole_file: bool) -> bool {
    matches!(preset, Kernel::V6_1 | Kernel::V6_12 | Kernel::V7_2) && !whole_file
}

/// A free on a CPU that no other event on it has followed yet.
#[derive(Clone, Copy, Debug)]
struct Free {
    order: u8,
    /// `delta` after it.
    delta: i64,
    /// The bounds of `high` then (reclaim applied).
    high_lo: i64,
    high_hi: i64,
    /// The upper bound of `high` had kswapd's pass been over (`Some` where reclaim
    /// lowered it: [`Walk::hold`]), and when the free was committed.
    open_hi: Option<i64>,
    ts: Option<u64>,
    /// `high` fell under the count since it was last known below it
    /// ([`Cpu::high_fell`]): the free's drain bounds the count from below only.
    high_fell: bool,
    /// The zone was known below its high mark, kswapd's pass off: a drain came at
    /// `high_min` (`below_high.rs`).
    below_high: bool,
    /// Surely a `free_high` free (`free_high.rs`).
    free_high: bool,
}

impl Free {
    /// What the count stayed below if this free drained nothing: `high_min` where the zone
    /// was below its high mark (`nr_pcp_high`: `max(count, high_min)`), else `high`.
    fn no_drain_below(&self) -> i64 {
        if self.below_high {
            self.high_lo
        } else {
            self.high_hi
        }
    }
}

/// A drain run a free triggered.
#[derive(Clone, Copy, Debug)]
struct Run {
    free: Free,
    /// Pages drained so far.
    drained: i64,
    /// The largest block drained, pages.
    block: i64,
    /// When it began.
    ts: Option<u64>,
}

/// The walk's state of one zone's CPU.
#[derive(Clone, Debug)]
struct Cpu {
    zone_name: String,
    node: u32,
    zoneinfo: i64,
    high: High,
    delta: i64,
    /// `c0 >= lo`, `c0 <= hi`.
    lo: i64,
    hi: i64,
    /// The last free on this CPU, no other event after it yet.
    free: Option<Free>,
    /// The drain run the last free triggered.
    run: Option<Run>,
    /// The refill run the CPU's last event belonged to: its order and migratetype, and the
    /// last page it printed (a new run starts otherwise: [`Walk::refill`]).
    in_refill: Option<(u8, u8, u64)>,
    pin: Option<(i64, i64, Option<u64>)>,
    /// The pin narrowed by the bounds after it ([`Walk::bound`]), while it leaves more than
    /// one count.
    after: Option<(i64, i64)>,
    /// A pin an order-1..=3 free's drain gives unless `free_high` emptied the lists: it holds
    /// once the CPU's next allocation comes off a list without a refill.
    candidate: Option<(i64, i64, Option<u64>)>,
    /// The pages freed onto the lists since the candidate was set (at most
    /// [`pin::SINCE_CANDIDATE`]): an allocation of one of them says nothing of the drain.
    since_candidate: Vec<u64>,
    /// Whether the CPU has lists (`high >= batch`): a pin is waited for.
    wanted: bool,
    /// The count may be at or above `high` and no free on this CPU has shown it below since:
    /// kswapd's pass on the zone's node began (`ZONE_RECLAIM_ACTIVE`, `nr_pcp_high` at most
    /// `batch << 2`: [`Walk::kswapd`]), a refill of a higher order put its batch on the
    /// lists whatever the count (`over_high.rs`), or zoneinfo printed the count at `high`,
    /// as `decay_pcp_high` leaves it (from 6.7; the window's walk only: `cpu.rs`).
    high_fell: bool,
    /// What the trace shows of `high` at the start (`--whole-file` from 6.7 on).
    start_high: start_high::StartHigh,
    /// The values `high` can have now ([`reach`]).
    reach: reach::Reach,
    /// The start counts the pin allows with a reachable `high` ([`reach::Reach::allowed`]).
    allowed: Option<Vec<(i64, i64)>>,
    /// What its frees show of `free_count` and its `free_high` flag (`free_high.rs`).
    flags: free_high::Flags,
    /// What the trace shows of `free_count` at the start (`--whole-file` from 6.7 on).
    start_free: start_free::StartFree,
}

/// The streaming walk over the events ([`super::first_events`]).
#[derive(Clone)]
pub struct Walk {
    cpus: u32,
    zones: usize,
    per: Vec<Option<Cpu>>,
    kernel: KernelSide,
    geo: Geometry,
    thp_order: Option<u8>,
    fixed_high: bool,
    /// `CONFIG_PCP_BATCH_SCALE_MAX`.
    scale_max: u8,
    /// The kernel's `free_high` rule (`free_high.rs`; [`Walk::set_free_high`]).
    free_high: FreeHigh,
    /// Each CPU's `high` at the start is inferred ([`start_high`]).
    start_high: bool,
    /// Per node: kswapd's pass is on (`ZONE_RECLAIM_ACTIVE` on the node's zones).
    reclaim: Vec<bool>,
    /// Per zone: `ZONE_BELOW_HIGH` is known set (`below_high.rs`).
    below_high: Vec<bool>,
    /// Bounds frees gave under kswapd's pass, held until the pass's end is known
    /// ([`Walk::hold`]), and the shortest nap before its sleep is traced, ns.
    held: Vec<reclaim::Held>,
    nap_ns: u64,
    /// Per node: when its kswapd last slept.
    slept: Vec<Option<u64>>,
    /// The timestamp of the event being walked, and of the walk's first.
    now: Option<u64>,
    first_ns: Option<u64>,
    /// Per CPU, while the walk reads `high` at the start: its pauses ([`Pauses`]), and the
    /// tick they are measured in.
    pauses: (Vec<Pauses>, u64),
    events: u64,
    waiting: usize,
    /// Per CPU: the last event was a direct buddy allocation (`percpu_refill=0`), which the
    /// allocation that follows is (as [`super::pcp_state`] reads it).
    direct: Vec<bool>,
    /// Per CPU: frees `mm_page_free` printed and not committed yet (pfn, zone, order): the
    /// page goes on the list at its `mm_page_free_batched`, or before the CPU's next other
    /// event (drains aside), as the replay commits them ([`crate::trace::replay::Replayer`]'s `Deferred`).
    /// With each, the kworker that freed it, if one did ([`Walk::set_contig_free`]).
    deferred: Vec<Vec<contig::Held>>,
    /// 7.2's contiguous-range frees go on the lists as aligned blocks
    /// ([`Walk::set_contig_free`]).
    contig_free: bool,
    /// Interrupts' frees that went to the buddy ([`Walk::set_held_frees`]).
    held_frees: Vec<(u64, u32)>,
    /// Per CPU: a free-triggered drain run may be open on one of its zones ([`Cpu`]'s
    /// `run`): set at each such drain, cleared when the CPU's next other event ends its
    /// runs. Most events have none to end, and skip the look at each zone.
    runs_on: Vec<bool>,
    /// Per CPU: a batched commit has begun (a drain then belongs to it; otherwise a drain
    /// follows a single free, which was committed before it).
    batching: Vec<bool>,
    /// `mm_page_alloc_extfrag` names the page taken ([`Walk::set_extfrag_names_page`]).
    extfrag_names_page: bool,
    /// Where zoneinfo was read, for the roll-back to the walk's start ([`roll`]).
    roll_at: Option<ReadPoint>,
    /// Each CPU's `delta` (as [`Walk::per`]) at the read.
    at_read: Option<Vec<i64>>,
    /// The same where the reader's `copy_splice_read` printed, before the read point
    /// ([`Walk::note_print`]).
    at_print: Option<Vec<i64>>,
    /// `at_read` is the print's ([`Walk::since_print`]).
    printed: bool,
    /// What the kernel's side inferred per event, kept for the replay's pass
    /// ([`Walk::keep_notes`]).
    notes: Option<Notes>,
}

impl Walk {
    /// A walk for the zones of `geo` as `snap` printed them; `fixed_high` for kernels before
    /// 6.7 (one `high` per zone), `scale_max` is `CONFIG_PCP_BATCH_SCALE_MAX`.
    pub fn new(
        geo: &Geometry,
        snap: &ProcSnapshot,
        fixed_high: bool,
        scale_max: u8,
        thp_order: Option<u8>,
        pageblock_order: u8,
    ) -> Walk {
        let cpus = geo.cpus.max(1);
        let per = cpu::per_cpu(geo, snap, fixed_high, scale_max);
        let waiting = per.iter().flatten().filter(|c| c.wanted).count();
        let mut kernel = KernelSide::for_geometry(geo);
        kernel.block_types = super::kernel::BlockTypes::new(pageblock_order);
        Walk {
            cpus,
            zones: geo.zones.len(),
            per,
            kernel,
            geo: geo.clone(),
            thp_order,
            fixed_high,
            scale_max,
            free_high: FreeHigh::Off,
            start_high: false,
            reclaim: vec![
                false;
                geo.zones
                    .iter()
                    .map(|z| z.node as usize + 1)
                    .max()
                    .unwrap_or(1)
            ],
            below_high: vec![false; geo.zones.len()],
            held_frees: Vec::new(),
            held: Vec::new(),
            slept: Vec::new(),
            nap_ns: crate::trace::replay::kswapd_nap::shortest_nap_ns(
                crate::trace::replay::vmstat::DEFAULT_HZ,
            ),
            now: None,
            first_ns: None,
            pauses: (Vec::new(), tick_ns(DEFAULT_HZ)),
            events: 0,
            waiting,
            direct: vec![false; cpus as usize],
            deferred: vec![Vec::new(); cpus as usize],
            contig_free: false,
            batching: vec![false; cpus as usize],
            runs_on: vec![false; cpus as usize],
            extfrag_names_page: false,
            roll_at: None,
            at_read: None,
            at_print: None,
            printed: false,
            notes: None,
        }
    }

    /// Keeps what the walk's kernel side infers per event, for the replay's pass to go on
    /// from ([`Walk::hand_over`]): that side is the pass's, with its bulk takes off a list's
    /// head where `bulk_takes_head` ([`KernelSide::set_bulk_takes_head`]).
    pub fn keep_notes(&mut self, bulk_takes_head: bool) {
        self.notes = Some(Notes::default());
        self.kernel.set_bulk_takes_head(bulk_takes_head);
    }

    /// Whether the walk's kernel side reads a page first freed in a batch and freed again as
    /// on its list from the start ([`KernelSide::set_appeared_takes`]): its count rolls
    /// back and bounds over the take as the replay's pass replays it.
    pub fn set_appeared_takes(&mut self, on: bool) {
        self.kernel.set_appeared_takes(on);
    }

    /// The walk's kernel side and its notes ([`Walk::keep_notes`]; `None` without them), for
    /// the replay's pass: the walk reads nothing of it after its last event.
    pub fn hand_over(&mut self) -> Option<Handover> {
        let notes = self.notes.take()?;
        let zones = self.zones;
        Some(Handover {
            kernel: std::mem::replace(&mut self.kernel, KernelSide::new(zones, self.cpus)),
            events: self.events,
            notes,
        })
    }

    /// Rolls zoneinfo's counts back from their read at `at` to the walk's start ([`roll`]):
    /// the walk then reads on until that event at least.
    pub fn roll_back_from(&mut self, at: ReadPoint) {
        self.roll_at = Some(at);
        // Zoneinfo's count at `high` says nothing of the count at the file's start.
        for c in self.per.iter_mut().flatten() {
            c.high_fell = false;
        }
        self.open_start_high();
    }

    /// The walk starts at the window's start: each CPU's `free_count` there where a drain
    /// names it (from 6.7 on; the set-up takes it where the text before the window showed
    /// nothing of the CPU's lists, [`super::free_count`]).
    pub fn open_start_free(&mut self) {
        if self.fixed_high {
            return;
        }
        for c in self.per.iter_mut().flatten() {
            c.start_free.open();
        }
    }

    /// Whether every CPU with lists is pinned: the rest of the trace adds nothing.
    pub fn done(&self) -> bool {
        self.waiting == 0 && (self.roll_at.is_none() || self.at_read.is_some())
    }

    fn pcp_order(&self, order: u8) -> bool {
        order <= 3 || Some(order) == self.thp_order
    }

    /// The kernel's `HZ`, which kswapd's nap before its sleep lasts a tenth of
    /// (`kswapd_try_to_sleep`: a free in the nap met the zone's `high`, not the pass's).
    pub fn set_hz(&mut self, hz: u32) {
        self.nap_ns = crate::trace::replay::kswapd_nap::shortest_nap_ns(hz);
        self.pauses.1 = tick_ns(hz);
    }

    /// The interrupts' frees the list walk saw go to the buddy, (timestamp, CPU) sorted
    /// (`pcp_state/irq_fate.rs`): the walk counts none of them.
    pub fn set_held_frees(&mut self, held: Vec<(u64, u32)>) {
        self.held_frees = held;
    }

    /// The kernel's `free_high` rule: a drain a `free_high` free surely triggered pins the
    /// count (`free_high.rs`; none by default).
    pub fn set_free_high(&mut self, rule: FreeHigh) {
        self.free_high = rule;
    }

    /// Takes one event.
    pub fn feed(&mut self, ev: &Event<'_>) {
        self.events += 1;
        if ev.kind.is_work() {
            return self.work_line(ev);
        }
        self.now = ev.ts_ns;
        if self.first_ns.is_none() {
            self.first_ns = ev.ts_ns;
        }
        let pfn = ev.kind.pfn();
        let zone = self.geo.zone_of(pfn).unwrap_or(0);
        let inferred = self.kernel.add(ev, zone);
        if let Some(n) = self.notes.as_mut() {
            n.note(self.events - 1, inferred, &self.kernel);
        }
        self.note_print(ev, zone, inferred);
        let cpu = super::fold::fold(ev.cpu.unwrap_or(0), self.cpus);
        if self.start_high {
            self.pause_event(cpu, ev);
        }
        self.took_and_ended(ev, zone, cpu, inferred);
        // An interrupt's free that found the lists held (`pcp_spin_trylock` failed):
        // `free_one_page`. The lists, and a batch holding them, go on as they were.
        let free = matches!(ev.kind, EventKind::Free { .. });
        if free && super::pcp_state::went_to_buddy(&self.held_frees, ev, cpu) {
            return;
        }
        let direct = std::mem::take(&mut self.direct[cpu as usize]);
        let batching = self.batching[cpu as usize];
        let commit_first = match ev.kind {
            // A new free after a batch's commits: the batch is over.
            EventKind::Free { .. } => batching,
            EventKind::FreeBatched { .. } => false,
            EventKind::PcpuDrain { .. } => !batching,
            _ => true,
        };
        if commit_first {
            self.commit_all(cpu);
        }
        match ev.kind {
            EventKind::KswapdWake { nid, .. } => self.kswapd(nid, true),
            EventKind::KswapdSleep { nid } => {
                self.release(nid, ev.ts_ns);
                self.kswapd(nid, false);
            }
            EventKind::Free { pfn, order } => {
                self.defer(ev, cpu, (pfn, zone, order));
            }
            EventKind::FreeBatched { pfn } => {
                let irq = ev.who.ctx().softirq() || ev.who.ctx().hardirq();
                self.free_batched(zone, cpu, pfn, (batching, irq))
            }
            EventKind::Alloc {
                order, gfp_flags, ..
            } => {
                if order == 0 && !ev.is_failed_alloc() {
                    self.allocated_in(zone, gfp_flags);
                }
                self.alloc(ev, zone, cpu, order, (direct, inferred));
            }
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill,
            } => self.refill(zone, cpu, pfn, order, migratetype, percpu_refill),
            EventKind::Extfrag {
                pfn,
                alloc_order,
                alloc_migratetype,
                ..
            } => self.fallback(zone, cpu, (pfn, alloc_order, alloc_migratetype), direct),
            EventKind::PcpuDrain { order, .. } => {
                let worker = ev.who.is_worker_drain();
                self.drain(zone, cpu, order, (ev.ts_ns, worker));
            }
            EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => {}
        }
        if self.at_read.is_none() && self.roll_at.is_some_and(|p| p.is(ev)) {
            self.printed = self.at_print.is_some();
            self.at_read = Some(self.at_print.take().unwrap_or_else(|| self.deltas_now()));
            self.close_start_high();
        }
    }

    /// What an event does before its own kind's step: the pages `alloc_pages_bulk` took off
    /// a CPU's lists untraced (the bulk inference) and an allocation's untraced take come off,
    /// and an event other than a drain ends the drain runs open on its CPU.
    #[inline]
    fn took_and_ended(&mut self, ev: &Event<'_>, zone: usize, cpu: u32, inferred: Inferred) {
        // Pages alloc_pages_bulk took off a CPU's lists (the bulk inference), read in place:
        // no `Vec` per event.
        let mut i = 0;
        while let Some(u) = self.kernel.untraced_now.get(i) {
            let z = self.geo.zone_of(u.pfn).unwrap_or(0);
            self.add(z, u.cpu, -1);
            i += 1;
        }
        if let Inferred::UntracedAlloc { cpu: by, .. } = inferred {
            self.add(zone, by, -1);
        }
        // A drain run ends at the next other event on its CPU.
        let is_drain = matches!(ev.kind, EventKind::PcpuDrain { .. });
        if !is_drain && std::mem::take(&mut self.runs_on[cpu as usize]) {
            for z in 0..self.zones {
                // (Most events end no run: no call then.)
                if self.at(z, cpu).is_some_and(|c| c.run.is_some()) {
                    self.end_run(z, cpu);
                }
            }
        }
    }

    /// Each CPU's `delta` (as [`Walk::per`]) with the frees it has not committed yet: the
    /// kernel commits a single free as it prints it, a batch's within its call.
    fn deltas_now(&self) -> Vec<i64> {
        let mut d: Vec<i64> = self
            .per
            .iter()
            .map(|c| c.as_ref().map_or(0, |c| c.delta))
            .collect();
        for (cpu, frees) in self.deferred.iter().enumerate() {
            for &(_, z, order, ..) in frees.iter().filter(|f| self.pcp_order(f.2)) {
                if let Some(v) = d.get_mut(z * self.cpus as usize + cpu) {
                    *v += 1i64 << order;
                }
            }
        }
        d
    }

    fn at(&mut self, zone: usize, cpu: u32) -> Option<&mut Cpu> {
        let i = zone * self.cpus as usize + super::fold::fold(cpu, self.cpus) as usize;
        self.per.get_mut(i)?.as_mut()
    }

    fn add(&mut self, zone: usize, cpu: u32, pages: i64) {
        let Some(c) = self.at(zone, cpu) else {
            return;
        };
        c.delta += pages;
        // The count is never negative.
        let lo = -c.delta;
        if c.bound(lo, i64::MAX) {
            self.waiting -= 1;
        }
    }

    /// Whether `mm_page_alloc_extfrag` names the page taken
    /// ([`KernelSide::set_extfrag_names_page`]).
    pub fn set_extfrag_names_page(&mut self, names_page: bool) {
        self.extfrag_names_page = names_page;
        self.kernel.set_extfrag_names_page(names_page);
    }
}

mod alloc;
mod below_high;
mod contig;
mod counts;
mod cpu;
mod finish;
mod free_high;
mod frees;
mod high;
mod over_high;
mod pin;
mod reach;
mod reclaim;
mod refill;
pub mod roll;
mod start_free;
mod start_high;
#[cfg(test)]
mod tests;
