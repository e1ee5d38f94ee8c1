//! A raw pair of finegrain rings with no runtime around them: median
//! one-way time of a one-slot record between cores 0 and 1.
use finegrain_rt::probe::{ring_pingpong, Effort};

fn main() {
    finegrain_rt::clock::calibrate();
    println!("raw ring one-way {:.1} ns", ring_pingpong(Effort::DEFAULT));
}
