//! Five of the co-processor paper's Split-C programs (bitonic, cannon, fft
//! and fftb, mm, pray; IPPS 1996 Table 2) compute the right answer
//! natively on 1, 2 and 4 nodes (Cannon on square grids), their checks
//! catch a wrong answer, and their configurations refuse what they cannot
//! run in one line naming the field; in the simulator (ipps96 under both
//! co-processor libraries, hpca97 under Single) they compute the same
//! answers in repeatable times.

use finegrain_apps::splitc::bitonic::BitonicConfig;
use finegrain_apps::splitc::cannon::{CannonConfig, CannonPlacement};
use finegrain_apps::splitc::fft::{FftConfig, FftRemap};
use finegrain_apps::splitc::mm::{MmConfig, MmPlacement};
use finegrain_apps::splitc::pray::PrayConfig;
use finegrain_apps::splitc::{NodeRun, SplitcProgram, SplitcWorkload};
use finegrain_core::{Platform, Policy, Topology};
use finegrain_rt::{Native, RtConfig};

const CANNONS: [CannonPlacement; 2] = [CannonPlacement::Aligned, CannonPlacement::Skewed];
const MMS: [MmPlacement; 2] = [MmPlacement::Bands, MmPlacement::Global];
const FFTS: [FftRemap; 2] = [FftRemap::Store, FftRemap::BulkStore];

/// Runs `program` natively on `nodes` nodes (one thread each, Single) and
/// returns the nodes' outputs; the platform has checked the answer.
fn native<G: SplitcProgram>(program: G, nodes: u32) -> Vec<NodeRun<G::Answer>> {
    let name = program.name();
    let w = SplitcWorkload::new(program, nodes).unwrap_or_else(|e| panic!("{name} on {nodes}: {e}"));
    let rt = RtConfig::new(Topology { nodes, procs_per_node: 1 }, Policy::Single);
    Native { config: &rt }.run(&w).unwrap_or_else(|e| panic!("{name} on {nodes} nodes: {e}")).outputs
}

/// Runs natively, then checks that every node timed the named phases.
fn runs_right<G: SplitcProgram + Clone>(program: G, nodes: &[u32], phases: &[&str]) {
    for &n in nodes {
        let out = native(program.clone(), n);
        assert_eq!(out.len(), n as usize);
        for (node, o) in out.iter().enumerate() {
            for p in phases {
                assert!(o.phases.times.contains_key(*p), "{} on {n}: node {node} has no phase {p}", program.name());
            }
        }
    }
}

/// Runs on `nodes`, lets `corrupt` spoil node `node`'s answer and returns
/// what the check says.
fn caught<G: SplitcProgram + Clone>(program: G, nodes: u32, corrupt: impl Fn(&mut G::Answer)) -> String {
    let mut out = native(program.clone(), nodes);
    let answers: Vec<&G::Answer> = out.iter().map(|o| &o.answer).collect();
    assert_eq!(program.check(nodes, &answers), Ok(()));
    corrupt(&mut out[nodes as usize - 1].answer);
    let answers: Vec<&G::Answer> = out.iter().map(|o| &o.answer).collect();
    program.check(nodes, &answers).expect_err("a corrupted answer passes the check")
}

#[test]
fn bitonic_sorts_on_1_2_and_4_nodes() {
    runs_right(BitonicConfig::tiny(), &[1], &["compute"]);
    runs_right(BitonicConfig::tiny(), &[2, 4], &["compute", "communicate"]);
}

#[test]
fn cannon_multiplies_on_square_grids_of_1_4_and_9_nodes() {
    for placement in CANNONS {
        runs_right(CannonConfig::tiny(placement), &[1, 4, 9], &["compute"]);
        runs_right(CannonConfig::tiny(placement), &[4, 9], &["communicate"]);
    }
}

#[test]
fn fft_and_fftb_transform_on_1_2_and_4_nodes() {
    for remap in FFTS {
        runs_right(FftConfig::tiny(remap), &[1, 2, 4], &["compute", "remap"]);
    }
}

#[test]
fn mm_multiplies_in_both_placements_on_1_2_and_4_nodes() {
    for placement in MMS {
        runs_right(MmConfig::tiny(placement), &[1, 2, 4], &["compute", "communicate"]);
    }
}

#[test]
fn mm_with_one_product_a_batch_and_many_in_flight() {
    for batch in [1, 16] {
        runs_right(MmConfig { batch, ..MmConfig::tiny(MmPlacement::Global) }, &[4], &["compute"]);
    }
}

#[test]
fn pray_traces_on_1_2_and_4_nodes() {
    runs_right(PrayConfig::tiny(), &[1, 2, 4], &["compute", "communicate"]);
    // More nodes than bands: some nodes render nothing.
    runs_right(PrayConfig { height: 4, ..PrayConfig::tiny() }, &[4], &["communicate"]);
}

#[test]
fn the_fft_remaps_count_their_stores() {
    let words = |remap| {
        let out = native(FftConfig::tiny(remap), 4);
        out[0].phases.counts.clone()
    };
    assert_eq!(words(FftRemap::Store)["stores"], 2 * 16);
    assert_eq!(words(FftRemap::BulkStore)["bulk_stores"], 4);
}

#[test]
fn a_wrong_answer_is_caught_by_each_check() {
    let e = caught(BitonicConfig::tiny(), 2, |keys| keys.swap(0, 1));
    assert!(e.starts_with("node 1: 64 keys, key 0 is"), "{e}");
    for placement in CANNONS {
        let e = caught(CannonConfig::tiny(placement), 4, |c| c[5] += 1e-6);
        assert!(e.starts_with("node 3: C block (1,1): value 5 is"), "{e}");
    }
    for remap in FFTS {
        let e = caught(FftConfig::tiny(remap), 2, |x| x[7] = -x[7]);
        assert!(e.starts_with("node 1: transformed points: value 7 is"), "{e}");
    }
    for placement in MMS {
        let e = caught(MmConfig::tiny(placement), 4, |a| a.values[0][0] *= 1.001);
        assert!(e.contains("value 0 is"), "{e}");
        let e = caught(MmConfig::tiny(placement), 4, |a| a.blocks[0] = (0, 0));
        assert!(e.contains("computed twice") || e.contains("expected"), "{e}");
    }
    let e = caught(PrayConfig::tiny(), 2, |a| a.checksum ^= 1);
    assert!(e.starts_with("node 1: rendered 4 bands with checksum"), "{e}");
    let e = caught(PrayConfig::tiny(), 1, |a| a.image[30] ^= 0x10);
    assert!(e.starts_with("node 0's frame buffer: 384 pixels, pixel 30 (row 1, column 6)"), "{e}");
}

#[test]
fn configurations_they_cannot_run_are_refused_naming_the_field() {
    let one_line = |e: Result<(), String>, starts: &str| {
        let e = e.expect_err(starts);
        assert!(e.starts_with(starts) && e.contains("allowed") && !e.contains('\n'), "{e}");
    };
    one_line(BitonicConfig::tiny().validate(3), "bitonic: 3 nodes; allowed: a power of two");
    one_line(BitonicConfig { keys_per_node: 0, seed: 1 }.validate(2), "bitonic: keys_per_node = 0");
    one_line(CannonConfig::tiny(CannonPlacement::Skewed).validate(2), "cannon: 2 nodes; allowed: a perfect square");
    one_line(CannonConfig { n: 10, ..CannonConfig::tiny(CannonPlacement::Aligned) }.validate(9), "cannon: n = 10");
    one_line(FftConfig { points: 48, ..FftConfig::tiny(FftRemap::Store) }.validate(2), "fft: points = 48");
    one_line(FftConfig::tiny(FftRemap::BulkStore).validate(16), "fft: points = 64 on 16 nodes");
    one_line(FftConfig::tiny(FftRemap::Store).validate(6), "fft: 6 nodes");
    one_line(MmConfig { n: 18, ..MmConfig::tiny(MmPlacement::Bands) }.validate(2), "mm: n = 18 with block = 4");
    one_line(MmConfig { batch: 0, ..MmConfig::tiny(MmPlacement::Bands) }.validate(2), "mm: batch = 0");
    one_line(MmConfig::tiny(MmPlacement::Global).validate(3), "mm: (n / block)² = 16 blocks on 3 nodes");
    one_line(PrayConfig { band_rows: 3, ..PrayConfig::tiny() }.validate(2), "pray: band_rows = 3");
    one_line(PrayConfig { width: 0, ..PrayConfig::tiny() }.validate(2), "pray: width = 0");
    // The presets fit 16 nodes.
    for placement in CANNONS {
        assert_eq!(CannonConfig::paper(placement).validate(16), Ok(()));
        assert_eq!(CannonConfig::quick(placement).validate(16), Ok(()));
    }
    for placement in MMS {
        assert_eq!(MmConfig::paper(placement).validate(16), Ok(()));
        assert_eq!(MmConfig::quick(placement).validate(16), Ok(()));
    }
    for remap in FFTS {
        assert_eq!(FftConfig::paper(remap).validate(16), Ok(()));
        assert_eq!(FftConfig::quick(remap).validate(16), Ok(()));
    }
    assert_eq!(BitonicConfig::paper().validate(16), Ok(()));
    assert_eq!(PrayConfig::paper().validate(16), Ok(()));
    assert_eq!(PrayConfig::quick().validate(16), Ok(()));
}

#[test]
fn a_run_on_nodes_the_program_refuses_fails_with_the_same_message() {
    let w = SplitcWorkload::new(BitonicConfig::tiny(), 3).unwrap();
    let rt = RtConfig::new(Topology { nodes: 3, procs_per_node: 1 }, Policy::Single);
    let e = Native { config: &rt }.run(&w).unwrap_err().to_string();
    assert!(e.contains("bitonic: 3 nodes; allowed: a power of two"), "{e}");
}

#[test]
fn configurations_read_from_json_refuse_unknown_fields() {
    let mm: MmConfig =
        serde_json::from_str(r#"{"n": 16, "block": 4, "placement": "global", "batch": 2, "seed": 1}"#).unwrap();
    assert_eq!(mm, MmConfig { seed: 1, ..MmConfig::tiny(MmPlacement::Global) });
    let fft: FftConfig = serde_json::from_str(r#"{"points": 64, "remap": "bulk-store", "seed": 7}"#).unwrap();
    assert_eq!(fft, FftConfig::tiny(FftRemap::BulkStore));
    let e = serde_json::from_str::<BitonicConfig>(r#"{"keys_per_node": 4, "seed": 1, "keys": 9}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `keys`"), "{e}");
    assert!(serde_json::from_str::<CannonConfig>(r#"{"n": 12, "placement": "diagonal", "seed": 1}"#).is_err());
    assert!(serde_json::from_str::<PrayConfig>(r#"{"width": 4, "height": 4, "spheres": 1, "seed": 1}"#).is_err());
}

#[test]
fn inputs_describe_the_sizes() {
    assert_eq!(BitonicConfig::paper().input(16), "1048576 32-bit keys, 65536 per node on 16 (the paper gives no size)");
    assert!(FftConfig::paper(FftRemap::Store).input(16).starts_with("65536 complex points, 4096 per node"));
    assert!(CannonConfig::paper(CannonPlacement::Aligned).input(16).contains("128 x 128 block"));
    assert!(MmConfig::paper(MmPlacement::Global).input(16).contains("16 blocks of C per node"));
    assert!(PrayConfig::paper().input(16).starts_with("512 x 512 pixels, 64 spheres"));
}

mod simulated {
    //! The same programs in the simulator: on preset ipps96 under policy
    //! coprocessor with handlers on the main processor (main-am) and on the
    //! co-processor (coproc-am), and on preset hpca97 under Single; 4 nodes,
    //! tiny inputs. Answers are checked by the platform, and a second run
    //! with the same seed gives the same times.

    use super::*;
    use finegrain_core::{CoprocLibrary, MachineConfig};
    use finegrain_sim::{SimConfig, Simulator};

    const NODES: u32 = 4;

    fn machines() -> Vec<(String, SimConfig)> {
        let topology = Topology { nodes: NODES, procs_per_node: 1 };
        let ipps96 = MachineConfig::load("ipps96").unwrap();
        let mut out = Vec::new();
        for library in [CoprocLibrary::MainAm, CoprocLibrary::CoprocAm] {
            let cfg = SimConfig::new(ipps96.clone(), topology, Policy::Coprocessor { library }, 11);
            out.push((format!("ipps96 coprocessor {library:?}"), cfg));
        }
        out.push((
            "hpca97 single".into(),
            SimConfig::new(MachineConfig::load("hpca97").unwrap(), topology, Policy::Single, 11),
        ));
        out
    }

    /// Every node's total and phase times of one simulated run (checked).
    fn times<G: SplitcProgram + Clone>(program: &G, sim: &SimConfig, what: &str) -> Vec<(u64, Vec<u64>)> {
        let w = SplitcWorkload::new(program.clone(), NODES).unwrap();
        let ran = Simulator { config: sim }.run(&w).unwrap_or_else(|e| panic!("{} on {what}: {e}", program.name()));
        ran.outputs.iter().map(|o| (o.total, o.phases.times.values().copied().collect())).collect()
    }

    fn simulates_right_and_repeatably<G: SplitcProgram + Clone>(program: G) {
        for (what, sim) in machines() {
            let first = times(&program, &sim, &what);
            assert!(first.iter().all(|(total, _)| *total > 0), "{} on {what}: {first:?}", program.name());
            assert_eq!(first, times(&program, &sim, &what), "{} on {what}: a second run differs", program.name());
        }
    }

    #[test]
    fn bitonic() {
        simulates_right_and_repeatably(BitonicConfig::tiny());
    }

    #[test]
    fn cannon_in_both_placements() {
        for placement in CANNONS {
            simulates_right_and_repeatably(CannonConfig::tiny(placement));
        }
    }

    #[test]
    fn fft_and_fftb() {
        for remap in FFTS {
            simulates_right_and_repeatably(FftConfig::tiny(remap));
        }
    }

    #[test]
    fn mm_in_both_placements() {
        for placement in MMS {
            simulates_right_and_repeatably(MmConfig::tiny(placement));
        }
    }

    #[test]
    fn pray() {
        simulates_right_and_repeatably(PrayConfig::tiny());
    }

    #[test]
    fn computation_is_charged_to_the_simulated_clock() {
        // A bigger matrix multiplies for longer: the compute phase grows
        // with the charged multiply-adds (n³), not only the messages.
        let (_, sim) = machines().pop().unwrap();
        let compute = |n| {
            let w = SplitcWorkload::new(MmConfig { n, ..MmConfig::tiny(MmPlacement::Bands) }, NODES).unwrap();
            let ran = Simulator { config: &sim }.run(&w).unwrap();
            ran.outputs[0].phases.times["compute"]
        };
        let (small, large) = (compute(16), compute(32));
        assert!(large >= 7 * small, "compute {small} cycles at n = 16, {large} at n = 32");
    }
}
