//! The lab's deterministic proxies run its own binary under valgrind: callgrind counts the
//! instructions of a loop exactly (the same on every run of a build), cachegrind simulates the
//! misses of a cache of a chosen size (the same on every machine). An environment variable
//! turns the `zonealloc` binary into the loop ([`child`] dispatches on it before anything
//! else runs), the parent runs it under the tool and reads the totals from the tool's output
//! file. Where valgrind is missing, [`unavailable`] says so and the claims these proxies
//! decide are `not measurable here`, with that reason.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Why valgrind's tools cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return Some(format!("cannot find the running binary: {e}")),
    };
    if exe.file_stem().and_then(|s| s.to_str()) != Some("zonealloc") {
        return Some(format!(
            "not running as the zonealloc binary ({}): run `zonealloc lab`",
            exe.display()
        ));
    }
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    (!ok).then(|| "valgrind is not installed (its callgrind and cachegrind count the instructions and the simulated cache misses)".to_string())
}

/// The `config` entry `not_measured` of a result whose proxies could not run: each metric
/// with why (the verdicts quote it for the claims these metrics decide).
pub fn not_measured(metrics: &[&str], why: &str) -> serde_json::Value {
    metrics
        .iter()
        .map(|m| (m.to_string(), serde_json::Value::from(why)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The child side of every proxy: runs the loop an environment variable names and returns
/// the exit code; `None` when none is set. The `zonealloc` binary calls it first thing.
pub fn child() -> Option<ExitCode> {
    super::pcp_lock::icount::icount_child()
        .or_else(super::batch_scale::icount::child)
        .or_else(super::free_high::cache::child)
}

/// A valgrind tool and its options.
pub enum Tool {
    /// `--tool=callgrind`: the total of `Ir`, instructions executed.
    Callgrind,
    /// `--tool=cachegrind` with the L1 caches `l1` (`size,assoc,line`, both instruction and
    /// data) and the last-level cache `ll`, so that the simulation does not depend on the
    /// machine's own caches: the totals of `Ir` and of the misses (`I1mr`, `D1mr`, `D1mw`,
    /// `ILmr`, `DLmr`, `DLmw`).
    Cachegrind {
        /// Last-level cache size in bytes, associativity and line size.
        ll: (u64, u32, u32),
        /// The L1 caches, as valgrind's `--I1` and `--D1` take them.
        l1: &'static str,
    },
}

/// Runs this binary under `tool` with `env=spec` and returns the totals of its output file's
/// `summary:` line, in the order of its `events:` line, with the event names.
pub fn run(tool: &Tool, env: &str, spec: &str) -> Result<Vec<(String, u64)>, String> {
    let exe: PathBuf = std::env::current_exe().map_err(|e| e.to_string())?;
    let tag: String = spec
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let out = std::env::temp_dir().join(format!(
        "zonealloc-lab-valgrind-{}-{tag}.out",
        std::process::id()
    ));
    let mut cmd = Command::new("valgrind");
    match tool {
        Tool::Callgrind => {
            cmd.arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", out.display()));
        }
        Tool::Cachegrind {
            ll: (size, assoc, line),
            l1,
        } => {
            cmd.arg("--tool=cachegrind")
                .arg("--cache-sim=yes")
                .arg(format!("--I1={l1}"))
                .arg(format!("--D1={l1}"))
                .arg(format!("--LL={size},{assoc},{line}"))
                .arg(format!("--cachegrind-out-file={}", out.display()));
        }
    }
    let run = cmd
        .arg(&exe)
        .env(env, spec)
        .output()
        .map_err(|e| format!("running valgrind: {e}"))?;
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    if !run.status.success() {
        // The loop's own message, not valgrind's summary (its lines start with `==pid==`).
        let stderr = String::from_utf8_lossy(&run.stderr);
        let why = stderr.lines().rfind(|l| !l.starts_with("==")).unwrap_or("");
        return Err(format!("the loop failed under valgrind ({spec}): {why}"));
    }
    let text = text.map_err(|e| format!("reading valgrind's output: {e}"))?;
    parse_totals(&text).ok_or_else(|| "valgrind's output has no events and summary lines".into())
}

/// The `events:` names paired with the `summary:` (or `totals:`) numbers of a callgrind or
/// cachegrind output file.
fn parse_totals(text: &str) -> Option<Vec<(String, u64)>> {
    let events = text.lines().find_map(|l| l.strip_prefix("events:"))?;
    let totals = text.lines().find_map(|l| {
        l.strip_prefix("summary:")
            .or_else(|| l.strip_prefix("totals:"))
    })?;
    let values: Option<Vec<u64>> = totals.split_whitespace().map(|v| v.parse().ok()).collect();
    let values = values?;
    let names: Vec<&str> = events.split_whitespace().collect();
    (names.len() >= values.len() && !values.is_empty()).then(|| {
        names
            .into_iter()
            .zip(values)
            .map(|(n, v)| (n.to_owned(), v))
            .collect()
    })
}

/// The value of event `name` in `totals`.
pub fn event(totals: &[(String, u64)], name: &str) -> Result<u64, String> {
    totals
        .iter()
        .find(|(n, _)| n == name)
        .map(|t| t.1)
        .ok_or_else(|| format!("no {name} event in valgrind's output"))
}

/// `(t2 - t1) / (n2 - n1)`: the growth of a total per unit of extra work, so that setup and
/// exit cancel out; an error for no growth.
pub fn per_unit(t1: u64, t2: u64, n1: u64, n2: u64) -> Result<f64, String> {
    if t2 <= t1 || n2 <= n1 {
        return Err(format!("no growth: {t1} for {n1}, {t2} for {n2}"));
    }
    Ok((t2 - t1) as f64 / (n2 - n1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_pair_events_with_the_summary() {
        let cg = "events: Ir\nsummary: 12558538\n";
        assert_eq!(parse_totals(cg), Some(vec![("Ir".into(), 12_558_538)]));
        let cache = "desc: LL\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nsummary: 100 1 1 50 5 3 40 4 2\n";
        let t = parse_totals(cache).unwrap();
        assert_eq!(event(&t, "DLmr"), Ok(3));
        assert_eq!(event(&t, "DLmw"), Ok(2));
        assert!(event(&t, "Bc").is_err());
        assert_eq!(parse_totals("events: Ir\n"), None);
        assert_eq!(parse_totals("events: Ir\nsummary: x\n"), None);
    }

    #[test]
    fn per_unit_is_the_growth_per_extra_unit() {
        assert_eq!(per_unit(1_000, 3_000, 10, 30), Ok(100.0));
        assert!(per_unit(3_000, 1_000, 10, 30).is_err());
        assert!(per_unit(1_000, 3_000, 30, 30).is_err());
    }
}
