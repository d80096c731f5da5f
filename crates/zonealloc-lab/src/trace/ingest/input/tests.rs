//! The input's opening: the stream, the prefix, the window's cut, mapped and read-ahead
//! sources.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use super::mapped::{Mapped, MAP_RELEASE_BYTES, MAP_SLICE_BYTES};
use super::read_ahead::{ReadAhead, AHEAD_CHUNK};
use super::*;
use crate::trace::ingest::sniff::sniff;
use crate::trace::ingest::until_marker::{Slices, UntilMarker};

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

/// A file of `len` bytes of letters, a newline every `line` bytes, in a folder of its own.
fn text_file(len: usize, line: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let text: Vec<u8> = (0..len)
        .map(|i| {
            if i % line == line - 1 {
                b'\n'
            } else {
                b'a' + (i % 26) as u8
            }
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, &text).unwrap();
    (dir, p, text)
}

/// A capture whose start marker lies past the prefix (a 4 GiB machine's layout walk
/// between the snapshot markers): `header`, `BEFORE_BEGIN`, `filler` bytes, the end
/// marker, two events.
fn late_marker(begin: &str, filler: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut t = format!("# tracer: nop\n#P:4\na-1 [000] 1.0: tracing_mark_write: {begin}\n");
    let line = "a-1 [000] 1.1: mm_page_alloc: page=p pfn=0x9 order=0 migratetype=0 \
                gfp_flags=GFP_KERNEL\n";
    while t.len() < filler {
        t.push_str(line);
    }
    t.push_str("a-1 [000] 1.2: tracing_mark_write: KT_SNAPSHOT_BEFORE_END p\n");
    t.push_str("a-1 [000] 1.3: mm_page_free: page=p pfn=0x1 order=0\n");
    t.push_str("a-1 [000] 1.4: mm_page_free: page=p pfn=0x2 order=0\n");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, t).unwrap();
    (dir, p)
}

fn default_window() -> Window {
    Window {
        from: Some("KT_SNAPSHOT_BEFORE_END".into()),
        to: None,
        beyond_prefix_if: Some("KT_SNAPSHOT_BEFORE_BEGIN".into()),
    }
}

#[test]
fn a_start_marker_past_the_prefix_is_found_by_the_stream() {
    let (_d, p) = late_marker("KT_SNAPSHOT_BEFORE_BEGIN p", PREFIX_BYTES + (1 << 20));
    let (mut input, found) = open_window(&p, &default_window()).unwrap();
    let found = found.unwrap();
    assert!(!found.get() && found.searched());
    let mut back = String::new();
    input.reader.read_to_string(&mut back).unwrap();
    assert!(found.get());
    assert_eq!(
        back,
        "# tracer: nop\n#P:4\n\
         a-1 [000] 1.3: mm_page_free: page=p pfn=0x1 order=0\n\
         a-1 [000] 1.4: mm_page_free: page=p pfn=0x2 order=0\n"
    );
    // The look sniffs the whole prefix on its own: the stream does not carry it.
    assert!(input.split.is_none());
}

#[test]
fn without_the_begin_marker_in_the_prefix_the_stream_is_replayed_from_its_start() {
    let (_d, p) = late_marker("SOMETHING_ELSE", PREFIX_BYTES + (1 << 20));
    let (mut input, found) = open_window(&p, &default_window()).unwrap();
    let found = found.unwrap();
    let mut back = Vec::new();
    input.reader.read_to_end(&mut back).unwrap();
    assert!(!found.get() && !found.searched());
    assert_eq!(back, std::fs::read(&p).unwrap());
}

#[test]
fn a_named_marker_absent_from_the_whole_trace_leaves_nothing_and_says_so() {
    let (_d, p) = late_marker("KT_SNAPSHOT_BEFORE_BEGIN p", 1000);
    let w = Window {
        from: Some("NOT_THERE".into()),
        to: None,
        beyond_prefix_if: None,
    };
    let (mut input, found) = open_window(&p, &w).unwrap();
    let found = found.unwrap();
    let mut back = String::new();
    input.reader.read_to_string(&mut back).unwrap();
    assert_eq!(back, "# tracer: nop\n#P:4\n");
    assert!(found.searched() && !found.get());
}

#[test]
fn a_mapped_file_hands_over_every_byte_and_releases_what_was_read() {
    // Several slices and releases, and an odd tail.
    let (dir, p, text) = text_file(2 * MAP_RELEASE_BYTES + 3 * MAP_SLICE_BYTES + 4099, 89);
    // By slices, as the parser reads it.
    let mut m = Mapped::open(&p).expect("a plain file of 9 MiB is mapped");
    let mut back = Vec::new();
    loop {
        let buf = m.fill_buf().unwrap();
        if buf.is_empty() {
            break;
        }
        assert!(buf.len() <= MAP_SLICE_BYTES);
        // Part of a slice at a time, as a line split across two fills leaves it.
        let n = buf.len().min(MAP_SLICE_BYTES / 3 + 1);
        back.extend_from_slice(&buf[..n]);
        m.consume(n);
    }
    assert!(back == text, "{} bytes back of {}", back.len(), text.len());
    #[cfg(unix)]
    assert_eq!(m.released, text.len(), "every page is released at the end");
    // Through `open`, prefix and all, by `read`; the prefix (the mapping's first bytes,
    // not a copy) stays readable after the reader has released their pages.
    let mut back = Vec::new();
    let mut input = open(&p).unwrap();
    input.reader.read_to_end(&mut back).unwrap();
    assert!(back == text);
    assert!(input.prefix.as_ref() == &text[..PREFIX_BYTES]);
    // Compressed and small files are read, not mapped.
    let gz = dir.path().join("t.txt.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, &text).unwrap();
    enc.finish().unwrap();
    assert!(Mapped::open(&gz).is_none());
    let mut back = Vec::new();
    open(&gz).unwrap().reader.read_to_end(&mut back).unwrap();
    assert!(back == text);
    let small = dir.path().join("s.txt");
    std::fs::write(&small, &text[..1000]).unwrap();
    assert!(Mapped::open(&small).is_none());
    assert!(Mapped::open(dir.path()).is_none());
}

#[test]
fn reading_ahead_hands_over_every_byte_and_the_first_error() {
    // More than the prefix and several chunks: every byte, in order.
    let (_dir, p, text) = text_file(PREFIX_BYTES + 3 * AHEAD_CHUNK + 17, 97);
    let mut back = Vec::new();
    open(&p).unwrap().reader.read_to_end(&mut back).unwrap();
    assert!(back == text, "{} bytes back of {}", back.len(), text.len());
    // A source that fails after a chunk: its bytes, then its error, then the end.
    let mut r = ReadAhead::spawn(|| {
        let failing = Cursor::new(vec![b'x'; AHEAD_CHUNK]).chain(Failing);
        Ok(Box::new(BufReader::new(failing)))
    })
    .unwrap();
    assert_eq!(r.fill_buf().unwrap().len(), AHEAD_CHUNK);
    r.consume(AHEAD_CHUNK);
    assert_eq!(r.fill_buf().unwrap_err().to_string(), "broken source");
    assert!(r.fill_buf().unwrap().is_empty());
    // A source that fails in the middle of a chunk: the bytes before the error come first.
    let mut r = ReadAhead::spawn(|| {
        let failing = Cursor::new(vec![b'y'; 10]).chain(Failing);
        Ok(Box::new(BufReader::new(failing)))
    })
    .unwrap();
    assert_eq!(r.fill_buf().unwrap(), &[b'y'; 10]);
    r.consume(10);
    assert_eq!(r.fill_buf().unwrap_err().to_string(), "broken source");
    // An error opening the source is the first read's.
    let mut r = ReadAhead::spawn(|| Err(io::Error::other("cannot open"))).unwrap();
    assert_eq!(r.fill_buf().unwrap_err().to_string(), "cannot open");
}

struct Failing;
impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::other("broken source"))
    }
}

#[test]
fn a_window_keeps_the_header_and_the_lines_between_the_markers() {
    let text = "# tracer: nop\n# entries-in-buffer/entries-written: 3/3   #P:2\n\
        a-1 [000] 1.0: mm_page_free: page=p pfn=0x1 order=0\n\
        a-1 [000] 1.1: tracing_mark_write: KT_SNAPSHOT_BEFORE_END p1\n\
        a-1 [001] 1.2: mm_page_free: page=p pfn=0x2 order=0\n\
        a-1 [000] 1.3: tracing_mark_write: KT_SNAPSHOT_AFTER_BEGIN p1\n\
        a-1 [000] 1.4: mm_page_free: page=p pfn=0x3 order=0\n";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, text).unwrap();
    let w = Window {
        from: Some("KT_SNAPSHOT_BEFORE_END".into()),
        to: Some("KT_SNAPSHOT_AFTER_BEGIN".into()),
        beyond_prefix_if: None,
    };
    let (mut input, found) = open_window(&p, &w).unwrap();
    let mut back = String::new();
    input.reader.read_to_string(&mut back).unwrap();
    assert_eq!(found.map(|f| f.get()), Some(true));
    // The prefix to sniff is the input as read, the lines outside the window included.
    assert_eq!(input.prefix.as_ref(), text.as_bytes());
    assert!(back.starts_with("# tracer: nop\n# entries"), "{back}");
    assert!(back.contains("pfn=0x2") && !back.contains("pfn=0x1 ") && !back.contains("pfn=0x3"));
    // A marker split across the inner reader's buffers is found too.
    let mut u = UntilMarker::new(Slices(b"abcMARKERdef", 5), b"MARKER");
    let mut got = Vec::new();
    u.read_to_end(&mut got).unwrap();
    // (The marker's first bytes were handed out before it was seen: its line is cut.)
    assert_eq!(got, b"abcMA\n");
}

#[test]
fn a_to_marker_in_the_prefix_leaves_the_prefix_to_be_sniffed_whole() {
    // With a `to` marker in the prefix the caller sniffs the whole prefix.
    let p = b"# h\na\nmark\nb\nc";
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.txt");
    std::fs::write(&f, p).unwrap();
    let to = |m: &str| Window {
        from: None,
        to: Some(m.into()),
        beyond_prefix_if: None,
    };
    assert!(open_window(&f, &to("mark")).unwrap().0.split.is_none());
    assert!(open_window(&f, &to("absent")).unwrap().0.split.is_some());
}
