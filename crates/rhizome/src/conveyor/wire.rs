//! The wire format of a conveyor and its receiving side.
//!
//! A conveyor sends whole batches straight through the transport's message layer: each
//! buffer holds exactly one active message for the conveyor's handler, `id | kind |
//! count | items`, with the items as their raw bytes. The handler copies a batch into a
//! typed vector that [`Inbox`] keeps until the owner pulls it, and counts credits and
//! final batches.

use crate::am::registry::Handler;
use crate::memory::Pod;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Weak;

/// Message kinds (the byte after the handler id).
pub(super) const BATCH: u8 = 0;
/// The last batch from its source in this round (possibly empty).
pub(super) const FINAL: u8 = 1;
/// `count` batches from the receiver of this message have been pulled: that many more may
/// be sent to it.
pub(super) const CREDIT: u8 = 2;

/// Bytes before the first item: handler id (2), kind (1), count (4).
pub(super) const HEADER: usize = 7;

/// Writes a header for `count` items (or credits) of `kind` at the start of `buf`.
pub(super) fn write_header(buf: &mut [u8], id: u16, kind: u8, count: u32) {
    buf[..2].copy_from_slice(&id.to_le_bytes());
    buf[2] = kind;
    buf[3..HEADER].copy_from_slice(&count.to_le_bytes());
}

/// The bytes of one item.
#[inline]
pub(crate) fn item_bytes<T: Pod>(item: &T) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so all `size_of::<T>()` bytes are initialised.
    unsafe { std::slice::from_raw_parts(item as *const T as *const u8, size_of::<T>()) }
}

/// Appends the bytes of `item` to `buf`. A lane's buffer is made with room for its
/// header and every item it may hold, so this is one unaligned store; a buffer without
/// room grows as `extend_from_slice` would make it.
#[inline]
pub(crate) fn append_item<T: Pod>(buf: &mut Vec<u8>, item: T) {
    let len = buf.len();
    if buf.capacity() - len < size_of::<T>() {
        buf.extend_from_slice(item_bytes(&item));
        return;
    }
    // SAFETY: the buffer has room for the item's bytes (checked above). `T: Pod` has no
    // padding, so every byte up to the new length is initialised. The write is unaligned
    // because the buffer's bytes have no particular alignment.
    unsafe {
        std::ptr::write_unaligned(buf.as_mut_ptr().add(len) as *mut T, item);
        buf.set_len(len + size_of::<T>());
    }
}

/// A received batch, pulled from the front.
pub(super) struct Batch<T> {
    pub(super) src: usize,
    pub(super) items: Vec<T>,
    pub(super) next: usize,
}

/// What the handler has received for one conveyor on this PE.
pub(super) struct Inbox<T> {
    /// Batches not yet pulled, in arrival order.
    pub(super) batches: VecDeque<Batch<T>>,
    /// Final batches received this round (one per source PE).
    pub(super) finals: usize,
    /// Credits received from each destination, not yet applied to its lane.
    pub(super) credits: Vec<u32>,
    /// Emptied item vectors, reused for the next batches.
    pub(super) spare: Vec<Vec<T>>,
}

impl<T: Pod> Inbox<T> {
    pub(super) fn new(pes: usize) -> Inbox<T> {
        Inbox {
            batches: VecDeque::new(),
            finals: 0,
            credits: vec![0; pes],
            spare: Vec::new(),
        }
    }

    /// Takes one message (after its handler id) from the front of `input`.
    fn receive(&mut self, src: usize, input: &mut &[u8]) {
        let kind = input[0];
        let count = u32::from_le_bytes(input[1..5].try_into().expect("4 bytes")) as usize;
        *input = &input[5..];
        if kind == CREDIT {
            self.credits[src] += count as u32;
            return;
        }
        let bytes = count * size_of::<T>();
        let (data, rest) = input.split_at(bytes);
        *input = rest;
        let mut items = self.spare.pop().unwrap_or_default();
        items.clear();
        items.reserve(count);
        // SAFETY: `items` has room for `count` elements (reserved above), `data` holds
        // exactly their `count * size_of::<T>()` bytes, and the regions are distinct.
        // `T: Pod` accepts every bit pattern, so the elements are valid once copied.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), items.as_mut_ptr() as *mut u8, bytes);
            items.set_len(count);
        }
        // An empty batch (a final one) is pulled at once: its credit goes back with the
        // next advance like any other.
        self.batches.push_back(Batch {
            src,
            items,
            next: 0,
        });
        if kind == FINAL {
            self.finals += 1;
        }
    }
}

/// The handler of a conveyor: it feeds the inbox while the conveyor lives, and drops
/// what arrives for a conveyor that was dropped mid-round.
pub(super) fn handler<T: Pod>(inbox: Weak<RefCell<Inbox<T>>>) -> Handler {
    Box::new(move |_ctx, src, input| match inbox.upgrade() {
        Some(inbox) => inbox.borrow_mut().receive(src, input),
        None => *input = &[],
    })
}
