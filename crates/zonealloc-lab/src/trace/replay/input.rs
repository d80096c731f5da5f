//! The replay's input, read once: a file, a FIFO, `<(xz -dc …)` or `-` (stdin).
//!
//! A replay has to decide two things before its first event: how many CPUs the zones have
//! and which migratetype numbering the trace uses. Neither needs the whole trace. The first
//! [`PREFIX_BYTES`] of the (decompressed) input are read into memory and looked at
//! ([`Sniff`]): ftrace's header names the CPU count (`#P:4`), and the allocations there
//! carry the gfp-versus-migratetype evidence of [`Evidence`]. The replay then reads the
//! prefix again from memory, chained to the rest of the stream, so nothing is read twice
//! from the source and a pipe works as well as a file.

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use crate::trace::migratetype::Evidence;
use crate::trace::parse::{self, EventKind, Parser};

/// How much of the input is looked at before the replay starts (4 MiB: some 30 000 lines
/// of ftrace text, far more allocations than the numbering evidence needs).
pub const PREFIX_BYTES: usize = 4 << 20;

/// What the start of a trace says.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sniff {
    /// The CPU count of ftrace's header (`# entries-in-buffer/entries-written: … #P:N`).
    pub header_cpus: Option<u32>,
    /// The highest CPU of an event in the prefix.
    pub max_cpu: Option<u32>,
    /// Migratetype-numbering evidence from the prefix's allocations.
    pub evidence: Evidence,
    /// Bytes looked at.
    pub bytes: usize,
}

/// An opened input: the stream (prefix first) and what its prefix says.
pub struct Input {
    /// The whole input, from its first byte.
    pub reader: Box<dyn BufRead>,
    /// What the prefix says.
    pub sniff: Sniff,
}

/// Opens `path` (`-`: standard input), decompressing as [`parse::open`] does, and sniffs
/// its prefix.
pub fn open(path: &Path) -> io::Result<Input> {
    let mut src: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(BufReader::with_capacity(1 << 16, io::stdin()))
    } else {
        parse::open(path)?
    };
    let mut prefix = Vec::with_capacity(PREFIX_BYTES.min(1 << 20));
    (&mut src)
        .take(PREFIX_BYTES as u64)
        .read_to_end(&mut prefix)?;
    let sniff = sniff(&prefix);
    Ok(Input {
        reader: Box::new(BufReader::with_capacity(
            1 << 16,
            Cursor::new(prefix).chain(src),
        )),
        sniff,
    })
}

/// Looks at the complete lines of `prefix`.
pub fn sniff(prefix: &[u8]) -> Sniff {
    let whole = match memchr::memrchr(b'\n', prefix) {
        Some(nl) => &prefix[..=nl],
        None => &[][..],
    };
    let mut s = Sniff {
        bytes: whole.len(),
        ..Sniff::default()
    };
    for line in whole
        .split(|&b| b == b'\n')
        .take_while(|l| l.starts_with(b"#"))
    {
        if let Some(at) = memchr::memmem::find(line, b"#P:") {
            let digits: Vec<u8> = line[at + 3..]
                .iter()
                .copied()
                .take_while(u8::is_ascii_digit)
                .collect();
            s.header_cpus = std::str::from_utf8(&digits)
                .ok()
                .and_then(|d| d.parse().ok())
                .filter(|&n| n > 0);
        }
    }
    let mut parser = Parser::new();
    let (mut max_cpu, mut evidence) = (None::<u32>, Evidence::default());
    // Reading from memory cannot fail.
    let _ = parser.read_all(whole, |ev| {
        if let Some(c) = ev.cpu {
            max_cpu = Some(max_cpu.map_or(c, |m| m.max(c)));
        }
        if let EventKind::Alloc {
            gfp_flags,
            migratetype,
            ..
        } = ev.kind
        {
            evidence.add(gfp_flags, migratetype);
        }
    });
    s.max_cpu = max_cpu;
    s.evidence = evidence;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_names_cpus_and_numbering_and_the_stream_starts_at_byte_zero() {
        let text = "# tracer: nop\n\
            # entries-in-buffer/entries-written: 3/3   #P:8\n\
            a-1 [002] 1.0: mm_page_alloc: page=p pfn=0x10 order=0 migratetype=1 \
            gfp_flags=GFP_HIGHUSER_MOVABLE\n\
            a-1 [005] 1.1: mm_page_free: page=p pfn=0x10 order=0\n\
            a-1 [001] 1.2: mm_page_free: page=p pfn=0x1";
        let s = sniff(text.as_bytes());
        assert_eq!(s.header_cpus, Some(8));
        assert_eq!(
            s.max_cpu,
            Some(5),
            "the unterminated last line is not looked at"
        );
        assert_eq!(s.evidence.current, 1);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, text).unwrap();
        let mut back = String::new();
        open(&p).unwrap().reader.read_to_string(&mut back).unwrap();
        assert_eq!(back, text);
    }
}
