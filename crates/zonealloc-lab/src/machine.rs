//! The machine a lab run was taken on: CPU model, logical cores and kernel release, so every
//! report and `results.json` names its hardware (as mimalloc's benchmark tables do).
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
    fn detect_never_fails() {
        let m = Machine::detect();
        assert!(m.logical_cores >= 1);
        assert!(!m.cpu_model.is_empty());
    }
}
