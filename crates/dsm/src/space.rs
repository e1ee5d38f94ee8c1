//! The global address space: shared arrays laid out page by page, each
//! page homed on one node, coherence kept per block inside pages.
//!
//! Addresses are word numbers (8-byte words) from 0; a page holds
//! `page_bytes / 8` words and `page_bytes / block_bytes` blocks. Every
//! allocation starts on a page boundary, so arrays never share a page
//! (nor a block) and a page's home is the allocation's choice.

use crate::Home;

/// Where every page lives and how blocks and words map onto pages.
#[derive(Clone, Debug)]
pub(crate) struct Space {
    pub nodes: u32,
    pub block_words: u64,
    pub page_words: u64,
    /// Home node of each page.
    pub page_home: Vec<u32>,
    /// Each page's index among its home's pages (where its directory
    /// entries sit at the home).
    pub page_slot: Vec<u32>,
    /// Pages homed on each node.
    pub home_pages: Vec<u32>,
    /// Initial contents of allocations made with values: (first page,
    /// words).
    pub images: Vec<(u64, std::sync::Arc<[u64]>)>,
}

impl Space {
    pub fn new(nodes: u32, block_bytes: u32, page_bytes: u32) -> Space {
        Space {
            nodes,
            block_words: block_bytes as u64 / 8,
            page_words: page_bytes as u64 / 8,
            page_home: Vec::new(),
            page_slot: Vec::new(),
            home_pages: vec![0; nodes as usize],
            images: Vec::new(),
        }
    }

    pub fn pages(&self) -> u64 {
        self.page_home.len() as u64
    }

    pub fn words(&self) -> u64 {
        self.pages() * self.page_words
    }

    pub fn blocks(&self) -> u64 {
        self.words() / self.block_words
    }

    pub fn blocks_per_page(&self) -> u64 {
        self.page_words / self.block_words
    }

    /// Appends `words` words of pages homed as `home` says; returns the
    /// first word.
    pub fn alloc(&mut self, words: u64, home: Home) -> u64 {
        let base = self.words();
        let pages = words.div_ceil(self.page_words).max(1);
        let first = self.pages();
        for i in 0..pages {
            let node = self.home_of_new(first, i, pages, home);
            self.page_slot.push(self.home_pages[node as usize]);
            self.home_pages[node as usize] += 1;
            self.page_home.push(node);
        }
        base
    }

    fn home_of_new(&self, first: u64, i: u64, pages: u64, home: Home) -> u32 {
        match home {
            Home::Node(n) => n % self.nodes,
            Home::RoundRobin => ((first + i) % self.nodes as u64) as u32,
            Home::Blocked => (i * self.nodes as u64 / pages) as u32,
        }
    }

    pub fn page_of_word(&self, word: u64) -> u64 {
        word / self.page_words
    }

    pub fn block_of_word(&self, word: u64) -> u64 {
        word / self.block_words
    }

    pub fn page_of_block(&self, block: u64) -> u64 {
        block / self.blocks_per_page()
    }

    pub fn home_of_block(&self, block: u64) -> u32 {
        self.page_home[self.page_of_block(block) as usize]
    }

    /// Index of a block's directory entry among its home's entries.
    pub fn dir_slot(&self, block: u64) -> usize {
        let page = self.page_of_block(block);
        (self.page_slot[page as usize] as u64 * self.blocks_per_page() + block % self.blocks_per_page()) as usize
    }

    /// A page's initial words (zeros unless an allocation gave values).
    pub fn initial_page(&self, page: u64) -> Vec<u64> {
        let mut words = vec![0u64; self.page_words as usize];
        let start = page * self.page_words;
        for (base, values) in &self.images {
            let end = base + values.len() as u64;
            if start + self.page_words <= *base || start >= end {
                continue;
            }
            for (w, slot) in words.iter_mut().enumerate() {
                let a = start + w as u64;
                if a >= *base && a < end {
                    *slot = values[(a - base) as usize];
                }
            }
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_pages_split_evenly_and_slots_count_per_home() {
        let mut s = Space::new(4, 64, 4096);
        let a = s.alloc(8 * 512, Home::Blocked);
        assert_eq!(a, 0);
        assert_eq!(s.page_home, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(s.page_slot, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        let b = s.alloc(3, Home::RoundRobin);
        assert_eq!(b, 8 * 512);
        assert_eq!(s.page_home[8], 0);
        assert_eq!(s.page_slot[8], 2);
        assert_eq!(s.dir_slot(s.blocks_per_page() * 8 + 1), 2 * 64 + 1);
        assert_eq!(s.home_of_block(64 * 3), 1);
    }
}
