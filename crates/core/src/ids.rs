//! Small typed identifiers, so a node index is never passed where a thread
//! index was meant.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A node of the cluster (one SMP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

/// A compute thread, numbered within its node (0 .. compute threads per node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ThreadId(pub u32);

/// Index of a handler in a [`crate::HandlerTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HandlerId(pub u16);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl ThreadId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl HandlerId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread {}", self.0)
    }
}
