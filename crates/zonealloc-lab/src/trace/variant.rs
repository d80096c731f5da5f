//! `--variant` policy sets for `zonealloc trace replay`: `upstream` (the kernel's defaults) or
//! comma-separated `knob=value` settings on top of them, one knob per seed change plus the
//! per-CPU list sizes.
//!
//! ```text
//! tail_merge=on|off                seed 003
//! batch_scale_max=0..=6            seed 001 (0: off)
//! free_high=off|original|current   seed 000
//! pcp=on|off                       per-CPU lists at all
//! batch=N high_min=N high_max=N    fixed PCP sizes instead of zone_batchsize/zone_highsize
//! high_fraction=0|N>=8             percpu_pagelist_high_fraction
//! mobility=on|off                  grouping pages by mobility
//! ```

use zonealloc::{FreeHigh, MobilityGrouping, ZoneConfig};

/// One policy set: its name (the spec as given) and the configuration it makes.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The name the report prints (the spec, e.g. `free_high=off,tail_merge=off`).
    pub name: String,
    /// The zone configuration (CPU count and span are set by the replay).
    pub cfg: ZoneConfig,
}

/// The knobs a spec may set, for error messages.
pub const KNOBS: &str =
    "tail_merge=on|off, batch_scale_max=0..=6, free_high=off|original|current, \
pcp=on|off, batch=N, high_min=N, high_max=N, high_fraction=N, mobility=on|off";

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

impl Variant {
    /// Parses a spec; `upstream` (alone or as an item) stands for the defaults.
    pub fn parse(spec: &str) -> Result<Variant, String> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(format!(
                "empty variant; use upstream or knob=value items ({KNOBS})"
            ));
        }
        let mut cfg = ZoneConfig::default();
        for item in spec.split(',').map(str::trim) {
            if item == "upstream" {
                continue;
            }
            let Some((k, v)) = item.split_once('=') else {
                return Err(format!(
                    "variant item '{item}' is not knob=value (knobs: {KNOBS})"
                ));
            };
            match k {
                "tail_merge" => cfg.tail_merge = on_off(k, v)?,
                "batch_scale_max" => cfg.pcp.batch_scale_max = number(k, v)?,
                "free_high" => {
                    cfg.pcp.free_high = match v {
                        "off" => FreeHigh::Off,
                        "original" => FreeHigh::Original,
                        "current" | "on" => FreeHigh::Current,
                        _ => return Err(format!("{k}={v}: expected off, original or current")),
                    }
                }
                "pcp" => cfg.pcp.enabled = on_off(k, v)?,
                "batch" => cfg.pcp.batch = Some(number(k, v)?),
                "high_min" => cfg.pcp.high_min = Some(number(k, v)?),
                "high_max" => cfg.pcp.high_max = Some(number(k, v)?),
                "high_fraction" => cfg.pcp.high_fraction = number(k, v)?,
                "mobility" => {
                    cfg.mobility_grouping = if on_off(k, v)? {
                        MobilityGrouping::Enabled
                    } else {
                        MobilityGrouping::Disabled
                    }
                }
                _ => {
                    return Err(format!(
                        "unknown knob '{k}' in variant '{spec}' (knobs: {KNOBS})"
                    ))
                }
            }
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
            ("free_high=sometimes", "off, original or current"),
        ] {
            let e = Variant::parse(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }
}
