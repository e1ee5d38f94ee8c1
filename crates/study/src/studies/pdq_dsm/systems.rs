//! The study's vocabulary: the paper's classes of applications, its
//! systems by label and the machine shapes it ran (Section 5), which the
//! claims, the paper's stated values and the report all name.

/// The applications by the paper's three classes (Section 5.2).
pub const COMPUTE_BOUND: [&str; 1] = ["water-sp"];
pub const LATENCY_BOUND: [&str; 2] = ["barnes", "fmm"];
pub const BANDWIDTH_BOUND: [&str; 4] = ["cholesky", "em3d", "fft", "radix"];
/// The bandwidth-bound applications whose communication is bursty
/// producer/consumer traffic (Section 5.2 treats them apart from cholesky).
pub const BURSTY: [&str; 3] = ["em3d", "fft", "radix"];

/// Systems by label, as the study names them.
pub const SCOMA: &str = "s-coma";
pub const MULT: &str = "mult";

pub fn hurricane(pps: u32) -> String {
    format!("hurricane-{pps}pp")
}

pub fn hurricane1(pps: u32) -> String {
    format!("hurricane1-{pps}pp")
}

/// The software systems (every one but S-COMA).
pub fn software_systems() -> Vec<String> {
    let mut v: Vec<String> = [1, 2, 4].iter().map(|&p| hurricane(p)).collect();
    v.extend([1, 2, 4].iter().map(|&p| hurricane1(p)));
    v.push(MULT.into());
    v
}

/// A machine the applications ran on: nodes x compute processors per
/// node, and the protocol's block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape {
    pub nodes: u32,
    pub procs: u32,
    pub block: u32,
}

impl Shape {
    pub const BASE: Shape = Shape { nodes: 8, procs: 8, block: 64 };
    pub const THIN: Shape = Shape { nodes: 16, procs: 4, block: 64 };
    pub const FAT: Shape = Shape { nodes: 4, procs: 16, block: 64 };
    pub const SMALL_BLOCKS: Shape = Shape { nodes: 8, procs: 8, block: 32 };
    pub const LARGE_BLOCKS: Shape = Shape { nodes: 8, procs: 8, block: 128 };

    pub fn label(&self) -> String {
        format!("{}x{} {}B", self.nodes, self.procs, self.block)
    }
}
