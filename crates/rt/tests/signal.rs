//! A run puts the interrupt signal's disposition back as it found it. In
//! its own test binary (its own process), so no other run holds the
//! handler meanwhile.

use finegrain_core::{Args, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Topology};
use finegrain_rt::{run, RtConfig};

/// The signal the runtime interrupts with (see `notify/signal.rs`).
fn interrupt_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

fn disposition() -> usize {
    // SAFETY: reads the current action into a zeroed struct.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(interrupt_signal(), std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

#[test]
fn a_floating_run_gives_the_interrupt_signal_back() {
    // An application that ignores the signal.
    // SAFETY: sets a plain disposition before any thread of the run starts.
    unsafe {
        assert_ne!(libc::signal(interrupt_signal(), libc::SIG_IGN), libc::SIG_ERR);
    }
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let mut t = HandlerTable::new();
    let reply = t.register(info("r"), |_, _| Ok(())).unwrap();
    let request = t.register(info("q"), move |ctx, _m: &Message| ctx.reply_bytes(reply, Args::default(), &[])).unwrap();
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating);
    cfg.segment_bytes = 1 << 14;
    let out = run(&cfg, &t, |p| async move {
        for _ in 0..50 {
            p.work(2_000).await;
            p.request(NodeId((p.node().0 + 1) % 2), request, Args::default(), Payload::none()).await?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(out.stats.requests, 200);
    assert_eq!(disposition(), libc::SIG_IGN, "the run left its own handler installed");
}
