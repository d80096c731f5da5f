//! The `/proc` snapshots a replay starts from (`--proc`) and ends against (`--proc-after`),
//! read before anything of the trace, and the window they imply.

use std::path::PathBuf;

use super::options::ReplayOptions;
use crate::procfs::{ProcSnapshot, Tolerance};
use crate::trace::ingest::Window;

/// The `/proc` snapshots a replay starts from and ends against.
pub struct Snapshots {
    /// `--proc`: the zones are set up from it.
    pub before: Option<ProcSnapshot>,
    /// `--proc-after`: the end state is compared with it.
    pub after: Option<ProcSnapshot>,
}

impl Snapshots {
    /// Reads `--proc` and `--proc-after`, before anything of the trace, and checks that they
    /// are of one machine. A busy machine's snapshot drifts beyond a batch per CPU: a
    /// warning ([`Snapshots::warnings`]), unless `--strict`.
    pub fn read(opts: &ReplayOptions) -> Result<Snapshots, String> {
        let tolerance = if opts.strict {
            Tolerance::Live
        } else {
            Tolerance::Busy
        };
        let read = |dir: &Option<PathBuf>, flag: &str| {
            dir.as_deref()
                .map(|d| {
                    ProcSnapshot::read_dir_with(d, tolerance).map_err(|e| format!("{flag}: {e}"))
                })
                .transpose()
        };
        let mut snaps = Snapshots {
            before: read(&opts.proc, "--proc")?,
            after: read(&opts.proc_after, "--proc-after")?,
        };
        if opts.no_layout {
            for s in [&mut snaps.before, &mut snaps.after].into_iter().flatten() {
                s.layout = None;
            }
        }
        if let (Some(b), Some(a)) = (&snaps.before, &snaps.after) {
            b.same_machine(a)
                .map_err(|e| format!("--proc-after: {e}"))?;
        }
        Ok(snaps)
    }

    /// What the snapshots' reader accepted with a warning ([`ProcSnapshot::warnings`]),
    /// each prefixed with its flag.
    pub fn warnings(&self) -> Vec<String> {
        [("--proc", &self.before), ("--proc-after", &self.after)]
            .into_iter()
            .filter_map(|(flag, s)| Some((flag, s.as_ref()?)))
            .flat_map(|(flag, s)| s.warnings.iter().map(move |w| format!("{flag}: {w}")))
            .collect()
    }

    /// The window to replay: `opts`', else with `--proc` between the snapshot's markers
    /// unless `--whole-file`.
    pub fn window(&self, opts: &ReplayOptions) -> Window {
        let mut window = opts.window.clone();
        if self.before.is_some() && !opts.whole_file && window.from.is_none() && window.to.is_none()
        {
            window.from = Some("KT_SNAPSHOT_BEFORE_END".to_owned());
            window.to = Some("KT_SNAPSHOT_AFTER_BEGIN".to_owned());
            window.beyond_prefix_if = Some("KT_SNAPSHOT_BEFORE_BEGIN".to_owned());
        }
        window
    }
}
