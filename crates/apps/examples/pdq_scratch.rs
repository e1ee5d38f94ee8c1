use finegrain_apps::fetch_add::*;
use finegrain_core::*;
use finegrain_sim::SimConfig;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reqs: u64 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(150);
    let m = MachineConfig::load("hpca99").unwrap();
    let c = 8u32;
    for kind in ["embedded", "smp", "mult"] {
        for disc in [Discipline::Serial, Discipline::Pdq, Discipline::SpinLock, Discipline::Static] {
            for skew in [KeySkew::Uniform, KeySkew::Zipf { exponent: 1.0 }] {
                for keys in [1u64, 4, 64, 4096] {
                    let mut line = format!("{kind:8} {:9} {:10} K={keys:5}", disc.label(), skew.label());
                    for k in [1u32, 2, 4, 8] {
                        if disc == Discipline::Serial && k > 1 { continue; }
                        if kind == "mult" && disc == Discipline::Static { continue; }
                        let (policy, ppn, pp_kind, max) = match kind {
                            "embedded" => (Policy::Fixed { protocol_procs: k }, c + k, PpKind::Embedded, None),
                            "smp" => (Policy::Fixed { protocol_procs: k }, c + k, PpKind::Smp, None),
                            _ => (Policy::Floating, c, PpKind::Smp, if disc == Discipline::Serial { None } else { Some(k) }),
                        };
                        let mut sim = SimConfig::new(m.clone(), Topology { nodes: 5, procs_per_node: ppn }, policy, 1);
                        sim.dispatch = Dispatch { discipline: disc, pp_kind, max_servers: max };
                        let cfg = FetchAddConfig { keys, skew, handler_cycles: std::env::var("HC").map(|s| s.parse().unwrap()).unwrap_or(150), sequential_fraction: 0.0, requests_per_thread: reqs, home_u: 0.5, home_burst_cycles: 2000.0 };
                        let t0 = std::time::Instant::now();
                        match simulate(&sim, &cfg) {
                            Ok(out) => {
                                let h = home_measures(&m, &out);
                                line += &format!(" | k={k} {:6.2} d={:6.0} bw={:.2} irq={} ({:.1}s)", h.throughput_msgs_per_us, h.mean_queue_delay_cycles, h.pp_busy_wait_fraction, h.interrupts, t0.elapsed().as_secs_f64());
                            }
                            Err(e) => line += &format!(" | k={k} ERR {e}"),
                        }
                    }
                    println!("{line}");
                }
            }
        }
    }
}
