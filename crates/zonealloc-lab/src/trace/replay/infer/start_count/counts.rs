//! What the start-count walk gives: each CPU's count at the walk's start, how it was found,
//! and the bounds the trace set on it.

use serde::Serialize;

use super::high::High;
use super::start_high::{Clock, StartHigh};
use crate::trace::replay::infer::worker_runs::Pauses;

/// How one CPU's start count was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// Pinned exactly by a free-triggered drain.
    Pinned,
    /// Bounded by the trace (a pin of an order above 0, or the bounds alone); zoneinfo's
    /// count clamped into them.
    Bounded,
    /// The trace's bounds contradict each other (an event the walk did not see); the pin's
    /// bounds alone are used.
    Inconsistent,
    /// Nothing in the trace bounds it: zoneinfo's count.
    Zoneinfo,
    /// Nothing in the trace bounds it: zoneinfo's count rolled back from its read to the
    /// walk's start ([`super::roll`], `--whole-file`).
    RolledBack,
    /// zoneinfo's count carried forward from its print to the window's start marker over
    /// the trace before the marker, held in the bounds (`replay::carry_start`).
    Carried,
}

/// One CPU's start count.
#[derive(Clone, Debug, Serialize)]
pub struct CpuStart {
    /// The zone's name (`DMA32`).
    pub zone: String,
    /// The zone's node.
    pub node: u32,
    /// The CPU.
    pub cpu: u32,
    /// zoneinfo's count.
    pub zoneinfo: u64,
    /// zoneinfo's count rolled back from its read to the walk's start, which the bounds then
    /// hold ([`super::roll`]); `None` without a read point. Negative where the trace's events do not
    /// add up (an event the walk did not see).
    pub rolled_back: Option<i64>,
    /// The count the replay starts from.
    pub inferred: u64,
    /// How.
    pub found: Found,
    /// The bounds the trace gives (`lo..=hi`, `None`: unbounded above).
    pub bounds: (u64, Option<u64>),
    /// Trace time (ns) of the pin.
    pub pin_ns: Option<u64>,
    /// `high` at the start, where the walk infers it (`--whole-file` from 6.7 on, from the
    /// frees and the worker's first run before the CPU's first refill); zoneinfo's otherwise.
    pub high: Option<u64>,
    /// `free_count` at the start, where a drain names it (`--whole-file` from 6.7 on:
    /// `start_free.rs`); the replay's 0 otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_count: Option<u64>,
    /// The starts within `bounds` that the pin allows with a `high` the CPU can reach
    /// (`lo..=hi` each); empty where the walk knows `high` only as a range.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<(u64, u64)>,
}

/// What the inference gives.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StartCounts {
    /// Per zone (as the geometry's) and CPU that has lists.
    pub cpus: Vec<CpuStart>,
    /// Why zoneinfo's counts were kept for all, if they were.
    pub skipped: Option<String>,
    /// Trace events the walk read.
    pub events: u64,
    /// When zoneinfo was read (ns), where the walk rolled the counts back from its read
    /// ([`super::roll`]).
    pub rolled_from_ns: Option<u64>,
    /// The walk's first event's time (ns), from which its bounds on `high` time the
    /// worker's runs.
    #[serde(skip)]
    pub(super) first_ns: Option<u64>,
    /// What the walk read of each inferred `high` ([`CpuStart::high`]), to read it again
    /// on the workers' schedule ([`StartCounts::time_highs`]).
    #[serde(skip)]
    pub(super) highs: Vec<HighRead>,
    /// Per CPU: its pauses up to the walk's end, which time its worker's late runs.
    #[serde(skip)]
    pub(super) pauses: Vec<Pauses>,
}

/// What the walk read of one CPU's `high` at the start ([`StartHigh`]), with what it is
/// read against: the count there and the bounds of `high`.
#[derive(Clone, Debug)]
pub(super) struct HighRead {
    /// The CPU's place in [`StartCounts::cpus`].
    pub(super) index: usize,
    pub(super) start: StartHigh,
    pub(super) c0: i64,
    pub(super) high: High,
    pub(super) scale_max: u8,
}

impl StartCounts {
    /// The count CPU `cpu` of zone `zone` starts from, where inferred.
    pub fn count(&self, zone: &str, cpu: u32) -> Option<u64> {
        self.cpus
            .iter()
            .find(|c| c.zone == zone && c.cpu == cpu)
            .map(|c| c.inferred)
    }

    /// [`StartCounts::count`] of node `node`'s zone `zone` (two nodes each have a DMA32).
    pub fn count_on(&self, node: u32, zone: &str, cpu: u32) -> Option<u64> {
        self.on(node, zone, cpu).map(|c| c.inferred)
    }

    /// The least count node `node`'s zone `zone`'s CPU `cpu` can start from, as the trace
    /// bounds it; a count carried from zoneinfo's print ([`Found::Carried`]) is the kernel's
    /// own (`zoneinfo_show_print` prints `pcp->count`, every list's pages, orders 1 to 3 and
    /// the THP order's too: `pcp_allowed_order`), so it is its own floor, and what the
    /// order-0 lists the trace shows exact do not hold is on lists it never shows
    /// (`ListDemand::fit`). 7.2-8g-8cpu p_idle, Normal CPU 1: zoneinfo's 900, carried to 920,
    /// bounded 116..=1582; every order-0 list refills (528 Unmovable, 132 Movable), and the
    /// other 260 pages were dropped. The kernel's first `decay_pcp_high` drain (157.150476,
    /// 563 Unmovable and 214 Movable) then took 777 pages to ours' 517: `high` 11594 ->
    /// 10145 in both (the next drains, 1268, 1109, 971, 849, 743, are each an eighth of it),
    /// so the kernel's count was 10922, 260 over ours.
    pub fn floor_on(&self, node: u32, zone: &str, cpu: u32) -> Option<u64> {
        self.on(node, zone, cpu).map(|c| match c.found {
            Found::Carried => c.inferred,
            _ => c.bounds.0,
        })
    }

    /// The `high` node `node`'s zone `zone`'s CPU `cpu` starts from, where inferred.
    pub fn high_on(&self, node: u32, zone: &str, cpu: u32) -> Option<u64> {
        self.on(node, zone, cpu).and_then(|c| c.high)
    }

    /// The `free_count` node `node`'s zone `zone`'s CPU `cpu` starts from, where inferred.
    pub fn free_count_on(&self, node: u32, zone: &str, cpu: u32) -> Option<u64> {
        self.on(node, zone, cpu).and_then(|c| c.free_count)
    }

    /// The walk's first event's time (ns), from which it timed the worker's runs.
    pub fn walk_start_ns(&self) -> Option<u64> {
        self.first_ns
    }

    /// Whether a `high` at the start was read off runs without lines that
    /// [`StartCounts::time_highs`] would time.
    pub fn has_timed_highs(&self) -> bool {
        self.first_ns.is_some() && !self.highs.is_empty()
    }

    /// Reads each inferred `high` at the start again, the worker's runs the trace's lines
    /// do not count timed by `runs_through(cpu, t, pauses)`: CPU `cpu`'s runs done before an
    /// event at trace time `t` and at or before `t` (the trace's run at `t` too), its pauses
    /// as the walk saw them, as the replay's workers will do them
    /// ([`crate::trace::replay::vmstat::Schedule::runs_through`]); the walk counted one a
    /// second from its first event. 7.2-4g-6cpu p_thp, Normal CPU 1: the file starts at
    /// 127.62 s and CPU 1's timer fires at x.81, so four runs come before the free that
    /// drained at 131.043609, where one a second counts three.
    pub fn time_highs(&mut self, runs_through: impl Fn(u32, u64, Option<&Pauses>) -> (u32, u32)) {
        let Some(first) = self.first_ns else {
            return;
        };
        for r in &self.highs {
            let Some(c) = self.cpus.get_mut(r.index) else {
                continue;
            };
            let (cpu, pauses) = (c.cpu, self.pauses.get(c.cpu as usize));
            let runs = |since: u64| runs_through(cpu, first.saturating_add(since), pauses);
            let high = r
                .start
                .infer_on(r.c0, &r.high, r.scale_max, Clock::Schedule(&runs));
            c.high = Some(high.max(0) as u64);
        }
    }

    fn on(&self, node: u32, zone: &str, cpu: u32) -> Option<&CpuStart> {
        self.cpus
            .iter()
            .find(|c| c.node == node && c.zone == zone && c.cpu == cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 7.2-8g-8cpu p_idle, Normal CPU 1 at the window's start (`floor_on`): fails on the old
    /// code, which gave the bounds' 116.
    #[test]
    fn a_count_carried_from_zoneinfo_is_its_own_floor() {
        let cpu = |found| CpuStart {
            zone: "Normal".into(),
            node: 0,
            cpu: 1,
            zoneinfo: 900,
            rolled_back: None,
            inferred: 920,
            found,
            bounds: (116, Some(1582)),
            pin_ns: None,
            high: None,
            free_count: None,
            allowed: Vec::new(),
        };
        let counts = |found| StartCounts {
            cpus: vec![cpu(found)],
            ..StartCounts::default()
        };
        assert_eq!(counts(Found::Carried).floor_on(0, "Normal", 1), Some(920));
        assert_eq!(counts(Found::Bounded).floor_on(0, "Normal", 1), Some(116));
        assert_eq!(counts(Found::Carried).floor_on(0, "Normal", 2), None);
    }
}
