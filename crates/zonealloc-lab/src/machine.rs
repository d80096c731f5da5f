//! The machine a lab run was taken on: CPU model, logical cores and kernel release, so every
//! report and `results.json` names its hardware (as mimalloc's benchmark tables do); and the
//! run's circumstances ([`RunInfo`]): the commit and compiler it was built from, the date, and
//! the load average before and after (`/proc/loadavg`), with a warning when the machine was
//! busy (load above the core count), since timings then measure the neighbours too.
//!
//! Read from `/proc/cpuinfo` (`model name`), [`std::thread::available_parallelism`] and
//! `/proc/sys/kernel/osrelease` (what `uname -r` prints). Anything unreadable (another OS, a
//! sandbox) is reported as `unknown` rather than failing the run.

use serde::Serialize;

/// A description of the machine running the lab.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// CPU model name (first `model name` line of `/proc/cpuinfo`), or `unknown`.
    pub cpu_model: String,
    /// Logical cores available to this process.
    pub logical_cores: usize,
    /// Kernel release (`uname -r`), or `unknown`.
    pub kernel: String,
    /// Operating system and architecture this binary was built for, e.g. `linux x86_64`.
    pub os_arch: String,
}

impl Machine {
    /// Probes the current machine.
    pub fn detect() -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| cpu_model_from_cpuinfo(&s))
            .unwrap_or_else(|| "unknown".to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        Self {
            cpu_model,
            logical_cores: std::thread::available_parallelism().map_or(1, usize::from),
            kernel,
            os_arch: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// The three load averages (1, 5, 15 minutes) of `/proc/loadavg`, or `None` where unreadable.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_loadavg(&text)
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(str::parse::<f64>);
    Some([it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?])
}

/// Where and how a run was taken, beside [`Machine`]: `results.json`'s `run`.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// `git rev-parse HEAD` of the source tree the binary was built from (with `-dirty` when
    /// it had uncommitted changes), or `unknown`; recorded at build time (`build.rs`).
    pub commit: String,
    /// The compiler that built the binary (`rustc -V` at build time), or `unknown`.
    pub rustc: String,
    /// Start of the run, UTC, ISO 8601 (`2026-11-23T13:20:00Z`).
    pub date_utc: String,
    /// Logical cores (as in [`Machine`]).
    pub cores: usize,
    /// Load average (1, 5, 15 min) when the run started.
    pub load_before: Option<[f64; 3]>,
    /// Load average when it ended.
    pub load_after: Option<[f64; 3]>,
    /// Set when the 1-minute load exceeded the cores before or after: timings are suspect.
    pub busy_warning: Option<String>,
}

impl RunInfo {
    /// Probes at the start of a run.
    pub fn start() -> Self {
        Self {
            commit: option_env!("ZONEALLOC_GIT_COMMIT")
                .unwrap_or("unknown")
                .to_owned(),
            rustc: option_env!("ZONEALLOC_RUSTC_VERSION")
                .unwrap_or("unknown")
                .to_owned(),
            date_utc: utc_timestamp(std::time::SystemTime::now()),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            load_before: load_average(),
            load_after: None,
            busy_warning: None,
        }
    }

    /// Records the load at the end, and the warning if the machine was busy.
    pub fn finish(&mut self) {
        self.load_after = load_average();
        self.busy_warning = busy_warning(self.cores, self.load_before, self.load_after);
    }
}

/// The warning for a busy machine: a 1-minute load above `cores` at either end of the run.
pub fn busy_warning(
    cores: usize,
    before: Option<[f64; 3]>,
    after: Option<[f64; 3]>,
) -> Option<String> {
    let worst = [before, after]
        .iter()
        .flatten()
        .map(|l| l[0])
        .fold(f64::NAN, f64::max);
    (worst > cores as f64).then(|| {
        format!(
            "the machine was busy: load average {worst:.2} on {cores} cores; timings include \
             other work, counts and indices do not"
        )
    })
}

/// `t` as an ISO 8601 UTC timestamp with seconds, `2026-11-23T13:20:00Z`.
pub fn utc_timestamp(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The value of the first `model name` line of `/proc/cpuinfo` text.
fn cpu_model_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "model name")
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_is_the_first_model_name_line() {
        let text =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU\n\
                    processor\t: 1\nmodel name\t: Other\n";
        assert_eq!(
            cpu_model_from_cpuinfo(text).as_deref(),
            Some("Intel(R) Xeon(R) CPU")
        );
        assert_eq!(cpu_model_from_cpuinfo("processor : 0\n"), None);
    }

    #[test]
    fn timestamps_are_iso_utc() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC (a leap day) is 951827696.
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696);
        assert_eq!(utc_timestamp(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_417_200);
        assert_eq!(utc_timestamp(t), "2026-11-23T07:00:00Z");
    }

    #[test]
    fn loadavg_parses_and_busy_means_above_the_cores() {
        assert_eq!(
            parse_loadavg("0.52 1.10 2.00 1/234 5678\n"),
            Some([0.52, 1.10, 2.00])
        );
        assert_eq!(parse_loadavg("x"), None);
        assert!(busy_warning(2, Some([0.5, 0.0, 0.0]), Some([1.9, 0.0, 0.0])).is_none());
        let w = busy_warning(2, Some([0.5, 0.0, 0.0]), Some([4.5, 0.0, 0.0])).unwrap();
        assert!(w.contains("4.50 on 2 cores"), "{w}");
        assert!(busy_warning(2, None, None).is_none());
    }

    #[test]
    fn detect_never_fails() {
        let m = Machine::detect();
        assert!(m.logical_cores >= 1);
        assert!(!m.cpu_model.is_empty());
    }
}
