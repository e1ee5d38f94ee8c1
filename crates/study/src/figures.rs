//! SVG line charts (plotters), in the spirit of the papers' figures.

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

/// A figure a study drew: its file (relative to the output directory) and
/// what the report calls it.
pub struct Figure {
    pub file: String,
    pub caption: String,
}

impl Figure {
    /// Draws `chart` into `out/figures/<name>`.
    pub fn draw(out: &Path, name: &str, chart: &Chart, caption: impl Into<String>) -> Result<Figure> {
        let file = format!("figures/{name}");
        line_chart(&out.join(&file), chart)?;
        Ok(Figure { file, caption: caption.into() })
    }
}

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
    /// A dashed reference line (for example y = 1: "same as the baseline").
    pub reference_y: Option<f64>,
    /// A logarithmic y axis (ignored unless every value is positive).
    pub log_y: bool,
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

pub fn line_chart(path: &Path, chart: &Chart) -> Result<()> {
    let points = chart.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err(anyhow!("figure {}: no data", path.display()));
    }
    if let Some(r) = chart.reference_y {
        y0 = y0.min(r);
        y1 = y1.max(r);
    }
    let xpad = ((x1 - x0) * 0.03).max(0.01);
    let x_range = (x0 - xpad)..(x1 + xpad);
    let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("figure {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut builder = ChartBuilder::on(&root);
    builder.caption(chart.title, ("sans-serif", 20)).margin(12).x_label_area_size(44).y_label_area_size(60);
    if chart.log_y && y0 > 0.0 {
        // Ratios spanning orders of magnitude: equal factors, equal steps.
        let (lo, hi) = (y0 / 1.15, y1 * 1.15);
        let ctx = builder.build_cartesian_2d(x_range.clone(), (lo..hi).log_scale()).map_err(|e| err(&e))?;
        let legend = legend_corner(chart, (x_range.start, x_range.end), (lo.ln(), hi.ln()), f64::ln);
        draw(ctx, chart, &x_range, legend).map_err(|e| err(&e))?;
    } else {
        let pad = ((y1 - y0) * 0.08).max(0.02);
        let (lo, hi) = ((y0 - pad).max(0.0), y1 + pad);
        let ctx = builder.build_cartesian_2d(x_range.clone(), lo..hi).map_err(|e| err(&e))?;
        let legend = legend_corner(chart, (x_range.start, x_range.end), (lo, hi), |y| y);
        draw(ctx, chart, &x_range, legend).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The mesh, the reference line, the series and the legend, on either
/// kind of y axis.
fn draw<'a, Y>(
    mut ctx: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
    chart: &Chart,
    x_range: &std::ops::Range<f64>,
    legend: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    // Counts (processors per node, say) read as counts: "4", not "4.0".
    let counts = chart.series.iter().flat_map(|s| &s.points).all(|&(x, _)| x.fract() == 0.0);
    let count_label = |x: &f64| if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x}") };
    let mut mesh = ctx.configure_mesh();
    mesh.x_desc(chart.x_label).y_desc(chart.y_label).light_line_style(WHITE.mix(0.0));
    if counts {
        mesh.x_label_formatter(&count_label);
    }
    mesh.draw()?;
    if let Some(r) = chart.reference_y {
        let dashed = DashedLineSeries::new(vec![(x_range.start, r), (x_range.end, r)], 6, 4, BLACK.mix(0.5).into());
        ctx.draw_series(dashed)?;
    }
    for (i, s) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        ctx.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    ctx.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK.mix(0.3)).position(legend).draw()
}

/// The corner of the plot whose legend box would cover the least of the
/// data (the points and the lines between them), so the legend hides no
/// curve when some corner is free; the upper right when several are.
/// `scale` maps a value to the axis's linear position (ln for a log axis).
fn legend_corner(
    chart: &Chart,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    scale: impl Fn(f64) -> f64,
) -> SeriesLabelPosition {
    // The legend's size with its offset from the corner, as a share of the
    // plotting area (about 7 pixels a character and 15 a line, in a plot
    // about 730 x 420 pixels, and a point's marker around each point).
    let longest = chart.series.iter().map(|s| s.name.chars().count()).max().unwrap_or(0);
    let w = ((50.0 + 7.0 * longest as f64) / 730.0).min(1.0);
    let h = ((30.0 + 15.0 * chart.series.len() as f64) / 420.0).min(1.0);
    let normalized = |(x, y): (f64, f64)| ((x - x0) / (x1 - x0), (scale(y) - y0) / (y1 - y0));
    // Samples along every segment, so a line crossing a corner counts.
    let samples: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| {
            s.points.windows(2).flat_map(|pair| {
                let (a, b) = (normalized(pair[0]), normalized(pair[1]));
                (0..=8).map(move |i| {
                    let f = i as f64 / 8.0;
                    (a.0 + (b.0 - a.0) * f, a.1 + (b.1 - a.1) * f)
                })
            })
        })
        .chain(chart.series.iter().flat_map(|s| s.points.iter().map(|&p| normalized(p))))
        .collect();
    let covered = |right: bool, upper: bool| {
        let in_x = |x: f64| if right { x >= 1.0 - w } else { x <= w };
        let in_y = |y: f64| if upper { y >= 1.0 - h } else { y <= h };
        samples.iter().filter(|&&(x, y)| in_x(x) && in_y(y)).count()
    };
    let corners = [
        (SeriesLabelPosition::UpperRight, covered(true, true)),
        (SeriesLabelPosition::UpperLeft, covered(false, true)),
        (SeriesLabelPosition::LowerRight, covered(true, false)),
        (SeriesLabelPosition::LowerLeft, covered(false, false)),
    ];
    // The first of the least covered (min_by_key keeps the first of equals).
    corners.into_iter().min_by_key(|&(_, n)| n).map(|(pos, _)| pos).unwrap_or(SeriesLabelPosition::UpperRight)
}

/// A horizontal bar chart: one row of bars per category, one bar per
/// group in each (the libraries beside each other), for values a reader
/// compares within a row.
pub struct BarChart<'a> {
    pub title: &'a str,
    pub value_label: &'a str,
    pub categories: Vec<String>,
    /// Each group's name and its value in every category (None: not
    /// measured).
    pub groups: Vec<(String, Vec<Option<f64>>)>,
    /// A dashed reference value (for example 1: "same as the baseline").
    pub reference: Option<f64>,
}

impl Figure {
    /// Draws `chart` as bars into `out/figures/<name>`.
    pub fn draw_bars(out: &Path, name: &str, chart: &BarChart, caption: impl Into<String>) -> Result<Figure> {
        let file = format!("figures/{name}");
        bar_chart(&out.join(&file), chart)?;
        Ok(Figure { file, caption: caption.into() })
    }
}

pub fn bar_chart(path: &Path, chart: &BarChart) -> Result<()> {
    let values = chart.groups.iter().flat_map(|(_, v)| v.iter().flatten().copied());
    let top = values.chain(chart.reference).fold(f64::MIN, f64::max);
    if top <= 0.0 || chart.categories.is_empty() {
        return Err(anyhow!("figure {}: no data", path.display()));
    }
    let rows = chart.categories.len();
    let height = 120 + 34 * rows as u32 * chart.groups.len().max(1) as u32 / 2 + 20 * rows as u32;
    let root = SVGBackend::new(path, (820, height.max(320))).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("figure {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let y_range = 0.0..rows as f64;
    let labels = chart.categories.clone();
    let mut ctx = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(120)
        .build_cartesian_2d(0.0..top * 1.12, y_range)
        .map_err(|e| err(&e))?;
    // Category i's bars fill (i + 0.1, i + 0.9); its label sits at i + 0.5.
    let label = move |y: &f64| {
        let i = y.floor() as usize;
        if (y - y.floor() - 0.5).abs() < 1e-9 {
            labels.get(rows - 1 - i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    ctx.configure_mesh()
        .x_desc(chart.value_label)
        .y_labels(rows * 2 + 1)
        .y_label_formatter(&label)
        .disable_y_mesh()
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| err(&e))?;
    let n = chart.groups.len().max(1) as f64;
    let band = 0.8 / n;
    for (g, (name, vals)) in chart.groups.iter().enumerate() {
        let color = COLORS[g % COLORS.len()];
        let bars = vals.iter().enumerate().filter_map(|(i, v)| {
            let v = (*v)?;
            // The first category at the top.
            let y0 = (rows - 1 - i) as f64 + 0.1 + band * (n - 1.0 - g as f64);
            Some(Rectangle::new([(0.0, y0), (v, y0 + band * 0.9)], color.filled()))
        });
        ctx.draw_series(bars)
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    if let Some(r) = chart.reference {
        let dashed = DashedLineSeries::new(vec![(r, 0.0), (r, rows as f64)], 6, 4, BLACK.mix(0.5).into());
        ctx.draw_series(dashed).map_err(|e| err(&e))?;
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>) -> Chart<'static> {
        Chart {
            title: "t",
            x_label: "x",
            y_label: "y",
            series: vec![Series { name: "a series".into(), points }],
            reference_y: None,
            log_y: false,
        }
    }

    #[test]
    fn the_legend_avoids_the_data() {
        // A curve rising to the upper right: the legend goes upper left.
        let rising = chart(vec![(0.0, 0.0), (0.5, 0.2), (1.0, 1.0)]);
        assert!(matches!(legend_corner(&rising, (0.0, 1.0), (0.0, 1.0), |y| y), SeriesLabelPosition::UpperLeft));
        // A flat curve along the top: a lower corner.
        let top = chart(vec![(0.0, 1.0), (1.0, 1.0)]);
        assert!(matches!(legend_corner(&top, (0.0, 1.0), (0.0, 1.0), |y| y), SeriesLabelPosition::LowerRight));
        // Nothing in the upper right: it stays there.
        let falling = chart(vec![(0.0, 1.0), (1.0, 0.0)]);
        assert!(matches!(legend_corner(&falling, (0.0, 1.0), (0.0, 1.0), |y| y), SeriesLabelPosition::UpperRight));
    }
}
