//! The study's finished runs, their round trips in us, and their rows of
//! `results.csv`.

use super::labels::RunLabels;
use crate::record::RunRecord;

/// A finished run as the study views it: its record, its mean null round
/// trip and the machine's bare DMA flag one-way time, in us.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub round_trip_us: f64,
    pub dma_one_way_us: f64,
}

impl Run {
    pub fn of(record: RunRecord<RunLabels>) -> Run {
        let m = &record.config.machine;
        let round_trip_us = m.cycles_to_us(record.stats.request_latency.mean_cycles);
        let dma_one_way_us = m.cycles_to_us(record.labels.dma_one_way_cycles);
        Run { record, round_trip_us, dma_one_way_us }
    }

    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }
}

pub(super) const CSV_HEADER: &str = "library,replicate,seed,round_trips,round_trip_cycles,round_trip_us,one_way_us,\
dma_rounds,dma_one_way_cycles,dma_one_way_us,requests,sim_cycles,events,wall_seconds,record";

pub(super) fn csv_row(run: &Run) -> String {
    let (l, st) = (run.l(), &run.record.stats);
    format!(
        "{},{},{},{},{:.1},{:.3},{:.3},{},{:.1},{:.3},{},{},{},{:.3},runs/{}.json",
        l.library.label(),
        l.replicate,
        l.seed,
        l.round_trips,
        st.request_latency.mean_cycles,
        run.round_trip_us,
        run.round_trip_us / 2.0,
        l.dma_rounds,
        l.dma_one_way_cycles,
        run.dma_one_way_us,
        st.requests,
        st.sim_cycles,
        st.events,
        run.record.wall.wall_seconds,
        run.record.id
    )
}
