//! `--variant` policy sets for `zonealloc trace replay`: `upstream` (the kernel's defaults, or
//! the `--kernel`/`--proc` set-up the replay starts from) or comma-separated `knob=value`
//! settings on top of it. Every [`ZoneConfig`] field is a knob under its field's name
//! (`pcp.` may prefix the per-CPU ones); the short names of the seed changes stay.
//!
//! ```text
//! tail_merge=on|off                      seed 003
//! batch_scale_max=0..=6                  seed 001 (0: off)
//! free_high=off|original|current|batch|free_factor   seed 000 (batch: 6.12, free_factor: 6.1)
//! high_mode=fixed|autotune alloc_scaling=on|off
//! free_scaling=free_count|free_factor|free_factor_uncapped   (uncapped: 5.15 to 6.6)
//! decay=on|off drain_in_batches=on|off highatomic_no_refill=on|off   (kernel-version rules)
//! drain_batch_free=on|off                5.15's free_pcppages_bulk round robin
//! highatomic_cap=aligned|plus_pageblock highatomic_unusable=free|reserved
//! movable_like_highmem=on|off thp_min_free_kbytes=on|off thp_min_totalram_mib=N
//! smp_locks_free=before_initcalls|arch_initcall lowmem_reserve_follows_managed=on|off
//! fallback=claim_steal|legacy drain_migratetype=at_drain|at_free   (6.1: legacy, at_free)
//! llc_slice_bytes=N                      sets PCPF_FREE_HIGH_BATCH when > 3 * batch pages
//! locking=spinlock|owner-only            seed 002
//! drain=remote|owner                     seed 004
//! pcp=on|off (enabled=on|off)            per-CPU lists at all
//! batch=N high_min=N high_max=N          fixed PCP sizes instead of zone_batchsize/zone_highsize
//! high_fraction=0|N>=8                   percpu_pagelist_high_fraction
//! thp_order=N|none                       the THP order with its own PCP lists
//! mobility_grouping=auto|on|off          grouping pages by mobility (also mobility=)
//! max_order=N pageblock_order=N page_size=N
//! min_free_kbytes=N|auto                 watermarks computed from it (watermarks=auto too)
//! watermarks=MIN:LOW:HIGH                fixed watermarks in pages
//! watermark_scale_factor=N watermark_boost_factor=N
//! lowmem_reserve_ratio=A:B:C:D:E:F       per zone type, DMA first
//! ```

use zonealloc::{
    DrainMigratetype, DrainMode, FallbackRule, FreeHigh, FreeScaling, HighMode, HighatomicCap,
    HighatomicUnusable, MobilityGrouping, PcpLocking, SmpLocksFree, WatermarkConfig, ZoneConfig,
};

/// One policy set: its name (the spec as given) and the configuration it makes.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The name the report prints (the spec, e.g. `free_high=off,tail_merge=off`).
    pub name: String,
    /// The zone configuration (CPU count and span are set by the replay).
    pub cfg: ZoneConfig,
}

/// The knobs a spec may set, for error messages.
pub const KNOBS: &str = "tail_merge=on|off, batch_scale_max=0..=6, \
free_high=off|original|current|batch|free_factor, high_mode=fixed|autotune, \
alloc_scaling=on|off, free_scaling=free_count|free_factor|free_factor_uncapped, decay=on|off, \
drain_in_batches=on|off, drain_batch_free=on|off, highatomic_no_refill=on|off, highatomic_cap=aligned|plus_pageblock, \
highatomic_unusable=free|reserved, movable_like_highmem=on|off, thp_min_free_kbytes=on|off, \
thp_min_totalram_mib=N, smp_locks_free=before_initcalls|arch_initcall, \
lowmem_reserve_follows_managed=on|off, fallback=claim_steal|legacy, \
drain_migratetype=at_drain|at_free, llc_slice_bytes=N, locking=spinlock|owner-only, \
drain=remote|owner, pcp=on|off, batch=N, high_min=N, high_max=N, high_fraction=N, \
thp_order=N|none, mobility_grouping=auto|on|off, max_order=N, pageblock_order=N, page_size=N, \
min_free_kbytes=N|auto, watermarks=auto|MIN:LOW:HIGH, watermark_scale_factor=N, \
watermark_boost_factor=N, lowmem_reserve_ratio=A:B:C:D:E:F";

fn on_off(knob: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("{knob}={v}: expected on or off")),
    }
}

fn number<T: std::str::FromStr>(knob: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{knob}={v}: expected a non-negative integer"))
}

fn numbers<const N: usize>(knob: &str, v: &str) -> Result<[u64; N], String> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() != N {
        return Err(format!("{knob}={v}: expected {N} numbers separated by ':'"));
    }
    let mut out = [0u64; N];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = number(knob, p)?;
    }
    Ok(out)
}

/// A knob's values: each value's names (the first one named in errors) and what it sets.
type Choices<'a, T> = &'a [(&'a [&'a str], T)];

/// The value `v` names among `choices`, else an error for knob `k` that lists them.
fn pick<T: Copy>(k: &str, v: &str, choices: Choices<'_, T>) -> Result<T, String> {
    if let Some((_, t)) = choices.iter().find(|(names, _)| names.contains(&v)) {
        return Ok(*t);
    }
    let names: Vec<&str> = choices.iter().map(|(names, _)| names[0]).collect();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    Err(format!("{k}={v}: expected {expected}"))
}

/// Sets one knob of `cfg`.
fn set(cfg: &mut ZoneConfig, k: &str, v: &str, spec: &str) -> Result<(), String> {
    let k = k.strip_prefix("pcp.").unwrap_or(k);
    if set_pcp(cfg, k, v)? || set_zone(cfg, k, v)? {
        return Ok(());
    }
    Err(format!(
        "unknown knob '{k}' in variant '{spec}' (knobs: {KNOBS})"
    ))
}

/// Sets `k` if it is a knob of the per-CPU lists (`cfg.pcp`); whether it is.
fn set_pcp(cfg: &mut ZoneConfig, k: &str, v: &str) -> Result<bool, String> {
    match k {
        "batch_scale_max" => cfg.pcp.batch_scale_max = number(k, v)?,
        "free_high" => {
            cfg.pcp.free_high = pick(
                k,
                v,
                &[
                    (&["off"], FreeHigh::Off),
                    (&["original"], FreeHigh::Original),
                    (&["current", "on"], FreeHigh::Current),
                    (&["batch"], FreeHigh::Batch),
                    (&["free_factor"], FreeHigh::FreeFactor),
                ],
            )?
        }
        "high_mode" => {
            let modes: Choices<_> = &[
                (&["fixed"], HighMode::Fixed),
                (&["autotune", "auto_tune"], HighMode::AutoTune),
            ];
            cfg.pcp.high_mode = pick(k, v, modes)?
        }
        "alloc_scaling" => cfg.pcp.alloc_scaling = on_off(k, v)?,
        "free_scaling" => {
            cfg.pcp.free_scaling = pick(
                k,
                v,
                &[
                    (&["free_count"], FreeScaling::FreeCount),
                    (&["free_factor"], FreeScaling::FreeFactor),
                    (&["free_factor_uncapped"], FreeScaling::FreeFactorUncapped),
                ],
            )?
        }
        "decay" => cfg.pcp.decay = on_off(k, v)?,
        "drain_in_batches" => cfg.pcp.drain_in_batches = on_off(k, v)?,
        "drain_batch_free" => cfg.pcp.drain_batch_free = on_off(k, v)?,
        "highatomic_no_refill" => cfg.pcp.highatomic_no_refill = on_off(k, v)?,
        "drain_migratetype" => {
            let whens: Choices<_> = &[
                (&["at_drain"], DrainMigratetype::AtDrain),
                (&["at_free"], DrainMigratetype::AtFree),
            ];
            cfg.pcp.drain_migratetype = pick(k, v, whens)?
        }
        "llc_slice_bytes" => cfg.pcp.llc_slice_bytes = number(k, v)?,
        "locking" => {
            let locks: Choices<_> = &[
                (&["spinlock"], PcpLocking::Spinlock),
                (&["owner-only", "owner_only"], PcpLocking::OwnerOnly),
            ];
            cfg.pcp.locking = pick(k, v, locks)?
        }
        "drain" => {
            let modes: Choices<_> = &[
                (&["remote"], DrainMode::Remote),
                (&["owner"], DrainMode::Owner),
            ];
            cfg.pcp.drain = pick(k, v, modes)?
        }
        "pcp" | "enabled" => cfg.pcp.enabled = on_off(k, v)?,
        "batch" => cfg.pcp.batch = Some(number(k, v)?),
        "high_min" => cfg.pcp.high_min = Some(number(k, v)?),
        "high_max" => cfg.pcp.high_max = Some(number(k, v)?),
        "high_fraction" => cfg.pcp.high_fraction = number(k, v)?,
        "thp_order" => {
            cfg.pcp.thp_order = match v {
                "none" | "off" => None,
                _ => Some(number(k, v)?),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Sets `k` if it is a knob of the zone (the rest of `cfg`); whether it is.
fn set_zone(cfg: &mut ZoneConfig, k: &str, v: &str) -> Result<bool, String> {
    match k {
        "tail_merge" => cfg.tail_merge = on_off(k, v)?,
        "highatomic_cap" => {
            let caps: Choices<_> = &[
                (&["aligned"], HighatomicCap::Aligned),
                (&["plus_pageblock"], HighatomicCap::PlusPageblock),
            ];
            cfg.highatomic_cap = pick(k, v, caps)?
        }
        "highatomic_unusable" => {
            let uses: Choices<_> = &[
                (&["free"], HighatomicUnusable::Free),
                (&["reserved"], HighatomicUnusable::Reserved),
            ];
            cfg.highatomic_unusable = pick(k, v, uses)?
        }
        "movable_like_highmem" => cfg.movable_like_highmem = on_off(k, v)?,
        "thp_min_free_kbytes" => cfg.thp_min_free_kbytes = on_off(k, v)?,
        "thp_min_totalram_mib" => {
            cfg.thp_min_totalram_mib = v
                .parse()
                .map_err(|_| format!("{k}={v}: expected MiB (0: THP on at every size)"))?
        }
        "smp_locks_free" => {
            let whens: Choices<_> = &[
                (&["before_initcalls"], SmpLocksFree::BeforeInitcalls),
                (&["arch_initcall"], SmpLocksFree::ArchInitcall),
            ];
            cfg.smp_locks_free = pick(k, v, whens)?
        }
        "lowmem_reserve_follows_managed" => cfg.lowmem_reserve_follows_managed = on_off(k, v)?,
        "fallback" => {
            let rules: Choices<_> = &[
                (&["claim_steal"], FallbackRule::ClaimSteal),
                (&["legacy"], FallbackRule::Legacy),
            ];
            cfg.fallback = pick(k, v, rules)?
        }
        "cpus" => {
            return Err(format!(
                "{k}={v}: the CPU count is the replay's (--cpus, --proc or the trace), not a \
                 variant's"
            ))
        }
        "mobility" | "mobility_grouping" => {
            cfg.mobility_grouping = match v {
                "auto" => MobilityGrouping::Auto,
                _ if on_off(k, v)? => MobilityGrouping::Enabled,
                _ => MobilityGrouping::Disabled,
            }
        }
        "max_order" => cfg.max_order = number(k, v)?,
        "pageblock_order" => cfg.pageblock_order = number(k, v)?,
        "page_size" => cfg.page_size = number(k, v)?,
        "min_free_kbytes" => {
            cfg.watermarks = WatermarkConfig::Auto {
                min_free_kbytes: if v == "auto" {
                    None
                } else {
                    Some(number(k, v)?)
                },
            }
        }
        "watermarks" => {
            cfg.watermarks = if v == "auto" {
                WatermarkConfig::Auto {
                    min_free_kbytes: None,
                }
            } else {
                let [min, low, high] = numbers::<3>(k, v)?;
                WatermarkConfig::Fixed { min, low, high }
            }
        }
        "watermark_scale_factor" => cfg.watermark_scale_factor = number(k, v)?,
        "watermark_boost_factor" => cfg.watermark_boost_factor = number(k, v)?,
        "lowmem_reserve_ratio" => {
            let r = numbers::<6>(k, v)?;
            for (o, x) in cfg.lowmem_reserve_ratio.iter_mut().zip(r) {
                *o = u32::try_from(x).map_err(|_| format!("{k}={v}: {x} is too large"))?;
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

impl Variant {
    /// Parses a spec on top of the defaults; `upstream` (alone or as an item) stands for them.
    pub fn parse(spec: &str) -> Result<Variant, String> {
        Self::parse_on(spec, &ZoneConfig::default())
    }

    /// Parses a spec on top of `base` (a `--kernel` preset, a `--proc` set-up); `upstream`
    /// stands for `base` itself.
    pub fn parse_on(spec: &str, base: &ZoneConfig) -> Result<Variant, String> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(format!(
                "empty variant; use upstream or knob=value items ({KNOBS})"
            ));
        }
        let mut cfg = *base;
        for item in spec.split(',').map(str::trim) {
            if item == "upstream" {
                continue;
            }
            let Some((k, v)) = item.split_once('=') else {
                return Err(format!(
                    "variant item '{item}' is not knob=value (knobs: {KNOBS})"
                ));
            };
            set(&mut cfg, k.trim(), v.trim(), spec)?;
        }
        cfg.validate()
            .map_err(|e| format!("variant '{spec}': {e}"))?;
        Ok(Variant {
            name: spec.to_owned(),
            cfg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_is_the_default_configuration() {
        let v = Variant::parse("upstream").unwrap();
        let d = ZoneConfig::default();
        assert_eq!(v.cfg.tail_merge, d.tail_merge);
        assert_eq!(v.cfg.pcp.batch_scale_max, 5);
        assert_eq!(v.cfg.pcp.free_high, FreeHigh::Current);
    }

    #[test]
    fn knobs_turn_each_seed_change_off() {
        let v = Variant::parse("tail_merge=off, batch_scale_max=0,free_high=off,pcp=off").unwrap();
        assert!(!v.cfg.tail_merge);
        assert_eq!(v.cfg.pcp.batch_scale_max, 0);
        assert_eq!(v.cfg.pcp.free_high, FreeHigh::Off);
        assert!(!v.cfg.pcp.enabled);
        assert_eq!(
            v.name,
            "tail_merge=off, batch_scale_max=0,free_high=off,pcp=off"
        );
    }

    #[test]
    fn bad_specs_are_named_errors() {
        for (spec, needle) in [
            ("", "empty variant"),
            ("tail_merge", "not knob=value"),
            ("colour=blue", "unknown knob 'colour'"),
            ("tail_merge=maybe", "expected on or off"),
            ("batch=-3", "non-negative integer"),
            ("batch_scale_max=9", "batch_scale_max must be 0..=6"),
            ("free_high=sometimes", "off, original, current"),
        ] {
            let e = Variant::parse(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn every_config_field_is_a_knob_by_its_name() {
        let v = Variant::parse(
            "pcp.llc_slice_bytes=0,locking=owner-only,drain=owner,thp_order=none,\
             mobility_grouping=auto,max_order=10,pageblock_order=9,page_size=4096,\
             watermarks=10:20:30,watermark_scale_factor=20,watermark_boost_factor=0,\
             lowmem_reserve_ratio=256:256:32:0:0:0,pcp.enabled=on,high_fraction=8",
        )
        .unwrap();
        let c = v.cfg;
        assert_eq!(c.pcp.llc_slice_bytes, 0);
        assert_eq!(
            (c.pcp.locking, c.pcp.drain, c.pcp.thp_order),
            (PcpLocking::OwnerOnly, DrainMode::Owner, None)
        );
        assert_eq!(
            c.watermarks,
            WatermarkConfig::Fixed {
                min: 10,
                low: 20,
                high: 30
            }
        );
        assert_eq!(
            (c.watermark_scale_factor, c.watermark_boost_factor),
            (20, 0)
        );
        assert_eq!(c.pcp.high_fraction, 8);
        let k = Variant::parse(
            "high_mode=fixed,alloc_scaling=off,free_scaling=free_factor,free_high=free_factor,\
             decay=off,drain_in_batches=off,highatomic_no_refill=off,highatomic_cap=plus_pageblock,\
             highatomic_unusable=reserved,movable_like_highmem=off,thp_min_free_kbytes=on,\
             lowmem_reserve_follows_managed=off,fallback=legacy,pcp.drain_migratetype=at_free,\
             smp_locks_free=before_initcalls,thp_min_totalram_mib=512",
        )
        .unwrap()
        .cfg;
        let mut six_one = ZoneConfig::default();
        zonealloc::KernelVersion::V6_1.apply(&mut six_one);
        assert_eq!(k, six_one, "6.1's rules, knob by knob");
        // 5.15 and 6.6 differ from 6.1 only in the knobs named here.
        for (version, spec) in [
            (
                zonealloc::KernelVersion::V5_15,
                "free_scaling=free_factor_uncapped,free_high=off,drain_batch_free=on",
            ),
            (
                zonealloc::KernelVersion::V6_6,
                "free_scaling=free_factor_uncapped,movable_like_highmem=on",
            ),
        ] {
            let v = Variant::parse_on(&format!("upstream,{spec}"), &six_one).unwrap();
            let mut want = ZoneConfig::default();
            version.apply(&mut want);
            assert_eq!(v.cfg, want, "{version}'s rules from 6.1's, knob by knob");
        }
        let m = Variant::parse("min_free_kbytes=45056").unwrap();
        assert_eq!(
            m.cfg.watermarks,
            WatermarkConfig::Auto {
                min_free_kbytes: Some(45056)
            }
        );
        // On top of a base: upstream is the base, knobs change only themselves.
        let mut base = ZoneConfig::default();
        base.pcp.batch_scale_max = 0;
        let b = Variant::parse_on("upstream,tail_merge=off", &base).unwrap();
        assert_eq!((b.cfg.pcp.batch_scale_max, b.cfg.tail_merge), (0, false));
        for (spec, needle) in [
            ("cpus=4", "--cpus"),
            ("watermarks=1:2", "3 numbers"),
            ("locking=maybe", "owner-only"),
            ("fallback=old", "claim_steal or legacy"),
            ("drain_migratetype=now", "at_drain or at_free"),
            ("free_scaling=double", "free_factor_uncapped"),
            ("drain_batch_free=maybe", "expected on or off"),
        ] {
            let e = Variant::parse(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }
}
