//! Watermarks: how much free memory a zone keeps back, and the check every allocation passes
//! (`__setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`). The check itself
//! (`__zone_watermark_ok`, `zone_watermark_fast`) reads the lock-free mirror in `shared.rs`.

use crate::config::{WatermarkConfig, ZoneConfig};
use crate::types::{ZoneType, MAX_NR_ZONES};

/// A zone's watermarks in pages (`zone->_watermark[]` and `watermark_boost`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Watermarks {
    /// `WMARK_MIN`: below this only reserve-entitled requests succeed.
    pub min: u64,
    /// `WMARK_LOW`: the fast path's mark.
    pub low: u64,
    /// `WMARK_HIGH`: the mark `ZONE_BELOW_HIGH` is measured against.
    pub high: u64,
    /// `WMARK_PROMO`.
    pub promo: u64,
    /// `watermark_boost`, added to every mark while fallbacks fragment the zone.
    pub boost: u64,
}

impl Watermarks {
    /// The boosted mark for index 0 (min), 1 (low) or 2 (high) (`wmark_pages`).
    #[inline]
    pub fn mark(&self, index: usize) -> u64 {
        let base = match index {
            0 => self.min,
            1 => self.low,
            _ => self.high,
        };
        base + self.boost
    }
}

/// One zone's share of a node, as the watermark setup sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ZoneSize {
    pub(crate) zone_type: ZoneType,
    pub(crate) managed: u64,
}

/// `int_sqrt`.
fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    // Newton's method on integers (no float sqrt in core).
    let mut r = 1u64 << (64 - x.leading_zeros()).div_ceil(2);
    loop {
        let next = (r + x / r) / 2;
        if next >= r {
            return r;
        }
        r = next;
    }
}

/// `calculate_min_free_kbytes`: `clamp(int_sqrt(lowmem_kbytes * 16), 128, 262144)`.
pub(crate) fn default_min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    int_sqrt(lowmem_kbytes * 16).clamp(128, 262_144)
}

fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    (x / d) * n + (x % d) * n / d
}

/// `__setup_per_zone_wmarks` and `setup_per_zone_lowmem_reserve` for the zones of one node,
/// returning each zone's watermarks and lowmem reserves. `cfg` supplies the sysctls (the node
/// uses its first zone's); zones with `WatermarkConfig::Fixed` keep their fixed marks.
pub(crate) fn setup_node_watermarks(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
) -> (
    [Watermarks; MAX_NR_ZONES],
    [[u64; MAX_NR_ZONES]; MAX_NR_ZONES],
) {
    let mut out = [Watermarks::default(); MAX_NR_ZONES];
    let mut reserve = [[0u64; MAX_NR_ZONES]; MAX_NR_ZONES];
    let is_low = |z: &ZoneSize| !matches!(z.zone_type, ZoneType::HighMem | ZoneType::Movable);
    // nr_free_buffer_pages() at boot (watermarks still zero): managed pages of zones <= Normal.
    let lowmem_pages: u64 = zones.iter().filter(|z| is_low(z)).map(|z| z.managed).sum();
    let buffer_pages: u64 = zones
        .iter()
        .filter(|z| z.zone_type <= ZoneType::Normal)
        .map(|z| z.managed)
        .sum();
    for (i, (z, cfg)) in zones.iter().zip(cfgs).enumerate() {
        let wm = match cfg.watermarks {
            WatermarkConfig::Fixed { min, low, high } => Watermarks {
                min,
                low,
                high,
                promo: high + (high - low),
                boost: 0,
            },
            WatermarkConfig::Auto { min_free_kbytes } => {
                let kb_per_page = cfg.page_size / 1024;
                let lowmem_kbytes = if kb_per_page > 0 {
                    buffer_pages * kb_per_page
                } else {
                    buffer_pages * cfg.page_size / 1024
                };
                let mfk = min_free_kbytes.unwrap_or_else(|| default_min_free_kbytes(lowmem_kbytes));
                // pages_min = min_free_kbytes >> (PAGE_SHIFT - 10)
                let pages_min = mfk * 1024 / cfg.page_size;
                let tmp = if lowmem_pages == 0 {
                    0
                } else {
                    ((pages_min as u128 * z.managed as u128) / lowmem_pages as u128) as u64
                };
                let min = if is_low(z) {
                    tmp
                } else {
                    (z.managed / 1024).clamp(32, 128)
                };
                let step = (tmp >> 2).max(mult_frac(
                    z.managed,
                    cfg.watermark_scale_factor as u64,
                    10000,
                ));
                Watermarks {
                    min,
                    low: min + step,
                    high: min + 2 * step,
                    promo: min + 3 * step,
                    boost: 0,
                }
            }
        };
        out[i] = wm;
    }
    // setup_per_zone_lowmem_reserve: zone i keeps back (managed of zone types above it, up to
    // and including j) / ratio[i] from requests whose highest zone type is j. Absent zone
    // types count as empty, as the kernel's unpopulated zones do.
    let mut managed_by_type = [0u64; MAX_NR_ZONES];
    for z in zones {
        managed_by_type[z.zone_type.index()] += z.managed;
    }
    for (i, z) in zones.iter().enumerate() {
        let ti = z.zone_type.index();
        let ratio = cfgs[i].lowmem_reserve_ratio[ti] as u64;
        let clear = ratio == 0 || z.managed == 0;
        let mut upper = 0u64;
        for j in ti + 1..MAX_NR_ZONES {
            upper += managed_by_type[j];
            reserve[i][j] = if clear { 0 } else { upper / ratio };
        }
    }
    (out, reserve)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_worked_example_4m_pages() {
        // Spec §4.4: one lowmem zone of 4,000,000 managed pages, 4 KiB pages.
        let zones = [ZoneSize {
            zone_type: ZoneType::Normal,
            managed: 4_000_000,
        }];
        let (wm, _) = setup_node_watermarks(&zones, &[ZoneConfig::default()]);
        assert_eq!(default_min_free_kbytes(16_000_000), 16000);
        assert_eq!(wm[0].min, 4000);
        assert_eq!(wm[0].low, 8000);
        assert_eq!(wm[0].high, 12000);
        assert_eq!(wm[0].promo, 16000);
    }

    #[test]
    fn min_free_kbytes_is_clamped() {
        assert_eq!(default_min_free_kbytes(0), 128);
        assert_eq!(default_min_free_kbytes(1 << 40), 262_144);
    }

    #[test]
    fn lowmem_reserve_follows_ratio() {
        let zones = [
            ZoneSize {
                zone_type: ZoneType::Dma32,
                managed: 1 << 20,
            },
            ZoneSize {
                zone_type: ZoneType::Normal,
                managed: 1 << 22,
            },
        ];
        let cfgs = [ZoneConfig::default(); 2];
        let (_, res) = setup_node_watermarks(&zones, &cfgs);
        assert_eq!(res[0][ZoneType::Normal.index()], (1 << 22) / 256);
        assert_eq!(res[1][ZoneType::Normal.index()], 0);
    }
}
