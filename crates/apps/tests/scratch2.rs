use finegrain_apps::micro::*;
use finegrain_core::*;
use finegrain_sim::SimConfig;

fn run(m: &MachineConfig, proto: Protocol, policy: Policy, ppn: u32, c: f64, oint: u64) -> finegrain_sim::RunStats {
    let mut m = m.clone();
    m.interrupt.overhead_cycles = oint;
    let sim = SimConfig { machine: m, topology: Topology { nodes: 2, procs_per_node: ppn }, policy, seed: 7 };
    let cfg = MicroConfig { protocol: proto, mean_compute_cycles: c, requests_per_node: 4000, single_requester: false };
    simulate(&sim, &cfg).unwrap().stats
}

#[test]
fn scratch2() {
    let m = MachineConfig::load("hpca97").unwrap();
    let u: f64 = std::env::var("U").map(|s| s.parse().unwrap()).unwrap_or(0.7);
    for proto in [Protocol::Fetch] {
        let l = measure_lmin(&m, proto, 1).unwrap();
        for (pol, ppn) in [(Policy::Fixed { protocol_procs: 1 }, 2), (Policy::Single, 1)] {
            let s = run(&m, proto, pol, ppn, u / (1.0 - u) * l, 200);
            let r = s.requests as f64;
            let c = &s.cycles;
            println!("{proto} {:?}: time/req {:.0} lat {:.0} | per req: compute {:.0} stall {:.0} send {:.0} wait {:.0} handler {:.0} irq {:.0} role {:.0} pollidle {:.0} idle {:.0} | irqs {}",
              pol, s.sim_cycles as f64 * 2.0 / r, s.request_latency.mean_cycles,
              c.compute as f64/r, c.stall as f64/r, c.send as f64/r, c.wait as f64/r, c.handler as f64/r, c.interrupt as f64/r, c.role as f64/r, c.poll_idle as f64/r, c.idle as f64/r, s.interrupts);
            println!(
                "   misses/req: interf {:.2} ({:.0}c) migr {:.2} ({:.0}c) refetch {:.2} ({:.0}c) place {:.2} ({:.0}c)",
                s.misses.interference as f64 / r,
                s.misses.interference_cycles as f64 / r,
                s.misses.migration as f64 / r,
                s.misses.migration_cycles as f64 / r,
                s.misses.protocol_refetch as f64 / r,
                s.misses.protocol_refetch_cycles as f64 / r,
                s.misses.placement as f64 / r,
                s.misses.placement_cycles as f64 / r
            );
        }
    }
}
