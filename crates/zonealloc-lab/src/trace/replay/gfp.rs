//! The allocation request a traced `gfp_flags` string describes.

use zonealloc::{AllocRequest, MigrateType, ZoneType};

use crate::trace::gfp_memo::GfpMemo;

/// The request a symbolic `gfp_flags` string describes (`gfp_to_alloc_flags`'s inputs).
pub fn request(mt: MigrateType, gfp: &str) -> AllocRequest {
    flags(gfp).request(mt)
}

/// What [`request`] reads off a `gfp_flags` string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Flags {
    can_reclaim: bool,
    high: bool,
    no_watermarks: bool,
    /// `gfp_zone()`: the highest zone the request may use (`None`: any).
    highest_zone: Option<ZoneType>,
}

impl Flags {
    fn request(self, mt: MigrateType) -> AllocRequest {
        let mut req = AllocRequest::new(mt);
        req.can_reclaim = self.can_reclaim;
        req.high = self.high;
        req.no_watermarks = self.no_watermarks;
        match self.highest_zone {
            Some(zone) => req.zone_limit(zone),
            None => req,
        }
    }
}

fn flags(gfp: &str) -> Flags {
    if gfp.starts_with("0x") || gfp.chars().all(|c| c.is_ascii_digit()) {
        return Flags {
            can_reclaim: true,
            ..Flags::default()
        };
    }
    let mut out = Flags::default();
    for f in gfp.split('|') {
        match f {
            // Composites with __GFP_DIRECT_RECLAIM (include/linux/gfp_types.h).
            "GFP_KERNEL"
            | "GFP_KERNEL_ACCOUNT"
            | "GFP_NOFS"
            | "GFP_NOIO"
            | "GFP_USER"
            | "GFP_HIGHUSER"
            | "GFP_HIGHUSER_MOVABLE"
            | "GFP_TRANSHUGE"
            | "GFP_DMA"
            | "GFP_DMA32"
            | "__GFP_DIRECT_RECLAIM"
            | "__GFP_RECLAIM" => out.can_reclaim = true,
            "GFP_ATOMIC" | "__GFP_HIGH" => out.high = true,
            "__GFP_MEMALLOC" => out.no_watermarks = true,
            _ => {}
        }
        // gfp_zone(): the highest zone the request may use, whose lowmem protection the
        // watermark checks of lower zones add (GFP_DMA and GFP_DMA32 also reclaim).
        match f {
            "GFP_DMA" | "__GFP_DMA" => out.highest_zone = Some(ZoneType::Dma),
            "GFP_DMA32" | "__GFP_DMA32" => out.highest_zone = Some(ZoneType::Dma32),
            _ => {}
        }
    }
    out
}

/// [`request`] remembering the `gfp_flags` strings it has read ([`GfpMemo`]).
#[derive(Default)]
pub struct GfpCache(GfpMemo<Flags>);

impl GfpCache {
    /// [`request`], from the cache where `gfp` was seen before.
    #[inline]
    pub fn request(&mut self, mt: MigrateType, gfp: &str) -> AllocRequest {
        self.0.get(gfp, flags).request(mt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::gfp_memo::Key;

    #[test]
    fn the_cache_answers_as_request_does() {
        let texts = [
            "GFP_KERNEL|__GFP_ZERO",
            "GFP_ATOMIC|__GFP_NOWARN",
            "GFP_KERNEL|__GFP_ZERO",
            "GFP_NOWAIT|__GFP_NOWARN",
            "0x100cca",
            "GFP_KERNEL|__GFP_MEMALLOC",
            "GFP_DMA32|__GFP_ZERO",
            "GFP_DMA",
            "GFP_NOWAIT|__GFP_NOWARN",
            "GFP_NOWAIT|__GFP_NOWARN",
            // One key (length, first and last eight bytes), different requests: the cache
            // must compare the whole strings.
            "GFP_NOWAIT|__GFP_HIGH|__GFP_NOWARN",
            "GFP_NOWAIT|__GFP_ZERO|__GFP_NOWARN",
            "GFP_NOWAIT|__GFP_HIGH|__GFP_NOWARN",
            "",
            "GFP_DMA",
        ];
        assert_eq!(
            Key::of("GFP_NOWAIT|__GFP_HIGH|__GFP_NOWARN"),
            Key::of("GFP_NOWAIT|__GFP_ZERO|__GFP_NOWARN")
        );
        assert_ne!(Key::of("GFP_DMA"), Key::of("GFP_DMA32"));
        let mut c = GfpCache::default();
        for mt in [MigrateType::Unmovable, MigrateType::Movable] {
            for t in texts {
                assert_eq!(c.request(mt, t), request(mt, t), "{t}");
            }
        }
        // Past its size the cache still answers, reading the string each time.
        let mut small = GfpCache::default();
        for i in 0..GfpMemo::<Flags>::MAX + 3 {
            let t = if i % 2 == 0 {
                format!("GFP_ATOMIC|__GFP_X{i}")
            } else {
                format!("GFP_KERNEL|__GFP_X{i}")
            };
            assert_eq!(
                small.request(MigrateType::Movable, &t),
                request(MigrateType::Movable, &t)
            );
        }
        assert_eq!(small.0.len(), GfpMemo::<Flags>::MAX);
    }
}
