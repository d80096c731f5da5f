//! Where a kswapd pass ended, read ahead from the sleep that follows it.
//!
//! `balance_pgdat` clears `ZONE_RECLAIM_ACTIVE` (`clear_reclaim_active`) and takes its watermark
//! boost off when it returns, but the trace says nothing then: `kswapd_try_to_sleep` first naps
//! for `HZ/10` (`schedule_timeout(HZ/10)`) and prints `mm_vmscan_kswapd_sleep` only after the
//! nap, when the node is still balanced. So a pass that ends in a sleep at `T` ended at least
//! `HZ/10 - 1` jiffies before `T` (the nap starts inside a jiffy), and after the node's last
//! `mm_vmscan_kswapd_wake`. Frees in that gap meet the zone's own `high`, not
//! `nr_pcp_high`'s `min(batch << 2, high)`: on the 6.1 two-node pressure capture, CPU 3 freed
//! 31 pages 44 ms before kswapd1's sleep and the kernel drained none; a replay that kept
//! reclaim active to the sleep drained 1323 pages more.
//!
//! [`NapLook`] holds the parse's chunks until the trace has run `HZ/10` past the oldest one's
//! last event (at most [`MAX_CHUNKS`]), and names for each chunk the events before which a
//! node's pass ended ([`Naps`]). A pass whose end lies before the chunks held ends at the first
//! event held: later than the kernel's, never earlier.

use std::collections::VecDeque;

use crate::trace::ingest::{Chunk, Source};
use crate::trace::parse::{Event, EventKind};

/// Chunks held at most: 256 Ki events (some 20 MiB), far more than 100 ms of any capture here.
pub const MAX_CHUNKS: usize = 64;

/// The shortest nap of `kswapd_try_to_sleep` (`schedule_timeout(HZ/10)`, begun inside a
/// jiffy: `HZ/10 - 1` jiffies), in ns, for a kernel of `hz` ticks a second.
pub fn shortest_nap_ns(hz: u32) -> u64 {
    let hz = u64::from(hz.max(10));
    (hz / 10 - 1) * 1_000_000_000 / hz
}

/// The pass ends the events pushed so far show (module docs), by event index.
#[derive(Debug)]
pub struct Naps {
    /// `HZ/10 - 1` jiffies, in ns: the shortest nap.
    nap_ns: u64,
    /// The timestamps of the events held, from index `base` on.
    times: VecDeque<Option<u64>>,
    base: u64,
    /// Per node: the index of its last `mm_vmscan_kswapd_wake`.
    last_wake: Vec<Option<u64>>,
    /// `(event index, node)`: node's pass ended before that event, in index order.
    ends: VecDeque<(u64, u32)>,
}

impl Naps {
    /// No event yet, for a kernel of `hz` ticks a second.
    pub fn new(hz: u32) -> Naps {
        Naps {
            nap_ns: shortest_nap_ns(hz),
            times: VecDeque::new(),
            base: 0,
            last_wake: Vec::new(),
            ends: VecDeque::new(),
        }
    }

    /// The next event, in trace order.
    pub fn push(&mut self, ev: &Event<'_>) {
        let at = self.base + self.times.len() as u64;
        self.times.push_back(ev.ts_ns);
        match ev.kind {
            EventKind::KswapdWake { nid, .. } => {
                let n = nid as usize;
                if self.last_wake.len() <= n {
                    // A node number is far below 2^16 (`MAX_NUMNODES`); one past it is kept.
                    if n > u16::MAX as usize {
                        return;
                    }
                    self.last_wake.resize(n + 1, None);
                }
                self.last_wake[n] = Some(at);
            }
            EventKind::KswapdSleep { nid } => {
                let Some(ts) = ev.ts_ns else {
                    return;
                };
                let end = ts.saturating_sub(self.nap_ns);
                let wake = self.last_wake.get(nid as usize).copied().flatten();
                let from = wake.map_or(self.base, |w| (w + 1).max(self.base));
                let first = (from..at)
                    .find(|&i| self.times[(i - self.base) as usize].is_some_and(|t| t >= end));
                // None: the sleep itself is the first event after the pass.
                if let Some(i) = first {
                    let pos = self.ends.partition_point(|&(j, _)| j <= i);
                    self.ends.insert(pos, (i, nid));
                }
            }
            _ => {}
        }
    }

    /// The next events, in trace order, where none is kswapd's: only their timestamps count.
    pub fn push_times(&mut self, times: impl Iterator<Item = Option<u64>>) {
        self.times.extend(times);
    }

    /// Drops the `n` oldest events held; the pass ends among them, `(index among them,
    /// node)`, in order.
    pub fn pop(&mut self, n: usize) -> Vec<(u32, u32)> {
        let n = n.min(self.times.len());
        self.times.drain(..n);
        let until = self.base + n as u64;
        let mut out = Vec::new();
        while let Some(&(i, nid)) = self.ends.front() {
            if i >= until {
                break;
            }
            self.ends.pop_front();
            // An index within a chunk of at most `CHUNK_EVENTS` events.
            out.push(((i.saturating_sub(self.base)) as u32, nid));
        }
        self.base = until;
        out
    }

    /// The shortest nap, in ns.
    pub fn nap_ns(&self) -> u64 {
        self.nap_ns
    }
}

/// A chunk of the parse with the pass ends before its events (`(index, node)`).
pub type NappedChunk = (Chunk, Vec<(u32, u32)>);

/// [`Source::next_chunk`], each chunk with the kswapd pass ends before its events.
pub struct NapLook<'a> {
    source: &'a mut Source,
    naps: Naps,
    /// The chunks held, with the timestamp of each one's last event.
    queue: VecDeque<(Chunk, Option<u64>)>,
    newest: Option<u64>,
    ended: bool,
}

impl<'a> NapLook<'a> {
    /// Reads `source` ahead for a kernel of `hz` ticks a second.
    pub fn new(source: &'a mut Source, hz: u32) -> NapLook<'a> {
        NapLook {
            source,
            naps: Naps::new(hz),
            queue: VecDeque::new(),
            newest: None,
            ended: false,
        }
    }

    /// Whether the chunks held reach far enough past the oldest one.
    fn enough(&self) -> bool {
        let Some((_, front)) = self.queue.front() else {
            return false;
        };
        if self.queue.len() >= MAX_CHUNKS {
            return true;
        }
        match (front, self.newest) {
            (Some(f), Some(n)) => n > f.saturating_add(self.naps.nap_ns()),
            _ => self.queue.len() >= 2,
        }
    }

    /// The next chunk and the pass ends before its events; `None` at the end of the input.
    pub fn next_chunk(&mut self) -> Option<NappedChunk> {
        while !self.ended && !self.enough() {
            match self.source.next_chunk() {
                Some(c) => {
                    // Most chunks hold no kswapd event: their events are not decoded.
                    if c.has_kswapd() {
                        c.events().for_each(|ev| self.naps.push(&ev));
                    } else {
                        self.naps.push_times(c.times());
                    }
                    let last = c.times().rev().flatten().next();
                    self.newest = last.or(self.newest);
                    self.queue.push_back((c, last));
                }
                None => self.ended = true,
            }
        }
        let (c, _) = self.queue.pop_front()?;
        let ends = self.naps.pop(c.len());
        Some((c, ends))
    }

    /// [`Source::recycle`].
    pub fn recycle(&self, chunk: Chunk) {
        self.source.recycle(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ingest::Source;
    use crate::trace::parse::{PagePtr, Who};
    use crate::trace::replay::options::ReplayOptions;
    use crate::trace::replay::pass;
    use crate::trace::replay::preset::Kernel;
    use crate::trace::replay::setup::Setup;
    use crate::trace::replay::snapshots::Snapshots;

    fn ev(ts_ms: u64, kind: EventKind<'static>) -> Event<'static> {
        Event {
            cpu: Some(0),
            ts_ns: Some(ts_ms * 1_000_000),
            page: PagePtr::Present,
            who: Who::UNKNOWN,
            kind,
        }
    }

    fn free(ts_ms: u64) -> Event<'static> {
        ev(ts_ms, EventKind::Free { pfn: 1, order: 0 })
    }

    #[test]
    fn a_pass_ends_a_nap_before_its_sleep() {
        // HZ 250: the nap is at least 24 jiffies, 96 ms. Wake at 0, frees at 10, 50 and 60,
        // sleep at 150: the pass ended by 54 ms, so before the free at 60.
        let mut n = Naps::new(250);
        n.push(&ev(0, EventKind::KswapdWake { nid: 1, order: 0 }));
        for t in [10, 50, 60] {
            n.push(&free(t));
        }
        n.push(&ev(150, EventKind::KswapdSleep { nid: 1 }));
        assert_eq!(n.pop(2), vec![]);
        assert_eq!(n.pop(3), vec![(1, 1)]);
    }

    #[test]
    fn a_pass_ends_no_earlier_than_its_last_wake() {
        // Wakes at 0 and 70, sleep at 150 (end by 54 ms): the pass that began at 70 ended
        // after it, before the free at 71; the free at 60 was still in the first pass.
        let mut n = Naps::new(250);
        n.push(&ev(0, EventKind::KswapdWake { nid: 0, order: 0 }));
        n.push(&free(60));
        n.push(&ev(70, EventKind::KswapdWake { nid: 0, order: 0 }));
        n.push(&free(71));
        n.push(&ev(150, EventKind::KswapdSleep { nid: 0 }));
        assert_eq!(n.pop(5), vec![(3, 0)]);
    }

    #[test]
    fn a_sleep_right_after_its_wake_ends_the_pass_at_the_sleep() {
        // Nothing between the wake and the sleep: no end before the sleep is named.
        let mut n = Naps::new(250);
        n.push(&free(0));
        n.push(&ev(1, EventKind::KswapdWake { nid: 0, order: 0 }));
        n.push(&ev(99, EventKind::KswapdSleep { nid: 0 }));
        assert_eq!(n.pop(3), vec![]);
    }

    #[test]
    fn a_pass_that_ended_before_the_events_held_ends_at_the_first_held() {
        let mut n = Naps::new(250);
        n.push(&ev(0, EventKind::KswapdWake { nid: 0, order: 0 }));
        n.push(&free(10));
        assert_eq!(n.pop(2), vec![]);
        n.push(&free(120));
        n.push(&ev(200, EventKind::KswapdSleep { nid: 0 }));
        assert_eq!(n.pop(2), vec![(0, 0)]);
    }

    #[test]
    fn frees_in_kswapds_nap_before_its_sleep_meet_the_zones_own_high() {
        // One CPU, 6.1's rules, 1024 pages allocated, kswapd woken at 1.001 s and asleep at
        // 1.250 s; the pages are freed at 1.2 s, inside the nap (`kswapd_try_to_sleep`'s
        // HZ/10) after the pass ended: the lists keep up to `high`, not `batch << 2`. Reclaim
        // active to the sleep, as before, kept at most `batch << 2` (60) pages. With `pad`
        // allocations and frees of one page between the frees and the sleep, the sleep comes
        // chunks after the pass's end: the run holds the chunks between.
        for pad in [0u64, 6000] {
            for beside in [false, true] {
                let (kept, batch, high) = nap_run(pad, beside);
                assert!(
                    kept > (batch.max(0) as u64) << 2,
                    "pad {pad}, beside {beside}: {kept} pages kept, batch {batch}, high {high}"
                );
            }
        }
    }

    /// [`frees_in_kswapds_nap_before_its_sleep_meet_the_zones_own_high`]'s replay: the pages
    /// the lists keep, their batch and high.
    fn nap_run(pad: u64, beside: bool) -> (u64, i32, i32) {
        let mut text = String::from("# tracer: nop\n");
        let line = |t: f64, body: String| format!(" a-1 [000] .... {t:.6}: {body}\n");
        let alloc = |pfn: u64| {
            format!(
                "mm_page_alloc: page=0x1 pfn={pfn:#x} order=0 migratetype=1 \
                 gfp_flags=GFP_HIGHUSER_MOVABLE"
            )
        };
        for pfn in 0..1024u64 {
            text += &line(1.0, alloc(pfn));
        }
        text += &line(1.001, "mm_vmscan_kswapd_wake: nid=0 order=0".into());
        for pfn in 0..1024u64 {
            text += &line(1.2, format!("mm_page_free: page=0x1 pfn={pfn:#x} order=0"));
        }
        for _ in 0..pad {
            text += &line(1.21, alloc(5000));
            text += &line(1.21, "mm_page_free: page=0x1 pfn=0x1388 order=0".into());
        }
        text += &line(1.25, "mm_vmscan_kswapd_sleep: nid=0".into());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt");
        std::fs::write(&path, text).unwrap();
        let opts = ReplayOptions {
            kernel: Some(Kernel::V6_1),
            zone_pages: Some(1 << 16),
            cpus: Some(1),
            infer: Some(beside),
            ..ReplayOptions::default()
        };
        let snaps = Snapshots::read(&opts).unwrap();
        let window = snaps.window(&opts);
        let mut source = Source::open(&path, &window).unwrap();
        let mut setup = Setup::new(&opts, snaps, &mut source).unwrap();
        let (done, failure) = pass::pass_with(&mut setup, &mut source, 4, &|_| {}, beside);
        source.finish().1.unwrap();
        assert!(failure.is_none(), "{failure:?}");
        assert_eq!(done, 2050 + 2 * pad);
        assert_eq!(setup.replayers[0].counts.kswapd_wakes, 1);
        let zone = &setup.replayers[0].zones[0];
        let info = zone.pcp_info(zonealloc::CpuId(0));
        (zone.pcp_pages(), info.batch, info.high)
    }
}
