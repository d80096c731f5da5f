//! What the lab's repetition driver (`experiments::repeat`) did for one experiment: its policy,
//! the rounds it ran and why it stopped, as `results.json` and `report.md` state it.

use serde::Serialize;

/// When to stop repeating.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RepeatPolicy {
    /// Target half-width of the 95% confidence interval, as a fraction of the mean (0.05:
    /// ±5%).
    pub ci_target: f64,
    /// Stop starting new rounds once this much time has gone (the first round always runs).
    pub time_cap_s: f64,
    /// At most this many rounds.
    pub max_rounds: usize,
}

/// Why the driver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Every timing figure's confidence interval is within the target.
    Converged,
    /// The time cap (or the round limit) came first.
    TimeCap,
    /// The experiment's claims read no timing figure: one round is all there is to run.
    NoTimingClaims,
}

/// The widest confidence interval left, relative to its mean.
#[derive(Clone, Debug, Serialize)]
pub struct Widest {
    /// The metric.
    pub metric: String,
    /// The variant.
    pub variant: String,
    /// 95% CI half-width / |mean|.
    pub rel_half_width: f64,
}

/// What the driver did, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct Repetition {
    /// The policy it followed.
    pub policy: RepeatPolicy,
    /// Rounds run.
    pub rounds: usize,
    /// Why it stopped.
    pub stop: Stop,
    /// The widest interval at the end (None without timing claims or with one sample).
    pub widest: Option<Widest>,
}

impl Repetition {
    /// One line for the report and the progress log.
    pub fn describe(&self) -> String {
        let widest = self.widest.as_ref().map_or(String::new(), |w| {
            format!(
                "; widest 95% CI ±{:.1}% ({} {})",
                w.rel_half_width * 100.0,
                w.metric,
                w.variant
            )
        });
        match self.stop {
            Stop::Converged => format!(
                "converged after {} round(s): every timing figure within ±{:.0}%{widest}",
                self.rounds,
                self.policy.ci_target * 100.0
            ),
            Stop::TimeCap if self.policy.time_cap_s == 0.0 => {
                format!("one round (time cap 0 s){widest}")
            }
            Stop::TimeCap => format!(
                "time cap ({:.0} s) reached after {} round(s) before ±{:.0}%{widest}",
                self.policy.time_cap_s,
                self.rounds,
                self.policy.ci_target * 100.0
            ),
            Stop::NoTimingClaims => "one round: no timing claim to tighten".to_owned(),
        }
    }
}
