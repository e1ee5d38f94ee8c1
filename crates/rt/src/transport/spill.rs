//! The ordered spill: messages a sender could not hand to the transport
//! yet (a full ring, no send credit), kept per destination in sending
//! order until they can go. Nothing is ever dropped, and a message to a
//! destination never overtakes one spilled before it: while a
//! destination's queue is not empty, new messages to it join the queue.
//!
//! Spilled messages are kept encoded (the record's metadata and data
//! words, see [`super::codec`]), so any transport that moves codec records
//! can use this.

use super::codec::{self, Outgoing, MAX_WORDS};
use std::collections::VecDeque;

pub(crate) struct Spill {
    queues: Vec<VecDeque<(u64, Vec<u64>)>>,
    /// Messages in all the queues.
    count: usize,
    /// Scratch encode buffer.
    words: Vec<u64>,
}

impl Spill {
    /// Queues for `destinations` nodes.
    pub(crate) fn new(destinations: usize) -> Spill {
        Spill {
            queues: (0..destinations).map(|_| VecDeque::new()).collect(),
            count: 0,
            words: Vec::with_capacity(MAX_WORDS),
        }
    }

    /// Nothing waits for `dst`: a new message to it may go straight out.
    #[inline]
    pub(crate) fn clear_for(&self, dst: usize) -> bool {
        self.queues[dst].is_empty()
    }

    /// Messages waiting, to every destination.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Queues `m` for `dst`, behind what waits for it already.
    pub(crate) fn push(&mut self, dst: usize, m: &Outgoing) {
        let meta = codec::encode(m, &mut self.words);
        self.queues[dst].push_back((meta, self.words.clone()));
        self.count += 1;
    }

    /// Offers every destination's waiting messages, in order, to `push`
    /// (which returns false when that destination takes no more now);
    /// `sent(dst)` is called for each one taken. True when none is left.
    pub(crate) fn flush(
        &mut self,
        mut push: impl FnMut(usize, u64, &[u64]) -> bool,
        mut sent: impl FnMut(u32),
    ) -> bool {
        for d in 0..self.queues.len() {
            while let Some((meta, words)) = self.queues[d].front() {
                if !push(d, *meta, words) {
                    break;
                }
                self.queues[d].pop_front();
                self.count -= 1;
                sent(d as u32);
            }
        }
        self.count == 0
    }
}
