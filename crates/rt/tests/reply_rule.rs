//! The request/reply rule on native threads, as in the simulator: a reply
//! the rule refuses ends the run with the simulator's error even when the
//! handler ignores it, and a reply naming no handler is refused at the
//! handler that sent it.

use finegrain_core::{
    Args, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Reply, Topology,
};
use finegrain_rt::{run, RtConfig};

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 0, code_bytes: 0 }
}

/// Every thread of two nodes asks the other node's `request` handler once;
/// the run's error, or None.
fn run_with(table: &HandlerTable, request: HandlerId) -> Option<String> {
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    run(&cfg, table, |p| async move {
        p.request(NodeId((p.node().0 + 1) % 2), request, Args::new(&[1])?, Payload::none()).await.map(|_| ())
    })
    .err()
    .map(|e| e.to_string())
}

#[test]
fn a_second_reply_the_handler_ignores_still_ends_the_run() {
    let mut t = HandlerTable::new();
    let reply = t.register(info("r"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("greedy"), move |ctx, m: &Message| {
            let r = Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() };
            ctx.reply(r.clone())?;
            let _ = ctx.reply(r);
            Ok(())
        })
        .unwrap();
    let e = run_with(&t, request);
    assert_eq!(
        e.as_deref(),
        Some("handler 'greedy' sent a second reply; a request handler may send at most one reply")
    );
}

#[test]
fn a_reply_from_a_reply_handler_it_ignores_still_ends_the_run() {
    let mut t = HandlerTable::new();
    let chatty = t
        .register(info("chatty_reply"), |ctx, _| {
            let _ = ctx.reply(Reply { handler: HandlerId(0), args: Args::default(), payload: Payload::none() });
            Ok(())
        })
        .unwrap();
    let request = t
        .register(info("ask"), move |ctx, m: &Message| {
            ctx.reply(Reply { handler: chatty, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
        })
        .unwrap();
    let e = run_with(&t, request).expect("the run fails");
    assert!(e.starts_with("handler 'chatty_reply' is a reply handler"), "{e}");
}

#[test]
fn a_reply_naming_an_unknown_handler_is_refused_naming_the_replier() {
    for ignore in [false, true] {
        let mut t = HandlerTable::new();
        t.register(info("unused_reply"), |_, _| Ok(())).unwrap();
        let request = t
            .register(info("lost"), move |ctx, _| {
                let r = ctx.reply(Reply { handler: HandlerId(77), args: Args::default(), payload: Payload::none() });
                if ignore {
                    return Ok(());
                }
                r
            })
            .unwrap();
        let e = run_with(&t, request);
        assert_eq!(
            e.as_deref(),
            Some("handler 'lost' failed: its reply names unknown handler id 77 (the table has 2 handlers)"),
            "ignored: {ignore}"
        );
    }
}
