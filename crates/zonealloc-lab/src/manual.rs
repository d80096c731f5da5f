//! `zonealloc completions SHELL` and `zonealloc man`: the shell completions and the man pages,
//! generated from the clap definition ([`cli::command`]), so they name every subcommand and
//! flag the binary parses and cannot fall behind it.

use std::path::Path;

use clap_complete::Shell;

use crate::cli;
use crate::commands::{emit, Exit};

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: Shell) -> Result<(), Exit> {
    let mut cmd = cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "zonealloc", &mut script);
    emit(&String::from_utf8_lossy(&script))
}

/// Prints `zonealloc.1` on stdout, or with `out` writes it and one page per subcommand
/// (`zonealloc-trace-replay.1`, named as git and cargo name theirs) into that folder.
pub fn man(out: Option<&Path>) -> Result<(), Exit> {
    let mut cmd = cli::command();
    cmd.build();
    let Some(dir) = out else {
        return emit(&render(&cmd)?);
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| Exit::Failure(format!("creating {}: {e}", dir.display())))?;
    let mut written = 0;
    write_pages(&cmd, "zonealloc", dir, &mut written)?;
    eprintln!("wrote {written} man pages to {}", dir.display());
    Ok(())
}

/// Writes `cmd`'s page as `name.1`, then each subcommand's as `name-sub.1`, depth first.
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut usize,
) -> Result<(), Exit> {
    // Each page is titled by its full name; its synopsis keeps the bin name that `build`
    // gave it (`zonealloc trace replay`).
    let page = cmd.clone().display_name(name.to_owned());
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, render(&page)?)
        .map_err(|e| Exit::Failure(format!("writing {}: {e}", path.display())))?;
    *written += 1;
    // clap's generated `help` subcommands get no page: `--help` is on every page.
    let subs = cmd.get_subcommands();
    for sub in subs.filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// One man page in roff.
fn render(cmd: &clap::Command) -> Result<String, Exit> {
    let mut page = Vec::new();
    // Every page's footer names the program and its version, as the top page's does.
    clap_mangen::Man::new(cmd.clone())
        .source(format!("zonealloc {}", env!("ZONEALLOC_LONG_VERSION")))
        .render(&mut page)
        .map_err(|e| Exit::Failure(format!("rendering the man page: {e}")))?;
    Ok(String::from_utf8_lossy(&page).into_owned())
}
