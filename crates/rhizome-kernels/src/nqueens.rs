//! The N-queens problem: counting the placements of N non-attacking queens, row by row
//! with bit masks of the attacked columns and diagonals.

use rhizome::tasks::{Future, Job, TaskCtx};
use serde::{Deserialize, Serialize};

/// Known numbers of N-queens solutions, N = 0..=16.
pub const SOLUTIONS: [u64; 17] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
];

/// Solutions below a partial placement, sequentially: `all` has the N low bits set,
/// `cols` the occupied columns, `d1`/`d2` the attacked diagonals of the next row.
pub fn count_seq(all: u32, cols: u32, d1: u32, d2: u32) -> u64 {
    if cols == all {
        return 1;
    }
    let mut free = all & !(cols | d1 | d2);
    let mut count = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        count += count_seq(all, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
    }
    count
}

/// Solutions of the `n`-queens problem, sequentially.
pub fn solutions_seq(n: u32) -> u64 {
    count_seq((1u32 << n) - 1, 0, 0, 0)
}

/// Solutions below a partial placement as futures: one job per free column of the next
/// row, sequential once `cutoff` rows are placed.
#[derive(Serialize, Deserialize)]
pub struct Queens {
    /// The N low bits set.
    pub all: u32,
    /// Occupied columns.
    pub cols: u32,
    /// Diagonals attacked in the next row, one direction.
    pub d1: u32,
    /// Diagonals attacked in the next row, the other direction.
    pub d2: u32,
    /// Rows placed in parallel; below them the job counts sequentially.
    pub cutoff: u32,
}

impl Queens {
    /// The empty board of the `n`-queens problem.
    pub fn board(n: u32, cutoff: u32) -> Queens {
        Queens {
            all: (1u32 << n) - 1,
            cols: 0,
            d1: 0,
            d2: 0,
            cutoff,
        }
    }
}

impl Job for Queens {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.cols.count_ones() >= self.cutoff || self.cols == self.all {
            return count_seq(self.all, self.cols, self.d1, self.d2);
        }
        let mut free = self.all & !(self.cols | self.d1 | self.d2);
        let mut kids: Vec<Future<u64>> = Vec::new();
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            kids.push(t.spawn(Queens {
                all: self.all,
                cols: self.cols | bit,
                d1: (self.d1 | bit) << 1,
                d2: (self.d2 | bit) >> 1,
                cutoff: self.cutoff,
            }));
        }
        kids.iter().rev().map(|f| f.get()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequential_count_matches_the_known_numbers() {
        for n in 1..=10 {
            assert_eq!(solutions_seq(n), SOLUTIONS[n as usize], "n = {n}");
        }
    }
}
