//! The allocation request a traced `gfp_flags` string describes.

use zonealloc::{AllocRequest, MigrateType};

/// The request a symbolic `gfp_flags` string describes (`gfp_to_alloc_flags`'s inputs).
pub fn request(mt: MigrateType, gfp: &str) -> AllocRequest {
    let mut req = AllocRequest::new(mt);
    let (can_reclaim, high, no_watermarks) = flags(gfp);
    req.can_reclaim = can_reclaim;
    req.high = high;
    req.no_watermarks = no_watermarks;
    req
}

/// What [`request`] reads off `gfp`: `(can_reclaim, high, no_watermarks)`.
fn flags(gfp: &str) -> (bool, bool, bool) {
    if gfp.starts_with("0x") || gfp.chars().all(|c| c.is_ascii_digit()) {
        return (true, false, false);
    }
    let mut direct = false;
    let mut high = false;
    let mut memalloc = false;
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
            | "__GFP_RECLAIM" => direct = true,
            "GFP_ATOMIC" | "__GFP_HIGH" => high = true,
            "__GFP_MEMALLOC" => memalloc = true,
            _ => {}
        }
    }
    (direct, high, memalloc)
}

/// [`request`] remembering the `gfp_flags` strings it has read: a trace repeats a few dozen
/// of them, and consecutive allocations mostly share one, so a replay compares the string
/// with the last one (and then the others) instead of splitting and matching it again.
#[derive(Default)]
pub struct GfpCache {
    seen: Vec<(Box<str>, (bool, bool, bool))>,
    last: usize,
}

impl GfpCache {
    /// The most strings kept; a trace with more (hex flags from many kernels, or hostile
    /// input) reads the others each time.
    pub const MAX: usize = 256;

    /// [`request`], from the cache where `gfp` was seen before.
    #[inline]
    pub fn request(&mut self, mt: MigrateType, gfp: &str) -> AllocRequest {
        let f = match self.seen.get(self.last) {
            Some((s, f)) if **s == *gfp => *f,
            _ => self.lookup(gfp),
        };
        let mut req = AllocRequest::new(mt);
        (req.can_reclaim, req.high, req.no_watermarks) = f;
        req
    }

    fn lookup(&mut self, gfp: &str) -> (bool, bool, bool) {
        if let Some(i) = self.seen.iter().position(|(s, _)| **s == *gfp) {
            self.last = i;
            return self.seen[i].1;
        }
        let f = flags(gfp);
        if self.seen.len() < Self::MAX {
            self.last = self.seen.len();
            self.seen.push((gfp.into(), f));
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_answers_as_request_does() {
        let texts = [
            "GFP_KERNEL|__GFP_ZERO",
            "GFP_ATOMIC|__GFP_NOWARN",
            "GFP_KERNEL|__GFP_ZERO",
            "GFP_NOWAIT|__GFP_NOWARN",
            "0x100cca",
            "GFP_KERNEL|__GFP_MEMALLOC",
            "GFP_NOWAIT|__GFP_NOWARN",
            "GFP_NOWAIT|__GFP_NOWARN",
        ];
        let mut c = GfpCache::default();
        for mt in [MigrateType::Unmovable, MigrateType::Movable] {
            for t in texts {
                assert_eq!(c.request(mt, t), request(mt, t), "{t}");
            }
        }
        // Past its size the cache still answers, reading the string each time.
        let mut small = GfpCache::default();
        for i in 0..GfpCache::MAX + 3 {
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
        assert_eq!(small.seen.len(), GfpCache::MAX);
    }
}
