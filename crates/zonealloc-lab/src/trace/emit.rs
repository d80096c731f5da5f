//! Writing `kmem` page events as ftrace text: the kernel's `TP_printk` format strings behind
//! the `trace` file's line prefix, so our own runs read back with [`super::parse`] and with
//! the tools users already have (`trace-cmd`, scripts written for real captures).
//!
//! The prefix is `trace_print_context` of `kernel/trace/trace_output.c`:
//! `"%16s-%-7d [%03d] " comm pid cpu`, the five latency columns (`.....`), then
//! `" %5lu.%06lu: "` seconds and microseconds. A timestamp that is not a whole number of
//! microseconds is printed with nine digits (as `trace_clock=` counters are), so that
//! parsing what was written gives back exactly the event that was written.
//!
//! `page=` is printed as `%px` would print the `struct page` of the pfn in a `vmemmap` at
//! `0xffffea0000000000` with 64-byte pages (x86-64's layout), and `0000000000000000` for a
//! NULL page; an event whose page was missing is written without the field.

use std::io::{self, Write};

use super::parse::{Event, EventKind, PagePtr};

/// Where x86-64 maps `struct page` for pfn 0 (`VMEMMAP_START`).
const VMEMMAP_START: u64 = 0xffff_ea00_0000_0000;
/// `sizeof(struct page)` on x86-64.
const STRUCT_PAGE_BYTES: u64 = 64;

/// An ftrace-format event writer.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    comm: String,
    /// `pageblock_order`, printed in `mm_page_alloc_extfrag`.
    pageblock_order: u8,
    /// Events written.
    pub events: u64,
}

impl<W: Write> TraceWriter<W> {
    /// A writer to `out` whose lines name the task `comm` (pid = CPU + 1, one task per CPU).
    pub fn new(out: W, comm: &str, pageblock_order: u8) -> Self {
        Self {
            out,
            comm: comm
                .chars()
                .filter(|c| !c.is_whitespace())
                .take(15)
                .collect(),
            pageblock_order,
            events: 0,
        }
    }

    /// The header the kernel's `trace` file starts with (`print_trace_header` for `nop`).
    pub fn header(&mut self, cpus: u32) -> io::Result<()> {
        write!(
            self.out,
            "# tracer: nop\n\
             #\n\
             # entries-in-buffer/entries-written: 0/0   #P:{cpus}\n\
             #\n\
             #                                _-----=> irqs-off/BH-disabled\n\
             #                               / _----=> need-resched\n\
             #                              | / _---=> hardirq/softirq\n\
             #                              || / _--=> preempt-depth\n\
             #                              ||| / _-=> migrate-disable\n\
             #                              |||| /     delay\n\
             #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
             #              | |         |   |||||     |         |\n"
        )
    }

    /// Writes one event line.
    pub fn write(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let w = &mut self.out;
        let pid = ev.cpu.map_or(0, |c| u64::from(c) + 1);
        write!(w, "{:>16}-{:<7} ", self.comm, pid)?;
        if let Some(cpu) = ev.cpu {
            write!(w, "[{cpu:03}] ")?;
        }
        let ts = ev.ts_ns.unwrap_or(0);
        let (secs, frac) = (ts / 1_000_000_000, ts % 1_000_000_000);
        if frac % 1000 == 0 {
            write!(w, "..... {secs:5}.{:06}: ", frac / 1000)?;
        } else {
            write!(w, "..... {secs:5}.{frac:09}: ")?;
        }
        write!(w, "{}: ", ev.kind.name())?;
        let pfn = ev.kind.pfn();
        match ev.page {
            PagePtr::Present => write!(
                w,
                "page={:016x} ",
                VMEMMAP_START.wrapping_add(pfn.wrapping_mul(STRUCT_PAGE_BYTES))
            )?,
            PagePtr::Null => write!(w, "page={:016x} ", 0)?,
            PagePtr::Missing => {}
        }
        match ev.kind {
            EventKind::Alloc {
                order,
                migratetype,
                gfp_flags,
                ..
            } => writeln!(
                w,
                "pfn={pfn:#x} order={order} migratetype={migratetype} gfp_flags={gfp_flags}"
            )?,
            EventKind::Free { order, .. } => writeln!(w, "pfn={pfn:#x} order={order}")?,
            EventKind::FreeBatched { .. } => writeln!(w, "pfn={pfn:#x} order=0")?,
            EventKind::ZoneLocked {
                order,
                migratetype,
                percpu_refill,
                ..
            } => writeln!(
                w,
                "pfn={pfn:#x} order={order} migratetype={migratetype} percpu_refill={}",
                u8::from(percpu_refill)
            )?,
            EventKind::PcpuDrain {
                order, migratetype, ..
            } => writeln!(w, "pfn={pfn:#x} order={order} migratetype={migratetype}")?,
            EventKind::Extfrag {
                alloc_order,
                fallback_order,
                alloc_migratetype,
                fallback_migratetype,
                fragmenting,
                change_ownership,
                ..
            } => writeln!(
                w,
                "pfn={pfn:#x} alloc_order={alloc_order} fallback_order={fallback_order} \
                 pageblock_order={} alloc_migratetype={alloc_migratetype} \
                 fallback_migratetype={fallback_migratetype} fragmenting={} change_ownership={}",
                self.pageblock_order,
                u8::from(fragmenting),
                u8::from(change_ownership)
            )?,
            EventKind::KswapdWake { nid, order } => writeln!(w, "nid={nid} order={order}")?,
            EventKind::KswapdSleep { nid } => writeln!(w, "nid={nid}")?,
            EventKind::VmstatUpdate => writeln!(w, "work struct 0: function vmstat_update")?,
            EventKind::VmstatShepherd => writeln!(w, "work struct 0: function vmstat_shepherd")?,
            // The replay keeps no `nr_scanned`: written as 0.
            EventKind::CompactIsolate {
                start_pfn,
                end_pfn,
                nr_taken,
                ..
            } => writeln!(
                w,
                "range=({start_pfn:#x} ~ {end_pfn:#x}) nr_scanned=0 nr_taken={nr_taken}"
            )?,
        }
        self.events += 1;
        Ok(())
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The `gfp_flags` text our own runs print for a migratetype (current numbering), as
/// `show_gfp_flags` prints the usual requests of that type, so that the migratetype
/// numbering of our traces can be inferred like a kernel's.
pub fn gfp_for(mt: zonealloc::MigrateType) -> &'static str {
    match mt {
        zonealloc::MigrateType::Movable => "GFP_HIGHUSER_MOVABLE",
        zonealloc::MigrateType::Reclaimable => "GFP_KERNEL|__GFP_RECLAIMABLE",
        _ => "GFP_KERNEL",
    }
}

/// The parsed form of one of our zone's buddy-side events.
pub fn zone_event(ev: &zonealloc::ZoneEvent, pageblock_order: u8) -> EventKind<'static> {
    use zonealloc::ZoneEvent as Z;
    match *ev {
        Z::AllocZoneLocked {
            pfn,
            order,
            migratetype,
            percpu_refill,
        } => EventKind::ZoneLocked {
            pfn: pfn.0,
            order: order.get(),
            migratetype: migratetype.index() as u8,
            percpu_refill,
        },
        Z::PcpuDrain {
            pfn,
            order,
            migratetype,
        } => EventKind::PcpuDrain {
            pfn: pfn.0,
            order: order.get(),
            migratetype: migratetype.index() as u8,
        },
        Z::AllocExtfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            change_ownership,
        } => EventKind::Extfrag {
            pfn: pfn.0,
            alloc_order: alloc_order.get(),
            fallback_order: fallback_order.get(),
            alloc_migratetype: alloc_migratetype.index() as u8,
            fallback_migratetype: fallback_migratetype.index() as u8,
            // `TP_printk`: fallback_order < pageblock_order.
            fragmenting: fallback_order.get() < pageblock_order,
            change_ownership,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::{Parser, Who};
    use proptest::prelude::*;

    fn written(ev: &Event<'_>) -> String {
        let mut w = TraceWriter::new(Vec::new(), "zonealloc", 9);
        w.write(ev).unwrap();
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    #[test]
    fn lines_match_the_kernels_trace_file_byte_for_byte() {
        // The shape of the Linux 6.1 sample's lines, with a raw (`%px`) page pointer.
        let ev = Event {
            cpu: Some(3),
            ts_ns: Some(3_812_917_000),
            page: PagePtr::Present,
            who: Who::UNKNOWN,
            kind: EventKind::Alloc {
                pfn: 0x2e64,
                order: 0,
                migratetype: 1,
                gfp_flags: "GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO",
            },
        };
        assert_eq!(
            written(&ev),
            "       zonealloc-4       [003] .....     3.812917: mm_page_alloc: \
             page=ffffea00000b9900 pfn=0x2e64 order=0 migratetype=1 \
             gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO\n"
        );
        let ev = Event {
            cpu: Some(12),
            ts_ns: Some(1_000_000_001),
            page: PagePtr::Present,
            who: Who::UNKNOWN,
            kind: EventKind::Extfrag {
                pfn: 0x13128,
                alloc_order: 0,
                fallback_order: 3,
                alloc_migratetype: 0,
                fallback_migratetype: 1,
                fragmenting: true,
                change_ownership: false,
            },
        };
        assert_eq!(
            written(&ev),
            "       zonealloc-13      [012] .....     1.000000001: mm_page_alloc_extfrag: \
             page=ffffea00004c4a00 pfn=0x13128 alloc_order=0 fallback_order=3 \
             pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=1 \
             change_ownership=0\n"
        );
    }

    #[test]
    fn a_failed_allocation_prints_a_null_page_and_pfn_zero() {
        let ev = Event {
            cpu: Some(0),
            ts_ns: Some(5_000),
            page: PagePtr::Null,
            who: Who::UNKNOWN,
            kind: EventKind::Alloc {
                pfn: 0,
                order: 9,
                migratetype: 1,
                gfp_flags: "GFP_TRANSHUGE_LIGHT",
            },
        };
        let line = written(&ev);
        assert!(
            line.contains("page=0000000000000000 pfn=0x0 order=9"),
            "{line}"
        );
        let mut p = Parser::new();
        assert!(p.feed(line.as_bytes()).unwrap().is_failed_alloc());
    }

    #[test]
    fn our_gfp_text_infers_the_current_numbering() {
        use crate::trace::migratetype::{Evidence, Numbering};
        let mut e = Evidence::default();
        for mt in [
            zonealloc::MigrateType::Unmovable,
            zonealloc::MigrateType::Movable,
            zonealloc::MigrateType::Reclaimable,
        ] {
            e.add(gfp_for(mt), mt.index() as u8);
        }
        assert_eq!(e.verdict(), Numbering::Current);
    }

    fn arb_kind() -> impl Strategy<Value = (u64, u8, u8, u8, u8, bool, bool, String, u8)> {
        (
            any::<u64>(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
            "[A-Z_|]{1,12}|0x[0-9a-f]{1,8}|none",
            0u8..6,
        )
    }

    proptest! {
        /// parse(write(x)) == x for every event the parser can produce.
        #[test]
        fn writing_then_parsing_gives_the_event_back(
            cpu in proptest::option::of(0u32..100_000),
            ts in 0u64..(1 << 50),
            page in prop_oneof![Just(PagePtr::Present), Just(PagePtr::Null), Just(PagePtr::Missing)],
            (pfn, a, b, c, d, f1, f2, gfp, which) in arb_kind(),
        ) {
            let kind = match which {
                0 => EventKind::Alloc { pfn, order: a, migratetype: b, gfp_flags: &gfp },
                1 => EventKind::Free { pfn, order: a },
                2 => EventKind::FreeBatched { pfn },
                3 => EventKind::ZoneLocked { pfn, order: a, migratetype: b, percpu_refill: f1 },
                4 => EventKind::PcpuDrain { pfn, order: a, migratetype: b },
                _ => EventKind::Extfrag {
                    pfn,
                    alloc_order: a,
                    fallback_order: b,
                    alloc_migratetype: c,
                    fallback_migratetype: d,
                    fragmenting: f1,
                    change_ownership: f2,
                },
            };
            // The parser keys a NULL page on the pointer, a present one on nothing: a present
            // page at pfn 0 is a real frame and round-trips as present.
            let ev = Event { cpu, ts_ns: Some(ts), page, kind, who: Who::UNKNOWN };
            let line = written(&ev);
            let mut p = Parser::new();
            // The writer's task and latency column are its own (`zonealloc-N`, `.....`).
            let back = p.feed(line.as_bytes()).map(|b| Event { who: Who::UNKNOWN, ..b });
            prop_assert_eq!(back.as_ref(), Some(&ev), "{}", line);
        }
    }
}
