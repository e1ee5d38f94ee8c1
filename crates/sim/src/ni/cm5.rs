//! The CM-5-like NI (NI2w in the HPCA'98 classification): uncached
//! memory-mapped send and receive queues on the memory bus, moved a word at
//! a time by the processor; ports that serialize messages at each end, and
//! a network of constant latency between them (or, with
//! `network.latency_includes_ports`, of constant latency from the first
//! word out to the last word in). With a dispatch device whose
//! `pdq.smp_line_transfers` is on, SMP processors move messages as cache
//! lines instead: the dispatch register's line and the payload's lines.

use super::{DeviceWords, Mover, NiModel, Sent};
use crate::bus::{Calendar, Phases};
use crate::memory::NodeMemory;
use finegrain_core::{MachineConfig, Message, Topology};

/// A node's NI ports, as calendars like the bus: a message sent later in
/// event order but earlier in simulated time does not queue behind replies
/// timed into the future.
#[derive(Default)]
struct Ports {
    /// Injection into the network.
    out: Calendar,
    /// Ejection from the network.
    inp: Calendar,
}

pub(crate) struct Cm5Ni {
    word_bytes: usize,
    header_words: u64,
    read_occupancy: u64,
    read_latency: u64,
    write_occupancy: u64,
    write_latency: u64,
    register_read_occupancy: u64,
    register_read_latency: u64,
    port_cycles_per_word: u64,
    network_latency: u64,
    /// `network.latency_includes_ports`: the latency spans both ports.
    latency_includes_ports: bool,
    /// `network.payload_cycles_per_byte`: the sender's link injects the
    /// payload before the latency starts.
    payload_cycles_per_byte: u64,
    /// `network.payload_occupies_sender`: the sender is done when its
    /// payload is injected.
    payload_occupies_sender: bool,
    /// `pdq.smp_line_transfers`: processors on the bus move a message as
    /// lines (the dispatch register's, then the payload's).
    line_transfers: bool,
    line_bytes: usize,
    /// Bus occupancy of a line written to the device (a write-back's).
    line_write_occupancy: u64,
    /// The NI is a dispatch device (the machine has a `[pdq]` section):
    /// each protocol processor loads its own dispatch register, and that
    /// load is its notice.
    dispatch_device: bool,
    procs_per_node: usize,
    ports: Vec<Ports>,
    /// Per node: messages arrived, what the NI's cachable arrival register
    /// counts. Each arrival invalidates the processors' copies of it.
    arrivals: Vec<u64>,
    /// Per processor (node-major): the arrival count its cached copy of the
    /// register last showed.
    seen: Vec<u64>,
}

impl Cm5Ni {
    pub fn new(m: &MachineConfig, topology: &Topology) -> Cm5Ni {
        let ni = &m.ni;
        let nodes = topology.nodes as usize;
        let procs_per_node = topology.procs_per_node as usize;
        Cm5Ni {
            word_bytes: ni.word_bytes as usize,
            header_words: ni.header_words as u64,
            read_occupancy: ni.uncached_read_occupancy,
            read_latency: ni.uncached_read_latency,
            write_occupancy: ni.uncached_write_occupancy,
            write_latency: ni.uncached_write_latency,
            register_read_occupancy: ni.register_read_occupancy,
            register_read_latency: ni.register_read_latency,
            port_cycles_per_word: ni.port_cycles_per_word,
            network_latency: m.network.latency_cycles,
            latency_includes_ports: m.network.latency_includes_ports,
            payload_cycles_per_byte: m.network.payload_cycles_per_byte,
            payload_occupies_sender: m.network.payload_occupies_sender,
            line_transfers: m.pdq.as_ref().is_some_and(|d| d.smp_line_transfers),
            line_bytes: m.cache.line_bytes as usize,
            line_write_occupancy: m.bus.writeback_occupancy,
            dispatch_device: m.pdq.is_some(),
            procs_per_node,
            ports: (0..nodes).map(|_| Ports::default()).collect(),
            arrivals: vec![0; nodes],
            seen: vec![0; nodes * procs_per_node],
        }
    }

    /// The message's argument and payload words (what a handler reads).
    fn body_words(&self, msg: &Message) -> u64 {
        (msg.args.len() + msg.payload.len().div_ceil(self.word_bytes)) as u64
    }

    /// The message's payload lines (what moves as lines when the device
    /// takes line transfers).
    fn payload_lines(&self, msg: &Message) -> u64 {
        msg.payload.len().div_ceil(self.line_bytes) as u64
    }

    /// When the message's last word is in the destination's NI, its first
    /// word having entered the network at `out_start` and each port
    /// spending `busy` on it: the network's latency after the injection,
    /// then the ejection; or, when the latency spans both ports, the
    /// ejection ending `latency` after the injection began (no sooner than
    /// the injection's end plus the ejection).
    fn ejection_from(&self, out_start: u64, busy: u64) -> u64 {
        if self.latency_includes_ports {
            out_start + self.network_latency.saturating_sub(busy).max(busy)
        } else {
            out_start + busy + self.network_latency
        }
    }
}

impl NiModel for Cm5Ni {
    /// The processor writes the header and body into the NI a word at a
    /// time (uncached stores; an embedded processor on its own device;
    /// with line transfers, the header and arguments as words and the
    /// payload as posted line writes from its cache), then the source's
    /// injection port sends the words (and its link the payload's bytes,
    /// `network.payload_cycles_per_byte`), the network adds its latency,
    /// and the destination's ejection port takes them. The sender is done
    /// with its words in the NI, or, with `network.payload_occupies_sender`,
    /// once its payload is out.
    #[inline(always)] // one call site; a call costs the arguments' spills
    fn send(&mut self, mem: &mut NodeMemory, now: u64, t: u64, src: usize, by: Mover, msg: &Message) -> Sent {
        let words = self.header_words + self.body_words(msg);
        let done = match by {
            Mover::Device { word_cycles } => t + words * word_cycles,
            Mover::Bus { .. } if self.line_transfers && !msg.payload.is_empty() => {
                let head = self.header_words + msg.args.len() as u64;
                let t = mem.bus.train(now, t, head, Phases::Write, self.write_occupancy, self.write_latency);
                let (occ, lat) = (self.line_write_occupancy, self.write_latency);
                mem.bus.train(now, t, self.payload_lines(msg), Phases::Write, occ, lat)
            }
            Mover::Bus { .. } => mem.bus.train(now, t, words, Phases::Write, self.write_occupancy, self.write_latency),
        };
        let busy = words * self.port_cycles_per_word;
        let inject = msg.payload.len() as u64 * self.payload_cycles_per_byte;
        let out_start = self.ports[src].out.reserve(now, done, busy + inject);
        let injected = out_start + inject;
        let at_dst = self.ejection_from(injected, busy);
        let arrive = self.ports[msg.dst_node.index()].inp.reserve(now, at_dst, busy) + busy;
        let done = if self.payload_occupies_sender { done.max(injected) } else { done };
        Sent { done, injected, arrive }
    }

    /// The message waits in the NI's receive queue; the arrival register
    /// changes.
    #[inline]
    fn arrive(&mut self, _mem: &mut NodeMemory, _now: u64, n: usize, _msg: &Message) {
        self.arrivals[n] += 1;
    }

    /// An SMP processor re-reads the arrival register if arrivals
    /// invalidated its copy (with a dispatch device it loads its own
    /// dispatch register instead, which is its notice), reads the status
    /// register, then loads the body a word at a time (uncached). With
    /// line transfers the dispatch register's line holds the header and
    /// the arguments (any beyond the line are loaded as words), and each
    /// payload line is a fill from the device, as the register's is. An
    /// embedded processor reads the body off its own device.
    #[inline(always)] // one call site, as for `send`
    fn receive(&mut self, mem: &mut NodeMemory, now: u64, t: u64, n: usize, by: Mover, msg: &Message) -> u64 {
        let words = self.body_words(msg);
        let local = match by {
            Mover::Device { word_cycles } => return t + words * word_cycles,
            Mover::Bus { local } => local,
        };
        let (reg_occ, reg_lat) = (self.register_read_occupancy, self.register_read_latency);
        let mut t = t;
        if !self.dispatch_device {
            let seen = &mut self.seen[n * self.procs_per_node + local];
            if *seen != self.arrivals[n] {
                *seen = self.arrivals[n];
                t = mem.bus.transact(now, t, Phases::Read, reg_occ, reg_lat).done;
            }
        }
        t = mem.bus.transact(now, t, Phases::Read, reg_occ, reg_lat).done;
        if self.line_transfers && self.dispatch_device {
            let line_words = (self.line_bytes / self.word_bytes) as u64;
            let beyond = (self.header_words + msg.args.len() as u64).saturating_sub(line_words);
            t = mem.bus.train(now, t, beyond, Phases::Read, self.read_occupancy, self.read_latency);
            return mem.bus.train(now, t, self.payload_lines(msg), Phases::Read, reg_occ, reg_lat);
        }
        mem.bus.train(now, t, words, Phases::Read, self.read_occupancy, self.read_latency)
    }

    #[inline]
    fn register_write(&mut self, mem: &mut NodeMemory, now: u64, t: u64) -> u64 {
        mem.bus.transact(now, t, Phases::Write, self.write_occupancy, self.write_latency).done
    }

    fn device_words(&self) -> DeviceWords {
        DeviceWords {
            occupancy: self.read_occupancy,
            posted_write: self.write_latency,
            word_bytes: self.word_bytes as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::AddressMap;
    use finegrain_core::{Args, HandlerId, MsgKind, NodeId, Payload, SyncKey, ThreadId};

    fn machine(preset: &str) -> MachineConfig {
        MachineConfig::load(preset).unwrap()
    }

    fn memory(m: &MachineConfig) -> NodeMemory {
        NodeMemory::new(m, AddressMap::new(m, &[2048]).unwrap(), &[Some(0), Some(1)], 2)
    }

    /// A message from node 0 to `dst` with one argument and `payload` bytes.
    fn message(dst: u32, payload: usize) -> Message {
        Message {
            kind: MsgKind::Request,
            src_node: NodeId(0),
            src_thread: ThreadId(0),
            dst_node: NodeId(dst),
            handler: HandlerId(0),
            key: SyncKey::NoSync,
            args: Args::new(&[7]).unwrap(),
            payload: Payload::zeroed(payload),
            token: 1,
        }
    }

    #[test]
    fn a_send_is_a_train_of_posted_word_stores_then_the_ports_and_the_network() {
        let m = machine("hpca97");
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let mut mem = memory(&m);
        // Header, one argument, two payload words.
        let msg = message(1, 16);
        let words = 2 + 1 + 2;
        let sent = ni.send(&mut mem, 0, 100, 0, Mover::Bus { local: 0 }, &msg);
        assert_eq!(sent.done, 100 + words * m.ni.uncached_write_latency, "posted stores, one after another");
        assert_eq!(mem.bus.totals().transactions, words);
        let busy = words * m.ni.port_cycles_per_word;
        assert_eq!(sent.arrive, sent.done + busy + m.network.latency_cycles + busy);
        // A second message at once queues behind the first at both ports.
        let again = ni.send(&mut memory(&m), 0, 100, 0, Mover::Bus { local: 1 }, &msg);
        assert_eq!(again.arrive, sent.arrive + busy);
    }

    #[test]
    fn an_embedded_processor_moves_words_on_its_device_off_the_bus() {
        let m = machine("hpca99");
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let mut mem = memory(&m);
        let msg = message(1, 0);
        let by = Mover::Device { word_cycles: 3 };
        assert_eq!(ni.send(&mut mem, 0, 10, 0, by, &msg).done, 10 + 3 * 3);
        assert_eq!(ni.receive(&mut mem, 0, 50, 1, by, &msg), 50 + 3);
        assert_eq!(mem.bus.totals().transactions, 0);
    }

    #[test]
    fn the_arrival_register_is_read_again_only_after_arrivals() {
        let m = machine("hpca97");
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let msg = message(1, 0);
        let by = Mover::Bus { local: 1 };
        let receive = |ni: &mut Cm5Ni| ni.receive(&mut memory(&m), 0, 0, 1, by, &msg);
        let (register, word) = (m.ni.register_read_latency, m.ni.uncached_read_latency);
        ni.arrive(&mut memory(&m), 0, 1, &msg);
        assert_eq!(receive(&mut ni), 2 * register + word, "its copy was invalidated: read again");
        assert_eq!(receive(&mut ni), register + word, "no arrival since: its copy is current");
        ni.arrive(&mut memory(&m), 0, 0, &msg);
        assert_eq!(receive(&mut ni), register + word, "an arrival at another node changes nothing");
        ni.arrive(&mut memory(&m), 0, 1, &msg);
        assert_eq!(receive(&mut ni), 2 * register + word);
        // A dispatch device: each processor's own dispatch register load
        // is its notice.
        let mut m = machine("hpca99");
        m.pdq.as_mut().unwrap().smp_line_transfers = false;
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        ni.arrive(&mut memory(&m), 0, 1, &msg);
        let (register, word) = (m.ni.register_read_latency, m.ni.uncached_read_latency);
        assert_eq!(ni.receive(&mut memory(&m), 0, 0, 1, by, &msg), register + word);
    }

    #[test]
    fn with_line_transfers_a_message_moves_as_the_register_line_and_payload_lines() {
        let mut m = machine("hpca99");
        assert!(m.pdq.as_ref().unwrap().smp_line_transfers);
        // The sender's own time only (not its payload's injection).
        m.network.payload_occupies_sender = false;
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let by = Mover::Bus { local: 1 };
        let register = m.ni.register_read_latency;
        // The argument rides in the dispatch register's line.
        let mut mem = memory(&m);
        assert_eq!(ni.receive(&mut mem, 0, 0, 1, by, &message(1, 0)), register);
        assert_eq!(mem.bus.totals().transactions, 1);
        // Two payload lines: two more fills from the device.
        let mut mem = memory(&m);
        assert_eq!(ni.receive(&mut mem, 0, 0, 1, by, &message(1, 128)), 3 * register);
        assert_eq!(mem.bus.totals().transactions, 3);
        // Sent: the header and argument as posted word stores, each payload
        // line as one posted line write.
        let mut mem = memory(&m);
        let sent = ni.send(&mut mem, 0, 0, 0, by, &message(1, 128));
        assert_eq!(mem.bus.totals().transactions, 3 + 2);
        let (write, occupancy) = (m.ni.uncached_write_latency, m.bus.writeback_occupancy);
        assert!(sent.done >= 3 * write + write && sent.done <= 3 * write + 2 * occupancy, "{sent:?}");
    }

    #[test]
    fn a_latency_that_includes_the_ports_is_the_whole_passage_and_the_ports_still_queue() {
        let mut m = machine("hpca99");
        assert!(m.network.latency_includes_ports);
        m.network.payload_occupies_sender = false;
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let by = Mover::Device { word_cycles: 1 };
        // Header, one argument, eight payload words.
        let msg = message(1, 64);
        let sent = ni.send(&mut memory(&m), 0, 0, 0, by, &msg);
        let inject = 64 * m.network.payload_cycles_per_byte;
        assert!(inject > 0, "hpca99's link injects payloads");
        assert_eq!(sent.injected, sent.done + inject, "the payload goes out after the header");
        assert_eq!(sent.arrive, sent.injected + m.network.latency_cycles);
        // A second message at once leaves after the first's injection
        // (its words' port time and its payload) and arrives that much
        // later.
        let busy = 11 * m.ni.port_cycles_per_word + inject;
        let again = ni.send(&mut memory(&m), 0, 0, 0, by, &msg);
        assert_eq!(again.arrive, sent.arrive + busy);
    }

    #[test]
    fn a_sender_the_payload_occupies_is_done_when_it_is_out_and_waits_for_a_busy_port() {
        let mut m = machine("hpca99");
        assert!(m.network.payload_occupies_sender, "hpca99 charges the injection to the sender (Table 1)");
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let by = Mover::Device { word_cycles: 1 };
        let msg = message(1, 64);
        let first = ni.send(&mut memory(&m), 0, 0, 0, by, &msg);
        assert_eq!(first.done, first.injected);
        // A second at once waits for the port, and its sender with it.
        let second = ni.send(&mut memory(&m), 0, 0, 0, by, &msg);
        assert_eq!(second.done, second.injected);
        assert!(second.done > first.done + 64 * m.network.payload_cycles_per_byte, "{first:?} {second:?}");
        // Off, the same sends leave their senders after the words alone.
        m.network.payload_occupies_sender = false;
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let off = ni.send(&mut memory(&m), 0, 0, 0, by, &msg);
        assert!(off.done < off.injected && off.injected == first.injected, "{off:?} {first:?}");
    }

    #[test]
    fn a_message_without_payload_costs_the_link_nothing_beyond_its_words() {
        let m = machine("hpca99");
        let mut ni = Cm5Ni::new(&m, &Topology { nodes: 2, procs_per_node: 2 });
        let sent = ni.send(&mut memory(&m), 0, 0, 0, Mover::Device { word_cycles: 1 }, &message(1, 0));
        assert_eq!((sent.injected, sent.arrive), (sent.done, sent.done + m.network.latency_cycles));
    }
}
