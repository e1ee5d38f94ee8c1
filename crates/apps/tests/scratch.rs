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
fn scratch() {
    let m = MachineConfig::load("hpca97").unwrap();
    for proto in [Protocol::Null, Protocol::Fetch] {
        let l = measure_lmin(&m, proto, 1).unwrap();
        println!("{proto}: Lmin {l:.1} cycles = {:.2} us", l / 200.0);
        for oint in [200u64, 2000] {
            println!("  Oint {oint}");
            for u in [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9] {
                let c = u / (1.0 - u) * l;
                let fixed2 = run(&m, proto, Policy::Fixed { protocol_procs: 1 }, 2, c, oint);
                let single = run(&m, proto, Policy::Single, 1, c, oint);
                let float2 = run(&m, proto, Policy::Floating, 2, c, oint);
                let mut line = format!(
                    "   U={u:.2} mU={:.2} single/fixed2={:.2} (irq {}) float2/fixed2={:.2} (irq {})",
                    fixed2.measured_u,
                    single.sim_cycles as f64 / fixed2.sim_cycles as f64,
                    single.interrupts,
                    float2.sim_cycles as f64 / fixed2.sim_cycles as f64,
                    float2.interrupts
                );
                for ppn in [4u32, 8] {
                    let fx = run(&m, proto, Policy::Fixed { protocol_procs: 1 }, ppn, c, oint);
                    let fl = run(&m, proto, Policy::Floating, ppn, c, oint);
                    line += &format!(" | P{ppn} fl/fx={:.2}", fl.sim_cycles as f64 / fx.sim_cycles as f64);
                }
                println!("{line}");
            }
        }
    }
}
