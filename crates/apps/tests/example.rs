//! The README's library example runs on both platforms and its checks
//! pass (the example's own `main`, included whole).

include!("../examples/squares.rs");

#[test]
fn the_library_example_runs_on_both_platforms() {
    main().expect("the example runs and its answer checks on the simulator and on real threads");
    // A wrong answer is caught by the workload's check, on either platform.
    let w = Squares::new().unwrap();
    assert!(w.check(&[385, 385]).is_ok());
    let e = w.check(&[385, 384]).unwrap_err().to_string();
    assert_eq!(e, "wrong answer from squares: a thread summed 384");
}
