//! The study's finished runs, in microseconds and MB/s, and their rows of
//! `results.csv`.

use super::labels::{Part, RunLabels};
use crate::record::RunRecord;
use crate::study::{Measured as Typed, StudyRun};
use anyhow::{bail, Result};
use finegrain_apps::splitc::primitives::Primitive;
use finegrain_apps::splitc::spec::ProgramMeasures;
use std::collections::BTreeMap;

/// What a finished run measured, in the units the paper reports.
#[derive(Clone, Debug, PartialEq)]
pub enum Measured {
    /// Table 1: the mean null round trip and the bare DMA flag's one-way
    /// time, in us.
    PingPong {
        round_trip_us: f64,
        dma_one_way_us: f64,
    },
    /// Figure 3: one operation's latency in us (a store's is half its
    /// ping-pong's round trip); bulk puts' bandwidth in MB/s.
    Latency {
        us: f64,
    },
    Bandwidth {
        mb_per_s: f64,
    },
    /// Table 2: the program's run time, its phases on the slowest node,
    /// and (wator) its remote reads' mean wait, in us: per blocking read,
    /// the time from issuing it to having the data, on the requesting node
    /// (the paper's 25-33 against 600-800 us, Section 5.3).
    Program {
        time_us: f64,
        phases_us: BTreeMap<String, f64>,
        read_wait_us: Option<f64>,
    },
    /// A primitive's record that timed no operation (reported, not
    /// judged).
    Unreadable(String),
}

/// A finished run as the study views it.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    /// A Split-C run's measures as recorded (none for a ping-pong).
    pub measures: Option<ProgramMeasures>,
    pub measured: Measured,
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }
}

impl StudyRun<RunLabels> for Run {
    const CSV_HEADER: &'static str = CSV_HEADER;

    fn of(run: Typed<RunLabels>) -> Result<Run> {
        let measured = measure(&run.record, run.measures.as_ref())?;
        Ok(Run { record: run.record, measures: run.measures, measured })
    }

    fn record(&self) -> &RunRecord<RunLabels> {
        &self.record
    }

    fn csv_row(&self) -> String {
        csv_row(self)
    }
}

fn measure(record: &RunRecord<RunLabels>, measures: Option<&ProgramMeasures>) -> Result<Measured> {
    let m = &record.config.machine;
    let us = |cycles: f64| m.cycles_to_us(cycles);
    let split_c = || match measures {
        Some(pm) => Ok(pm),
        None => bail!("run {}: its record has no measures, which every Split-C run has", record.id),
    };
    Ok(match &record.labels.part {
        Part::PingPong { dma_one_way_cycles, .. } => Measured::PingPong {
            round_trip_us: us(record.stats.request_latency.mean_cycles),
            dma_one_way_us: us(*dma_one_way_cycles),
        },
        Part::Primitive { primitive, words } => {
            let Some(per_op) = split_c()?.per_event("op", "ops") else {
                return Ok(Measured::Unreadable("no timed operations".into()));
            };
            let per_op_us = us(per_op);
            match primitive {
                Primitive::BulkPut => Measured::Bandwidth { mb_per_s: (*words * 8) as f64 / per_op_us },
                p if p.ping_pong() => Measured::Latency { us: per_op_us / 2.0 },
                _ => Measured::Latency { us: per_op_us },
            }
        }
        Part::Program { .. } => {
            let pm = split_c()?;
            Measured::Program {
                time_us: us(pm.time as f64),
                phases_us: pm.phase_max.iter().map(|(k, &v)| (k.clone(), us(v as f64))).collect(),
                read_wait_us: pm.per_event("read-wait", "reads").map(us),
            }
        }
    })
}

const CSV_HEADER: &str =
    "part,subject,library,replicate,seed,value,unit,dma_one_way_us,read_wait_us,sim_cycles,events,wall_seconds,record";

fn csv_row(run: &Run) -> String {
    let l = run.l();
    let (part, value, unit, dma, wait) = match &run.measured {
        Measured::PingPong { round_trip_us, dma_one_way_us } => {
            ("ping-pong", *round_trip_us, "us round trip", format!("{dma_one_way_us:.3}"), String::new())
        }
        Measured::Latency { us } => ("primitive", *us, "us", String::new(), String::new()),
        Measured::Bandwidth { mb_per_s } => ("primitive", *mb_per_s, "MB/s", String::new(), String::new()),
        Measured::Program { time_us, read_wait_us, .. } => {
            ("program", *time_us, "us", String::new(), read_wait_us.map(|w| format!("{w:.3}")).unwrap_or_default())
        }
        Measured::Unreadable(_) => ("unreadable", f64::NAN, "", String::new(), String::new()),
    };
    let st = &run.record.stats;
    format!(
        "{part},{},{},{},{},{value:.3},{unit},{dma},{wait},{},{},{:.3},runs/{}.json",
        l.subject(),
        l.library.label(),
        l.replicate,
        l.seed,
        st.sim_cycles,
        st.events,
        run.record.wall.wall_seconds,
        run.record.id
    )
}
