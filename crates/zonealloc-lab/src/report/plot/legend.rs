//! The title's size, the legend beside the chart, and how each series' line is drawn.

use plotters::prelude::*;

/// The title's largest font size; a longer title is set smaller to fit the image's width.
pub(super) const TITLE_PX: u32 = 22;
/// Its smallest.
pub(super) const TITLE_MIN_PX: u32 = 12;
/// A sans-serif character's mean width, as a fraction of the font size, with room to spare
/// (DejaVu Sans' lower case and digits average about 0.5, capitals about 0.65).
pub(super) const CHAR_EM: f64 = 0.55;

/// The font size that fits `title` on one line of `width` pixels (less a margin each side).
pub(super) fn title_px(title: &str, width: u32) -> u32 {
    let chars = title.chars().count().max(1) as f64;
    let fit = (f64::from(width) - 24.0) / (CHAR_EM * chars);
    (fit.floor() as u32).clamp(TITLE_MIN_PX, TITLE_PX)
}

/// How a series is drawn, and its legend swatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stroke {
    /// A line (`dash`: dash and gap in pixels, `None` for solid).
    Line {
        width: u32,
        dash: Option<(u32, u32)>,
    },
    /// Points (the kernel's snapshots).
    Points,
    /// Filled bars.
    Bar,
}

/// The line of the `k`-th drawn series of a plot (from 0) with a colour of its own: the
/// first solid and widest, each later one narrower (to a floor of 2 px) and dashed with a
/// dash of its own length, so a series that coincides with an earlier one shows at its edges
/// and through its gaps. A derived series (darker, over its base) is dotted, 3 px.
pub(super) fn line_style(k: usize, derived: bool) -> Stroke {
    const DASHES: [u32; 4] = [12, 6, 18, 3];
    if derived {
        return Stroke::Line {
            width: 3,
            dash: Some((3, 5)),
        };
    }
    let width = [7, 5, 3].get(k).copied().unwrap_or(2);
    let dash = (k > 0).then(|| (DASHES[(k - 1) % DASHES.len()], 6));
    Stroke::Line { width, dash }
}

/// Characters of a legend line that fit the strip.
pub(super) const LEGEND_CHARS: usize = 24;

/// `name` broken into lines of at most [`LEGEND_CHARS`] characters: at spaces where it can,
/// and a word longer than a line (`free_high=original,tail_merge=off`) across lines.
pub(super) fn wrap(name: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in name.split(' ') {
        let n = word.chars().count();
        if !line.is_empty() && line.chars().count() + 1 + n > LEGEND_CHARS {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        for c in word.chars() {
            if line.chars().count() == LEGEND_CHARS {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
    }
    lines.push(line);
    lines
}

/// The legend's font size and line height: 14 px on 18 px, or smaller where `lines` lines
/// (and a gap after each of `entries` entries) would not fit `height` pixels.
pub(super) fn legend_font(lines: usize, entries: usize, height: u32) -> (u32, i32) {
    let need = |line_h: usize| 16 + lines * line_h + entries * (line_h / 2);
    [(14, 18), (12, 15), (10, 12), (8, 10)]
        .into_iter()
        .find(|&(_, h)| need(h as usize) <= height as usize)
        .unwrap_or((8, 10))
}

/// A series' legend entry at `row` (moved past it): a swatch drawn as the series is (a dot,
/// a square, a solid, dashed or dotted stroke), and the name's `lines`, in `font` px on
/// `line_h` px.
pub(super) fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    lines: &[String],
    color: RGBAColor,
    stroke: Stroke,
    (font, line_h): (u32, i32),
    row: &mut i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let r = *row;
    match stroke {
        Stroke::Points => area.draw(&Circle::new((19, r), 6, color.filled()))?,
        Stroke::Bar => area.draw(&Rectangle::new([(12, r - 6), (26, r + 6)], color.filled()))?,
        Stroke::Line { width, dash } => {
            let width = width.clamp(3, 5);
            // Segments as the series' dashes, scaled to fit 24 px: two for a dash, four dots.
            let segments: &[(i32, i32)] = match dash {
                None => &[(6, 30)],
                Some((d, _)) if d <= 3 => &[(6, 9), (13, 16), (20, 23), (27, 30)],
                Some(_) => &[(6, 15), (21, 30)],
            };
            for &(a, b) in segments {
                area.draw(&PathElement::new(
                    vec![(a, r), (b, r)],
                    color.stroke_width(width),
                ))?;
            }
        }
    }
    for l in lines {
        area.draw(&Text::new(
            l.clone(),
            (36, *row - font as i32 / 2),
            ("sans-serif", font),
        ))?;
        *row += line_h;
    }
    *row += line_h / 2;
    Ok(())
}
