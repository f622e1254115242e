//! Word-level diffs of a page against its twin.
//!
//! A diff is a list of runs `(offset: u16, len: u16, bytes)`. The page is compared with its
//! twin eight bytes at a time; within a differing word only the bytes that differ are
//! taken, so two PEs that write different bytes of one word (a `u8` array split between
//! them) do not overwrite each other's bytes at the home.

/// Appends the diff of `page` against `twin` to `out`; returns the number of runs.
pub(crate) fn encode(twin: &[u8], page: &[u8], out: &mut Vec<u8>) -> usize {
    assert_eq!(twin.len(), page.len());
    assert!(page.len() <= u16::MAX as usize + 1 && page.len().is_multiple_of(8));
    let mut runs = 0;
    // The run being built: (start, end) in bytes.
    let mut run: Option<(usize, usize)> = None;
    let mut flush = |run: (usize, usize), out: &mut Vec<u8>| {
        out.extend_from_slice(&(run.0 as u16).to_le_bytes());
        out.extend_from_slice(&((run.1 - run.0) as u16).to_le_bytes());
        out.extend_from_slice(&page[run.0..run.1]);
        runs += 1;
    };
    for (w, (t, p)) in twin.chunks_exact(8).zip(page.chunks_exact(8)).enumerate() {
        let tw = u64::from_ne_bytes(t.try_into().expect("8 bytes"));
        let pw = u64::from_ne_bytes(p.try_into().expect("8 bytes"));
        if tw == pw {
            continue;
        }
        // Byte by byte inside a differing word: an unchanged byte between two changed
        // ones may be another writer's, and must not travel.
        for (b, _) in t.iter().zip(p).enumerate().filter(|(_, (x, y))| x != y) {
            let at = w * 8 + b;
            run = match run {
                Some((s, e)) if e == at => Some((s, at + 1)),
                Some(r) => {
                    flush(r, out);
                    Some((at, at + 1))
                }
                None => Some((at, at + 1)),
            };
        }
    }
    if let Some(r) = run {
        flush(r, out);
    }
    runs
}

/// Applies the runs of `diff` to `page`; returns the bytes written.
pub(crate) fn apply(diff: &[u8], page: &mut [u8]) -> usize {
    let mut input = diff;
    let mut bytes = 0;
    while input.len() >= 4 {
        let off = u16::from_le_bytes([input[0], input[1]]) as usize;
        let len = u16::from_le_bytes([input[2], input[3]]) as usize;
        let data = &input[4..4 + len];
        page[off..off + len].copy_from_slice(data);
        bytes += len;
        input = &input[4 + len..];
    }
    assert!(input.is_empty(), "rhizome: malformed diff");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_carries_exactly_the_changed_bytes() {
        let twin = vec![0u8; 4096];
        let mut page = twin.clone();
        page[3] = 1; // a byte inside a word
        page[5] = 1; // and another, with an unchanged byte between
        page[8..16].copy_from_slice(&[9; 8]); // a whole word, then the next one's start
        page[16] = 2;
        page[4095] = 7;
        let mut d = Vec::new();
        assert_eq!(
            encode(&twin, &page, &mut d),
            4,
            "runs: [3], [5], [8..17], [4095]"
        );
        // A target whose other bytes differ keeps them: only changed bytes travel.
        let mut target = vec![5u8; 4096];
        assert_eq!(apply(&d, &mut target), 1 + 1 + 9 + 1);
        assert_eq!(target[3], 1);
        assert_eq!(target[5], 1);
        assert_eq!(target[2], 5);
        assert_eq!(
            target[4], 5,
            "the unchanged byte between two changed ones stays"
        );
        assert_eq!(&target[8..17], &[9, 9, 9, 9, 9, 9, 9, 9, 2]);
        assert_eq!(target[17], 5);
        assert_eq!(target[4095], 7);
    }

    #[test]
    fn an_unchanged_page_has_an_empty_diff() {
        let twin = vec![3u8; 64];
        let mut d = Vec::new();
        assert_eq!(encode(&twin, &twin, &mut d), 0);
        assert!(d.is_empty());
    }
}
