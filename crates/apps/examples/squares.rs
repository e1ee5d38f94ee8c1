// One workload, two platforms: every compute thread asks the next node to
// square the numbers 1 to 10 and adds the answers up, on the simulated
// machine of a preset and on real threads; each run checks its answer.
use finegrain_core::*;
use finegrain_rt::{Native, RtConfig};
use finegrain_sim::{SimConfig, Simulator};

struct Squares {
    table: HandlerTable,
    square: HandlerId,
}

impl Squares {
    fn new() -> Result<Squares, AmError> {
        let mut table = HandlerTable::new();
        let info = |name: &str| HandlerInfo { name: name.into(), body_cycles: 20, code_bytes: 64 };
        let answer = table.register(info("answer"), |_, _| Ok(()))?;
        let square = table.register(info("square"), move |ctx, m| {
            let x = m.args.get(0);
            ctx.reply(Reply { handler: answer, args: Args::new(&[x * x])?, payload: Payload::none() })
        })?;
        Ok(Squares { table, square })
    }
}

impl Workload for Squares {
    type Output = u64;

    fn name(&self) -> &'static str {
        "squares"
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<u64, AmError> {
        let next = NodeId((p.node().0 + 1) % p.nodes());
        let mut sum = 0;
        for x in 1..=10 {
            p.work(500).await; // compute a little between requests
            sum += p.request(next, self.square, Args::new(&[x])?, Payload::none()).await?.args.get(0);
        }
        Ok(sum)
    }

    fn check(&self, sums: &[u64]) -> Result<(), WorkloadError> {
        match sums.iter().find(|&&s| s != 385) {
            None => Ok(()),
            Some(s) => Err(WorkloadError::WrongAnswer { workload: "squares", what: format!("a thread summed {s}") }),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run = RunConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating, 1);
    let sim = SimConfig { run: run.clone(), machine: MachineConfig::load("hpca97")?, trace_handlers: false };
    let simulated = Simulator { config: &sim }.run(&Squares::new()?)?;
    println!("sim:    sums {:?} in {} simulated cycles", simulated.outputs, simulated.stats.sim_cycles);
    let native = Native { config: &RtConfig::of(run) }.run(&Squares::new()?)?;
    println!("native: sums {:?} in {} us", native.outputs, native.stats.wall_ns / 1000);
    Ok(())
}
