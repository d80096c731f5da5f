//! Colours: one per series name across an experiment's plots, the kernel's black.

use plotters::prelude::*;

use super::super::Plot;

/// The colour of the reference series (the kernel's): the same in every plot.
const REFERENCE: RGBAColor = RGBAColor(0, 0, 0, 1.0);

/// Whether a series is the reference a plot compares against: one named `kernel...` (a
/// trace replay's kernel), drawn in `REFERENCE` and, on a line plot, as points.
pub fn is_reference(name: &str) -> bool {
    name.starts_with("kernel")
}

/// The colour of every series of a set of plots (an experiment's): one per series name, the
/// same in every plot, given in the order the names first appear. The reference series (the
/// kernel's, black) and a derived series (`NAME, qualifier` beside `NAME` in its plot, drawn
/// in `NAME`'s colour) take none of their own.
#[derive(Clone, Debug, Default)]
pub struct SeriesColours {
    names: Vec<String>,
}

impl SeriesColours {
    /// The palette of `plots`, in their order.
    pub fn new<'a>(plots: impl IntoIterator<Item = &'a Plot>) -> SeriesColours {
        let mut names: Vec<String> = Vec::new();
        for p in plots {
            for s in &p.series {
                let own = !is_reference(&s.name) && base_of(p, &s.name).is_none();
                if own && !names.contains(&s.name) {
                    names.push(s.name.clone());
                }
            }
        }
        SeriesColours { names }
    }

    /// The colour of series `name` in `plot`, and whether it is drawn as a derived series.
    pub(super) fn colour_of(&self, plot: &Plot, name: &str) -> (RGBAColor, bool) {
        if is_reference(name) {
            return (REFERENCE, false);
        }
        let (own, derived) = match base_of(plot, name) {
            Some(base) => (base, true),
            None => (name, false),
        };
        let k = match self.names.iter().position(|n| n == own) {
            Some(k) => k,
            // A name the palette was not made from: after all of its own.
            None => self.names.len() + plot.series.iter().position(|s| s.name == own).unwrap_or(0),
        };
        if derived {
            (darker(colour(k)), true)
        } else {
            (colour(k), false)
        }
    }
}

/// The series of `plot` that `name` qualifies (`owner drain` for `owner drain, run-queue
/// wait removed`), if there is one.
pub(super) fn base_of<'a>(plot: &'a Plot, name: &str) -> Option<&'a str> {
    plot.series
        .iter()
        .map(|s| s.name.as_str())
        .filter(|b| {
            *b != name
                && name
                    .strip_prefix(b)
                    .is_some_and(|rest| rest.starts_with(", "))
        })
        .max_by_key(|b| b.len())
}

/// The colour of the `k`-th series name: Okabe and Ito's palette (told apart with any colour
/// vision, none near white), then the darker half of Paul Tol's "muted" one, then plotters'
/// own.
fn colour(k: usize) -> RGBAColor {
    const COLOURS: [(u8, u8, u8); 13] = [
        // Okabe and Ito.
        (0, 114, 178),
        (230, 159, 0),
        (0, 158, 115),
        (213, 94, 0),
        (204, 121, 167),
        (86, 180, 233),
        (120, 94, 40),
        // Tol's muted: indigo, teal, green, olive, wine, purple.
        (51, 34, 136),
        (68, 170, 153),
        (17, 119, 51),
        (153, 153, 51),
        (136, 34, 85),
        (170, 68, 153),
    ];
    match COLOURS.get(k) {
        Some(&(r, g, b)) => RGBAColor(r, g, b, 1.0),
        None => <Palette99 as Palette>::pick(k).to_rgba(),
    }
}

/// A derived series' colour: its base's, darkened, so that where the two coincide the
/// derived one still shows on top.
fn darker(c: RGBAColor) -> RGBAColor {
    let d = |v: u8| (f64::from(v) * 0.55) as u8;
    RGBAColor(d(c.0), d(c.1), d(c.2), c.3)
}
