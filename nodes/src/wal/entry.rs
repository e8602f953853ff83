//! The WAL entry format: a fixed 96-byte header followed by the body (an encoded client operation).
//!
//! Layout (little endian):
//! `checksum u128 | checksum_body u128 | parent u128 | cluster u64 | op u64 | view u64 | client_id u64 |
//! request_number u64 | size_bytes u32 | reserved [u8; 4]`.
//! `checksum` covers bytes 16..96 of the header, so it also covers `checksum_body` and thereby the body.

use crate::checksum::checksum;

/// Size of an encoded entry header.
pub const HEADER_SIZE_BYTES: usize = 96;
/// Upper bound on an entry body: anything larger is rejected on write and treated as corruption on read.
pub const BODY_SIZE_MAX_BYTES: usize = 64 * 1024;

/// The fixed-size header of one WAL entry (one prepared op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    /// Checksum of the rest of the header.
    pub checksum: u128,
    /// Checksum of the body.
    pub checksum_body: u128,
    /// Checksum of the entry at `op - 1` (the root checksum for op 1).
    pub parent: u128,
    /// Cluster the entry belongs to.
    pub cluster: u64,
    /// Op number (1-based).
    pub op: u64,
    /// View in which the op was prepared.
    pub view: u64,
    /// Client identity (0 = anonymous, never deduplicated).
    pub client_id: u64,
    /// Client request number (meaningful only when `client_id != 0`).
    pub request_number: u64,
    /// Body size.
    pub size_bytes: u32,
}

/// One WAL entry: header plus body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The header (checksums, op, view, parent, client identity).
    pub header: EntryHeader,
    /// The encoded operation.
    pub body: Vec<u8>,
}

/// Why a header could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer than [`HEADER_SIZE_BYTES`] bytes were available.
    #[error("incomplete header ({available_bytes} of {HEADER_SIZE_BYTES} bytes)")]
    Incomplete {
        /// Bytes that were present.
        available_bytes: usize,
    },
    /// The stored header checksum does not match the header bytes.
    #[error("header checksum mismatch: expected {expected:032x}, actual {actual:032x}")]
    Checksum {
        /// Checksum stored in the header.
        expected: u128,
        /// Checksum computed over the header bytes.
        actual: u128,
    },
    /// The header is intact but claims a body larger than [`BODY_SIZE_MAX_BYTES`].
    #[error("body size {size_bytes} exceeds the maximum {BODY_SIZE_MAX_BYTES}")]
    BodyTooLarge {
        /// The claimed size.
        size_bytes: u32,
    },
}

fn read_u128(bytes: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(bytes[at..at + 16].try_into().expect("slice of 16 bytes"))
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("slice of 8 bytes"))
}

impl EntryHeader {
    /// Encodes the header; `checksum` is written as stored (call [`Entry::new`] to compute it).
    pub fn encode(&self) -> [u8; HEADER_SIZE_BYTES] {
        let mut out = [0u8; HEADER_SIZE_BYTES];
        out[0..16].copy_from_slice(&self.checksum.to_le_bytes());
        out[16..32].copy_from_slice(&self.checksum_body.to_le_bytes());
        out[32..48].copy_from_slice(&self.parent.to_le_bytes());
        out[48..56].copy_from_slice(&self.cluster.to_le_bytes());
        out[56..64].copy_from_slice(&self.op.to_le_bytes());
        out[64..72].copy_from_slice(&self.view.to_le_bytes());
        out[72..80].copy_from_slice(&self.client_id.to_le_bytes());
        out[80..88].copy_from_slice(&self.request_number.to_le_bytes());
        out[88..92].copy_from_slice(&self.size_bytes.to_le_bytes());
        out
    }

    /// Computes the checksum this header should carry.
    pub fn compute_checksum(&self) -> u128 {
        checksum(&self.encode()[16..])
    }

    /// Decodes and verifies a header.
    pub fn decode(bytes: &[u8]) -> Result<EntryHeader, HeaderError> {
        let header = EntryHeader::decode_unverified(bytes)?;
        let actual = checksum(&bytes[16..HEADER_SIZE_BYTES]);
        if actual != header.checksum {
            return Err(HeaderError::Checksum {
                expected: header.checksum,
                actual,
            });
        }
        if header.size_bytes as usize > BODY_SIZE_MAX_BYTES {
            return Err(HeaderError::BodyTooLarge {
                size_bytes: header.size_bytes,
            });
        }
        Ok(header)
    }

    /// Reads the header fields without verifying anything (the correct code always verifies; only the
    /// `boot-skips-verification` mutant skips it); fails only when fewer than [`HEADER_SIZE_BYTES`] bytes are present.
    pub fn decode_unverified(bytes: &[u8]) -> Result<EntryHeader, HeaderError> {
        if bytes.len() < HEADER_SIZE_BYTES {
            return Err(HeaderError::Incomplete {
                available_bytes: bytes.len(),
            });
        }
        let bytes = &bytes[..HEADER_SIZE_BYTES];
        Ok(EntryHeader {
            checksum: read_u128(bytes, 0),
            checksum_body: read_u128(bytes, 16),
            parent: read_u128(bytes, 32),
            cluster: read_u64(bytes, 48),
            op: read_u64(bytes, 56),
            view: read_u64(bytes, 64),
            client_id: read_u64(bytes, 72),
            request_number: read_u64(bytes, 80),
            size_bytes: u32::from_le_bytes(bytes[88..92].try_into().expect("slice of 4 bytes")),
        })
    }
}

/// The identity of the client request an entry carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestIdentity {
    /// Client id (0 = anonymous).
    pub client_id: u64,
    /// Request number within that client's session.
    pub request_number: u64,
}

impl Entry {
    /// Builds an entry with both checksums computed.
    pub fn new(cluster: u64, op: u64, view: u64, parent: u128, request: RequestIdentity, body: Vec<u8>) -> Entry {
        assert!(op > 0, "op 0 is the virtual root");
        assert!(
            body.len() <= BODY_SIZE_MAX_BYTES,
            "entry body exceeds BODY_SIZE_MAX_BYTES"
        );
        let mut header = EntryHeader {
            checksum: 0,
            checksum_body: checksum(&body),
            parent,
            cluster,
            op,
            view,
            client_id: request.client_id,
            request_number: request.request_number,
            size_bytes: body.len() as u32,
        };
        header.checksum = header.compute_checksum();
        Entry { header, body }
    }

    /// The encoded size on disk or on the wire.
    pub fn size_bytes(&self) -> usize {
        HEADER_SIZE_BYTES + self.body.len()
    }

    /// Encodes header and body, ready to append.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size_bytes());
        out.extend_from_slice(&self.header.encode());
        out.extend_from_slice(&self.body);
        out
    }

    /// Decodes an entry from exactly its encoded bytes, verifying both checksums.
    pub fn decode(bytes: &[u8]) -> Result<Entry, EntryError> {
        let header = EntryHeader::decode(bytes)?;
        let body = &bytes[HEADER_SIZE_BYTES..];
        if body.len() != header.size_bytes as usize {
            return Err(EntryError::BodySize {
                expected: header.size_bytes,
                actual: body.len(),
            });
        }
        let actual = checksum(body);
        if actual != header.checksum_body {
            return Err(EntryError::BodyChecksum {
                expected: header.checksum_body,
                actual,
            });
        }
        Ok(Entry {
            header,
            body: body.to_vec(),
        })
    }

    /// The request identity carried by this entry.
    pub fn request(&self) -> RequestIdentity {
        RequestIdentity {
            client_id: self.header.client_id,
            request_number: self.header.request_number,
        }
    }
}

/// Why an entry could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The header is invalid.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The body length differs from the header's `size_bytes`.
    #[error("body size mismatch: header says {expected} bytes, got {actual}")]
    BodySize {
        /// Size from the header.
        expected: u32,
        /// Bytes present.
        actual: usize,
    },
    /// The body checksum does not match.
    #[error("body checksum mismatch: expected {expected:032x}, actual {actual:032x}")]
    BodyChecksum {
        /// Checksum stored in the header.
        expected: u128,
        /// Checksum computed over the body.
        actual: u128,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_an_entry_when_encoded_and_decoded_should_round_trip() {
        let entry = Entry::new(
            7,
            3,
            1,
            42,
            RequestIdentity {
                client_id: 9,
                request_number: 2,
            },
            b"hello".to_vec(),
        );
        assert_eq!(Entry::decode(&entry.encode()), Ok(entry));
    }

    #[test]
    fn given_a_flipped_body_byte_when_decoded_should_report_body_checksum() {
        let entry = Entry::new(7, 3, 1, 42, RequestIdentity::default(), b"hello".to_vec());
        let mut bytes = entry.encode();
        bytes[HEADER_SIZE_BYTES] ^= 1;
        assert!(matches!(Entry::decode(&bytes), Err(EntryError::BodyChecksum { .. })));
    }
}
