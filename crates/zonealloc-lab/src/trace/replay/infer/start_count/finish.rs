//! The start-count walk's result: each CPU's count at the walk's start, from its bounds, its
//! pin, and zoneinfo's count (rolled back from its read with `--whole-file`, [`super::roll`]).

use super::counts::HighRead;
use super::start_high::Clock;
use super::{Cpu, CpuStart, Found, StartCounts, Walk};

impl Walk {
    /// The counts found, after the last event.
    pub fn finish(mut self) -> StartCounts {
        for cpu in 0..self.cpus {
            self.commit_all(cpu);
        }
        // A pass still on at the walk's end: its frees met its `high`.
        for nid in 0..self.reclaim.len() as u32 {
            self.release(nid, None);
        }
        for i in 0..self.per.len() {
            let (z, cpu) = (i / self.cpus as usize, (i % self.cpus as usize) as u32);
            self.end_run(z, cpu);
        }
        if self.start_high {
            self.settle_start_high();
        }
        let cpus = self.cpus as usize;
        let (mut list, mut highs) = (Vec::new(), Vec::new());
        let per = self.per.iter().enumerate();
        let per = per.filter_map(|(i, c)| Some((i, (i % cpus) as u32, c.as_ref()?)));
        for (i, cpu, c) in per.filter(|(_, _, c)| c.wanted) {
            // zoneinfo's count, or rolled back from its read to the walk's start.
            let rolled = self.at_read.as_ref().map(|d| c.zoneinfo - d[i]);
            let mut start = start_of(cpu, c, rolled);
            if self.start_high {
                // The worker's runs one a second until the workers' schedule times them
                // (`StartCounts::time_highs`).
                let read = HighRead {
                    index: list.len(),
                    start: c.start_high.clone(),
                    c0: start.inferred as i64,
                    high: c.high,
                    scale_max: self.scale_max,
                };
                let high = read
                    .start
                    .infer_on(read.c0, &c.high, read.scale_max, Clock::OneASecond);
                start.high = Some(high.max(0) as u64);
                highs.push(read);
            }
            list.push(start);
        }
        StartCounts {
            cpus: list,
            skipped: None,
            events: self.events,
            rolled_from_ns: self
                .roll_at
                .filter(|_| self.at_read.is_some())
                .map(|p| p.ts_ns),
            first_ns: self.first_ns,
            highs,
            pauses: std::mem::take(&mut self.pauses.0),
        }
    }
}

/// CPU `cpu`'s start count from the walk's state `c` and zoneinfo's count rolled back to the
/// walk's start (`rolled`, where the walk rolled it back).
fn start_of(cpu: u32, c: &Cpu, rolled: Option<i64>) -> CpuStart {
    let base = rolled.unwrap_or(c.zoneinfo);
    // Up to the pin, the bounds of every event; after it, the pin's narrowed by those after
    // it where they agree.
    let (lo, hi) = (c.lo, c.hi);
    let (found, lo, hi, pin_ns) = match c.pin {
        Some((plo, phi, ts)) => {
            let (l, h) = (lo.max(plo), hi.min(phi));
            // The bounds after the pin, where they agree with those before it.
            let (l, h) = match c.after {
                Some((al, ah)) if l.max(al) <= h.min(ah) => (l.max(al), h.min(ah)),
                _ => (l, h),
            };
            if l > h {
                (Found::Inconsistent, plo.max(0), phi.max(0), ts)
            } else if l == h {
                (Found::Pinned, l, h, ts)
            } else {
                (Found::Bounded, l, h, ts)
            }
        }
        None if lo > hi => (Found::Inconsistent, 0, i64::MAX, None),
        None if lo > base || hi < base => (Found::Bounded, lo, hi, None),
        None if rolled.is_some() => (Found::RolledBack, lo, hi, None),
        None => (Found::Zoneinfo, lo, hi, None),
    };
    let mut inferred = base.clamp(lo, hi.max(lo));
    // Where the pin names the starts a reachable `high` gives (`reach.rs`): the nearest.
    let allowed: Vec<(u64, u64)> = c
        .allowed
        .iter()
        .flatten()
        .filter_map(|&(a, b)| {
            let (a, b) = (a.max(lo).max(0), b.min(hi));
            (a <= b).then_some((a as u64, b as u64))
        })
        .collect();
    if let Some(a) = &c.allowed {
        inferred = super::reach::nearest(inferred, a, (lo, hi));
    }
    CpuStart {
        zone: c.zone_name.clone(),
        node: c.node,
        cpu,
        zoneinfo: c.zoneinfo as u64,
        rolled_back: rolled,
        inferred: inferred.max(0) as u64,
        found,
        bounds: (
            lo.max(0) as u64,
            (hi < i64::MAX).then_some(hi.max(0) as u64),
        ),
        pin_ns,
        high: None,
        free_count: c.start_free.found().map(|x| x.max(0) as u64),
        allowed,
    }
}
