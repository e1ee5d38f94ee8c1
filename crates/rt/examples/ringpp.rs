use finegrain_rt::clock::Stamp;
use finegrain_rt::ring::ring;
fn pin(core: usize) {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
fn main() {
    finegrain_rt::clock::calibrate();
    let (mut p1, mut c1) = ring(256);
    let (mut p2, mut c2) = ring(256);
    let n = 200_000u64;
    let t = std::thread::spawn(move || {
        pin(1);
        for _ in 0..n {
            loop {
                if c1.try_pop(|r| r.word(0)).is_some() {
                    break;
                }
                std::hint::spin_loop();
            }
            while p2.try_push(1, &[]).is_err() {}
        }
    });
    pin(0);
    let t0 = Stamp::now();
    for _ in 0..n {
        while p1.try_push(1, &[]).is_err() {}
        loop {
            if c2.try_pop(|r| r.word(0)).is_some() {
                break;
            }
            std::hint::spin_loop();
        }
    }
    println!("raw ring one-way {:.1} ns", t0.elapsed_ns() as f64 / n as f64 / 2.0);
    t.join().unwrap();
}
