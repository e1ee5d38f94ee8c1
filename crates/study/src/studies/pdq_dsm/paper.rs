//! What Section 5.2 of the paper states about its Figures 7-11 that a
//! claim tests, with the band the claim allows around it: one place for
//! the claims' checks and the figures' marks. Performance is S-COMA's
//! time over the system's.

use super::systems::{hurricane, hurricane1, software_systems, Shape, LATENCY_BOUND, MULT};

/// A band a claim allows, and the value the paper states in it (None
/// where the paper gives only a bound or a word). An open end is
/// infinite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperBand {
    pub lo: f64,
    pub hi: f64,
    pub paper: Option<f64>,
}

const fn band(lo: f64, hi: f64, paper: Option<f64>) -> PaperBand {
    PaperBand { lo, hi, paper }
}

/// Above S-COMA ("outperforms"): strictly above 1.
pub const ABOVE_SCOMA: PaperBand = band(1.0 + f64::EPSILON, f64::INFINITY, None);

// Figure 7, 8x8 with 64-byte blocks.
/// S-COMA 32 points above 1-PP Hurricane on average (claim 1a).
pub const H1PP_MEAN: PaperBand = band(0.58, 0.78, Some(0.68));
/// 1-PP Hurricane within 90% of S-COMA on barnes and fmm (claim 1b).
pub const LATENCY_H1PP: PaperBand = band(0.88, f64::INFINITY, Some(0.90));
/// Every system within 91% of S-COMA on water-sp (claim 2a).
pub const WATER_SP: PaperBand = band(0.90, f64::INFINITY, Some(0.91));
/// One-PP Hurricane-1 about 60% of S-COMA on barnes and fmm (claim 2b).
pub const LATENCY_HURRICANE1_1PP: PaperBand = band(0.50, 0.70, Some(0.60));
/// More Hurricane-1 PPs at most 84% of S-COMA on barnes and fmm (claim
/// 2b; the claim tests the upper end only).
pub const LATENCY_HURRICANE1_MORE_PP: PaperBand = band(0.0, 0.86, Some(0.84));
/// Two-PP Hurricane 23% over S-COMA on cholesky (claim 2d).
pub const CHOLESKY_H2PP: PaperBand = band(1.05, 1.41, Some(1.23));
/// Four-PP Hurricane at most 32% over S-COMA on cholesky (claim 2d).
pub const CHOLESKY_H4PP: PaperBand = band(1.12, 1.52, Some(1.32));
/// Four-PP Hurricane 36% over S-COMA on fft (claim 2e).
pub const FFT_H4PP: PaperBand = band(1.16, 1.56, Some(1.36));
/// Four-PP Hurricane slightly worse than S-COMA on radix (claim 2e).
pub const RADIX_H4PP: PaperBand = band(0.85, 1.00, None);
/// Four-PP Hurricane 12% faster than S-COMA on average (claim 3).
pub const H4PP_MEAN: PaperBand = band(1.00, 1.29, Some(1.12));
/// Four-PP Hurricane-1 at 76% of S-COMA on average (claim 3).
pub const HURRICANE1_4PP_MEAN: PaperBand = band(0.65, 0.87, Some(0.76));
/// Mult at 74% of S-COMA on average (claim 3).
pub const MULT_MEAN: PaperBand = band(0.63, 0.85, Some(0.74));

// Figures 8 and 9, 16x4 and 4x16.
/// Four-PP Hurricane within 99% of S-COMA on water-sp at 4x16 (claim 4c).
pub const FAT_WATER_SP_H4PP: PaperBand = band(0.97, 1.00, Some(0.99));
/// Mult at 65% of S-COMA on average at 16x4 (claim 4d).
pub const THIN_MULT_MEAN: PaperBand = band(0.55, 0.75, Some(0.65));
/// Mult at 80% of S-COMA on average at 4x16 (claim 4d).
pub const FAT_MULT_MEAN: PaperBand = band(0.68, 0.92, Some(0.80));
/// Four-PP Hurricane 7% over S-COMA on average at 16x4 (claim 4f).
pub const THIN_H4PP_MEAN: PaperBand = band(1.00, 1.23, Some(1.07));
/// Four-PP Hurricane 13% over S-COMA on average at 4x16 (claim 4f).
pub const FAT_H4PP_MEAN: PaperBand = band(1.00, 1.30, Some(1.13));

// Figures 10 and 11, 8x8 with 128-byte blocks.
/// Two-PP Hurricane competitive with S-COMA on every application (claim
/// 5c; the 0.90 edge is finegrain's).
pub const LARGE_H2PP: PaperBand = band(0.90, f64::INFINITY, None);
/// Four-PP Hurricane 20% faster than S-COMA on average (claim 5d).
pub const LARGE_H4PP_MEAN: PaperBand = band(1.02, 1.38, Some(1.20));
/// Four-PP Hurricane-1 and Mult each about 88% of S-COMA on average
/// (claim 5e).
pub const LARGE_HURRICANE1_4PP_AND_MULT_MEAN: PaperBand = band(0.75, 1.01, Some(0.88));

/// Where a mark sits in a figure: one application's bar, or the mean
/// over the applications.
#[derive(Clone, Debug, PartialEq)]
pub enum Scope {
    App(String),
    Mean,
}

/// A mark on one bar of a shape's figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub scope: Scope,
    pub system: String,
    pub band: PaperBand,
}

fn on(apps: &[&str], systems: &[String], band: PaperBand) -> Vec<Mark> {
    let each = apps.iter().flat_map(|a| systems.iter().map(move |s| (a.to_string(), s.clone())));
    each.map(|(a, system)| Mark { scope: Scope::App(a), system, band }).collect()
}

fn mean(system: String, band: PaperBand) -> Mark {
    Mark { scope: Scope::Mean, system, band }
}

/// Every mark the claims put on the figure of `shape` (`apps`: the
/// applications it shows).
pub fn marks(shape: Shape, apps: &[String]) -> Vec<Mark> {
    let apps: Vec<&str> = apps.iter().map(String::as_str).collect();
    let (h, h1) = (|n| vec![hurricane(n)], |n| vec![hurricane1(n)]);
    let mut m = Vec::new();
    if shape == Shape::BASE {
        m.push(mean(hurricane(1), H1PP_MEAN));
        m.extend(on(&LATENCY_BOUND, &h(1), LATENCY_H1PP));
        m.extend(on(&["water-sp"], &software_systems(), WATER_SP));
        m.extend(on(&LATENCY_BOUND, &h1(1), LATENCY_HURRICANE1_1PP));
        m.extend(on(&LATENCY_BOUND, &[hurricane1(2), hurricane1(4)], LATENCY_HURRICANE1_MORE_PP));
        m.extend(on(&["cholesky"], &h(2), CHOLESKY_H2PP));
        m.extend(on(&["cholesky"], &h(4), CHOLESKY_H4PP));
        m.extend(on(&["cholesky"], &h1(4), ABOVE_SCOMA));
        m.extend(on(&["fft"], &h(4), FFT_H4PP));
        m.extend(on(&["radix"], &h(4), RADIX_H4PP));
        m.push(mean(hurricane(4), H4PP_MEAN));
        m.push(mean(hurricane1(4), HURRICANE1_4PP_MEAN));
        m.push(mean(MULT.into(), MULT_MEAN));
    } else if shape == Shape::THIN {
        m.push(mean(MULT.into(), THIN_MULT_MEAN));
        m.push(mean(hurricane(4), THIN_H4PP_MEAN));
    } else if shape == Shape::FAT {
        let others: Vec<&str> = apps.iter().copied().filter(|a| *a != "water-sp").collect();
        m.extend(on(&others, &h(4), ABOVE_SCOMA));
        m.extend(on(&["water-sp"], &h(4), FAT_WATER_SP_H4PP));
        m.push(mean(MULT.into(), FAT_MULT_MEAN));
        m.push(mean(hurricane(4), FAT_H4PP_MEAN));
    } else if shape == Shape::LARGE_BLOCKS {
        m.extend(on(&apps, &h(2), LARGE_H2PP));
        m.push(mean(hurricane(4), LARGE_H4PP_MEAN));
        m.push(mean(hurricane1(4), LARGE_HURRICANE1_4PP_AND_MULT_MEAN));
        m.push(mean(MULT.into(), LARGE_HURRICANE1_4PP_AND_MULT_MEAN));
    }
    // Only the applications the figure shows (a quick run may have fewer).
    m.retain(|k| match &k.scope {
        Scope::App(a) => apps.contains(&a.as_str()),
        Scope::Mean => true,
    });
    m
}
