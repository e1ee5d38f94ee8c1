//! `finegrain bench interrupt` measures a bare signal with the runtime's
//! handler installed for the whole measurement. In its own test binary (its
//! own process): the signal's disposition is process-wide.

#[test]
fn a_bare_signal_is_measured_with_the_handler_installed() {
    // Without the handler the signal's default action ends this process.
    let ns = finegrain_rt::interrupt::bare_signal_cost(20).unwrap();
    assert!(ns.is_finite() && ns >= 0.0, "{ns}");
}
