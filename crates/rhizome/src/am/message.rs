//! Compact byte encoding of active-message payloads.
//!
//! A [`Message`] writes itself as little-endian bytes with no framing or tags, so an 8-byte
//! histogram increment costs 8 bytes plus the 2-byte handler id on the wire. Implemented for
//! integers, floats, `bool`, `char`, `()`, tuples up to 4, arrays, `Vec<T>`, `String` and
//! `Option<T>`; implement it for your own types by encoding their fields in order.
//!
//! ```
//! use rhizome::message::Message;
//! let mut buf = Vec::new();
//! (7u32, vec![1u64, 2]).encode(&mut buf);
//! let mut input = &buf[..];
//! assert_eq!(<(u32, Vec<u64>)>::decode(&mut input), (7, vec![1, 2]));
//! assert!(input.is_empty());
//! ```

/// A value that can travel in an active message.
pub trait Message: Sized + 'static {
    /// Appends the encoding of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads one value from the front of `input` and advances it past the value.
    ///
    /// Panics (with a clear message) if `input` does not hold a valid encoding; the runtime
    /// only decodes what the matching `encode` wrote.
    fn decode(input: &mut &[u8]) -> Self;
}

/// Appends what `write` writes, preceded by its length as a `u64`: the framing of a
/// payload that its receiver keeps or hands on as bytes without knowing its type. The
/// bytes are the encoding of a `Vec<u8>`; [`take_prefixed`] reads them back.
pub(crate) fn encode_prefixed(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 8]);
    write(out);
    let n = (out.len() - at - 8) as u64;
    out[at..at + 8].copy_from_slice(&n.to_le_bytes());
}

/// Reads a payload written by [`encode_prefixed`] from the front of `input`.
pub(crate) fn take_prefixed<'a>(input: &mut &'a [u8]) -> &'a [u8] {
    let n = u64::decode(input);
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    take(input, n)
}

#[inline]
fn take<'a>(input: &mut &'a [u8], n: usize) -> &'a [u8] {
    assert!(
        input.len() >= n,
        "rhizome: message decode ran past the end of the buffer (needed {n} bytes, {} left)",
        input.len()
    );
    let (head, tail) = input.split_at(n);
    *input = tail;
    head
}

macro_rules! num_message {
    ($($t:ty),*) => {$(
        impl Message for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn decode(input: &mut &[u8]) -> Self {
                const N: usize = std::mem::size_of::<$t>();
                let bytes: [u8; N] = take(input, N).try_into().expect("length checked");
                <$t>::from_le_bytes(bytes)
            }
        }
    )*};
}
num_message!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl Message for usize {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out)
    }
    #[inline]
    fn decode(input: &mut &[u8]) -> Self {
        u64::decode(input) as usize
    }
}

impl Message for bool {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self as u8)
    }
    #[inline]
    fn decode(input: &mut &[u8]) -> Self {
        take(input, 1)[0] != 0
    }
}

impl Message for char {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u32).encode(out)
    }
    fn decode(input: &mut &[u8]) -> Self {
        char::from_u32(u32::decode(input)).expect("rhizome: invalid char in message")
    }
}

impl Message for () {
    #[inline]
    fn encode(&self, _: &mut Vec<u8>) {}
    #[inline]
    fn decode(_: &mut &[u8]) -> Self {}
}

macro_rules! tuple_message {
    ($($n:tt $t:ident),*) => {
        impl<$($t: Message),*> Message for ($($t,)*) {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                $(self.$n.encode(out);)*
            }
            #[inline]
            fn decode(input: &mut &[u8]) -> Self {
                ($($t::decode(input),)*)
            }
        }
    };
}
tuple_message!(0 A);
tuple_message!(0 A, 1 B);
tuple_message!(0 A, 1 B, 2 C);
tuple_message!(0 A, 1 B, 2 C, 3 D);

impl<T: Message, const N: usize> Message for [T; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        for x in self {
            x.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        std::array::from_fn(|_| T::decode(input))
    }
}

impl<T: Message> Message for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        for x in self {
            x.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        let n = u64::decode(input) as usize;
        // Do not trust `n` for the allocation: a bad length must fail in `take`, not abort.
        let mut v = Vec::with_capacity(n.min(input.len()));
        for _ in 0..n {
            v.push(T::decode(input));
        }
        v
    }
}

impl Message for String {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Self {
        let n = u64::decode(input) as usize;
        String::from_utf8(take(input, n).to_vec()).expect("rhizome: invalid UTF-8 in message")
    }
}

impl<T: Message> Message for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(x) => {
                out.push(1);
                x.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        if bool::decode(input) {
            Some(T::decode(input))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefixed_payload_reads_back_as_bytes_and_as_a_vec() {
        let mut buf = vec![9u8];
        encode_prefixed(&mut buf, |out| (5u32, true).encode(out));
        encode_prefixed(&mut buf, |_| {});
        let mut input = &buf[1..];
        let mut payload = take_prefixed(&mut input);
        assert_eq!(<(u32, bool)>::decode(&mut payload), (5, true));
        assert!(payload.is_empty());
        assert_eq!(Vec::<u8>::decode(&mut input), Vec::<u8>::new());
        assert!(input.is_empty());
        let mut again = &buf[1..];
        assert_eq!(Vec::<u8>::decode(&mut again), vec![5, 0, 0, 0, 1]);
    }

    #[test]
    #[should_panic(expected = "ran past the end")]
    fn a_length_beyond_the_buffer_panics_with_a_message() {
        let mut buf = Vec::new();
        100u64.encode(&mut buf);
        take_prefixed(&mut &buf[..]);
    }
}
