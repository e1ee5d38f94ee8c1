//! SVG line charts (plotters), in the spirit of the papers' figures.

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

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
    let pad = ((y1 - y0) * 0.08).max(0.02);
    let (y0, y1) = ((y0 - pad).max(0.0), y1 + pad);
    let xpad = ((x1 - x0) * 0.03).max(0.01);
    let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("figure {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut ctx = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d((x0 - xpad)..(x1 + xpad), y0..y1)
        .map_err(|e| err(&e))?;
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| err(&e))?;
    if let Some(r) = chart.reference_y {
        let dashed = DashedLineSeries::new(vec![(x0 - xpad, r), (x1 + xpad, r)], 6, 4, BLACK.mix(0.5).into());
        ctx.draw_series(dashed).map_err(|e| err(&e))?;
    }
    for (i, s) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        ctx.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|e| err(&e))?;
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
