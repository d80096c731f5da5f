//! Reading one snapshot file from disk, bounded: a regular file of at most [`MAX_FILE_BYTES`]
//! bytes of UTF-8 text. A snapshot folder is data a user was handed, so a file that is a link
//! to `/dev/zero`, a FIFO no one writes, a huge file or a binary one is refused with its name
//! before anything is sized from it.

use std::io::Read;
use std::path::Path;

use super::error::{ErrorKind, ProcError, ProcFile};

/// The largest snapshot file read: 8 MiB. A zoneinfo is about 130 bytes per CPU and zone
/// plus 4 KiB per zone, so the largest machine the replay takes (4095 CPUs, 4 populated
/// zones) prints about 2.2 MB; the other files are a few KiB.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// Reads `path` as snapshot file `file`: `Ok(None)` if it does not exist, an error naming it
/// if it is not a regular file, is larger than [`ProcFile::max_bytes`] or is not UTF-8 (the error
/// names the line of the first invalid byte).
pub(super) fn read_file(path: &Path, file: ProcFile) -> Result<Option<String>, ProcError> {
    let fail = |line, kind| ProcError {
        file,
        path: path.to_owned(),
        line,
        kind,
    };
    // `metadata` follows links: a link to a device or a FIFO is refused before `open`, which
    // would block on a FIFO without a writer.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(0, ErrorKind::Io(e))),
    };
    if !meta.is_file() {
        return Err(fail(0, ErrorKind::NotRegular));
    }
    let f = std::fs::File::open(path).map_err(|e| fail(0, ErrorKind::Io(e)))?;
    // `/proc` files report a size of 0, so the bound is on what is read, not on the size.
    let limit = file.max_bytes();
    let mut bytes = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(0, ErrorKind::Io(e)))?;
    if bytes.len() as u64 > limit {
        return Err(fail(0, ErrorKind::TooLarge { limit }));
    }
    text(bytes)
        .map(Some)
        .map_err(|(line, offset)| fail(line, ErrorKind::NotText { offset }))
}

/// `bytes` as UTF-8, or the 1-based line and byte offset of the first invalid byte.
fn text(bytes: Vec<u8>) -> Result<String, (usize, usize)> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        (line, offset)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_byte_is_placed_by_line_and_offset() {
        assert_eq!(text(b"a\nb\n\xffc".to_vec()), Err((3, 4)));
        assert_eq!(text(b"\xff".to_vec()), Err((1, 0)));
        assert_eq!(text(b"ok\n".to_vec()).as_deref(), Ok("ok\n"));
    }
}
