//! `--kernel VERSION`: which kernel's PCP rules a replay runs (docs/kernel-versions.md §0).
//!
//! A version names a family: `5.15` (5.x), `6.1` (6.0 to 6.6: one fixed `high`, refills of
//! `batch`, drains scaled by `free_factor`, the 5.18 `free_high`), `6.12` (6.7 to 6.14:
//! `high_min`/`high_max` auto-tuning, decay) and `7.2` = `mainline` (6.15 on: the
//! `batch + high_min / 2` free_high threshold). With `--proc` and no `--kernel`, the family
//! is inferred from the zoneinfo format (§6.1).
//!
//! A family applies the core's preset ([`KernelVersion::apply`]): 6.1's one fixed `high`,
//! refills of `batch`, `free_factor` drain scaling, its `free_high` and no decay; 6.12's
//! `free_high` threshold; 7.2's chunked drains and highatomic refill refusal; each rule a
//! field `--variant` can set back. 5.15 runs 6.1's rules without `free_high` (the core has
//! no 5.15 preset). What the core does not model yet is listed by [`Kernel::unmodelled`].

use zonealloc::{FreeHigh, KernelVersion, ZoneConfig};

/// A kernel family with its own PCP rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Kernel {
    /// 5.x (checked against Android's 5.15).
    V5_15,
    /// 6.0 to 6.6 (checked against Debian's 6.1.192).
    V6_1,
    /// 6.7 to 6.14 (checked against Debian's 6.12.117).
    V6_12,
    /// 6.15 and later (checked against Debian's 7.2.13 and mainline).
    V7_2,
}

impl Kernel {
    /// Parses `5.15`, `6.1`, `6.1.192-2`, `v6.12`, `7.2.13+deb14-amd64` or `mainline`.
    pub fn parse(s: &str) -> Result<Kernel, String> {
        let t = s.trim().trim_start_matches('v');
        if t == "mainline" || t == "latest" {
            return Ok(Kernel::V7_2);
        }
        let mut it = t.split(|c: char| !c.is_ascii_digit());
        let num = |p: Option<&str>| p.and_then(|x| x.parse::<u32>().ok());
        let (Some(major), Some(minor)) = (num(it.next()), num(it.next())) else {
            return Err(format!(
                "--kernel {s}: expected a version like 6.1, 6.12.5 or 7.2, or mainline"
            ));
        };
        Ok(match (major, minor) {
            (0..=4, _) => {
                return Err(format!(
                    "--kernel {s}: kernels before 5.x are not modelled (5.15 is the oldest preset)"
                ))
            }
            (5, _) => Kernel::V5_15,
            (6, 0..=6) => Kernel::V6_1,
            (6, 7..=14) => Kernel::V6_12,
            _ => Kernel::V7_2,
        })
    }

    /// The family's name.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::V5_15 => "5.15",
            Kernel::V6_1 => "6.1",
            Kernel::V6_12 => "6.12",
            Kernel::V7_2 => "7.2 (mainline)",
        }
    }

    /// Whether `high` is one fixed value (no auto-tuning): `pageset_update` before 6.7.
    pub fn fixed_high(self) -> bool {
        matches!(self, Kernel::V5_15 | Kernel::V6_1)
    }

    /// The core's preset this family follows ([`KernelVersion`]; 5.15 follows 6.1's with
    /// `free_high` off, the core offering no 5.15 preset).
    pub fn version(self) -> KernelVersion {
        match self {
            Kernel::V5_15 | Kernel::V6_1 => KernelVersion::V6_1,
            Kernel::V6_12 => KernelVersion::V6_12,
            Kernel::V7_2 => KernelVersion::V7_2,
        }
    }

    /// Sets the family's rules ([`KernelVersion::apply`]: fixed or auto-tuned `high`, refill
    /// and drain scaling, `free_high`, decay, highatomic and watermark rules).
    pub fn apply(self, cfg: &mut ZoneConfig) {
        self.version().apply(cfg);
        if self == Kernel::V5_15 {
            // 5.15's free_unref_page_commit has no free_high.
            cfg.pcp.free_high = FreeHigh::Off;
        }
    }

    /// The family's rules the core does not model yet (for the report), from
    /// docs/kernel-versions.md §0.
    pub fn unmodelled(self) -> &'static [&'static str] {
        match self {
            Kernel::V5_15 => &[
                "5.15 is run with 6.1's rules (its sources were not verified), free_high off",
                "legacy fallback (__rmqueue_fallback / steal_suitable_fallback)",
                "migratetype cached at free for free_pcppages_bulk",
            ],
            Kernel::V6_1 => &[
                "legacy fallback (__rmqueue_fallback / steal_suitable_fallback)",
                "migratetype cached at free for free_pcppages_bulk",
            ],
            Kernel::V6_12 | Kernel::V7_2 => &[],
        }
    }
}

/// Infers the family from a zoneinfo text (docs/kernel-versions.md §6.1): `high_min:` lines
/// mean 7.2, a `promo` watermark 6.12, neither the 6.1 family.
pub fn infer_from_zoneinfo(text: &str) -> Kernel {
    let mut promo = false;
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("high_min:") || l.starts_with("high_max:") {
            return Kernel::V7_2;
        }
        promo |= l.starts_with("promo ");
    }
    if promo {
        Kernel::V6_12
    } else {
        Kernel::V6_1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_to_families() {
        for (s, k) in [
            ("5.15", Kernel::V5_15),
            ("6.1", Kernel::V6_1),
            ("6.1.192-2", Kernel::V6_1),
            ("v6.6", Kernel::V6_1),
            ("6.12", Kernel::V6_12),
            ("7.2.13+deb14-amd64", Kernel::V7_2),
            ("mainline", Kernel::V7_2),
        ] {
            assert_eq!(Kernel::parse(s), Ok(k), "{s}");
        }
        assert!(Kernel::parse("4.19").unwrap_err().contains("5.15"));
        assert!(Kernel::parse("six")
            .unwrap_err()
            .contains("expected a version"));
        let mut c = ZoneConfig::default();
        Kernel::V6_1.apply(&mut c);
        assert_eq!(c.pcp.free_high, FreeHigh::FreeFactor);
        assert!(!c.pcp.decay && !c.pcp.alloc_scaling);
        let mut c = ZoneConfig::default();
        Kernel::V5_15.apply(&mut c);
        assert_eq!(c.pcp.free_high, FreeHigh::Off);
    }

    #[test]
    fn the_zoneinfo_format_names_the_family() {
        let v61 = "  pages free     3840\n        min      39\n        high     57\n    \
                   pagesets\n    cpu: 0\n              count: 0\n              high:  0\n";
        assert_eq!(infer_from_zoneinfo(v61), Kernel::V6_1);
        let v612 = "        high     57\n        promo    60\n";
        assert_eq!(infer_from_zoneinfo(v612), Kernel::V6_12);
        let v72 = "        promo    60\n              high_min: 0\n";
        assert_eq!(infer_from_zoneinfo(v72), Kernel::V7_2);
    }
}
