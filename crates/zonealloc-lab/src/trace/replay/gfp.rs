//! The allocation request a traced `gfp_flags` string describes.

use zonealloc::{AllocRequest, MigrateType, ZoneType};

/// The request a symbolic `gfp_flags` string describes (`gfp_to_alloc_flags`'s inputs).
pub fn request(mt: MigrateType, gfp: &str) -> AllocRequest {
    let mut req = AllocRequest::new(mt);
    if gfp.starts_with("0x") || gfp.chars().all(|c| c.is_ascii_digit()) {
        return req;
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
        // gfp_zone(): the highest zone the request may use, whose lowmem protection the
        // watermark checks of lower zones add (GFP_DMA and GFP_DMA32 also reclaim).
        match f {
            "GFP_DMA" | "__GFP_DMA" => req = req.zone_limit(ZoneType::Dma),
            "GFP_DMA32" | "__GFP_DMA32" => req = req.zone_limit(ZoneType::Dma32),
            _ => {}
        }
    }
    req.can_reclaim = direct;
    req.high = high;
    req.no_watermarks = memalloc;
    req
}
