//! What a study on the native runtime is made of, apart from running it
//! (`crate::native`): the runs a study plans for real threads, the claims
//! native runs cannot judge, and the record a native run leaves. The
//! study trait and the report name these; the runner uses them.

use crate::claim::ClaimSpec;
use crate::record::{signed, Planned};
use finegrain_apps::WorkloadSpec;
use finegrain_core::RunSummary;
use finegrain_rt::RtConfig;
use serde::Serialize;

/// The runs of a study that mean something on real threads, and why the
/// others (if any) are left out.
pub struct NativePlan<L> {
    pub runs: Vec<Planned<L>>,
    /// Why runs of the simulated plan are not run natively (None: every
    /// planned run is).
    pub left_out: Option<String>,
}

/// A claim the native runs cannot judge, and why (what it compares that
/// the runtime does not measure, or a setting of the simulated machine
/// real threads do not have).
pub struct NotJudged {
    pub spec: ClaimSpec,
    pub why: &'static str,
}

impl NotJudged {
    /// `claim N: not judged natively - why`, the line a report and
    /// `reproduce` print.
    pub fn line(&self) -> String {
        format!("{}: not judged natively - {}", self.spec.name(), self.why)
    }
}

/// The record a native run of a study leaves (`runs/<id>.json`): which
/// platform ran it, what it is (the study's labels, as its simulated
/// record would name it), the runtime configuration and workload it ran,
/// and what the runtime measured. Written with a digest of its content,
/// like every record.
#[derive(Clone, Debug)]
pub struct NativeRecord<L> {
    pub study: String,
    pub experiment: String,
    pub id: String,
    pub labels: L,
    pub runtime: RtConfig,
    /// The machine (preset) the workload sized itself from.
    pub machine: String,
    pub workload: WorkloadSpec,
    pub summary: RunSummary,
    /// The workload's own measures, where the runtime gives them.
    pub measures: Option<serde_json::Value>,
    /// This host's cores when the run ran.
    pub host_cores: usize,
    pub wall_seconds: f64,
}

impl<L> NativeRecord<L> {
    /// The run's threads: nodes x processors per node.
    pub fn threads(&self) -> u64 {
        let t = self.runtime.run.topology;
        t.nodes as u64 * t.procs_per_node as u64
    }
}

/// A native record's content as it is written, `platform` first so no
/// reader takes it for a simulated run's.
#[derive(Serialize)]
struct Content<'a, L> {
    platform: &'static str,
    study: &'a str,
    experiment: &'a str,
    id: &'a str,
    labels: &'a L,
    runtime: &'a RtConfig,
    machine: &'a str,
    workload: &'a WorkloadSpec,
    summary: &'a RunSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    measures: Option<&'a serde_json::Value>,
    host_cores: usize,
    wall_seconds: f64,
}

impl<L: Serialize> Serialize for NativeRecord<L> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let content = Content {
            platform: self.summary.platform,
            study: &self.study,
            experiment: &self.experiment,
            id: &self.id,
            labels: &self.labels,
            runtime: &self.runtime,
            machine: &self.machine,
            workload: &self.workload,
            summary: &self.summary,
            measures: self.measures.as_ref(),
            host_cores: self.host_cores,
            wall_seconds: self.wall_seconds,
        };
        signed(content, s)
    }
}
