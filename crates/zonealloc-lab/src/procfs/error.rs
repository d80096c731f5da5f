//! The one error type of the snapshot reader: which file, which line, what was expected.

use std::fmt;
use std::path::PathBuf;

/// The files a snapshot is read from: three `/proc` files and the optional pfn layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcFile {
    /// `/proc/zoneinfo`.
    Zoneinfo,
    /// `/proc/pagetypeinfo`.
    Pagetypeinfo,
    /// `/proc/buddyinfo`.
    Buddyinfo,
    /// `layout`: the pfn layout `capture-kmem` writes from `/proc/kpageflags`.
    Layout,
    /// `nodes/nodeN/{cpulist,distance,numastat}`: a NUMA machine's nodes (`super::nodes`).
    Nodes,
}

impl ProcFile {
    /// The file's name under `/proc` (and under a snapshot folder).
    pub const fn name(self) -> &'static str {
        match self {
            ProcFile::Zoneinfo => "zoneinfo",
            ProcFile::Pagetypeinfo => "pagetypeinfo",
            ProcFile::Buddyinfo => "buddyinfo",
            ProcFile::Layout => "layout",
            ProcFile::Nodes => "nodes",
        }
    }

    /// The most bytes read of the file: [`super::MAX_FILE_BYTES`], or
    /// [`super::MAX_LAYOUT_BYTES`] for the layout.
    pub const fn max_bytes(self) -> u64 {
        match self {
            ProcFile::Layout => super::MAX_LAYOUT_BYTES,
            _ => super::MAX_FILE_BYTES,
        }
    }
}

/// A snapshot file that could not be read, or that is malformed or inconsistent.
///
/// Displays as `PATH:LINE: WHAT`, the way compilers name a place. `path` is the file's name
/// (`zoneinfo`) for the `parse_*` functions and the full path for
/// [`ProcSnapshot::read_dir`](super::ProcSnapshot::read_dir).
#[derive(Debug)]
pub struct ProcError {
    /// Which file.
    pub file: ProcFile,
    /// The path to name in messages.
    pub path: PathBuf,
    /// 1-based line number; one past the last line for a file that ended too early; 0 where
    /// the problem is the whole file (it could not be read).
    pub line: usize,
    /// What went wrong.
    pub kind: ErrorKind,
}

/// What went wrong in a snapshot file.
#[derive(Debug)]
pub enum ErrorKind {
    /// The file could not be read.
    Io(std::io::Error),
    /// The path is not a regular file (a device, a FIFO, a folder, or a link to one).
    NotRegular,
    /// The file is longer than the reader takes ([`super::MAX_FILE_BYTES`]).
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text; `line` of the error is the invalid byte's.
    NotText {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The file ended where more was expected (a truncated copy).
    UnexpectedEnd {
        /// What was expected.
        expected: String,
    },
    /// A line that does not have the expected form.
    Unexpected {
        /// What was expected.
        expected: &'static str,
        /// The line (trimmed) as found.
        found: String,
    },
    /// A field whose value is not a number of the expected kind.
    BadNumber {
        /// The field.
        field: String,
        /// Its text.
        text: String,
    },
    /// A zone name the kernel does not have (`zone_names[]`).
    UnknownZone {
        /// The name as found.
        name: String,
    },
    /// A field printed twice for one zone or CPU.
    Duplicate {
        /// The field.
        field: String,
    },
    /// A zone block that lacks a field the kernel always prints for it.
    MissingField {
        /// The field.
        field: &'static str,
        /// `Node N, zone NAME`.
        zone: String,
    },
    /// Values that contradict each other or another file beyond what the formats allow.
    Inconsistent {
        /// The contradiction, with both values.
        what: String,
    },
}

impl ProcError {
    pub(crate) fn new(file: ProcFile, line: usize, kind: ErrorKind) -> ProcError {
        ProcError {
            file,
            path: PathBuf::from(file.name()),
            line,
            kind,
        }
    }

    pub(crate) fn inconsistent(file: ProcFile, line: usize, what: String) -> ProcError {
        ProcError::new(file, line, ErrorKind::Inconsistent { what })
    }
}

impl fmt::Display for ProcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.kind)
        } else {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.kind)
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(e) => write!(f, "cannot read: {e}"),
            ErrorKind::NotRegular => {
                f.write_str("not a regular file (a device, FIFO or folder, or a link to one)")
            }
            ErrorKind::TooLarge { limit } => write!(
                f,
                "longer than {} MiB: not a /proc snapshot file",
                limit >> 20
            ),
            ErrorKind::NotText { offset } => {
                write!(f, "not UTF-8 text: invalid byte at offset {offset}")
            }
            ErrorKind::UnexpectedEnd { expected } => {
                write!(f, "file ends early: expected {expected}")
            }
            ErrorKind::Unexpected { expected, found } => {
                write!(f, "expected {expected}, found `{found}`")
            }
            ErrorKind::BadNumber { field, text } => {
                write!(f, "`{field}`: `{text}` is not a valid number")
            }
            ErrorKind::UnknownZone { name } => write!(f, "unknown zone `{name}`"),
            ErrorKind::Duplicate { field } => write!(f, "`{field}` printed twice"),
            ErrorKind::MissingField { field, zone } => {
                write!(f, "{zone} has no `{field}` line")
            }
            ErrorKind::Inconsistent { what } => f.write_str(what),
        }
    }
}

impl std::error::Error for ProcError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Parses a decimal number of field `field` on line `line` of `file`.
pub(crate) fn number<T: std::str::FromStr>(
    file: ProcFile,
    line: usize,
    field: &str,
    text: &str,
) -> Result<T, ProcError> {
    text.parse().map_err(|_| {
        ProcError::new(
            file,
            line,
            ErrorKind::BadNumber {
                field: field.to_owned(),
                text: text.to_owned(),
            },
        )
    })
}

/// The line number one past the last line of `text`: where a truncated file ends.
pub(crate) fn end_line(text: &str) -> usize {
    text.lines().count() + 1
}
