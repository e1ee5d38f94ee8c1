//! SVG line and bar charts (plotters), in the spirit of the papers'
//! figures, with the papers' own values drawn beside the measured ones
//! and the legend in a panel of its own to the right of the data.

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

/// A figure a study drew: its file (relative to the output directory) and
/// its caption: what it shows and what to look for.
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

/// A band a paper's statement allows (a claim's band around a stated
/// value), over a stretch of the x axis.
pub struct PaperBand {
    pub name: String,
    pub x: (f64, f64),
    pub y: (f64, f64),
    /// The measured series (its index) the band bounds: the box's outline
    /// takes its colour, so bands side by side tell which is whose.
    pub series: Option<usize>,
}

/// What a paper states on a line chart: values as black crosses, bands
/// as grey rectangles; each named in the legend after "paper:".
#[derive(Default)]
pub struct Paper {
    pub points: Vec<Series>,
    pub bands: Vec<PaperBand>,
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
    pub paper: Paper,
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

/// The paper's marks: black, unlike every measured colour.
const PAPER_INK: RGBColor = BLACK;

/// A paper band's fill: light enough that bars and lines show through.
fn band_fill() -> RGBAColor {
    BLACK.mix(0.14)
}

/// How one legend entry is drawn.
#[derive(Clone, Copy)]
enum Swatch {
    Line(RGBColor),
    Bar(RGBColor),
    PaperValue,
    PaperBand(RGBColor),
}

/// The plot's size; the legend panel is added to the right of it.
const PLOT: (u32, u32) = (820, 520);
const LEGEND_FONT: u32 = 13;
const LEGEND_ROW: i32 = 18;

/// The legend panel's width for these labels (about 7 pixels a
/// character, the swatch and margins).
fn legend_width(labels: &[String]) -> u32 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32;
    (48 + 7 * longest).clamp(120, 420)
}

/// The image's width and the x pixel where the legend panel starts:
/// everything left of it is the chart (axes, labels, data), everything
/// right of it the legend, so no legend can cover data.
fn layout(plot_width: u32, labels: &[String]) -> (u32, u32) {
    (plot_width + legend_width(labels), plot_width)
}

fn paper_label(name: &str) -> String {
    format!("paper: {name}")
}

/// Every legend entry of a line chart, measured series first.
fn line_legend(chart: &Chart) -> Vec<(String, Swatch)> {
    let mut entries: Vec<(String, Swatch)> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), Swatch::Line(COLORS[i % COLORS.len()])))
        .collect();
    entries.extend(chart.paper.points.iter().map(|s| (paper_label(&s.name), Swatch::PaperValue)));
    entries.extend(chart.paper.bands.iter().map(|b| (paper_label(&b.name), Swatch::PaperBand(outline(b)))));
    entries
}

/// Draws the legend panel: one row per entry, from the plot's top.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, Swatch)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let top = 44;
    let bottom = top + 10 + LEGEND_ROW * entries.len() as i32;
    area.draw(&Rectangle::new([(4, top - 10), (w as i32 - 6, bottom)], BLACK.mix(0.3)))?;
    for (i, (label, swatch)) in entries.iter().enumerate() {
        let y = top + 4 + LEGEND_ROW * i as i32;
        match *swatch {
            Swatch::Line(c) => {
                area.draw(&PathElement::new(vec![(12, y), (32, y)], c.stroke_width(2)))?;
                area.draw(&Circle::new((22, y), 3, c.filled()))?;
            }
            Swatch::Bar(c) => area.draw(&Rectangle::new([(14, y - 5), (30, y + 5)], c.filled()))?,
            Swatch::PaperValue => area.draw(&paper_marker((22, y)))?,
            Swatch::PaperBand(c) => {
                area.draw(&Rectangle::new([(12, y - 6), (32, y + 6)], band_fill().filled()))?;
                area.draw(&Rectangle::new([(12, y - 6), (32, y + 6)], c.stroke_width(2)))?;
            }
        }
        area.draw(&Text::new(label.clone(), (40, y - 7), ("sans-serif", LEGEND_FONT)))?;
    }
    Ok(())
}

/// The paper's value: a black cross, unlike the filled circles and bars
/// of the measures.
fn paper_marker<C>(at: C) -> Cross<C, i32> {
    Cross::new(at, 6, PAPER_INK.stroke_width(3))
}

/// A band's outline: its series' colour, or the paper's ink.
fn outline(b: &PaperBand) -> RGBColor {
    b.series.map_or(PAPER_INK, |i| COLORS[i % COLORS.len()])
}

/// The y values a line chart must show: measures, the paper's values and
/// bands, the reference line.
fn y_values<'c>(chart: &'c Chart<'_>) -> impl Iterator<Item = f64> + 'c {
    let points = chart.series.iter().chain(&chart.paper.points).flat_map(|s| s.points.iter().map(|p| p.1));
    let bands = chart.paper.bands.iter().flat_map(|b| [b.y.0, b.y.1]);
    points.chain(bands).chain(chart.reference_y)
}

pub fn line_chart(path: &Path, chart: &Chart) -> Result<()> {
    let xs = chart.series.iter().chain(&chart.paper.points).flat_map(|s| s.points.iter().map(|p| p.0));
    let xs = xs.chain(chart.paper.bands.iter().flat_map(|b| [b.x.0, b.x.1]));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (y0, y1) = y_values(chart).fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if x0 > x1 || chart.series.iter().all(|s| s.points.is_empty()) {
        return Err(anyhow!("figure {}: no data", path.display()));
    }
    // One x (a single seed, say): half a unit each side, not a sliver.
    let xpad = if x1 > x0 { (x1 - x0) * 0.03 } else { 0.5 };
    let x_range = (x0 - xpad)..(x1 + xpad);
    let legend = line_legend(chart);
    let labels: Vec<String> = legend.iter().map(|(l, _)| l.clone()).collect();
    let (width, split) = layout(PLOT.0, &labels);
    let root = SVGBackend::new(path, (width, PLOT.1)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("figure {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (plot, panel) = root.split_horizontally(split);
    let mut builder = ChartBuilder::on(&plot);
    builder.caption(chart.title, ("sans-serif", 20)).margin(12).x_label_area_size(44).y_label_area_size(60);
    if chart.log_y && y0 > 0.0 {
        // Ratios spanning orders of magnitude: equal factors, equal steps.
        let (lo, hi) = (y0 / 1.15, y1 * 1.15);
        let ctx = builder.build_cartesian_2d(x_range.clone(), (lo..hi).log_scale()).map_err(|e| err(&e))?;
        draw(ctx, chart, &x_range).map_err(|e| err(&e))?;
    } else {
        let pad = ((y1 - y0) * 0.08).max(0.02);
        let (lo, hi) = ((y0 - pad).max(0.0), y1 + pad);
        let ctx = builder.build_cartesian_2d(x_range.clone(), lo..hi).map_err(|e| err(&e))?;
        draw(ctx, chart, &x_range).map_err(|e| err(&e))?;
    }
    draw_legend(&panel, &legend).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The mesh, the paper's bands, the reference line, the series and the
/// paper's values, on either kind of y axis.
fn draw<'a, Y>(
    mut ctx: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
    chart: &Chart,
    x_range: &std::ops::Range<f64>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let counts = chart.series.iter().flat_map(|s| &s.points).all(|&(x, _)| x.fract() == 0.0);
    // Counts (processors per node, say) read as counts: "4", not "4.0",
    // and no tick between two counts.
    let count_label = |x: &f64| if x.fract() == 0.0 { format!("{x:.0}") } else { String::new() };
    let mut mesh = ctx.configure_mesh();
    mesh.x_desc(chart.x_label).y_desc(chart.y_label).light_line_style(WHITE.mix(0.0));
    if counts {
        mesh.x_label_formatter(&count_label);
    }
    mesh.draw()?;
    for b in &chart.paper.bands {
        let corners = [(b.x.0, b.y.0), (b.x.1, b.y.1)];
        ctx.draw_series([Rectangle::new(corners, band_fill().filled())])?;
        ctx.draw_series([Rectangle::new(corners, outline(b).stroke_width(2))])?;
    }
    if let Some(r) = chart.reference_y {
        let dashed = DashedLineSeries::new(vec![(x_range.start, r), (x_range.end, r)], 6, 4, BLACK.mix(0.5).into());
        ctx.draw_series(dashed)?;
    }
    for (i, s) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        ctx.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?;
        ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    for s in &chart.paper.points {
        ctx.draw_series(s.points.iter().map(|&p| paper_marker(p)))?;
    }
    Ok(())
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
    /// What the paper states for single bars.
    pub paper: Vec<BarMark>,
}

/// The paper's word on one bar (category, group): the value it states
/// and the band a claim allows around it, either or both.
#[derive(Clone, Debug, PartialEq)]
pub struct BarMark {
    pub category: usize,
    pub group: usize,
    pub value: Option<f64>,
    /// An open upper end (a claim's "at least") is drawn to the axis's end.
    pub band: Option<(f64, f64)>,
}

impl Figure {
    /// Draws `chart` as bars into `out/figures/<name>`.
    pub fn draw_bars(out: &Path, name: &str, chart: &BarChart, caption: impl Into<String>) -> Result<Figure> {
        let file = format!("figures/{name}");
        bar_chart(&out.join(&file), chart)?;
        Ok(Figure { file, caption: caption.into() })
    }
}

/// Every legend entry of a bar chart: the groups, then the paper's kinds
/// of mark that the chart draws.
fn bar_legend(chart: &BarChart) -> Vec<(String, Swatch)> {
    let mut entries: Vec<(String, Swatch)> =
        chart.groups.iter().enumerate().map(|(g, (n, _))| (n.clone(), Swatch::Bar(COLORS[g % COLORS.len()]))).collect();
    if chart.paper.iter().any(|m| m.value.is_some()) {
        entries.push((paper_label("stated value"), Swatch::PaperValue));
    }
    if chart.paper.iter().any(|m| m.band.is_some()) {
        entries.push((paper_label("band the claim allows"), Swatch::PaperBand(PAPER_INK)));
    }
    entries
}

pub fn bar_chart(path: &Path, chart: &BarChart) -> Result<()> {
    let values = chart.groups.iter().flat_map(|(_, v)| v.iter().flatten().copied());
    let marks = chart.paper.iter().flat_map(|m| m.value.into_iter().chain(m.band.into_iter().flat_map(|b| [b.0, b.1])));
    let top = values.chain(chart.reference).chain(marks.filter(|v| v.is_finite())).fold(f64::MIN, f64::max);
    if top <= 0.0 || chart.categories.is_empty() {
        return Err(anyhow!("figure {}: no data", path.display()));
    }
    let rows = chart.categories.len();
    let height = 120 + 34 * rows as u32 * chart.groups.len().max(1) as u32 / 2 + 20 * rows as u32;
    let legend = bar_legend(chart);
    let labels: Vec<String> = legend.iter().map(|(l, _)| l.clone()).collect();
    let (width, split) = layout(PLOT.0, &labels);
    let root = SVGBackend::new(path, (width, height.max(320))).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("figure {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (plot, panel) = root.split_horizontally(split);
    let x_end = top * 1.12;
    let y_range = 0.0..rows as f64;
    let labels = chart.categories.clone();
    let mut ctx = ChartBuilder::on(&plot)
        .caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(120)
        .build_cartesian_2d(0.0..x_end, y_range)
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
    // The bottom of group g's bar in category i (the first category at
    // the top, the first group at the top of its row).
    let slot = |i: usize, g: usize| (rows - 1 - i) as f64 + 0.1 + band * (n - 1.0 - g as f64);
    for (g, (_, vals)) in chart.groups.iter().enumerate() {
        let color = COLORS[g % COLORS.len()];
        let bars = vals.iter().enumerate().filter_map(|(i, v)| {
            let y0 = slot(i, g);
            Some(Rectangle::new([(0.0, y0), ((*v)?, y0 + band * 0.9)], color.filled()))
        });
        ctx.draw_series(bars).map_err(|e| err(&e))?;
    }
    if let Some(r) = chart.reference {
        let dashed = DashedLineSeries::new(vec![(r, 0.0), (r, rows as f64)], 6, 4, BLACK.mix(0.5).into());
        ctx.draw_series(dashed).map_err(|e| err(&e))?;
    }
    for m in chart.paper.iter().filter(|m| m.category < rows && m.group < chart.groups.len()) {
        let y0 = slot(m.category, m.group);
        if let Some((lo, hi)) = m.band {
            let corners = [(lo.max(0.0), y0 - band * 0.05), (hi.min(x_end), y0 + band * 0.95)];
            ctx.draw_series([Rectangle::new(corners, band_fill().filled())]).map_err(|e| err(&e))?;
            ctx.draw_series([Rectangle::new(corners, PAPER_INK.stroke_width(1))]).map_err(|e| err(&e))?;
        }
        if let Some(v) = m.value {
            ctx.draw_series([paper_marker((v, y0 + band * 0.45))]).map_err(|e| err(&e))?;
        }
    }
    draw_legend(&panel, &legend).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>, paper: Paper) -> Chart<'static> {
        Chart {
            title: "t",
            x_label: "x",
            y_label: "y",
            series: vec![Series { name: "a series".into(), points }],
            reference_y: None,
            log_y: false,
            paper,
        }
    }

    #[test]
    fn the_legend_panel_lies_right_of_the_plot_and_inside_the_image() {
        for longest in [0, 10, 40, 200] {
            let labels = vec!["x".repeat(longest)];
            let (width, split) = layout(PLOT.0, &labels);
            assert_eq!(split, PLOT.0, "the plot keeps its whole width");
            assert!(width > split, "a legend panel of {} pixels", width - split);
            assert!(width - split >= legend_width(&labels));
        }
    }

    #[test]
    fn the_legend_names_the_papers_marks_after_the_measures() {
        let paper = Paper {
            points: vec![Series { name: "Figure 3".into(), points: vec![(1.0, 2.0)] }],
            bands: vec![PaperBand { name: "claim 4".into(), x: (0.5, 1.5), y: (1.0, 3.0), series: None }],
        };
        let names: Vec<String> = line_legend(&chart(vec![(0.0, 1.0)], paper)).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a series", "paper: Figure 3", "paper: claim 4"]);
    }

    /// Every text of an SVG with its x position.
    fn texts(svg: &str) -> Vec<(f64, String)> {
        svg.split("<text ")
            .skip(1)
            .filter_map(|t| {
                let x = t.split("x=\"").nth(1)?.split('"').next()?.parse().ok()?;
                let body = t.split_once('>')?.1.split("</text>").next()?.trim().to_string();
                Some((x, body))
            })
            .collect()
    }

    #[test]
    fn a_drawn_chart_shows_the_paper_and_its_legend_right_of_the_data() {
        let dir = std::env::temp_dir().join(format!("finegrain-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paper = Paper {
            points: vec![Series { name: "stated".into(), points: vec![(1.0, 9.0)] }],
            bands: vec![PaperBand { name: "band".into(), x: (0.5, 1.5), y: (7.0, 11.0), series: Some(0) }],
        };
        let path = dir.join("line.svg");
        line_chart(&path, &chart(vec![(0.0, 1.0), (1.0, 2.0)], paper)).unwrap();
        let t = texts(&std::fs::read_to_string(&path).unwrap());
        for label in ["a series", "paper: stated", "paper: band"] {
            let (x, _) = t.iter().find(|(_, body)| body == label).unwrap_or_else(|| panic!("{label} in {t:?}"));
            assert!(*x > PLOT.0 as f64, "{label} at x = {x}, inside the plot (0-{})", PLOT.0);
        }
        // The y axis reaches the band's top (11), not only the measures' 2.
        let top = t.iter().filter(|(x, _)| *x < PLOT.0 as f64).filter_map(|(_, b)| b.parse::<f64>().ok());
        assert!(top.fold(0.0, f64::max) >= 10.0, "axis labels: {t:?}");
        let bars = BarChart {
            title: "b",
            value_label: "v",
            categories: vec!["a".into()],
            groups: vec![("g".into(), vec![Some(1.0)])],
            reference: None,
            paper: vec![BarMark { category: 0, group: 0, value: Some(3.0), band: Some((2.0, f64::INFINITY)) }],
        };
        let path = dir.join("bars.svg");
        bar_chart(&path, &bars).unwrap();
        let t = texts(&std::fs::read_to_string(&path).unwrap());
        for label in ["g", "paper: stated value", "paper: band the claim allows"] {
            let (x, _) = t.iter().find(|(_, body)| body == label).unwrap_or_else(|| panic!("{label} in {t:?}"));
            assert!(*x > PLOT.0 as f64, "{label} at x = {x}, inside the plot (0-{})", PLOT.0);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
