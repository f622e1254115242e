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

/// How a [`Dsm`] is set up.
#[derive(Clone, Debug)]
pub struct DsmConfig {
    pub(crate) region_bytes: usize,
    pub(crate) threads: usize,
    pub(crate) homes: Homes,
    pub(crate) intervals: Intervals,
}

impl Default for DsmConfig {
    fn default() -> Self {
        DsmConfig {
            region_bytes: 256 << 20,
            threads: 1,
            homes: Homes::Block,
            intervals: Intervals::Lazy,
        }
    }
}

impl DsmConfig {
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
}
