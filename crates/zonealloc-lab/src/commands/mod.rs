//! One function per subcommand: each turns its parsed flags into library calls and prints
//! the result. Every failure comes back as an [`Exit`], and [`Exit::code`] is the one place
//! that maps failures to exit statuses:
//!
//! - 0: success;
//! - 1 ([`Exit::Failure`], [`Exit::Reported`]): an experiment, a bench cell, a trace or the
//!   report failed;
//! - 2 ([`Exit::Usage`]): a usage error the flag parser could not catch (an unknown
//!   experiment, a bad `--variant`), the status clap gives bad flags.
//!
//! Rooms: `lab` ([`lab`]), `bench` ([`bench`]), `trace stats|replay|gen` ([`trace`]) and the
//! `/proc` views ([`inspect`]); a new subcommand gets its own file here and a variant in
//! [`crate::cli::Command`].

mod bench;
mod inspect;
mod lab;
mod trace;

use std::io::Write as _;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{Command, TraceCommand};

/// Exit status of usage errors, as clap uses for bad flags.
const EXIT_USAGE: u8 = 2;

/// Why a command failed.
#[derive(Debug)]
pub enum Exit {
    /// A usage error: printed as `error: {0}`, exit status 2.
    Usage(String),
    /// A failure: printed as `error: {0}`, exit status 1.
    Failure(String),
    /// A failure the command has already described on stderr (per experiment or per bench
    /// cell, after printing what did succeed): exit status 1, nothing more printed.
    Reported,
}

impl Exit {
    /// Prints the message (if any) on stderr and gives the exit status.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Usage(msg) => {
                eprintln!("error: {msg}");
                ExitCode::from(EXIT_USAGE)
            }
            Exit::Failure(msg) => {
                eprintln!("error: {msg}");
                ExitCode::FAILURE
            }
            Exit::Reported => ExitCode::FAILURE,
        }
    }
}

/// Runs the parsed command.
pub fn run(command: Command) -> Result<(), Exit> {
    match command {
        Command::Lab(a) => lab::lab(&a),
        Command::Buddyinfo(a) => inspect::inspect(zonealloc_lab::inspect::View::Buddyinfo, &a),
        Command::Zoneinfo(a) => inspect::inspect(zonealloc_lab::inspect::View::Zoneinfo, &a),
        Command::Pagetypeinfo(a) => {
            inspect::inspect(zonealloc_lab::inspect::View::Pagetypeinfo, &a)
        }
        Command::Trace(TraceCommand::Stats(a)) => trace::stats(&a),
        Command::Trace(TraceCommand::Replay(a)) => trace::replay(&a),
        Command::Trace(TraceCommand::Gen(a)) => trace::gen(&a),
        Command::Bench(a) => bench::bench(&a),
    }
}

/// Writes `text` to stdout. A closed pipe (`zonealloc buddyinfo | head -1`) ends quietly
/// instead of panicking as `print!` would; other write errors are failures.
pub(crate) fn emit(text: &str) -> Result<(), Exit> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Exit::Failure(format!("writing to stdout: {e}"))),
    }
}

/// A progress bar on stderr (hidden unless `show`).
fn progress_bar(show: bool, prefix: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        None,
        if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(prefix);
    bar
}

/// The command line as typed, for the reports.
fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
