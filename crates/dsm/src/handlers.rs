//! The DSM's handler table: the coherence protocol's handlers
//! ([`crate::protocol`]) and the locks' and barriers' ([`crate::sync`]),
//! each registered with its instructions.

use crate::protocol::{on_data, on_data_ack, on_fault, on_fetch, on_fetch_reply, on_get, on_inv, on_inv_ack, on_page};
use crate::state::{Ids, State};
use crate::sync::{on_acquire, on_arrive, on_grant, on_release, on_unlock};
use finegrain_core::config::DsmParams;
use finegrain_core::{AmError, HandlerInfo, HandlerTable};
use std::sync::Arc;

/// Registers every handler with its cost.
pub(crate) fn register(shared: &Arc<State>, costs: &DsmParams, table: &mut HandlerTable) -> Result<Ids, AmError> {
    let info = |name: &str, body_cycles: u64| HandlerInfo { name: name.into(), body_cycles, code_bytes: 256 };
    macro_rules! handler {
        ($name:expr, $cost:expr, $f:path) => {{
            let s = Arc::clone(shared);
            table.register(info($name, $cost), move |ctx, m| $f(&s, ctx, m))?
        }};
    }
    Ok(Ids {
        page: handler!("dsm-page", costs.page_cycles, on_page),
        fault: handler!("dsm-fault", costs.fault_cycles, on_fault),
        get: handler!("dsm-get", costs.get_cycles, on_get),
        inv: handler!("dsm-inv", costs.inv_cycles, on_inv),
        inv_ack: handler!("dsm-inv-ack", costs.ack_cycles, on_inv_ack),
        fetch: handler!("dsm-fetch", costs.fetch_cycles, on_fetch),
        fetch_reply: handler!("dsm-fetch-reply", costs.fetch_reply_cycles, on_fetch_reply),
        data: handler!("dsm-data", costs.data_cycles, on_data),
        data_ack: handler!("dsm-data-ack", costs.ack_cycles, on_data_ack),
        arrive: handler!("dsm-barrier-arrive", costs.sync_cycles, on_arrive),
        release: handler!("dsm-barrier-release", costs.sync_cycles, on_release),
        acquire: handler!("dsm-lock-acquire", costs.sync_cycles, on_acquire),
        unlock: handler!("dsm-lock-release", costs.sync_cycles, on_unlock),
        grant: handler!("dsm-lock-grant", costs.sync_cycles, on_grant),
    })
}
