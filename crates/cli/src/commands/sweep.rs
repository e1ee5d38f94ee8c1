//! `finegrain sweep`: one workload over a grid of configuration fields.

use crate::args::SweepArgs;
use crate::say;
use anyhow::{bail, Result};
use finegrain_study::sweep::{Axis, Sweep};

pub fn sweep(args: SweepArgs) -> Result<()> {
    if args.set.is_empty() {
        bail!("missing --set: a sweep needs an axis, --set PATH=VALUES (repeat for more)");
    }
    let axes = args.set.iter().map(|s| Axis::parse(s)).collect::<Result<Vec<_>>>()?;
    let base = super::run::sweep_base(args.run)?;
    let sweep = Sweep { name: args.name, config: base.config, workload: base.workload, axes, seeds: args.seeds };
    let summary = sweep.run(&args.out)?;
    say!("{}", summary.trim_end());
    say!(
        "records: {}/runs, table: {}/results.csv, summary: {}/summary.md",
        args.out.display(),
        args.out.display(),
        args.out.display()
    );
    Ok(())
}
