//! What every platform says about a run, in one type: the simulator fills
//! it from its model of the machine, the native runtime from its clocks
//! and counters. What a platform cannot measure is absent, never zero, so
//! a reader (a study's report, the command line) can say so.

use serde::Serialize;
use std::fmt;

/// The clock a run's times are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// Simulated processor cycles at the machine's clock rate.
    Cycles { mhz: u32 },
    /// Wall-clock nanoseconds of real threads.
    Nanoseconds,
}

impl Clock {
    /// Microseconds of `time` on this clock.
    pub fn to_us(self, time: f64) -> f64 {
        match self {
            Clock::Cycles { mhz } => time / mhz.max(1) as f64,
            Clock::Nanoseconds => time / 1e3,
        }
    }

    /// The unit's name, for tables.
    pub fn unit(self) -> &'static str {
        match self {
            Clock::Cycles { .. } => "cycles",
            Clock::Nanoseconds => "ns",
        }
    }
}

/// One run's totals as every platform reports them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The platform that ran it (`sim`, `native`, `shm`, `mpi`).
    pub platform: &'static str,
    pub clock: Clock,
    /// The run's length: until the last thread finished.
    pub time: u64,
    /// Requests threads sent, each answered once.
    pub requests: u64,
    /// Active messages of every kind.
    pub messages: u64,
    pub handlers: u64,
    pub interrupts: u64,
    /// Mean over compute threads of their computing share of the run.
    pub measured_u: Option<f64>,
    /// Mean over nodes of the time spent in handlers as a share of the run
    /// (simulated only: natively a node's handler time is scattered over
    /// threads that also compute and wait).
    pub pp_occupancy: Option<f64>,
    /// Mean round trip of a request, on the run's clock (simulated only:
    /// the runtime does not time each request).
    pub mean_round_trip: Option<f64>,
    /// Simulated events (simulator only).
    pub events: Option<u64>,
    /// Messages that waited in an overflow queue (native rings only).
    pub spilled: Option<u64>,
}

impl RunSummary {
    /// The measures this run's platform could not take, by name.
    pub fn not_measured(&self) -> Vec<&'static str> {
        [
            ("measured U", self.measured_u.is_none()),
            ("PP occupancy", self.pp_occupancy.is_none()),
            ("mean round trip", self.mean_round_trip.is_none()),
            ("simulated events", self.events.is_none()),
            ("spilled messages", self.spilled.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, absent)| absent.then_some(name))
        .collect()
    }
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.clock.to_us(self.time as f64);
        writeln!(f, "run time          {us:.1} us ({} {}) on {}", self.time, self.clock.unit(), self.platform)?;
        write!(
            f,
            "messages          {}  requests {}  handlers {}  interrupts {}",
            self.messages, self.requests, self.handlers, self.interrupts
        )?;
        if let Some(u) = self.measured_u {
            write!(f, "\nmeasured U        {u:.3}")?;
        }
        if let Some(o) = self.pp_occupancy {
            write!(f, "\nPP occupancy      {o:.3}")?;
        }
        if let Some(rt) = self.mean_round_trip {
            write!(f, "\nmean round trip   {rt:.1} {}", self.clock.unit())?;
        }
        if let Some(s) = self.spilled {
            write!(f, "\nspilled           {s}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native() -> RunSummary {
        RunSummary {
            platform: "native",
            clock: Clock::Nanoseconds,
            time: 2_000,
            requests: 4,
            messages: 8,
            handlers: 8,
            interrupts: 0,
            measured_u: Some(0.5),
            pp_occupancy: None,
            mean_round_trip: None,
            events: None,
            spilled: Some(0),
        }
    }

    #[test]
    fn what_a_platform_cannot_measure_is_named_not_zero() {
        assert_eq!(native().not_measured(), ["PP occupancy", "mean round trip", "simulated events"]);
        let text = native().to_string();
        assert!(text.starts_with("run time          2.0 us (2000 ns) on native"), "{text}");
        assert!(!text.contains("PP occupancy"), "{text}");
    }

    #[test]
    fn cycles_turn_into_microseconds_at_the_clock_rate() {
        assert_eq!(Clock::Cycles { mhz: 200 }.to_us(400.0), 2.0);
        assert_eq!(Clock::Nanoseconds.to_us(4000.0), 4.0);
    }
}
