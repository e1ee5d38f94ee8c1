//! What handlers and threads say about the node memory they touch: named
//! regions and the kind of access, so no one needs a platform's addresses.

use crate::ids::ThreadId;

/// Named regions of a node's memory, so handlers and threads can say what
/// they touch without knowing the platform's addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// The private data segment of a compute thread of this node (as large
    /// as one processor's cache).
    Segment(ThreadId),
    /// Protocol state kept by handlers (for example a per-block state table).
    ProtocolTable,
    /// Where a reply handler deposits data for a thread of this node.
    RecvBuffer(ThreadId),
    /// The node's global segment: the memory global pointers and spread
    /// arrays name (Split-C), which handlers for other nodes read and
    /// write, as large as the platform's model of it allows.
    Global,
    /// A shared-memory protocol's state at this node: a DSM's directory
    /// entries, kept by the library that names it (offsets are the
    /// library's own), which handlers read and write as they serve blocks.
    Directory,
    /// A shared-memory protocol's per-block access tags (fine-grain access
    /// control), in the same space as `Directory` and named by the same
    /// library's offsets: with a dispatch device they are the device's
    /// state, where the directory may be memory (`pdq.directory_in_memory`).
    AccessTags,
}

/// Whether a memory access reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    /// A write of every byte in the range, such as a handler depositing a
    /// whole block: a cache may claim a line the range covers whole
    /// without reading it first (an invalidation on the bus, no data), as
    /// the block stores and write hints of the time allowed. A line the
    /// range covers only in part is written as by `Write`.
    Overwrite,
}

impl Access {
    /// Whether the access changes memory.
    pub fn writes(self) -> bool {
        self != Access::Read
    }
}
