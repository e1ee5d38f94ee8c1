use finegrain_core::*;
use finegrain_rt::clock::Stamp;
use finegrain_rt::*;
fn main() {
    let mut t = HandlerTable::new();
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let done = t.register(info("pong"), |_, _| Ok(())).unwrap();
    let ping = t
        .register(info("ping"), move |ctx, m: &Message| ctx.reply_bytes(done, Args::default(), m.payload.as_slice()))
        .unwrap();
    let mut cfg = RtConfig::new(Topology { nodes: 1, procs_per_node: 1 }, Policy::Single);
    cfg.segment_bytes = 4096;
    cfg.time_split = false;
    let out = run(&cfg, &t, |p| async move {
        let n: u64 = std::env::var("N").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
        let payload = [0u8; 8];
        let t0 = Stamp::now();
        for _ in 0..n {
            p.request_with(NodeId(0), ping, &[], &payload, |r| r.payload().len())?;
        }
        Ok::<_, AmError>(t0.elapsed_ns() as f64 / n as f64)
    })
    .unwrap();
    println!("self round trip (2 messages, one thread): {:.1} ns", out.results[0]);
}
