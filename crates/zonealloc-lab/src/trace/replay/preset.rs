//! `--kernel VERSION`: which kernel's PCP and buddy rules a replay runs
//! (docs/kernel-versions.md §0).
//!
//! A version names a family: `5.15` (5.x), `6.1` (6.0 and 6.1), `6.6` (6.2 to 6.6), `6.12`
//! (6.7 to 6.14: `high_min`/`high_max` auto-tuning, decay) and `7.2` = `mainline` (6.15 on:
//! the `batch + high_min / 2` free_high threshold). Each family runs the core's preset of the
//! same name ([`KernelVersion::apply`]), every rule a field `--variant` can set back. With
//! `--proc` and no `--kernel`, the family is inferred from the zoneinfo format (§6.1): 5.15,
//! 6.1 and 6.6 print the same one (`high:`/`batch:` pagesets, no `promo` watermark), which
//! names the 6.1 family. What the core does not model of a family is listed by
//! [`Kernel::unmodelled`].

use zonealloc::{KernelVersion, ZoneConfig};

/// A kernel family with its own PCP rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Kernel {
    /// 5.x (checked against Android's common 5.15).
    V5_15,
    /// 6.0 and 6.1 (checked against Debian's 6.1.192).
    V6_1,
    /// 6.2 to 6.6 (checked against 6.6.14).
    V6_6,
    /// 6.7 to 6.14 (checked against Debian's 6.12.117).
    V6_12,
    /// 6.15 and later (checked against Debian's 7.2.13 and mainline).
    V7_2,
}

impl Kernel {
    /// Parses `5.15`, `6.1`, `6.1.192-2`, `6.6`, `v6.12`, `7.2.13+deb14-amd64` or `mainline`.
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
            (6, 0..=1) => Kernel::V6_1,
            (6, 2..=6) => Kernel::V6_6,
            (6, 7..=14) => Kernel::V6_12,
            _ => Kernel::V7_2,
        })
    }

    /// The family's name.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::V5_15 => "5.15",
            Kernel::V6_1 => "6.1",
            Kernel::V6_6 => "6.6",
            Kernel::V6_12 => "6.12",
            Kernel::V7_2 => "7.2 (mainline)",
        }
    }

    /// Whether `high` is one fixed value (no auto-tuning): `pageset_update` before 6.7, as
    /// the core's preset sets it.
    pub fn fixed_high(self) -> bool {
        ZoneConfig::for_kernel(self.version()).pcp.high_mode == zonealloc::HighMode::Fixed
    }

    /// Whether `mm_page_alloc_extfrag` names the page the allocation took: from 6.15
    /// (`__rmqueue_claim`, `__rmqueue_steal`) on, and in the 6.12 family, whose tree (Debian's
    /// 6.12.117) carries that split (docs/kernel-versions.md §0.1; 6.12-4g/p_pressure line
    /// 33262: a THP refill's claimed block printed only as extfrag); before, as in 6.1,
    /// `__rmqueue_fallback` names the block fallen back to and `__rmqueue` retries
    /// `__rmqueue_smallest`, which prints the page.
    pub fn extfrag_names_page(self) -> bool {
        matches!(self, Kernel::V6_12 | Kernel::V7_2)
    }

    /// Whether an untraced bulk allocation takes the order-0 pages frees put on a CPU's list
    /// head, so that a traced allocation under them shows they were taken: before 6.15,
    /// `vfree` frees a vmalloc'd area (a kernel stack) page by page (`__free_page` ->
    /// `free_unref_page_commit`: `list_add`) and `vm_area_alloc_pages` takes pages untraced
    /// from the head (`__alloc_pages_bulk` -> `__rmqueue_pcplist`: `list_first_entry`);
    /// from 6.15 `vfree` frees contiguous runs as blocks (`free_pages_bulk` ->
    /// `__free_contig_range`), which no order-0 list head holds.
    pub fn bulk_takes_head(self) -> bool {
        !matches!(self, Kernel::V7_2)
    }

    /// The core's preset this family follows ([`KernelVersion`]).
    pub fn version(self) -> KernelVersion {
        match self {
            Kernel::V5_15 => KernelVersion::V5_15,
            Kernel::V6_1 => KernelVersion::V6_1,
            Kernel::V6_6 => KernelVersion::V6_6,
            Kernel::V6_12 => KernelVersion::V6_12,
            Kernel::V7_2 => KernelVersion::V7_2,
        }
    }

    /// Sets the family's rules ([`KernelVersion::apply`]: fixed or auto-tuned `high`, refill
    /// and drain scaling, `free_high`, decay, drain order, highatomic and watermark rules).
    pub fn apply(self, cfg: &mut ZoneConfig) {
        self.version().apply(cfg);
    }

    /// `zone_page_state(NR_FREE_PAGES)` lags the free lists by each CPU's `vm_stat_diff`
    /// (`__mod_zone_page_state`, folded by `refresh_cpu_vm_stats`), and the watermark checks
    /// read it: in every family (`mm/vmstat.c`); the replay models it where it runs the
    /// workers that fold it (6.7 on).
    pub fn vmstat_drift(self) -> bool {
        match self {
            Kernel::V5_15 | Kernel::V6_1 | Kernel::V6_6 | Kernel::V6_12 | Kernel::V7_2 => true,
        }
    }

    /// Whether the family's kernel runs `Dynamic Preempt: voluntary` (Debian's 5.15 to 6.12,
    /// their dmesg) rather than 7.2's `lazy`: a task in the kernel gives the CPU up only at
    /// its preemption points (`cond_resched`, sleeping), none of them inside one free call
    /// (`free_unref_folios`: `free_pages_prepare` for the batch, then the commits;
    /// `free_unref_page`), so a gap in its trace there is an interrupt or the vCPU's stall,
    /// not a switch to the CPU's kworker (`Replayer::mid_free_no_switch`).
    pub fn voluntary_preempt(self) -> bool {
        match self {
            Kernel::V5_15 | Kernel::V6_1 | Kernel::V6_6 | Kernel::V6_12 => true,
            Kernel::V7_2 => false,
        }
    }

    /// The family's rules the core does not model (for the report), from
    /// docs/kernel-versions.md §0 and §9.
    pub fn unmodelled(self) -> &'static [&'static str] {
        // order_to_pindex / NR_PCP_LISTS: the model keeps Debian 6.1's and 6.12+'s two THP
        // lists (Movable, and the other types).
        const THP_ONE_LIST: &str =
            "one THP-order PCP list shared by every migratetype (NR_PCP_LISTS 13; the model has two)";
        match self {
            Kernel::V5_15 => &[
                "three THP-order PCP lists, one per migratetype (NR_PCP_LISTS 15; the model has two)",
            ],
            Kernel::V6_6 => &[THP_ONE_LIST],
            Kernel::V6_1 | Kernel::V6_12 | Kernel::V7_2 => &[],
        }
    }
}

/// Infers the family from a zoneinfo text (docs/kernel-versions.md §6.1): `high_min:` lines
/// mean 7.2, a `promo` watermark 6.12, neither the 6.1 family (5.15 and 6.6 print the same
/// format as 6.1, so a 5.15 or 6.6 snapshot needs `--kernel`).
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
            ("5.4", Kernel::V5_15),
            ("5.15", Kernel::V5_15),
            ("6.0", Kernel::V6_1),
            ("6.1", Kernel::V6_1),
            ("6.1.192-2", Kernel::V6_1),
            ("6.2", Kernel::V6_6),
            ("v6.6", Kernel::V6_6),
            ("6.6.14", Kernel::V6_6),
            ("6.7", Kernel::V6_12),
            ("6.12", Kernel::V6_12),
            ("6.14", Kernel::V6_12),
            ("6.15", Kernel::V7_2),
            ("7.2.13+deb14-amd64", Kernel::V7_2),
            ("mainline", Kernel::V7_2),
        ] {
            assert_eq!(Kernel::parse(s), Ok(k), "{s}");
        }
        assert!(Kernel::parse("4.19").unwrap_err().contains("5.15"));
        assert!(Kernel::parse("six")
            .unwrap_err()
            .contains("expected a version"));
    }

    #[test]
    fn each_family_runs_the_core_preset_of_its_name() {
        for k in [
            Kernel::V5_15,
            Kernel::V6_1,
            Kernel::V6_6,
            Kernel::V6_12,
            Kernel::V7_2,
        ] {
            let mut c = ZoneConfig::default();
            k.apply(&mut c);
            assert_eq!(c, ZoneConfig::for_kernel(k.version()), "{}", k.name());
            assert!(k.name().starts_with(&k.version().to_string()));
        }
        // The presets the lab used to approximate are now their own.
        assert_eq!(Kernel::V5_15.version(), KernelVersion::V5_15);
        assert_eq!(Kernel::V6_6.version(), KernelVersion::V6_6);
        assert!(Kernel::V6_6.fixed_high() && !Kernel::V6_12.fixed_high());
        assert!(Kernel::V6_1.unmodelled().is_empty());
        assert!(Kernel::V6_6.unmodelled()[0].contains("THP"));
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
