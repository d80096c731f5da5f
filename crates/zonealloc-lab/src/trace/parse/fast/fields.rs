//! The per-event decoders: an event's fields after its `pfn=`, in the order its `TP_printk`
//! prints them (`include/trace/events/kmem.h`): `mm_page_alloc`'s order, migratetype and
//! gfp_flags, `mm_page_free`'s order, `mm_page_free_batched`'s `order=0`,
//! `mm_page_alloc_zone_locked`'s order, migratetype and percpu_refill, and
//! `mm_page_pcpu_drain`'s order and migratetype.

use super::super::line::Name;
use super::super::EventKind;
use super::cursor::Cur;

/// The event `name` of frame `pfn` from its fields after `order=`: `None` for a field not
/// of the common shape, and for the events the fast path does not read (extfrag, kswapd's),
/// which go the general way.
#[inline(always)]
pub(super) fn fields<'a>(c: &mut Cur<'a>, name: Name, pfn: u64) -> Option<EventKind<'a>> {
    let kind = match name {
        Name::Alloc => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            let migratetype = c.small()?;
            c.key(b"gfp_flags=")?;
            let gfp = c.text().filter(|g| !g.is_empty())?;
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags: gfp,
            }
        }
        Name::Free => EventKind::Free {
            pfn,
            order: c.small()?,
        },
        Name::FreeBatched => {
            // The general walk reads no number from its `order=0`.
            c.token();
            EventKind::FreeBatched { pfn }
        }
        Name::ZoneLocked => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            let migratetype = c.small()?;
            c.key(b"percpu_refill=")?;
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill: c.flag()?,
            }
        }
        Name::PcpuDrain => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype: c.small()?,
            }
        }
        Name::Extfrag
        | Name::KswapdWake
        | Name::KswapdSleep
        | Name::WorkqueueStart
        | Name::CompactIsolate
        | Name::CompactFastIsolate => return None,
    };
    Some(kind)
}
