//! Recording a zone's run as a kernel trace: [`Recorder`] wraps a [`Zone`], forwards
//! allocations and frees to it, and writes what happened in ftrace format: the caller-side
//! `mm_page_alloc`/`mm_page_free` it sees, and the buddy-side events the zone records
//! ([`Zone::record_events`]) in the order the kernel would log them (`mm_page_free` before the
//! drains it causes; refills and fallbacks before the `mm_page_alloc` they serve).
//!
//! Writing never disturbs the run: a write error is kept (the first one), later events are
//! dropped, and [`Recorder::finish`] returns it, as `BufWriter` does for its buffer.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use zonealloc::{AllocError, AllocRequest, CpuId, FreeError, Order, Pfn, Zone, ZoneEvent};

use super::emit::{gfp_for, zone_event, TraceWriter};
use super::parse::{Event, EventKind, PagePtr, Who};

/// A zone whose operations are written to a trace as they run.
pub struct Recorder<'z, W: Write> {
    zone: &'z Zone,
    out: TraceWriter<W>,
    buf: Vec<ZoneEvent>,
    /// The timestamp of the next event, ns; each operation advances it by `step_ns`.
    now_ns: u64,
    step_ns: u64,
    error: Option<io::Error>,
}

impl<'z, W: Write> Recorder<'z, W> {
    /// Starts recording `zone` (switching its event recording on) into `out`, with the trace
    /// header; operations are `step_ns` apart.
    pub fn new(zone: &'z Zone, out: W, step_ns: u64) -> io::Result<Self> {
        zone.record_events(true);
        let mut out = TraceWriter::new(out, "zonealloc", zone.config().pageblock_order);
        out.header(zone.config().pcp.cpus)?;
        Ok(Recorder {
            zone,
            out,
            buf: Vec::new(),
            now_ns: 0,
            step_ns,
            error: None,
        })
    }

    /// Whether a write has failed (later events are not written).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    fn write(&mut self, ev: &Event<'_>) {
        if self.error.is_none() {
            if let Err(e) = self.out.write(ev) {
                self.error = Some(e);
            }
        }
    }

    fn flush_zone(&mut self, cpu: u32) {
        self.zone.take_events(&mut self.buf);
        let pb = self.zone.config().pageblock_order;
        let events = std::mem::take(&mut self.buf);
        for z in &events {
            self.write(&Event {
                cpu: Some(cpu),
                ts_ns: Some(self.now_ns),
                page: PagePtr::Present,
                who: Who::UNKNOWN,
                kind: zone_event(z, pb),
            });
        }
        self.buf = events;
        self.buf.clear();
    }

    /// Allocates on CPU `cpu` (the request's CPU is set to it) and records it; a failure is
    /// recorded too (NULL page, pfn 0).
    pub fn alloc(&mut self, cpu: u32, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        self.now_ns += self.step_ns;
        let got = self.zone.alloc_with(order, req.on_cpu(CpuId(cpu)));
        self.flush_zone(cpu);
        let (page, pfn) = match got {
            Ok(p) => (PagePtr::Present, p.0),
            Err(_) => (PagePtr::Null, 0),
        };
        self.write(&Event {
            cpu: Some(cpu),
            ts_ns: Some(self.now_ns),
            page,
            who: Who::UNKNOWN,
            kind: EventKind::Alloc {
                pfn,
                order: order.get(),
                migratetype: req.migratetype.index() as u8,
                gfp_flags: if req.can_reclaim {
                    gfp_for(req.migratetype)
                } else if req.high {
                    "GFP_ATOMIC"
                } else {
                    "GFP_NOWAIT"
                },
            },
        });
        got
    }

    /// Frees on CPU `cpu` and records it (a refused free is not recorded).
    pub fn free(&mut self, cpu: u32, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.now_ns += self.step_ns;
        self.zone.free_on(CpuId(cpu), pfn, order)?;
        // `mm_page_free` comes first in the kernel (`__free_pages_prepare`), then the drains
        // the free caused, which the zone holds until `flush_zone` takes them.
        self.write(&Event {
            cpu: Some(cpu),
            ts_ns: Some(self.now_ns),
            page: PagePtr::Present,
            who: Who::UNKNOWN,
            kind: EventKind::Free {
                pfn: pfn.0,
                order: order.get(),
            },
        });
        self.flush_zone(cpu);
        Ok(())
    }

    /// Drains every CPU's lists from CPU `cpu` (`drain_all_pages`) and records the
    /// `mm_page_pcpu_drain` events. (A replay of the trace cannot repeat the drain itself:
    /// traces log what a drain moved, not that one was asked for.)
    pub fn drain_all(&mut self, cpu: u32) {
        self.now_ns += self.step_ns;
        self.zone.drain_all();
        self.flush_zone(cpu);
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.out.events
    }

    /// Stops recording and returns the writer, flushed; or the first write error.
    pub fn finish(self) -> io::Result<W> {
        self.zone.record_events(false);
        if let Some(e) = self.error {
            return Err(e);
        }
        self.out.finish()
    }
}

/// The zone a lab experiment drives, recorded to a trace file or not: the same calls as
/// [`Zone`]'s, so an experiment's workload reads the same either way (`zonealloc lab
/// --record-traces DIR`).
pub struct TracedZone<'z> {
    zone: &'z Zone,
    rec: Option<RefCell<Recorder<'z, BufWriter<File>>>>,
}

impl<'z> TracedZone<'z> {
    /// `zone`, recorded to `path` when one is given.
    pub fn new(zone: &'z Zone, path: Option<&Path>) -> io::Result<Self> {
        let rec = match path {
            Some(p) => {
                let f = BufWriter::with_capacity(1 << 16, File::create(p)?);
                Some(RefCell::new(Recorder::new(zone, f, 1_000)?))
            }
            None => None,
        };
        Ok(TracedZone { zone, rec })
    }

    /// [`Zone::alloc_with`], recorded on the request's CPU (CPU 0 if it names none).
    pub fn alloc_with(&self, order: Order, req: AllocRequest) -> Result<Pfn, AllocError> {
        match &self.rec {
            Some(rec) => rec
                .borrow_mut()
                .alloc(req.cpu.map_or(0, |c| c.0), order, req),
            None => self.zone.alloc_with(order, req),
        }
    }

    /// [`Zone::free_on`], recorded.
    pub fn free_on(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        match &self.rec {
            Some(rec) => rec.borrow_mut().free(cpu.0, pfn, order),
            None => self.zone.free_on(cpu, pfn, order),
        }
    }

    /// [`Zone::drain_all`], recorded as drained from CPU 0.
    pub fn drain_all(&self) {
        match &self.rec {
            Some(rec) => rec.borrow_mut().drain_all(0),
            None => self.zone.drain_all(),
        }
    }

    /// Flushes the trace; the first write error, if any.
    pub fn finish(self) -> io::Result<()> {
        match self.rec {
            Some(rec) => rec.into_inner().finish().map(drop),
            None => Ok(()),
        }
    }
}
