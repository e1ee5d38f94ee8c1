use finegrain_apps::fetch_add::*;
use finegrain_core::*;
use finegrain_sim::SimConfig;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let kind = a[1].as_str();
    let disc = Discipline::parse(&a[2]).unwrap();
    let keys: u64 = a[3].parse().unwrap();
    let k: u32 = a[4].parse().unwrap();
    let skew = KeySkew::parse(&a[5]).unwrap();
    let hc: u64 = a[6].parse().unwrap();
    let reqs: u64 = a[7].parse().unwrap();
    let home_u: f64 = a.get(8).map(|s| s.parse().unwrap()).unwrap_or(0.5);
    let m = MachineConfig::load(&std::env::var("PRESET").unwrap_or("hpca99".into())).unwrap();
    let c = 8;
    let (policy, ppn, pp_kind, max) = match kind {
        "embedded" => (Policy::Fixed { protocol_procs: k }, c + k, PpKind::Embedded, None),
        "smp" => (Policy::Fixed { protocol_procs: k }, c + k, PpKind::Smp, None),
        _ => (Policy::Floating, c, PpKind::Smp, if disc == Discipline::Serial { None } else { Some(k) }),
    };
    let mut sim = SimConfig::new(m.clone(), Topology { nodes: 5, procs_per_node: ppn }, policy, 1);
    sim.dispatch = Dispatch { discipline: disc, pp_kind, max_servers: max };
    let cfg = FetchAddConfig {
        keys,
        skew,
        handler_cycles: hc,
        sequential_fraction: 0.0,
        requests_per_thread: reqs,
        home_u,
        home_burst_cycles: 2000.0,
        think_cycles: std::env::var("THINK").map(|s| s.parse().unwrap()).unwrap_or(0.0),
    };
    match simulate(&sim, &cfg) {
        Ok(out) => {
            let h = home_measures(&m, &out);
            println!("{h:?}\nlat {:?}", out.stats.request_latency);
            for (i, p) in out.stats.nodes[0].procs.iter().enumerate() {
                println!("home p{i} {} {:?} h={} irq={}", p.role, p.cycles, p.handlers, p.interrupts);
            }
            for (i, p) in out.stats.nodes[1].procs.iter().enumerate() {
                println!("req1 p{i} {} {:?} h={}", p.role, p.cycles, p.handlers);
            }
            println!("home bus {:?}", out.stats.nodes[0].bus);
        }
        Err(e) => println!("ERR {e}"),
    }
}
