//! The inter-replica wire protocol: a fixed 64-byte checksummed frame header followed by a checksummed body.
//!
//! Header layout (little endian): `checksum u128 | checksum_body u128 | cluster u64 | size_bytes u32 |
//! replica u8 | command u8 | version u16 | epoch u64 | reserved [u8; 8]`. `checksum` covers bytes 16..64 (and through
//! `checksum_body` the body). The receiver identifies the sender by `replica`, never by the connection, and the
//! sender's configuration by `epoch` (`replica::reconfiguration`: a message of another epoch is never taken for one
//! of its own).

use crate::checksum::checksum;
use crate::config::Members;
use crate::wal::entry::{Entry, EntryError};

/// Size of the frame header.
pub const FRAME_HEADER_SIZE_BYTES: usize = 64;
/// Upper bound on a frame body (an entry plus a few fields).
pub const FRAME_BODY_SIZE_MAX_BYTES: usize = 128 * 1024;
/// 2: heartbeats carry a lease round and are answered by `CommitOk` (read leases). 3: the header carries the sender's
/// epoch; `StartEpoch` and `RequestStartEpoch` (reconfiguration).
const PROTOCOL_VERSION: u16 = 3;

/// A message between replicas (VSR Revisited, plus repair and recovery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Primary -> backups: a new op to append.
    Prepare {
        /// Sender's view.
        view: u64,
        /// Primary's commit number.
        commit: u64,
        /// The entry (carries op, parent and checksums).
        entry: Entry,
    },
    /// Backup -> primary: every op up to `op` is durable in this backup's log (cumulative).
    PrepareOk {
        /// Sender's view.
        view: u64,
        /// The backup's head op.
        op: u64,
        /// Checksum of that op.
        checksum: u128,
    },
    /// Primary -> backups: heartbeat with the commit number and the primary's head op.
    Commit {
        /// Sender's view.
        view: u64,
        /// Primary's commit number.
        commit: u64,
        /// Primary's head op (lets a backup notice prepares it missed).
        op: u64,
        /// Heartbeat round of this view (increasing): a backup that grants the primary's read lease answers it with
        /// [`Message::CommitOk`] (0: the primary asks for no lease).
        round: u64,
    },
    /// Backup -> primary: heartbeat `round` of `view` arrived, and this backup promises not to take part in a view
    /// change for one lease (the view-change timeout, on its own clock) from that moment: a read-lease grant.
    CommitOk {
        /// The view of the heartbeat.
        view: u64,
        /// The heartbeat's round.
        round: u64,
    },
    /// Vote to move to `view`.
    StartViewChange {
        /// Proposed view.
        view: u64,
    },
    /// A replica's log summary, sent to the new primary.
    DoViewChange {
        /// New view.
        view: u64,
        /// View in which the sender's log was last normal.
        log_view: u64,
        /// Sender's head op.
        op: u64,
        /// Checksum of that op.
        checksum: u128,
        /// Sender's commit number.
        commit: u64,
        /// Sender's acknowledged mark: above `op` when its WAL lost entries it acknowledged.
        acked: u64,
    },
    /// New primary -> all: the view has started with this head.
    StartView {
        /// New view.
        view: u64,
        /// Head op of the new view's log.
        op: u64,
        /// Checksum of that op.
        checksum: u128,
        /// Commit number.
        commit: u64,
    },
    /// A replica (e.g. after restart) asks the primary of `view` or later for a StartView.
    RequestStartView {
        /// The sender's current view.
        view: u64,
    },
    /// Ask for verbatim copies of the entries in `from_op..=to_op`.
    RequestPrepares {
        /// First op.
        from_op: u64,
        /// Last op.
        to_op: u64,
    },
    /// A verbatim entry sent in answer to `RequestPrepares`.
    RepairPrepare {
        /// The entry.
        entry: Entry,
    },
    /// Ends the answer to a `RequestPrepares`.
    RepairDone {
        /// First op requested.
        from_op: u64,
        /// Last op requested.
        to_op: u64,
    },
    /// A wiped replica asks for the cluster's state.
    Recovery {
        /// Random nonce echoed in responses.
        nonce: u64,
    },
    /// Answer to `Recovery` from a replica in normal status.
    RecoveryResponse {
        /// Responder's view.
        view: u64,
        /// The nonce from the request.
        nonce: u64,
        /// Responder's head op.
        op: u64,
        /// Checksum of that op.
        checksum: u128,
        /// Responder's commit number.
        commit: u64,
        /// Whether the responder is the primary of `view`.
        primary: bool,
    },
    /// One piece of a checkpoint file, sent instead of prepares when the ops a `RequestPrepares` asks for are
    /// already compacted (state transfer). A file goes out as consecutive chunks from offset 0, then `RepairDone`.
    CheckpointChunk {
        /// The checkpoint's op.
        op: u64,
        /// The checksum of the whole file (its first 16 bytes).
        checksum: u128,
        /// The whole file's size.
        size: u64,
        /// Where this chunk starts in the file.
        offset: u64,
        /// The chunk, at most [`CHECKPOINT_CHUNK_SIZE_MAX_BYTES`].
        bytes: Vec<u8>,
    },
    /// Sent by a replica of `epoch` to one of an older epoch (or a joiner): `epoch` exists, with these members, and
    /// the sender's log holds the committed op `op` (checksum `checksum`), which is at or after the reconfiguration
    /// that started it. The receiver catches up to `op` from the sender and executes its way into the epoch.
    StartEpoch {
        /// The sender's epoch.
        epoch: u64,
        /// Its members.
        members: Members,
        /// A committed op of the sender's log at or after the start of `epoch`.
        op: u64,
        /// The checksum of that op.
        checksum: u128,
    },
    /// A replica that heard from a newer epoch asks the sender for a `StartEpoch`.
    RequestStartEpoch,
}

/// Most checkpoint bytes per [`Message::CheckpointChunk`] (well inside a frame body).
pub const CHECKPOINT_CHUNK_SIZE_MAX_BYTES: usize = 64 * 1024;

/// Why a frame was rejected (the connection is then closed).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Header checksum mismatch.
    #[error("frame header checksum mismatch: expected {expected:032x}, actual {actual:032x}")]
    HeaderChecksum {
        /// Stored.
        expected: u128,
        /// Computed.
        actual: u128,
    },
    /// Body checksum mismatch.
    #[error("frame body checksum mismatch: expected {expected:032x}, actual {actual:032x}")]
    BodyChecksum {
        /// Stored.
        expected: u128,
        /// Computed.
        actual: u128,
    },
    /// The frame belongs to another cluster.
    #[error("frame of cluster {actual}, expected cluster {expected}")]
    Cluster {
        /// Ours.
        expected: u64,
        /// Theirs.
        actual: u64,
    },
    /// Unsupported protocol version.
    #[error("unsupported protocol version {0}")]
    Version(u16),
    /// Body larger than allowed.
    #[error("frame body of {0} bytes exceeds {FRAME_BODY_SIZE_MAX_BYTES}")]
    TooLarge(u32),
    /// The body does not decode as the command says.
    #[error("malformed body for command {0}")]
    Malformed(u8),
    /// An embedded entry failed its checksums.
    #[error("embedded entry: {0}")]
    Entry(#[from] EntryError),
}

/// A verified frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Checksum of the body.
    pub checksum_body: u128,
    /// Body size.
    pub size_bytes: u32,
    /// Sender replica.
    pub replica: u8,
    /// Message command.
    pub command: u8,
    /// The sender's epoch.
    pub epoch: u64,
}

impl FrameHeader {
    /// Decodes and verifies a header (checksum, cluster, version, size bound).
    pub fn decode(bytes: &[u8; FRAME_HEADER_SIZE_BYTES], cluster: u64) -> Result<FrameHeader, FrameError> {
        let expected = u128::from_le_bytes(bytes[0..16].try_into().expect("16 bytes"));
        let actual = checksum(&bytes[16..]);
        if expected != actual {
            return Err(FrameError::HeaderChecksum { expected, actual });
        }
        let frame_cluster = u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes"));
        if frame_cluster != cluster {
            return Err(FrameError::Cluster {
                expected: cluster,
                actual: frame_cluster,
            });
        }
        let version = u16::from_le_bytes(bytes[46..48].try_into().expect("2 bytes"));
        if version != PROTOCOL_VERSION {
            return Err(FrameError::Version(version));
        }
        let size_bytes = u32::from_le_bytes(bytes[40..44].try_into().expect("4 bytes"));
        if size_bytes as usize > FRAME_BODY_SIZE_MAX_BYTES {
            return Err(FrameError::TooLarge(size_bytes));
        }
        Ok(FrameHeader {
            checksum_body: u128::from_le_bytes(bytes[16..32].try_into().expect("16 bytes")),
            size_bytes,
            replica: bytes[44],
            command: bytes[45],
            epoch: u64::from_le_bytes(bytes[48..56].try_into().expect("8 bytes")),
        })
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, value: u64) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn u128(&mut self, value: u128) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
}

struct Reader<'a>(&'a [u8], u8);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], FrameError> {
        if self.0.len() < N {
            return Err(FrameError::Malformed(self.1));
        }
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        Ok(head.try_into().expect("N bytes"))
    }
    fn u64(&mut self) -> Result<u64, FrameError> {
        Ok(u64::from_le_bytes(self.take::<8>()?))
    }
    fn u128(&mut self) -> Result<u128, FrameError> {
        Ok(u128::from_le_bytes(self.take::<16>()?))
    }
    fn rest(&mut self) -> Vec<u8> {
        let rest = self.0.to_vec();
        self.0 = &[];
        rest
    }
    fn entry(&mut self) -> Result<Entry, FrameError> {
        let entry = Entry::decode(self.0)?;
        self.0 = &[];
        Ok(entry)
    }
    fn finish<T>(&self, value: T) -> Result<T, FrameError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(FrameError::Malformed(self.1))
        }
    }
}

impl Message {
    /// The view a message of the view-change or normal protocol speaks for (`None` for repair, recovery and state
    /// transfer): a primary that hears of a higher view stops serving reads on its lease at once.
    pub fn view(&self) -> Option<u64> {
        match self {
            Message::Prepare { view, .. }
            | Message::PrepareOk { view, .. }
            | Message::Commit { view, .. }
            | Message::CommitOk { view, .. }
            | Message::StartViewChange { view }
            | Message::DoViewChange { view, .. }
            | Message::StartView { view, .. }
            | Message::RequestStartView { view }
            | Message::RecoveryResponse { view, .. } => Some(*view),
            Message::RequestPrepares { .. }
            | Message::RepairPrepare { .. }
            | Message::RepairDone { .. }
            | Message::Recovery { .. }
            | Message::CheckpointChunk { .. }
            | Message::StartEpoch { .. }
            | Message::RequestStartEpoch => None,
        }
    }

    fn command(&self) -> u8 {
        match self {
            Message::Prepare { .. } => 1,
            Message::PrepareOk { .. } => 2,
            Message::Commit { .. } => 3,
            Message::StartViewChange { .. } => 4,
            Message::DoViewChange { .. } => 5,
            Message::StartView { .. } => 6,
            Message::RequestStartView { .. } => 7,
            Message::RequestPrepares { .. } => 8,
            Message::RepairPrepare { .. } => 9,
            Message::RepairDone { .. } => 10,
            Message::Recovery { .. } => 11,
            Message::RecoveryResponse { .. } => 12,
            Message::CheckpointChunk { .. } => 13,
            Message::CommitOk { .. } => 14,
            Message::StartEpoch { .. } => 15,
            Message::RequestStartEpoch => 16,
        }
    }

    fn encode_body(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            Message::Prepare { view, commit, entry } => {
                w.u64(*view).u64(*commit).0.extend_from_slice(&entry.encode());
            }
            Message::PrepareOk { view, op, checksum } => {
                w.u64(*view).u64(*op).u128(*checksum);
            }
            Message::Commit {
                view,
                commit,
                op,
                round,
            } => {
                w.u64(*view).u64(*commit).u64(*op).u64(*round);
            }
            Message::CommitOk { view, round } => {
                w.u64(*view).u64(*round);
            }
            Message::StartViewChange { view } | Message::RequestStartView { view } => {
                w.u64(*view);
            }
            Message::DoViewChange {
                view,
                log_view,
                op,
                checksum,
                commit,
                acked,
            } => {
                w.u64(*view)
                    .u64(*log_view)
                    .u64(*op)
                    .u128(*checksum)
                    .u64(*commit)
                    .u64(*acked);
            }
            Message::StartView {
                view,
                op,
                checksum,
                commit,
            } => {
                w.u64(*view).u64(*op).u128(*checksum).u64(*commit);
            }
            Message::RequestPrepares { from_op, to_op } | Message::RepairDone { from_op, to_op } => {
                w.u64(*from_op).u64(*to_op);
            }
            Message::RepairPrepare { entry } => w.0.extend_from_slice(&entry.encode()),
            Message::Recovery { nonce } => {
                w.u64(*nonce);
            }
            Message::RecoveryResponse {
                view,
                nonce,
                op,
                checksum,
                commit,
                primary,
            } => {
                w.u64(*view)
                    .u64(*nonce)
                    .u64(*op)
                    .u128(*checksum)
                    .u64(*commit)
                    .0
                    .push(u8::from(*primary));
            }
            Message::CheckpointChunk {
                op,
                checksum,
                size,
                offset,
                bytes,
            } => {
                w.u64(*op)
                    .u128(*checksum)
                    .u64(*size)
                    .u64(*offset)
                    .0
                    .extend_from_slice(bytes);
            }
            Message::StartEpoch {
                epoch,
                members,
                op,
                checksum,
            } => {
                w.u64(*epoch).u64(u64::from(members.bits())).u64(*op).u128(*checksum);
            }
            Message::RequestStartEpoch => {}
        }
        w.0
    }

    /// Encodes a complete frame sent by `replica` of `cluster` in `epoch`.
    pub fn encode_frame(&self, cluster: u64, replica: u8, epoch: u64) -> Vec<u8> {
        let body = self.encode_body();
        assert!(
            body.len() <= FRAME_BODY_SIZE_MAX_BYTES,
            "frame body exceeds the maximum"
        );
        let mut frame = vec![0u8; FRAME_HEADER_SIZE_BYTES];
        frame[16..32].copy_from_slice(&checksum(&body).to_le_bytes());
        frame[32..40].copy_from_slice(&cluster.to_le_bytes());
        frame[40..44].copy_from_slice(&(body.len() as u32).to_le_bytes());
        frame[44] = replica;
        frame[45] = self.command();
        frame[46..48].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        frame[48..56].copy_from_slice(&epoch.to_le_bytes());
        let header_checksum = checksum(&frame[16..FRAME_HEADER_SIZE_BYTES]);
        frame[0..16].copy_from_slice(&header_checksum.to_le_bytes());
        frame.extend_from_slice(&body);
        frame
    }

    /// Decodes a body whose header was verified by [`FrameHeader::decode`].
    pub fn decode_body(header: &FrameHeader, body: &[u8]) -> Result<Message, FrameError> {
        let actual = checksum(body);
        if actual != header.checksum_body {
            return Err(FrameError::BodyChecksum {
                expected: header.checksum_body,
                actual,
            });
        }
        let mut r = Reader(body, header.command);
        let message = match header.command {
            1 => Message::Prepare {
                view: r.u64()?,
                commit: r.u64()?,
                entry: r.entry()?,
            },
            2 => Message::PrepareOk {
                view: r.u64()?,
                op: r.u64()?,
                checksum: r.u128()?,
            },
            3 => Message::Commit {
                view: r.u64()?,
                commit: r.u64()?,
                op: r.u64()?,
                round: r.u64()?,
            },
            4 => Message::StartViewChange { view: r.u64()? },
            5 => Message::DoViewChange {
                view: r.u64()?,
                log_view: r.u64()?,
                op: r.u64()?,
                checksum: r.u128()?,
                commit: r.u64()?,
                acked: r.u64()?,
            },
            6 => Message::StartView {
                view: r.u64()?,
                op: r.u64()?,
                checksum: r.u128()?,
                commit: r.u64()?,
            },
            7 => Message::RequestStartView { view: r.u64()? },
            8 => Message::RequestPrepares {
                from_op: r.u64()?,
                to_op: r.u64()?,
            },
            9 => Message::RepairPrepare { entry: r.entry()? },
            10 => Message::RepairDone {
                from_op: r.u64()?,
                to_op: r.u64()?,
            },
            11 => Message::Recovery { nonce: r.u64()? },
            12 => Message::RecoveryResponse {
                view: r.u64()?,
                nonce: r.u64()?,
                op: r.u64()?,
                checksum: r.u128()?,
                commit: r.u64()?,
                primary: r.take::<1>()?[0] != 0,
            },
            13 => {
                let (op, checksum, size, offset) = (r.u64()?, r.u128()?, r.u64()?, r.u64()?);
                let bytes = r.rest();
                if bytes.len() > CHECKPOINT_CHUNK_SIZE_MAX_BYTES {
                    return Err(FrameError::Malformed(13));
                }
                Message::CheckpointChunk {
                    op,
                    checksum,
                    size,
                    offset,
                    bytes,
                }
            }
            14 => Message::CommitOk {
                view: r.u64()?,
                round: r.u64()?,
            },
            15 => Message::StartEpoch {
                epoch: r.u64()?,
                members: Members::from_bits(r.u64()? as u16),
                op: r.u64()?,
                checksum: r.u128()?,
            },
            16 => Message::RequestStartEpoch,
            command => return Err(FrameError::Malformed(command)),
        };
        r.finish(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::entry::RequestIdentity;

    fn round_trip(message: Message) -> Result<Message, FrameError> {
        let frame = message.encode_frame(3, 1, 7);
        let header_bytes: [u8; FRAME_HEADER_SIZE_BYTES] = frame[..FRAME_HEADER_SIZE_BYTES].try_into().expect("64");
        let header = FrameHeader::decode(&header_bytes, 3)?;
        assert_eq!((header.replica, header.epoch), (1, 7));
        Message::decode_body(&header, &frame[FRAME_HEADER_SIZE_BYTES..])
    }

    #[test]
    fn given_each_message_when_framed_should_decode_to_itself() {
        let entry = Entry::new(
            3,
            5,
            2,
            9,
            RequestIdentity {
                client_id: 1,
                request_number: 2,
            },
            b"op".to_vec(),
        );
        let messages = [
            Message::Prepare {
                view: 2,
                commit: 4,
                entry: entry.clone(),
            },
            Message::PrepareOk {
                view: 2,
                op: 5,
                checksum: 77,
            },
            Message::Commit {
                view: 2,
                commit: 4,
                op: 5,
                round: 6,
            },
            Message::CommitOk { view: 2, round: 6 },
            Message::StartViewChange { view: 3 },
            Message::DoViewChange {
                view: 3,
                log_view: 2,
                op: 5,
                checksum: 8,
                commit: 4,
                acked: 7,
            },
            Message::StartView {
                view: 3,
                op: 5,
                checksum: 8,
                commit: 4,
            },
            Message::RequestStartView { view: 3 },
            Message::RequestPrepares { from_op: 1, to_op: 9 },
            Message::RepairPrepare { entry },
            Message::RepairDone { from_op: 1, to_op: 9 },
            Message::Recovery { nonce: 11 },
            Message::RecoveryResponse {
                view: 3,
                nonce: 11,
                op: 5,
                checksum: 8,
                commit: 4,
                primary: true,
            },
            Message::CheckpointChunk {
                op: 4096,
                checksum: 99,
                size: 70_000,
                offset: 65_536,
                bytes: vec![7; 4464],
            },
            Message::StartEpoch {
                epoch: 4,
                members: Members::from_ids([0, 2, 3]).expect("ids"),
                op: 812,
                checksum: 0xfeed,
            },
            Message::RequestStartEpoch,
        ];
        for message in messages {
            assert_eq!(round_trip(message.clone()).expect("decodes"), message);
        }
    }

    #[test]
    fn given_a_frame_of_another_cluster_when_decoding_should_reject_it() {
        let frame = Message::StartViewChange { view: 1 }.encode_frame(4, 0, 1);
        let header_bytes: [u8; FRAME_HEADER_SIZE_BYTES] = frame[..FRAME_HEADER_SIZE_BYTES].try_into().expect("64");
        assert!(matches!(
            FrameHeader::decode(&header_bytes, 3),
            Err(FrameError::Cluster { .. })
        ));
    }

    #[test]
    fn given_a_flipped_header_bit_when_decoding_should_reject_it() {
        let mut frame = Message::StartViewChange { view: 1 }.encode_frame(3, 0, 1);
        frame[45] ^= 1;
        let header_bytes: [u8; FRAME_HEADER_SIZE_BYTES] = frame[..FRAME_HEADER_SIZE_BYTES].try_into().expect("64");
        assert!(matches!(
            FrameHeader::decode(&header_bytes, 3),
            Err(FrameError::HeaderChecksum { .. })
        ));
    }
}
