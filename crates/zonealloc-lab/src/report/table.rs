//! The lab's tables, in the two forms it prints: plain text for the terminal ([`plain`], the
//! `zonealloc lab` and `trace replay` summaries) and markdown for the report files
//! ([`markdown`], `report.md` and the bench table). One renderer of each; every table of the
//! lab goes through them.
//!
//! Plain tables are laid out by `comfy-table` (borderless, columns two spaces apart). Markdown
//! rows are written unpadded (`| a | b |`): markdown viewers align the columns themselves, and
//! padded rows would make every cell's text depend on its neighbours.

use comfy_table::{presets, CellAlignment, Table};

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Number columns.
    Right,
}

impl Align {
    fn markdown_rule(self) -> &'static str {
        match self {
            Align::Left => ":---",
            Align::Right => "---:",
        }
    }
}

/// Rows of cells as text columns two spaces apart, each as wide as its widest cell, without
/// trailing blanks. Columns from `right_from` on are right-aligned (numbers); with `rule`, a
/// line of dashes as wide as each column goes under the first row (the header). Short rows
/// leave their last columns empty. The tables go to a terminal and their cells often come from
/// files: control characters are printed escaped ([`terminal::escape`](super::terminal::escape)).
pub fn plain<R: AsRef<[String]>>(rows: &[R], right_from: usize, rule: bool) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.as_ref()
                .iter()
                .map(|c| super::terminal::escape(c).into_owned())
                .collect()
        })
        .collect();
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    if cols == 0 {
        return "\n".repeat(rows.len());
    }
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    for (k, r) in rows.into_iter().enumerate() {
        table.add_row(r);
        if rule && k == 0 {
            table.add_row(widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
        }
    }
    for (i, column) in table.column_iter_mut().enumerate() {
        // Two blanks between columns: the right padding of every column but the last.
        column.set_padding((0, if i + 1 < cols { 2 } else { 0 }));
        column.set_cell_alignment(if i >= right_from {
            CellAlignment::Right
        } else {
            CellAlignment::Left
        });
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A markdown table: the header, its alignment rule, then the rows (pipes escaped, newlines
/// flattened, every other control character escaped as [`plain`] does: a `report.md` is read
/// with `cat` and `less -R` as often as in a viewer). `align` gives each column's alignment; columns past its end are right-aligned.
pub fn markdown<R: AsRef<[String]>>(header: &[String], align: &[Align], rows: &[R]) -> String {
    let mut out = String::new();
    markdown_row(&mut out, header);
    out.push('|');
    for i in 0..header.len() {
        out.push(' ');
        out.push_str(
            align
                .get(i)
                .copied()
                .unwrap_or(Align::Right)
                .markdown_rule(),
        );
        out.push_str(" |");
    }
    out.push('\n');
    for r in rows {
        markdown_row(&mut out, r.as_ref());
    }
    out
}

/// One markdown table row, `| a | b |`, with pipes escaped, newlines flattened and the other
/// control characters escaped ([`terminal::escape`](super::terminal::escape)).
fn markdown_row(out: &mut String, cells: &[String]) {
    out.push('|');
    for c in cells {
        out.push(' ');
        let flat = c.replace('|', "\\|").replace('\n', " ");
        out.push_str(&super::terminal::escape(&flat));
        out.push_str(" |");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|r| r.iter().map(|c| (*c).to_owned()).collect())
            .collect()
    }

    #[test]
    fn plain_columns_are_two_apart_with_numbers_right_aligned() {
        let t = rows(&[
            &["metric", "a", "bb"],
            &["x", "1.00", "123"],
            &["longer", "2"],
        ]);
        assert_eq!(
            plain(&t, 1, true),
            "metric     a   bb\n\
             ------  ----  ---\n\
             x       1.00  123\n\
             longer     2\n"
        );
        assert_eq!(
            plain(&t, usize::MAX, false),
            "metric  a     bb\nx       1.00  123\nlonger  2\n"
        );
    }

    #[test]
    fn markdown_rows_are_unpadded_and_escaped() {
        let t = rows(&[&["a|b", "1"], &["x"]]);
        let h = rows(&[&["name", "n"]]).remove(0);
        assert_eq!(
            markdown(&h, &[Align::Left], &t),
            "| name | n |\n| :--- | ---: |\n| a\\|b | 1 |\n| x |\n"
        );
    }

    /// A name from a trace or a `results.json` reaches `report.md` with its control characters
    /// escaped, as on the terminal: no escape sequence, carriage return or bidi override is
    /// written as it is.
    #[test]
    fn markdown_cells_escape_control_characters() {
        let t = rows(&[&["\x1b]0;pwned\x07\x1b[2Jcpu", "a\rb\u{202e}c"]]);
        let h = rows(&[&["na\x1bme", "n\tn"]]).remove(0);
        let md = markdown(&h, &[Align::Left], &t);
        assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "{md:?}");
        assert!(
            md.contains("| \\x1b]0;pwned\\x07\\x1b[2Jcpu | a\\rb\\u{202e}c |"),
            "{md}"
        );
        assert!(md.starts_with("| na\\x1bme | n\\tn |\n"), "{md}");
    }
}
