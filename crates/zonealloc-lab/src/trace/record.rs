//! Recording a zone's run as a kernel trace: [`Recorder`] wraps a [`Zone`], forwards
//! allocations and frees to it, and writes what happened in ftrace format: the caller-side
//! `mm_page_alloc`/`mm_page_free` it sees, and the buddy-side events the zone records
//! ([`Zone::record_events`]) in the order the kernel would log them (`mm_page_free` before the
//! drains it causes; refills and fallbacks before the `mm_page_alloc` they serve).

use std::io::{self, Write};

use zonealloc::{AllocError, AllocRequest, CpuId, FreeError, Order, Pfn, Zone, ZoneEvent};

use super::emit::{gfp_for, zone_event, TraceWriter};
use super::parse::{Event, EventKind, PagePtr};

/// A zone whose operations are written to a trace as they run.
pub struct Recorder<'z, W: Write> {
    zone: &'z Zone,
    out: TraceWriter<W>,
    buf: Vec<ZoneEvent>,
    /// The timestamp of the next event, ns; each operation advances it by `step_ns`.
    pub now_ns: u64,
    step_ns: u64,
}

/// An operation failed: the allocator's error, or the trace could not be written.
#[derive(Debug)]
pub enum RecordError {
    /// Writing the trace failed.
    Io(io::Error),
    /// The free was refused (a bug in the workload).
    Free(FreeError),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Io(e) => write!(f, "writing the trace: {e}"),
            RecordError::Free(e) => write!(f, "free refused: {e}"),
        }
    }
}

impl From<io::Error> for RecordError {
    fn from(e: io::Error) -> Self {
        RecordError::Io(e)
    }
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
        })
    }

    fn flush_zone(&mut self, cpu: u32) -> io::Result<()> {
        self.zone.take_events(&mut self.buf);
        let pb = self.zone.config().pageblock_order;
        for z in self.buf.drain(..) {
            self.out.write(&Event {
                cpu: Some(cpu),
                ts_ns: Some(self.now_ns),
                page: PagePtr::Present,
                kind: zone_event(&z, pb),
            })?;
        }
        Ok(())
    }

    /// Allocates on CPU `cpu` (the request's CPU is set to it) and records it; an allocation
    /// failure is recorded (NULL page, pfn 0) and returned as the inner `Err`.
    pub fn alloc(
        &mut self,
        cpu: u32,
        order: Order,
        req: AllocRequest,
    ) -> Result<Result<Pfn, AllocError>, RecordError> {
        self.now_ns += self.step_ns;
        let got = self.zone.alloc_with(order, req.on_cpu(CpuId(cpu)));
        self.flush_zone(cpu)?;
        let (page, pfn) = match got {
            Ok(p) => (PagePtr::Present, p.0),
            Err(_) => (PagePtr::Null, 0),
        };
        self.out.write(&Event {
            cpu: Some(cpu),
            ts_ns: Some(self.now_ns),
            page,
            kind: EventKind::Alloc {
                pfn,
                order: order.get(),
                migratetype: req.migratetype.index() as u8,
                gfp_flags: if req.can_reclaim {
                    gfp_for(req.migratetype)
                } else {
                    "GFP_ATOMIC"
                },
            },
        })?;
        Ok(got)
    }

    /// Frees on CPU `cpu` and records it.
    pub fn free(&mut self, cpu: u32, pfn: Pfn, order: Order) -> Result<(), RecordError> {
        self.now_ns += self.step_ns;
        self.out.write(&Event {
            cpu: Some(cpu),
            ts_ns: Some(self.now_ns),
            page: PagePtr::Present,
            kind: EventKind::Free {
                pfn: pfn.0,
                order: order.get(),
            },
        })?;
        self.zone
            .free_on(CpuId(cpu), pfn, order)
            .map_err(RecordError::Free)?;
        self.flush_zone(cpu)?;
        Ok(())
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.out.events
    }

    /// Stops recording and returns the writer, flushed.
    pub fn finish(self) -> io::Result<W> {
        self.zone.record_events(false);
        self.out.finish()
    }
}
