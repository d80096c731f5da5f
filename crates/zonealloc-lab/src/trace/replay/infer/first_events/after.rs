//! The text past the window read once for its readers: the layout's hints
//! ([`HintCollector::feed_after`]), the vmstat workers' runs ahead
//! ([`RunsAhead::feed_after`]) and the lists' walk ([`Collector`], where it reads on past
//! the window: `Which::lists_after`). 6.12-4g p_thp: the runs' own parse took 44k lines
//! (some 21 M instructions) of the 67k the hints parse anyway.

use super::super::pcp_state::Collector;
use crate::trace::parse::{Event, Parser};
use crate::trace::replay::layout::HintCollector;
use crate::trace::replay::vmstat::RunsAhead;

/// Feeds `text` (the window's tail, from inside its end marker's line) to `hints` and
/// `ahead`, each as its own `feed_after` would, in one parse where both read it; and each
/// event the hints read (every event past the end marker's line, where there are hints) to
/// `lists`.
pub(super) fn read(
    text: &[u8],
    hints: Option<&mut HintCollector>,
    ahead: Option<&mut RunsAhead>,
    mut lists: Option<&mut Collector>,
) {
    let mut to_lists = |ev: &Event<'_>| {
        if let Some(c) = lists.as_deref_mut() {
            c.feed(ev);
        }
    };
    let (h, a) = match (hints, ahead) {
        (Some(h), Some(a)) => (h, a),
        (h, a) => {
            match h {
                Some(h) => {
                    h.feed_after_with(text, &mut to_lists);
                }
                None => lists_alone(text, &mut to_lists),
            }
            if let Some(a) = a {
                a.feed_after(text);
            }
            return;
        }
    };
    // The hints' parse ends a line at a CR too, the runs' reading only at an LF: where a CR
    // is in the text, each reads it its own way.
    let kept = a.clone();
    let Some(mut runs) = a.after().filter(|_| memchr::memchr(b'\r', text).is_none()) else {
        h.feed_after_with(text, &mut to_lists);
        a.feed_after(text);
        return;
    };
    // The end marker's line, the hints skip (its start was cut): the runs read it alone.
    let first = memchr::memchr(b'\n', text).map_or(text, |nl| &text[..=nl]);
    let mut done = memchr::memmem::find(first, b"mm_page_pcpu_drain").is_some()
        && Parser::new().feed(first).is_some_and(|ev| runs.feed(&ev));
    let whole = h.feed_after_with(text, |ev| {
        done = runs.feed(ev);
        to_lists(ev);
    });
    runs.finish();
    if !whole && !done {
        // A line over the parser's limit ended the hints' parse: the runs read on past it.
        *a = kept;
        a.feed_after(text);
    }
}

/// Every event of `text` past its first line (inside the end marker's, as the hints skip it)
/// to `feed`, where no hints parse it: as [`HintCollector::feed_after_with`] reads it.
fn lists_alone(text: &[u8], feed: &mut impl FnMut(&Event<'_>)) {
    let body = memchr::memchr(b'\n', text).map_or(&text[..0], |nl| &text[nl + 1..]);
    // A slice reads without error; a line over the parser's limit ends the walk there.
    let _ = Parser::new().read_all(body, |ev| feed(ev));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::migratetype::Numbering;

    fn line(task: &str, cpu: u32, ts: &str, pfn: u32, drain: bool) -> String {
        let (ctx, what) = if drain {
            (
                "d..2.",
                format!(
                    "mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1"
                ),
            )
        } else {
            (".....", format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 gfp_flags=GFP_KERNEL"))
        };
        format!("{task:>16} [{cpu:03}] {ctx} {ts}: {what}\n")
    }

    /// The hints and the runs after `text`, read apart (`feed_after` each) and in one parse
    /// ([`read`]).
    fn apart_and_once(
        text: &str,
    ) -> [(Vec<crate::trace::replay::layout::StartHints>, RunsAhead); 2] {
        let zone = 0..0x10_0000u64;
        let start = || {
            let mut h = HintCollector::new(3, std::slice::from_ref(&zone), 9, Numbering::Current);
            let mut a = RunsAhead::new(3);
            // CPU 1's worker ran in the window: its runs past it are not read.
            let window = line("kworker/1:1-59", 1, "10.600000", 0x900, true);
            Parser::new()
                .read_all(window.as_bytes(), |ev| {
                    h.feed(ev);
                    a.feed(ev);
                })
                .unwrap();
            (h, a)
        };
        let (mut h, mut a) = start();
        h.feed_after(text.as_bytes());
        a.feed_after(text.as_bytes());
        let apart = (h.finish(), a);
        let (mut h, mut a) = start();
        read(text.as_bytes(), Some(&mut h), Some(&mut a), None);
        [apart, (h.finish(), a)]
    }

    /// One parse gives what the two gave apart: the end marker's line (the hints skip it)
    /// read by the runs alone, CPU 1's lines (it ran in the window) left to the hints, and
    /// past a line over the parser's limit (it ends the hints) the runs read on.
    #[test]
    fn one_parse_of_the_text_after_reads_as_the_hints_and_the_runs_apart() {
        let mut t = line("kworker/2:0-77", 2, "11.100000", 0x1000, true);
        t += &line("kworker/0:2-402", 0, "11.804000", 0x1200, true);
        t += &line("kworker/0:2-402", 0, "11.804001", 0x1201, true);
        t += &line("cc1-9", 0, "11.804002", 0x1400, false);
        t += &line("kworker/1:1-59", 1, "11.600000", 0x1600, true);
        t += &line("kworker/2:0-77", 2, "12.100000", 0x1800, true);
        let [apart, once] = apart_and_once(&t);
        assert_eq!(once, apart);
        let runs = |a: &RunsAhead| a.runs().collect::<Vec<_>>();
        assert_eq!(
            runs(&once.1),
            [
                (0, 11_804_000_000),
                (1, 10_600_000_000),
                (2, 11_100_000_000)
            ]
        );
        assert_eq!(once.0[0].late.len(), 5);
        // Past an over-long line the hints stop; CPU 0's first run comes after it.
        let mut t = line("kworker/2:0-77", 2, "11.100000", 0x1000, true);
        t += &"x".repeat(Parser::new().max_line_bytes + 1);
        t += "\n";
        t += &line("kworker/0:2-402", 0, "11.804000", 0x1200, true);
        let [apart, once] = apart_and_once(&t);
        assert_eq!(once, apart);
        assert_eq!(runs(&once.1)[0], (0, 11_804_000_000));
        assert!(once.0[0].late.is_empty());
    }
}
