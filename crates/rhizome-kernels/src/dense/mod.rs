//! Data-moving kernels of the unified-futures paper: quicksort ([`qsort`]), matrix
//! multiplication ([`matmul`]) and tiled LU ([`lu`]). Jobs carry their data (vectors, and
//! `Arc`s that cost nothing on this PE and are copied only when a job is stolen by another
//! PE).

pub mod lu;
pub mod matmul;
pub mod qsort;

use rhizome::rng::XorShift64;
use serde::{Deserialize, Serialize};

/// A reproducible pseudo-random stream of doubles in [0, 1).
pub fn random_doubles(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n).map(|_| rng.next_f64()).collect()
}

/// Doubles that travel between PEs as one block of bytes. Serde's default encodes a
/// `Vec<f64>` one number at a time, which for the megabytes these kernels move costs more
/// than the copy itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Doubles(pub Vec<f64>);

impl std::ops::Deref for Doubles {
    type Target = Vec<f64>;
    fn deref(&self) -> &Vec<f64> {
        &self.0
    }
}

impl std::ops::DerefMut for Doubles {
    fn deref_mut(&mut self) -> &mut Vec<f64> {
        &mut self.0
    }
}

impl Serialize for Doubles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(self.0.len() * 8);
        for x in &self.0 {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Doubles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Doubles;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes holding little-endian doubles")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Doubles, E> {
                if !bytes.len().is_multiple_of(8) {
                    return Err(E::invalid_length(bytes.len(), &"a multiple of 8 bytes"));
                }
                Ok(Doubles(
                    bytes
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8")))
                        .collect(),
                ))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<Doubles, E> {
                self.visit_bytes(&bytes)
            }
        }
        d.deserialize_bytes(Visit)
    }
}

/// A 64-bit FNV-1a hash of the bits of `v`: equal only for bit-identical outputs.
pub fn hash_bits(v: impl IntoIterator<Item = f64>) -> u64 {
    v.into_iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x100_0000_01b3)
    })
}
