//! How a [`crate::Dsm`] is set up: home assignment, interval policy, threads and region
//! size, kept apart from the machinery that uses them.

/// Which PE is the home of each page of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Homes {
    /// Contiguous blocks: the first `1/n` of the pages on PE 0, and so on.
    Block,
    /// Page `i` of the allocation on PE `i mod n`.
    Cyclic,
    /// Every page on one PE.
    Pe(usize),
    /// The first PE to touch a page (to write it, or to fetch it) becomes its home. Page
    /// `i` of the region has a *decider*, PE `i mod n`, that records the first claim; a
    /// PE asks it once per page (one round trip before its first write of the page) and
    /// remembers the answer.
    FirstTouch,
}

/// When an interval ends, and what happens to a page this PE is writing when another
/// PE's write notice names it (the paper's Table 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Intervals {
    /// Intervals end only when a lock's token leaves the PE and at barriers (a release
    /// whose lock stays on the PE ends none). A dirty page named by a notice at an
    /// acquire is updated by *two-way diffing*: its diff against the twin is kept, the
    /// home's copy is fetched into it and into the twin, and the kept diff is applied
    /// again, so the page stays writable and the diff goes home at the interval's end.
    #[default]
    Lazy,
    /// An interval also ends at every release and whenever a thread acquires a lock
    /// (before the notices are applied), so no dirty page is ever invalidated (the first
    /// HLRC's scheme).
    Aggressive,
}

/// How diffs or write notices travel between PEs (the paper's Table 2, which picks one
/// per application for each of the two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transfer {
    /// Packed into the protocol's messages: a diff message to the home, notices inside
    /// the lock grant or the barrier arrival.
    #[default]
    Message,
    /// Written with one-sided puts into memory the receiver set aside for them, then a
    /// short message says what landed: diffs go into a ring per writer at the home, which
    /// applies them on the message; notices go into the receiver's replica of the
    /// writer's *bins* stack, and the grant or arrival carries only where (see the
    /// `onesided` module).
    OneSided,
}

/// How a [`Dsm`] is set up. Every PE must use the same configuration.
#[derive(Clone, Debug)]
pub struct DsmConfig {
    pub(crate) region_bytes: usize,
    pub(crate) threads: usize,
    pub(crate) homes: Homes,
    pub(crate) intervals: Intervals,
    pub(crate) diffs: Transfer,
    pub(crate) notices: Transfer,
    pub(crate) ring_bytes: usize,
    pub(crate) bin_words: usize,
    #[cfg(feature = "failpoints")]
    pub(crate) notice_pause: std::time::Duration,
}

impl Default for DsmConfig {
    fn default() -> Self {
        DsmConfig {
            region_bytes: 256 << 20,
            threads: 1,
            homes: Homes::Block,
            intervals: Intervals::Lazy,
            diffs: Transfer::Message,
            notices: Transfer::Message,
            ring_bytes: 1 << 20,
            bin_words: 1 << 20,
            #[cfg(feature = "failpoints")]
            notice_pause: std::time::Duration::ZERO,
        }
    }
}

impl DsmConfig {
    /// Test hook (feature `failpoints`): applying a grant's write notices pauses this
    /// long between finding which of the named pages are read-only and closing them.
    /// Another thread's write fault must not open such a page in between (it would keep
    /// its old contents while the notice counts as applied); the pause turns a window of
    /// a few instructions into one that a test hits in every run, if the two steps ever
    /// stop being one hold of the page table's lock.
    #[cfg(feature = "failpoints")]
    pub fn notice_pause(mut self, d: std::time::Duration) -> Self {
        self.notice_pause = d;
        self
    }
    /// Size of the region's address range (reserved, not committed), rounded up to pages.
    pub fn region_bytes(mut self, n: usize) -> Self {
        self.region_bytes = n;
        self
    }
    /// Application threads per PE (at least 1).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }
    /// Home assignment of [`Dsm::alloc`] (default [`Homes::Block`]).
    pub fn homes(mut self, h: Homes) -> Self {
        self.homes = h;
        self
    }
    /// The interval policy (default [`Intervals::Lazy`]).
    pub fn intervals(mut self, i: Intervals) -> Self {
        self.intervals = i;
        self
    }
    /// How diffs reach their homes, and how write notices reach the next lock holder and
    /// the other PEs at a barrier (default [`Transfer::Message`] for both; the paper's
    /// Table 2 picks each per application).
    pub fn transfers(mut self, diffs: Transfer, notices: Transfer) -> Self {
        (self.diffs, self.notices) = (diffs, notices);
        self
    }
    /// Sizes of the memory one-sided transfers land in: `ring_bytes`, the ring each PE
    /// keeps for each writer's diffs (default 1 MiB, at least 64 KiB so that any page's
    /// diff fits; a writer whose ring at a home is full waits for the home to apply what
    /// is in it), and `bin_words`, the 32-bit words of each PE's replica of each PE's bins
    /// stack (default 1 Mi, at least 1 Ki; a cyclic buffer, as in the paper: an interval
    /// takes one word plus one per page it wrote, and the notices of two barrier epochs
    /// must fit, or the run ends with an error naming this setting).
    pub fn one_sided_sizes(mut self, ring_bytes: usize, bin_words: usize) -> Self {
        self.ring_bytes = ring_bytes.max(64 << 10);
        self.bin_words = bin_words.max(1024);
        self
    }
}
