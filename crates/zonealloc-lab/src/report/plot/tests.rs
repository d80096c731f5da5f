//! The plots' tests: colours, axes, legends, and that any data renders.

use super::axis::{
    category_tick, log_tick, padded_range, sci_axis, shared_categories, tick, tick_in,
};
use super::colours::base_of;
use super::legend::{legend_font, title_px, wrap, CHAR_EM, LEGEND_CHARS, TITLE_MIN_PX, TITLE_PX};
use super::*;

fn plot(kind: PlotKind, names: &[&str]) -> Plot {
    Plot {
        file_stem: "p".into(),
        title: "t".into(),
        x_label: "CPU".into(),
        y_label: "y".into(),
        kind,
        series: names
            .iter()
            .map(|n| Series {
                name: (*n).into(),
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5), (3.0, 3.0)],
            })
            .collect(),
    }
}

/// The kernel is black in every plot and a line plot's kernel is points; a variant keeps
/// its colour wherever the kernel stands among the series.
#[test]
fn the_reference_is_black_points_and_colours_follow_the_series() {
    let lines = render(&plot(PlotKind::Lines, &["a", "b", "kernel (snapshots)"])).unwrap();
    let bars = render(&plot(PlotKind::Bars, &["kernel (trace)", "a", "b"])).unwrap();
    for svg in [&lines, &bars] {
        assert!(svg.contains("#0072B2"), "{svg}");
        assert!(svg.contains("#E69F00"), "{svg}");
    }
    assert!(bars.contains("fill=\"#000000\""), "{bars}");
    // Four snapshot points (and the legend's dot), no line through them.
    let dots = lines
        .matches("r=\"6\" opacity=\"1\" fill=\"#000000\"")
        .count();
    assert_eq!(dots, 5, "{lines}");
    assert!(
        !lines.contains("stroke=\"#000000\" stroke-width=\"2\""),
        "{lines}"
    );
}

/// Two coinciding lines both show: the first wide and solid, the second narrower, dashed,
/// drawn a few pixels above the first, and its legend says whose line it is.
#[test]
fn coinciding_lines_stay_visible() {
    let svg = render(&plot(PlotKind::Lines, &["a", "b"])).unwrap();
    assert!(
        svg.contains("stroke=\"#0072B2\" stroke-width=\"7\""),
        "{svg}"
    );
    let dashes = svg.matches("stroke=\"#E69F00\" stroke-width=\"5\"").count();
    assert!(dashes > 2, "{svg}");
    assert!(svg.contains("b (=\u{a0}a)"), "{svg}");
    // The markers of b stand above a's: no marker of b where one of a is.
    let markers = |colour: &str| -> Vec<String> {
        svg.split("<circle")
            .filter(|c| c.contains(&format!("fill=\"{colour}\"")) && !c.contains("r=\"6\""))
            .map(|c| c.split(" r=").next().unwrap().to_owned())
            .collect()
    };
    let (a, b) = (markers("#0072B2"), markers("#E69F00"));
    assert_eq!((a.len(), b.len()), (4, 4), "{svg}");
    assert!(a.iter().all(|m| !b.contains(m)), "{a:?} {b:?}");
    // Lines that only share a stretch are no twins: no note, no lift.
    let mut apart = plot(PlotKind::Cdf, &["a", "b"]);
    apart.series[1].points[0].0 = 9.0;
    assert!(!render(&apart).unwrap().contains("(=\u{a0}"));
}

/// A series keeps its colour in every plot of an experiment, wherever it stands among
/// the series; `NAME, qualifier` beside `NAME` is a darker, dotted `NAME`.
#[test]
fn one_colour_per_series_across_plots_and_derived_series_share_it() {
    let one = plot(
        PlotKind::Lines,
        &["refill avg", "bulk free avg", "refill p99"],
    );
    let two = plot(PlotKind::Lines, &["refill p99", "refill p99, no wait"]);
    let colours = SeriesColours::new([&one, &two]);
    let green = "#009E73"; // the third colour
    for p in [&one, &two] {
        let svg = render_with(p, &colours).unwrap();
        assert!(svg.contains(&format!("stroke=\"{green}\"")), "{svg}");
    }
    let svg = render_with(&two, &colours).unwrap();
    assert!(!svg.contains("#0072B2"), "{svg}");
    // The derived series: 0.55 of the base's channels (0, 158, 115), 3 px, dotted.
    assert!(
        svg.contains("stroke=\"#00563F\" stroke-width=\"3\""),
        "{svg}"
    );
    assert!(colours.colour_of(&two, "refill p99, no wait").1);
    assert_eq!(base_of(&two, "refill p99"), None);
    // Alone, the plot starts the palette again.
    assert!(render(&two).unwrap().contains("#0072B2"));
}

/// A line plot whose series share a few x values (a sweep's variants) puts them at even
/// steps labelled with their values; many x values stay a number axis.
#[test]
fn a_sweeps_variants_stand_on_a_categorical_axis() {
    let mut sweep = plot(PlotKind::Lines, &["hold", "bound"]);
    for s in &mut sweep.series {
        s.points = [63.0, 127.0, 255.0, 8191.0]
            .iter()
            .map(|&x| (x, x * 10.0))
            .collect();
    }
    let svg = render(&sweep).unwrap();
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
        .collect();
    for label in ["63", "127", "255", "8191"] {
        assert!(texts.contains(&label), "{label} {texts:?}");
    }
    assert!(!texts
        .iter()
        .any(|t| t.contains("log scale") && t.contains("x")));
    assert_eq!(
        shared_categories(&sweep.series),
        Some(vec![63.0, 127.0, 255.0, 8191.0])
    );
    sweep.series[1].points.pop();
    assert_eq!(shared_categories(&sweep.series), None);
}

/// A long title is set smaller to fit the image; a long legend word breaks.
#[test]
fn titles_and_legends_fit() {
    assert_eq!(title_px("short", SIZE.0), TITLE_PX);
    let long = "Unusable index order 9: tail_merge=on − off per tick (mean of 10 paired \
                seeds; below 0: tail placement better)";
    let px = title_px(long, SIZE.0);
    assert!((TITLE_MIN_PX..TITLE_PX).contains(&px), "{px}");
    assert!(CHAR_EM * f64::from(px) * long.chars().count() as f64 <= f64::from(SIZE.0));
    let lines = wrap("free_high=original,tail_merge=off,batch=63 on");
    assert!(
        lines.iter().all(|l| l.chars().count() <= LEGEND_CHARS),
        "{lines:?}"
    );
    assert_eq!(
        lines.concat(),
        "free_high=original,tail_merge=off,batch=63 on"
    );
    assert_eq!(legend_font(4, 4, 500), (14, 18));
    assert!(legend_font(40, 20, 500).0 < 14);
}

/// Past the fourth series the width stays at its floor (the lab's plots have more).
#[test]
fn many_series_render_at_the_narrowest_width() {
    let names = ["a", "b", "c", "d", "e", "f", "g"];
    let svg = render(&plot(PlotKind::Lines, &names)).unwrap();
    assert!(svg.contains("stroke-width=\"2\""), "{svg}");
}

/// Bars stand over categories: labelled 0, 1, 2, 3 and nothing between.
#[test]
fn bars_have_a_categorical_axis_and_legends_wrap() {
    let long = "kernel (its /proc snapshots, the reference)";
    let mut bars = plot(PlotKind::Bars, &[long, "a"]);
    // Heights in hundreds: no fraction on the y axis either.
    for s in &mut bars.series {
        for p in &mut s.points {
            p.1 *= 200.0;
        }
    }
    let svg = render(&bars).unwrap();
    // The texts the SVG draws.
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
        .collect();
    for label in ["0", "1", "2", "3"] {
        assert!(texts.contains(&label), "{label} {texts:?}");
    }
    for between in ["0.50", "-0.50", "1.50"] {
        assert!(!texts.contains(&between), "{between} {texts:?}");
    }
    // The whole name, over three lines.
    for line in ["kernel (its /proc", "snapshots, the", "reference)"] {
        assert!(texts.contains(&line), "{line} {texts:?}");
    }
    assert_eq!(category_tick(&2.0), "2");
    assert_eq!(category_tick(&2.5), "");
}

#[test]
fn an_all_zero_axis_has_no_negative_half() {
    assert_eq!(padded_range([0.0, 0.0].into_iter()), -0.05..1.0);
    assert_eq!(padded_range([2.0].into_iter()), 1.8..2.2);
    assert_eq!(padded_range(std::iter::empty()), 0.0..1.0);
}

#[test]
fn ticks_are_compact() {
    assert_eq!(tick(&5000.0), "5000");
    assert_eq!(tick(&0.25), "0.25");
    assert_eq!(tick(&2.5e7), "2.5e7");
    assert_eq!(tick(&0.0), "0");
    // A narrow axis gets the decimals that tell its ticks apart.
    assert_eq!(tick_in(3.875, 0.025), "3.875");
    assert_eq!(tick_in(3.88, 0.025), "3.880");
    assert_eq!(tick_in(0.15, 0.1), "0.15");
    assert_eq!(tick_in(2500.0, 5000.0), "2500");
}

#[test]
fn log_axes_for_wide_positive_ranges_only() {
    assert!(wants_log([1500.0, 45_000.0].into_iter()));
    assert!(!wants_log([10.0, 100.0].into_iter()));
    assert!(!wants_log([0.0, 45_000.0].into_iter()));
    assert!(!wants_log(std::iter::empty()));
    assert_eq!(log_tick(&3.0, false), "1000");
    assert_eq!(log_tick(&-1.0, false), "0.1");
    assert_eq!(log_tick(&3.5, false), "");
    assert_eq!(log_tick(&6.0, true), "1e6");
    assert_eq!(log_tick(&0.0, true), "1e0");
    assert!(sci_axis(&(1.5..6.3)) && !sci_axis(&(0.0..3.2)) && sci_axis(&(-3.0..1.0)));
}

#[test]
fn legend_stands_beside_the_chart_and_latency_cdfs_are_logarithmic() {
    let plot = Plot {
        file_stem: "p".into(),
        title: "t".into(),
        x_label: "latency (µs)".into(),
        y_label: "y".into(),
        kind: PlotKind::Cdf,
        series: vec![Series {
            name: "remote drain".into(),
            points: vec![(2.0, 0.0), (30.0, 0.0), (40_000.0, 0.0)],
        }],
    };
    let svg = render(&plot).unwrap();
    assert!(svg.contains("latency (µs) (log scale)"), "{svg}");
    assert!(svg.contains("remote drain"));
}

/// A line series carries a marker per point while it has at most `MAX_MARKERS` of them.
#[test]
fn markers_on_sparse_lines_only() {
    let lines = |n: usize| Plot {
        file_stem: "p".into(),
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        kind: PlotKind::Lines,
        series: vec![Series {
            name: "s".into(),
            points: (0..n).map(|i| (i as f64, (i % 7) as f64)).collect(),
        }],
    };
    let circles = |n| render(&lines(n)).unwrap().matches("<circle").count();
    assert_eq!(circles(MAX_MARKERS), MAX_MARKERS);
    assert_eq!(circles(MAX_MARKERS + 1), 0);
    assert!(render(&lines(MAX_MARKERS + 1))
        .unwrap()
        .contains("<polyline"));
}

#[test]
fn empirical_cdf_is_sorted_and_ends_at_one() {
    let cdf = empirical_cdf(&[3.0, 1.0, 2.0, 2.0, f64::NAN]);
    assert_eq!(cdf, vec![(1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]);
    assert!(empirical_cdf(&[]).is_empty());
}

#[test]
fn every_kind_renders_even_empty_or_degenerate_data() {
    for kind in [PlotKind::Lines, PlotKind::Bars, PlotKind::Cdf] {
        for points in [
            vec![],
            vec![(1.0, 1.0)],
            vec![(0.0, 2.0), (1.0, f64::NAN), (2.0, 5.0)],
        ] {
            let plot = Plot {
                file_stem: "p".into(),
                title: "t".into(),
                x_label: "x".into(),
                y_label: "y".into(),
                kind,
                series: vec![
                    Series {
                        name: "a".into(),
                        points: points.clone(),
                    },
                    Series {
                        name: "b".into(),
                        points,
                    },
                ],
            };
            let svg = render(&plot).unwrap();
            assert!(svg.contains("<svg"));
        }
    }
}
