//! The look at the trace's prefix ([`sniff::sniff`]: the CPU count and the numbering
//! evidence) taken off the replay's own parse: the prefix's lines the stream carries are
//! parsed once, by the parse thread, and their events held for the replay; only the lines a
//! window cut out of the stream are parsed here ([`Split`]). The result is the one a
//! separate parse of the whole prefix gives (which runs instead wherever the split cannot be
//! exact), without the 4 MiB parsed twice on a machine whose two cores both replay.

use super::input::{Input, Shared};
use super::pipe::{Chunk, ParseAhead};
use super::sniff::{self, Sniff, Split};
use crate::trace::gfp_memo::GfpMemo;
use crate::trace::migratetype::Evidence;
use crate::trace::parse::{Event, Parser};
use std::io;

/// The prefix being looked at: what is known now, and the parse's events of it once taken.
pub struct PrefixLook {
    sniff: Sniff,
    prefix: Shared,
    /// The stream's bytes whose events the parse marks; `None` once the look is whole.
    pending: Option<u64>,
    held: Vec<Chunk>,
}

impl PrefixLook {
    /// Starts `input`'s parse on a thread of its own ([`ParseAhead`]) and the look at its
    /// prefix: the header and the window's cut here and now, the rest from the parse (the
    /// whole prefix here and now where `input` has no [`Split`]).
    pub fn spawn(parser: Parser, input: Input) -> io::Result<(PrefixLook, ParseAhead)> {
        let Input {
            reader,
            prefix,
            split,
            ..
        } = input;
        let mark = split.as_ref().map(|s: &Split| s.stream_bytes);
        let ahead = ParseAhead::spawn_marked(parser, reader, mark)?;
        let region = split
            .as_ref()
            .and_then(|sp| Some((Sniff::of_region(prefix.as_ref(), sp)?, sp.stream_bytes)));
        let (sniff, pending) = match region {
            Some((s, bytes)) => (s, Some(bytes)),
            None => (sniff::sniff(prefix.as_ref()), None),
        };
        let look = PrefixLook {
            sniff,
            prefix,
            pending,
            held: Vec::new(),
        };
        Ok((look, ahead))
    }

    /// What is known so far: the header's CPU count is final, the events' part may not be.
    pub fn so_far(&self) -> &Sniff {
        &self.sniff
    }

    /// The whole look: takes `ahead`'s chunks up to its mark (held for the replay) and adds
    /// their events; where the parse read fewer bytes than marked (a window's end inside the
    /// prefix, a read error), the whole prefix is parsed here instead.
    pub fn finish(&mut self, ahead: &ParseAhead) -> &Sniff {
        self.finish_with(ahead, |_| {})
    }

    /// [`PrefixLook::finish`], handing each event it takes to `each` too, in order (none
    /// where the look was whole already).
    pub fn finish_with(&mut self, ahead: &ParseAhead, mut each: impl FnMut(&Event<'_>)) -> &Sniff {
        if let Some(want) = self.pending.take() {
            let mut read = None;
            // A trace's allocations name a few dozen `gfp_flags` strings, interleaved: each
            // is weighed once (weighed afresh, the look took 2.7 M instructions on a
            // kernel's trace).
            let mut memo = GfpMemo::default();
            while let Some(chunk) = ahead.next() {
                for ev in chunk.events() {
                    self.sniff
                        .add_with(&ev, |gfp| memo.get(gfp, Evidence::expected));
                    each(&ev);
                }
                read = chunk.mark();
                self.held.push(chunk);
                if read.is_some() {
                    break;
                }
            }
            if read != Some(want) {
                self.sniff = sniff::sniff(self.prefix.as_ref());
            }
        }
        &self.sniff
    }

    /// The chunks taken so far, in order (the replay starts with them), handed over.
    pub fn take_held(&mut self) -> Vec<Chunk> {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ingest::input::{open_window, Window};

    /// The prefix's look as [`PrefixLook`] takes it from the parse, the events the parse
    /// handed over (in order, held ones first) and the whole prefix sniffed apart.
    fn look(text: &[u8], window: &Window) -> (Sniff, Vec<String>, Sniff) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, text).unwrap();
        let (input, _) = open_window(&p, window).unwrap();
        let whole = sniff::sniff(input.prefix.as_ref());
        let (mut look, ahead) = PrefixLook::spawn(Parser::new(), input).unwrap();
        let sniff = *look.finish(&ahead);
        let mut events: Vec<String> = Vec::new();
        for c in look
            .take_held()
            .into_iter()
            .chain(std::iter::from_fn(|| ahead.next()))
        {
            events.extend(c.events().map(|e| format!("{e:?}")));
        }
        ahead.finish().1.unwrap();
        (sniff, events, whole)
    }

    fn same(a: &Sniff, b: &Sniff) {
        assert_eq!(
            (
                a.header_cpus,
                a.max_cpu,
                a.evidence.current,
                a.evidence.legacy,
                a.bytes
            ),
            (
                b.header_cpus,
                b.max_cpu,
                b.evidence.current,
                b.evidence.legacy,
                b.bytes
            )
        );
    }

    /// `n` lines of legacy-numbered allocations on CPUs 0..=`n`, a marker line after the
    /// first `cut`, a current-numbered one on CPU 9 among the first.
    fn trace(n: usize, cut: usize) -> String {
        let mut t =
            String::from("# tracer: nop\n# entries-in-buffer/entries-written: 1/1   #P:12\n");
        t += " a-1 [009] 0.5: mm_page_alloc: page=p pfn=0x9 order=0 migratetype=1 gfp_flags=__GFP_MOVABLE\n";
        for i in 0..n {
            if i == cut {
                t += " a-1 [000] 1.0: tracing_mark_write: FROM\n";
            }
            t += &format!(
                " a-{i} [{:03}] 1.{i}: mm_page_alloc: page=p pfn={:#x} order=0 migratetype=2 \
                 gfp_flags=GFP_HIGHUSER_MOVABLE\n",
                i % 7,
                0x100 + i
            );
        }
        t
    }

    #[test]
    fn the_look_off_the_parse_is_the_whole_prefix_s_and_every_event_reaches_the_replay() {
        let text = trace(20, 5);
        let direct = |t: &str| {
            let mut v = Vec::new();
            Parser::new()
                .read_all(t.as_bytes(), |e| v.push(format!("{e:?}")))
                .unwrap();
            v
        };
        // No window: the stream is the prefix.
        let (s, events, whole) = look(text.as_bytes(), &Window::default());
        same(&s, &whole);
        assert_eq!(
            (s.max_cpu, s.evidence.legacy, s.evidence.current),
            (Some(9), 20, 1)
        );
        assert_eq!(events, direct(&text));
        // A window whose start cuts the first lines: they are looked at here, not replayed.
        let from = Window {
            from: Some("FROM".into()),
            to: None,
            beyond_prefix_if: None,
        };
        let (s, events, whole) = look(text.as_bytes(), &from);
        same(&s, &whole);
        assert_eq!(s.max_cpu, Some(9), "the cut's CPU 9 counts");
        assert_eq!(events.len(), 15);
        // A `to` marker inside the prefix: the whole prefix is looked at here.
        let to = Window {
            from: None,
            to: Some("a-10 ".into()),
            beyond_prefix_if: None,
        };
        let (s, events, whole) = look(text.as_bytes(), &to);
        same(&s, &whole);
        assert_eq!(s.evidence.legacy, 20);
        assert_eq!(events.len(), 11);
        // A stream longer than the prefix: its first PREFIX_BYTES' lines only.
        let long = trace(60_000, 100_000);
        let (s, events, whole) = look(long.as_bytes(), &Window::default());
        same(&s, &whole);
        assert!(s.evidence.legacy < 60_000 && s.evidence.legacy > 30_000);
        assert_eq!(events.len(), 60_001);
    }

    #[test]
    fn the_memo_weighs_every_string_as_the_evidence_does_past_what_it_keeps() {
        // Of one length, with each answer: movable, reclaimable, none, none (hex).
        let names = [
            "  __GFP_MOVABLE  ",
            "__GFP_RECLAIMABLE",
            "GFP_KERNEL|__GFP_",
            "0x400dc0000000000",
        ];
        // More distinct strings than the memo keeps, met again in another order.
        let strings: Vec<String> = (0..2 * GfpMemo::<Option<u8>>::MAX)
            .map(|i| format!("{}|__GFP_X{i}", names[i % names.len()]))
            .collect();
        let mut memo = GfpMemo::default();
        for k in 0..20 * strings.len() {
            let s = &strings[(k * 7 + k / 5) % strings.len()];
            assert_eq!(
                memo.get(s, Evidence::expected),
                Evidence::expected(s),
                "{s}"
            );
            assert!(memo.len() <= GfpMemo::<Option<u8>>::MAX);
        }
        assert_eq!(memo.get("", Evidence::expected), None);
    }

    #[test]
    fn a_line_too_long_in_the_cut_or_the_stream_ends_the_look_where_one_parse_would() {
        let long_line = format!(" a-1 [003] 1.0: x {}\n", "y".repeat(70 << 10));
        let base = trace(10, 4);
        let at = base
            .find(" a-1 [000] 1.0: tracing_mark_write: FROM")
            .unwrap();
        let from = Window {
            from: Some("FROM".into()),
            to: None,
            beyond_prefix_if: None,
        };
        // In the cut region: the region's parse stops, so the whole prefix is sniffed here.
        let mut t = base.clone();
        t.insert_str(at, &long_line);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, &t).unwrap();
        let (input, _) = open_window(&p, &from).unwrap();
        let whole = sniff::sniff(input.prefix.as_ref());
        let (mut look, ahead) = PrefixLook::spawn(Parser::new(), input).unwrap();
        same(look.finish(&ahead), &whole);
        drop(ahead.finish());
        // In the stream: the parse fails before its mark, so the whole prefix is sniffed.
        let mut t = base;
        t.push_str(&long_line);
        std::fs::write(&p, &t).unwrap();
        let (input, _) = open_window(&p, &Window::default()).unwrap();
        let whole = sniff::sniff(input.prefix.as_ref());
        let (mut look, ahead) = PrefixLook::spawn(Parser::new(), input).unwrap();
        same(look.finish(&ahead), &whole);
        assert!(ahead.finish().1.is_err());
    }
}
