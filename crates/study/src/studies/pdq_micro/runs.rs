//! The study's finished runs, with the home node's measures, and their
//! rows of `results.csv`.

use super::labels::RunLabels;
use crate::record::RunRecord;
use crate::study::{Measured, StudyRun};
use anyhow::Result;
use finegrain_apps::fetch_add::{self, HomeMeasures};

/// A finished run as the study views it: its record and the home node's
/// measures.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub home: HomeMeasures,
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }

    pub fn throughput(&self) -> f64 {
        self.home.throughput_msgs_per_us
    }

    /// Cycles the home's protocol processors spend per request, in handlers
    /// and spinning on key locks.
    pub fn pp_cycles_per_request(&self) -> f64 {
        let home = &self.record.stats.nodes[0];
        let spent: u64 = home.procs.iter().map(|p| p.cycles.handler + p.cycles.busy_wait).sum();
        spent as f64 / self.home.requests.max(1) as f64
    }

    /// Cycles the home's protocol processors spend per request in handlers
    /// alone (busy-wait left out): the handler's own work, lock accesses
    /// included.
    pub fn handler_cycles_per_request(&self) -> f64 {
        let handler: u64 = self.record.stats.nodes[0].procs.iter().map(|p| p.cycles.handler).sum();
        handler as f64 / self.home.requests.max(1) as f64
    }

    /// The busiest dedicated protocol processor's share of the home's
    /// handlers (1/k when k of them share the work evenly); `None` without
    /// dedicated protocol processors or handlers.
    pub fn busiest_protocol_share(&self) -> Option<f64> {
        let counts: Vec<u64> = self.record.stats.nodes[0]
            .procs
            .iter()
            .filter(|p| p.role == finegrain_sim::ProcRole::Protocol)
            .map(|p| p.handlers)
            .collect();
        let total: u64 = counts.iter().sum();
        let most = counts.iter().copied().max()?;
        (total > 0).then(|| most as f64 / total as f64)
    }

    /// Protocol state that moved cache to cache at the home, per request.
    pub fn migration_per_request(&self) -> f64 {
        let migration: u64 = self.record.stats.nodes[0].procs.iter().map(|p| p.misses.migration).sum();
        migration as f64 / self.home.requests.max(1) as f64
    }
}

impl StudyRun<RunLabels> for Run {
    const CSV_HEADER: &'static str = CSV_HEADER;

    /// The home's measures from the statistics, with the function the
    /// record's own were made by.
    fn of(run: Measured<RunLabels>) -> Result<Run> {
        let record = run.record;
        Ok(Run { home: fetch_add::home_measures(&record.config.machine, &record.stats), record })
    }

    fn record(&self) -> &RunRecord<RunLabels> {
        &self.record
    }

    fn csv_row(&self) -> String {
        csv_row(self)
    }
}

const CSV_HEADER: &str = "discipline,pp_kind,protocol_procs,keys,skew,throughput_msgs_per_us,\
mean_queue_delay_cycles,p99_queue_delay_cycles,pp_busy_wait_fraction,seed,sweep,target_home_u,home_u,\
sequential_fraction,interrupts,interrupts_per_request,bus_transactions_per_request,mean_request_latency_cycles,\
requests,sim_cycles,events,wall_seconds,record,effect_off";

fn csv_row(run: &Run) -> String {
    let (r, h, st) = (run.l(), &run.home, &run.record.stats);
    let sweep = serde_json::to_value(r.sweep).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    format!(
        "{},{},{},{},{},{:.4},{:.1},{},{:.4},{},{},{},{:.4},{},{},{:.5},{:.3},{:.1},{},{},{},{:.3},runs/{}.json,{}",
        r.discipline.label(),
        r.kind.label(),
        r.protocol_procs,
        r.keys,
        r.skew,
        h.throughput_msgs_per_us,
        h.mean_queue_delay_cycles,
        h.p99_queue_delay_cycles,
        h.pp_busy_wait_fraction,
        r.seed,
        sweep,
        r.target_home_u,
        h.home_u,
        r.sequential_fraction,
        h.interrupts,
        h.interrupts as f64 / h.requests.max(1) as f64,
        h.bus_transactions_per_request,
        st.request_latency.mean_cycles,
        h.requests,
        st.sim_cycles,
        st.events,
        run.record.wall.wall_seconds,
        run.record.id,
        r.effect_off.map(|e| e.to_string()).unwrap_or_default()
    )
}
