//! The replicated state machine: key-value registers, append-only logs, and the client table that deduplicates
//! retried requests. Every replica applies the same committed entries in op order, so all of this is identical
//! across replicas.
//!
//! Transactions ([`Operation::Txn`]) are one entry each, so they execute atomically and in the log's order (strict
//! serializability comes from the log). Their micro-ops share the keyspaces of the other operations: a list-append
//! `append` adds to the log of that name, an rw-register `w` sets the register of that name (values are integers,
//! stored as their decimal text), and a read returns the key's log as a list of integers if it has one, else its
//! register as an integer, else `null`.
//!
//! A bank transfer needs three more micro-ops on integer registers (balances): `init` sets a register that holds
//! nothing yet, `credit` adds to it, and `debit` takes from it, or aborts the whole transaction, with nothing applied,
//! when the register holds less (a missing register holds 0). How a transaction runs is in `state_machine/txn.rs`.

mod txn;

pub use txn::ReceiptTxn;

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::wal::entry::Entry;

/// Most entries a single log read returns.
pub const LOG_READ_LIMIT_MAX: u64 = 1000;
/// Most clients remembered by the client table; the least recently active is evicted beyond that.
pub const CLIENT_TABLE_SIZE_MAX: usize = 4096;

/// A client operation, as carried in a WAL entry body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Read a register.
    Get {
        /// Register key.
        key: String,
    },
    /// Write a register.
    Put {
        /// Register key.
        key: String,
        /// New value.
        value: String,
    },
    /// Compare-and-set a register.
    Cas {
        /// Register key.
        key: String,
        /// Expected current value.
        from: String,
        /// New value.
        to: String,
    },
    /// Append to a log.
    Append {
        /// Log name.
        name: String,
        /// Value to append.
        value: String,
    },
    /// Read a range of a log.
    ReadLog {
        /// Log name.
        name: String,
        /// First offset.
        from: u64,
        /// Most entries to return.
        limit: u64,
    },
    /// Run micro-ops atomically, in order.
    Txn {
        /// The micro-ops (at least one).
        ops: Vec<TxnOp>,
    },
}

/// One micro-op of a transaction (the client protocol's `["append", k, v]`, `["w", k, v]`, `["r", k, null]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOp {
    /// Append `value` to the log `key`.
    Append {
        /// Log name.
        key: String,
        /// Value appended.
        value: i64,
    },
    /// Set the register `key` to `value`.
    Write {
        /// Register key.
        key: String,
        /// Value written.
        value: i64,
    },
    /// Read `key`.
    Read {
        /// Key read.
        key: String,
    },
    /// Set the integer register `key` to `value` if it holds nothing yet (a bank's opening balance).
    Init {
        /// Register key.
        key: String,
        /// Value it starts with.
        value: i64,
    },
    /// Add `amount` to the integer register `key` (a missing register holds 0).
    Credit {
        /// Register key.
        key: String,
        /// Amount added.
        amount: i64,
    },
    /// Take `amount` from the integer register `key`; the whole transaction aborts, with nothing applied, when it
    /// holds less.
    Debit {
        /// Register key.
        key: String,
        /// Amount taken.
        amount: i64,
    },
}

impl TxnOp {
    /// The key it touches.
    pub fn key(&self) -> &str {
        match self {
            TxnOp::Append { key, .. }
            | TxnOp::Write { key, .. }
            | TxnOp::Read { key }
            | TxnOp::Init { key, .. }
            | TxnOp::Credit { key, .. }
            | TxnOp::Debit { key, .. } => key,
        }
    }

    /// `["append", k, v]` and the like, with `read` as a read's value.
    pub fn to_json(&self, read: Value) -> Value {
        match self {
            TxnOp::Append { key, value } => json!(["append", key, value]),
            TxnOp::Write { key, value } => json!(["w", key, value]),
            TxnOp::Read { key } => json!(["r", key, read]),
            TxnOp::Init { key, value } => json!(["init", key, value]),
            TxnOp::Credit { key, amount } => json!(["credit", key, amount]),
            TxnOp::Debit { key, amount } => json!(["debit", key, amount]),
        }
    }

    /// A micro-op from its JSON form (a read's value is ignored: the transaction fills it).
    pub fn from_json(op: &Value) -> Result<TxnOp, String> {
        let parts = op.as_array().filter(|parts| parts.len() == 3);
        let (Some(f), Some(key)) = (parts.and_then(|p| p[0].as_str()), parts.and_then(|p| p[1].as_str())) else {
            return Err(format!("micro-op {op}: expected [f, key, value]"));
        };
        let key = key.to_string();
        let value = || {
            op[2]
                .as_i64()
                .ok_or_else(|| format!("micro-op {op}: a write's value is an integer"))
        };
        let amount = || {
            op[2]
                .as_i64()
                .filter(|n| *n >= 0)
                .ok_or_else(|| format!("micro-op {op}: an amount is an integer >= 0"))
        };
        match f {
            "append" => Ok(TxnOp::Append { key, value: value()? }),
            "w" => Ok(TxnOp::Write { key, value: value()? }),
            "r" => Ok(TxnOp::Read { key }),
            "init" => Ok(TxnOp::Init { key, value: value()? }),
            "credit" => Ok(TxnOp::Credit { key, amount: amount()? }),
            "debit" => Ok(TxnOp::Debit { key, amount: amount()? }),
            _ => Err(format!(
                "micro-op {op}: unknown f {f:?} (expected append, w, r, init, credit or debit)"
            )),
        }
    }
}

/// The result of applying an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A register's value (None = missing).
    Value(Option<String>),
    /// A write succeeded.
    Written,
    /// A compare-and-set's precondition failed.
    CasFailed {
        /// The register's current value.
        current: Option<String>,
    },
    /// An append's offset.
    Offset(u64),
    /// A log range and the log's end offset.
    Entries {
        /// (offset, value) pairs.
        entries: Vec<(u64, String)>,
        /// The log's end offset.
        end: u64,
    },
    /// A transaction's micro-ops with every read filled, as JSON text (`[["r","k1",[1,4]],["append","k1",7]]`).
    Txn(String),
    /// A transaction that aborted with nothing applied (a debit of more than the register held), and why.
    TxnAborted(String),
    /// The entry body did not decode (never produced by a correct primary).
    Malformed,
    /// The entry repeats a request older than its client's latest: not executed.
    Stale,
}

/// A body that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed operation body")]
pub struct MalformedBody;

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, count: usize) -> Result<&[u8], MalformedBody> {
        if self.bytes.len() < count {
            return Err(MalformedBody);
        }
        let (head, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64, MalformedBody> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| MalformedBody)?))
    }
    fn string(&mut self) -> Result<String, MalformedBody> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| MalformedBody)?) as usize;
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| MalformedBody)
    }
}

fn put_string(out: &mut Vec<u8>, value: &str) {
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value.as_bytes());
}

impl Operation {
    /// Encodes the operation as an entry body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Operation::Get { key } => {
                out.push(1);
                put_string(&mut out, key);
            }
            Operation::Put { key, value } => {
                out.push(2);
                put_string(&mut out, key);
                put_string(&mut out, value);
            }
            Operation::Cas { key, from, to } => {
                out.push(3);
                for part in [key, from, to] {
                    put_string(&mut out, part);
                }
            }
            Operation::Append { name, value } => {
                out.push(4);
                put_string(&mut out, name);
                put_string(&mut out, value);
            }
            Operation::ReadLog { name, from, limit } => {
                out.push(5);
                put_string(&mut out, name);
                out.extend_from_slice(&from.to_le_bytes());
                out.extend_from_slice(&limit.to_le_bytes());
            }
            Operation::Txn { ops } => {
                out.push(6);
                out.extend_from_slice(&(ops.len() as u64).to_le_bytes());
                for op in ops {
                    let (tag, value) = match op {
                        TxnOp::Append { value, .. } => (1, Some(value)),
                        TxnOp::Write { value, .. } => (2, Some(value)),
                        TxnOp::Read { .. } => (3, None),
                        TxnOp::Init { value, .. } => (4, Some(value)),
                        TxnOp::Credit { amount, .. } => (5, Some(amount)),
                        TxnOp::Debit { amount, .. } => (6, Some(amount)),
                    };
                    out.push(tag);
                    put_string(&mut out, op.key());
                    if let Some(value) = value {
                        out.extend_from_slice(&value.to_le_bytes());
                    }
                }
            }
        }
        out
    }

    /// Decodes an entry body.
    pub fn decode(bytes: &[u8]) -> Result<Operation, MalformedBody> {
        let mut reader = Reader { bytes };
        let tag = reader.take(1)?[0];
        let operation = match tag {
            1 => Operation::Get { key: reader.string()? },
            2 => Operation::Put {
                key: reader.string()?,
                value: reader.string()?,
            },
            3 => Operation::Cas {
                key: reader.string()?,
                from: reader.string()?,
                to: reader.string()?,
            },
            4 => Operation::Append {
                name: reader.string()?,
                value: reader.string()?,
            },
            5 => Operation::ReadLog {
                name: reader.string()?,
                from: reader.u64()?,
                limit: reader.u64()?,
            },
            6 => {
                // Each micro-op takes at least its tag and a key length.
                let count = reader.count(5)?;
                let mut ops = Vec::with_capacity(count);
                for _ in 0..count {
                    let tag = reader.take(1)?[0];
                    let key = reader.string()?;
                    ops.push(match tag {
                        1 => TxnOp::Append {
                            key,
                            value: reader.u64()? as i64,
                        },
                        2 => TxnOp::Write {
                            key,
                            value: reader.u64()? as i64,
                        },
                        3 => TxnOp::Read { key },
                        4 => TxnOp::Init {
                            key,
                            value: reader.u64()? as i64,
                        },
                        5 => TxnOp::Credit {
                            key,
                            amount: reader.u64()? as i64,
                        },
                        6 => TxnOp::Debit {
                            key,
                            amount: reader.u64()? as i64,
                        },
                        _ => return Err(MalformedBody),
                    });
                }
                if ops.is_empty() {
                    return Err(MalformedBody);
                }
                Operation::Txn { ops }
            }
            _ => return Err(MalformedBody),
        };
        if !reader.bytes.is_empty() {
            return Err(MalformedBody);
        }
        Ok(operation)
    }
}

/// Tags of [`Reply`] in a snapshot (the entry body format has no replies: they are never replicated, only
/// remembered by the client table, which a checkpoint must carry so a retry after a state transfer still executes
/// once).
fn put_reply(out: &mut Vec<u8>, reply: &Reply) {
    let put_option = |out: &mut Vec<u8>, value: &Option<String>| match value {
        Some(value) => {
            out.push(1);
            put_string(out, value);
        }
        None => out.push(0),
    };
    match reply {
        Reply::Value(value) => {
            out.push(1);
            put_option(out, value);
        }
        Reply::Written => out.push(2),
        Reply::CasFailed { current } => {
            out.push(3);
            put_option(out, current);
        }
        Reply::Offset(offset) => {
            out.push(4);
            out.extend_from_slice(&offset.to_le_bytes());
        }
        Reply::Entries { entries, end } => {
            out.push(5);
            out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
            for (offset, value) in entries {
                out.extend_from_slice(&offset.to_le_bytes());
                put_string(out, value);
            }
            out.extend_from_slice(&end.to_le_bytes());
        }
        Reply::Malformed => out.push(6),
        Reply::Stale => out.push(7),
        Reply::Txn(filled) => {
            out.push(8);
            put_string(out, filled);
        }
        Reply::TxnAborted(why) => {
            out.push(9);
            put_string(out, why);
        }
    }
}

impl Reader<'_> {
    fn option(&mut self) -> Result<Option<String>, MalformedBody> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => Ok(Some(self.string()?)),
            _ => Err(MalformedBody),
        }
    }

    /// A length that must fit in what is left (at least `item_bytes_min` per item), so a corrupt count cannot
    /// make a snapshot decode allocate without bound.
    fn count(&mut self, item_bytes_min: usize) -> Result<usize, MalformedBody> {
        let count = self.u64()?;
        if count > (self.bytes.len() / item_bytes_min.max(1)) as u64 {
            return Err(MalformedBody);
        }
        Ok(count as usize)
    }

    fn reply(&mut self) -> Result<Reply, MalformedBody> {
        Ok(match self.take(1)?[0] {
            1 => Reply::Value(self.option()?),
            2 => Reply::Written,
            3 => Reply::CasFailed {
                current: self.option()?,
            },
            4 => Reply::Offset(self.u64()?),
            5 => {
                let count = self.count(12)?;
                let mut entries = Vec::with_capacity(count);
                for _ in 0..count {
                    entries.push((self.u64()?, self.string()?));
                }
                Reply::Entries {
                    entries,
                    end: self.u64()?,
                }
            }
            6 => Reply::Malformed,
            7 => Reply::Stale,
            8 => Reply::Txn(self.string()?),
            9 => Reply::TxnAborted(self.string()?),
            _ => return Err(MalformedBody),
        })
    }
}

/// The last request of one client and its reply.
#[derive(Clone, Debug)]
struct ClientSession {
    request_number: u64,
    reply: Reply,
    last_op: u64,
}

/// What the client table knows about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionLookup {
    /// Not seen: prepare it.
    New,
    /// The latest request of this client: its reply is returned again, it is not applied twice.
    Duplicate(Reply),
    /// Older than the client's latest request: its reply is gone.
    Stale,
}

/// The registers, logs and client table.
#[derive(Default)]
pub struct StateMachine {
    registers: HashMap<String, String>,
    logs: HashMap<String, Vec<String>>,
    sessions: HashMap<u64, ClientSession>,
    sessions_by_op: BTreeMap<u64, u64>,
}

impl StateMachine {
    /// Applies a committed entry and returns its reply; records it in the client table.
    pub fn apply(&mut self, entry: &Entry) -> Reply {
        let client_id = entry.header.client_id;
        if client_id != 0 {
            // A retry prepared twice (e.g. queued twice, or re-sent across a view change) executes once.
            match self.lookup(client_id, entry.header.request_number) {
                SessionLookup::Duplicate(reply) => return reply,
                SessionLookup::Stale => return Reply::Stale,
                SessionLookup::New => {}
            }
        }
        let reply = match Operation::decode(&entry.body) {
            Ok(operation) => self.execute(operation),
            Err(MalformedBody) => Reply::Malformed,
        };
        if client_id != 0 {
            self.remember(client_id, entry.header.request_number, entry.header.op, reply.clone());
        }
        reply
    }

    /// Answers a read (`Get`, `ReadLog`) from the current state without applying anything; `None` for writes.
    /// The correct replica never serves this directly (reads go through the log); the `stale-backup-reads` mutant does.
    pub fn read(&self, operation: &Operation) -> Option<Reply> {
        match operation {
            Operation::Get { key } => Some(Reply::Value(self.registers.get(key).cloned())),
            Operation::ReadLog { name, from, limit } => {
                let log = self.logs.get(name).map(Vec::as_slice).unwrap_or_default();
                let end = log.len() as u64;
                let limit = (*limit).min(LOG_READ_LIMIT_MAX);
                let entries = (*from..end.min(from.saturating_add(limit)))
                    .map(|offset| (offset, log[offset as usize].clone()))
                    .collect();
                Some(Reply::Entries { entries, end })
            }
            Operation::Put { .. } | Operation::Cas { .. } | Operation::Append { .. } | Operation::Txn { .. } => None,
        }
    }

    /// What a transaction's read of `key` returns now: the key's log as integers, else its register, else `null`
    /// (a value that is not an integer, written by a non-transactional op, is returned as the text it is).
    pub fn txn_read(&self, key: &str) -> Value {
        let number = |text: &String| text.parse::<i64>().map_or_else(|_| json!(text), |n| json!(n));
        match (self.logs.get(key), self.registers.get(key)) {
            (Some(log), _) => Value::Array(log.iter().map(number).collect()),
            (None, Some(register)) => number(register),
            (None, None) => Value::Null,
        }
    }

    fn execute(&mut self, operation: Operation) -> Reply {
        if let Some(reply) = self.read(&operation) {
            return reply;
        }
        match operation {
            Operation::Get { .. } | Operation::ReadLog { .. } => unreachable!("reads are answered above"),
            Operation::Txn { ops } => self.execute_txn(&ops),
            Operation::Put { key, value } => {
                self.registers.insert(key, value);
                Reply::Written
            }
            Operation::Cas { key, from, to } => match self.registers.get_mut(&key) {
                Some(current) if *current == from => {
                    *current = to;
                    Reply::Written
                }
                current => Reply::CasFailed {
                    current: current.cloned(),
                },
            },
            Operation::Append { name, value } => {
                let log = self.logs.entry(name).or_default();
                log.push(value);
                Reply::Offset(log.len() as u64 - 1)
            }
        }
    }

    fn remember(&mut self, client_id: u64, request_number: u64, op: u64, reply: Reply) {
        if let Some(old) = self.sessions.insert(
            client_id,
            ClientSession {
                request_number,
                reply,
                last_op: op,
            },
        ) {
            self.sessions_by_op.remove(&old.last_op);
        }
        self.sessions_by_op.insert(op, client_id);
        while self.sessions.len() > CLIENT_TABLE_SIZE_MAX {
            let (_, evicted) = self
                .sessions_by_op
                .pop_first()
                .expect("sessions_by_op mirrors sessions");
            self.sessions.remove(&evicted);
        }
        assert_eq!(self.sessions.len(), self.sessions_by_op.len());
    }

    /// Encodes the whole state (registers, logs, client table) for a checkpoint, in a canonical order: two
    /// replicas that executed the same ops produce the same bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut registers: Vec<(&String, &String)> = self.registers.iter().collect();
        registers.sort_unstable();
        out.extend_from_slice(&(registers.len() as u64).to_le_bytes());
        for (key, value) in registers {
            put_string(&mut out, key);
            put_string(&mut out, value);
        }
        let mut logs: Vec<(&String, &Vec<String>)> = self.logs.iter().collect();
        logs.sort_unstable();
        out.extend_from_slice(&(logs.len() as u64).to_le_bytes());
        for (name, values) in logs {
            put_string(&mut out, name);
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for value in values {
                put_string(&mut out, value);
            }
        }
        // By op: the eviction order of the client table survives the round trip.
        out.extend_from_slice(&(self.sessions_by_op.len() as u64).to_le_bytes());
        for (&op, client_id) in &self.sessions_by_op {
            let session = &self.sessions[client_id];
            out.extend_from_slice(&client_id.to_le_bytes());
            out.extend_from_slice(&session.request_number.to_le_bytes());
            out.extend_from_slice(&op.to_le_bytes());
            put_reply(&mut out, &session.reply);
        }
        out
    }

    /// Decodes a [`StateMachine::snapshot`].
    pub fn restore(bytes: &[u8]) -> Result<StateMachine, MalformedBody> {
        let mut reader = Reader { bytes };
        let mut machine = StateMachine::default();
        for _ in 0..reader.count(8)? {
            let key = reader.string()?;
            machine.registers.insert(key, reader.string()?);
        }
        for _ in 0..reader.count(12)? {
            let name = reader.string()?;
            let count = reader.count(4)?;
            let mut values = Vec::with_capacity(count);
            for _ in 0..count {
                values.push(reader.string()?);
            }
            machine.logs.insert(name, values);
        }
        for _ in 0..reader.count(25)? {
            let client_id = reader.u64()?;
            let request_number = reader.u64()?;
            let last_op = reader.u64()?;
            let reply = reader.reply()?;
            let session = ClientSession {
                request_number,
                reply,
                last_op,
            };
            if machine.sessions.insert(client_id, session).is_some()
                || machine.sessions_by_op.insert(last_op, client_id).is_some()
            {
                return Err(MalformedBody);
            }
        }
        if !reader.bytes.is_empty() {
            return Err(MalformedBody);
        }
        Ok(machine)
    }

    /// Looks a request up in the client table.
    pub fn lookup(&self, client_id: u64, request_number: u64) -> SessionLookup {
        match self.sessions.get(&client_id) {
            Some(session) if session.request_number == request_number => {
                SessionLookup::Duplicate(session.reply.clone())
            }
            Some(session) if session.request_number > request_number => SessionLookup::Stale,
            _ => SessionLookup::New,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::entry::RequestIdentity;

    fn entry(op: u64, client_id: u64, request_number: u64, operation: Operation) -> Entry {
        Entry::new(
            1,
            op,
            0,
            0,
            RequestIdentity {
                client_id,
                request_number,
            },
            operation.encode(),
        )
    }

    #[test]
    fn given_a_missing_key_when_cas_should_fail_the_precondition_with_null_current() {
        let mut machine = StateMachine::default();
        let cas = Operation::Cas {
            key: "k".into(),
            from: "a".into(),
            to: "b".into(),
        };
        assert_eq!(machine.apply(&entry(1, 0, 0, cas)), Reply::CasFailed { current: None });
    }

    #[test]
    fn given_appends_when_reading_the_log_should_return_offsets_and_end() {
        let mut machine = StateMachine::default();
        for (op, value) in ["x", "y", "z"].iter().enumerate() {
            let append = Operation::Append {
                name: "l".into(),
                value: value.to_string(),
            };
            assert_eq!(
                machine.apply(&entry(op as u64 + 1, 0, 0, append)),
                Reply::Offset(op as u64)
            );
        }
        let read = Operation::ReadLog {
            name: "l".into(),
            from: 1,
            limit: 5,
        };
        let expected = Reply::Entries {
            entries: vec![(1, "y".into()), (2, "z".into())],
            end: 3,
        };
        assert_eq!(machine.apply(&entry(4, 0, 0, read)), expected);
    }

    #[test]
    fn given_an_applied_request_when_looked_up_again_should_return_the_original_reply() {
        let mut machine = StateMachine::default();
        let put = Operation::Put {
            key: "k".into(),
            value: "v".into(),
        };
        machine.apply(&entry(1, 9, 3, put));
        assert_eq!(machine.lookup(9, 3), SessionLookup::Duplicate(Reply::Written));
        assert_eq!(machine.lookup(9, 2), SessionLookup::Stale);
        assert_eq!(machine.lookup(9, 4), SessionLookup::New);
    }

    #[test]
    fn given_a_request_prepared_twice_when_applied_should_execute_once() {
        let mut machine = StateMachine::default();
        let append = Operation::Append {
            name: "l".into(),
            value: "v".into(),
        };
        assert_eq!(machine.apply(&entry(1, 9, 1, append.clone())), Reply::Offset(0));
        assert_eq!(machine.apply(&entry(2, 9, 1, append)), Reply::Offset(0));
        let read = Operation::ReadLog {
            name: "l".into(),
            from: 0,
            limit: 10,
        };
        assert_eq!(
            machine.apply(&entry(3, 0, 0, read)),
            Reply::Entries {
                entries: vec![(0, "v".into())],
                end: 1
            }
        );
    }

    #[test]
    fn given_every_operation_when_encoded_should_decode_to_itself() {
        let operations = [
            Operation::Get { key: "a".into() },
            Operation::Put {
                key: "a".into(),
                value: "b".into(),
            },
            Operation::Cas {
                key: "a".into(),
                from: "b".into(),
                to: "c".into(),
            },
            Operation::Append {
                name: "l".into(),
                value: "v".into(),
            },
            Operation::ReadLog {
                name: "l".into(),
                from: 3,
                limit: 9,
            },
            Operation::Txn {
                ops: vec![
                    TxnOp::Append {
                        key: "k1".into(),
                        value: -7,
                    },
                    TxnOp::Read { key: "k1".into() },
                    TxnOp::Write {
                        key: "k2".into(),
                        value: 9,
                    },
                    TxnOp::Init {
                        key: "b0".into(),
                        value: 100,
                    },
                    TxnOp::Debit {
                        key: "b0".into(),
                        amount: 5,
                    },
                    TxnOp::Credit {
                        key: "b1".into(),
                        amount: 5,
                    },
                ],
            },
        ];
        for operation in operations {
            assert_eq!(Operation::decode(&operation.encode()), Ok(operation));
        }
    }

    #[test]
    fn given_a_txn_when_applied_should_run_its_micro_ops_in_order_and_fill_its_reads() {
        let mut machine = StateMachine::default();
        let txn = |ops: Value| Operation::Txn {
            ops: ops
                .as_array()
                .unwrap()
                .iter()
                .map(|op| TxnOp::from_json(op).unwrap())
                .collect(),
        };
        let first = txn(json!([
            ["r", "k1", null],
            ["append", "k1", 1],
            ["append", "k1", 2],
            ["r", "k1", null]
        ]));
        assert_eq!(
            machine.apply(&entry(1, 9, 1, first)),
            Reply::Txn(
                json!([
                    ["r", "k1", null],
                    ["append", "k1", 1],
                    ["append", "k1", 2],
                    ["r", "k1", [1, 2]]
                ])
                .to_string()
            )
        );
        let second = txn(json!([["w", "r1", 5], ["r", "r1", null], ["r", "k1", null]]));
        assert_eq!(
            machine.apply(&entry(2, 9, 2, second)),
            Reply::Txn(json!([["w", "r1", 5], ["r", "r1", 5], ["r", "k1", [1, 2]]]).to_string())
        );
        assert_eq!(
            machine.lookup(9, 2),
            SessionLookup::Duplicate(machine.sessions[&9].reply.clone())
        );
        let restored = StateMachine::restore(&machine.snapshot()).expect("a txn reply survives a checkpoint");
        assert_eq!(restored.snapshot(), machine.snapshot());
        assert!(TxnOp::from_json(&json!(["incr", "k", 1])).is_err());
        assert!(TxnOp::from_json(&json!(["append", "k", "x"])).is_err());
    }

    #[test]
    fn given_reads_taken_before_a_commit_when_patched_in_should_miss_it_but_keep_the_txns_own_writes() {
        let mut machine = StateMachine::default();
        let late = ops(json!([["r", "k1", null], ["append", "k1", 3], ["r", "k1", null]]));
        let at_receipt = machine.txn_at_receipt(&late).expect("no debit to abort it");
        assert_eq!(at_receipt.logged, late, "reads and appends are logged as they are");
        let first = Operation::Txn {
            ops: ops(json!([["append", "k1", 1]])),
        };
        machine.apply(&entry(1, 7, 1, first));
        let reply = machine.apply(&entry(2, 8, 1, Operation::Txn { ops: late }));
        assert_eq!(
            at_receipt.reply,
            Reply::Txn(json!([["r", "k1", null], ["append", "k1", 3], ["r", "k1", [3]]]).to_string()),
            "the mutant's answer misses append 1, which the log ordered first"
        );
        assert_eq!(
            reply,
            Reply::Txn(json!([["r", "k1", [1]], ["append", "k1", 3], ["r", "k1", [1, 3]]]).to_string())
        );
    }

    /// The micro-ops of a JSON list.
    fn ops(list: Value) -> Vec<TxnOp> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|op| TxnOp::from_json(op).unwrap())
            .collect()
    }

    #[test]
    fn given_transfers_when_applied_should_move_balances_and_abort_an_overdraft_with_nothing_applied() {
        let mut machine = StateMachine::default();
        let transfer = |from: &str, to: &str, amount: i64| Operation::Txn {
            ops: ops(json!([
                ["init", "b0", 10],
                ["debit", from, amount],
                ["credit", to, amount]
            ])),
        };
        let read = Operation::Txn {
            ops: ops(json!([["init", "b0", 10], ["r", "b0", null], ["r", "b1", null]])),
        };
        assert!(matches!(
            machine.apply(&entry(1, 7, 1, transfer("b0", "b1", 4))),
            Reply::Txn(_)
        ));
        let overdraft = machine.apply(&entry(2, 7, 2, transfer("b1", "b0", 5)));
        assert_eq!(
            overdraft,
            Reply::TxnAborted("b1 holds 4, less than the 5 debited".into())
        );
        assert_eq!(
            machine.apply(&entry(3, 7, 3, read)),
            Reply::Txn(json!([["init", "b0", 10], ["r", "b0", 6], ["r", "b1", 4]]).to_string()),
            "init set b0 once; the aborted transfer left both balances as they were"
        );
        let restored = StateMachine::restore(&machine.snapshot()).expect("an abort reply survives a checkpoint");
        assert_eq!(restored.lookup(7, 3), machine.lookup(7, 3));
        assert!(
            TxnOp::from_json(&json!(["debit", "b0", -1])).is_err(),
            "amounts are not negative"
        );
    }

    #[test]
    fn given_a_transfer_at_receipt_when_logged_should_carry_the_balances_it_saw_as_plain_writes() {
        let mut machine = StateMachine::default();
        machine.apply(&entry(
            1,
            7,
            1,
            Operation::Txn {
                ops: ops(json!([["init", "b0", 10]])),
            },
        ));
        let late = ops(json!([["debit", "b0", 3], ["credit", "b1", 3]]));
        let at_receipt = machine.txn_at_receipt(&late).expect("b0 holds enough");
        assert_eq!(at_receipt.logged, ops(json!([["w", "b0", 7], ["w", "b1", 3]])));
        // Another transfer out of b0 commits before the late one is applied: the late one's writes erase it.
        machine.apply(&entry(
            2,
            8,
            1,
            Operation::Txn {
                ops: ops(json!([["debit", "b0", 5], ["credit", "b2", 5]])),
            },
        ));
        machine.apply(&entry(3, 9, 1, Operation::Txn { ops: at_receipt.logged }));
        let read = machine.apply(&entry(
            4,
            7,
            2,
            Operation::Txn {
                ops: ops(json!([["r", "b0", null], ["r", "b1", null], ["r", "b2", null]])),
            },
        ));
        assert_eq!(
            read,
            Reply::Txn(json!([["r", "b0", 7], ["r", "b1", 3], ["r", "b2", 5]]).to_string()),
            "15 where 10 was"
        );
        assert!(
            machine.txn_at_receipt(&ops(json!([["debit", "b9", 1]]))).is_err(),
            "an overdraft at receipt aborts"
        );
    }

    #[test]
    fn given_a_used_state_machine_when_snapshot_and_restored_should_answer_and_deduplicate_alike() {
        let mut machine = StateMachine::default();
        let put = |key: &str, value: &str| Operation::Put {
            key: key.into(),
            value: value.into(),
        };
        machine.apply(&entry(1, 7, 1, put("a", "1")));
        machine.apply(&entry(2, 8, 4, put("b", "2")));
        let append = Operation::Append {
            name: "l".into(),
            value: "x".into(),
        };
        machine.apply(&entry(3, 9, 1, append));
        let read_log = Operation::ReadLog {
            name: "l".into(),
            from: 0,
            limit: 10,
        };
        machine.apply(&entry(4, 9, 2, read_log.clone()));
        let cas = Operation::Cas {
            key: "a".into(),
            from: "0".into(),
            to: "9".into(),
        };
        machine.apply(&entry(5, 10, 1, cas));
        let bytes = machine.snapshot();
        let mut restored = StateMachine::restore(&bytes).expect("restore");
        assert_eq!(
            restored.snapshot(),
            bytes,
            "canonical: the restored state encodes to the same bytes"
        );
        for key in ["a", "b", "c"] {
            let get = Operation::Get { key: key.into() };
            assert_eq!(restored.read(&get), machine.read(&get));
        }
        assert_eq!(restored.read(&read_log), machine.read(&read_log));
        for (client, request) in [(7, 1), (8, 4), (8, 3), (9, 2), (10, 1), (11, 1)] {
            assert_eq!(restored.lookup(client, request), machine.lookup(client, request));
        }
        // A retry of an executed request is not applied twice after a restore.
        assert_eq!(restored.apply(&entry(6, 8, 4, put("b", "other"))), Reply::Written);
        assert_eq!(
            restored.read(&Operation::Get { key: "b".into() }),
            Some(Reply::Value(Some("2".into())))
        );
    }

    #[test]
    fn given_a_damaged_snapshot_when_restored_should_refuse_not_allocate_or_panic() {
        let mut machine = StateMachine::default();
        machine.apply(&entry(
            1,
            7,
            1,
            Operation::Put {
                key: "a".into(),
                value: "1".into(),
            },
        ));
        let bytes = machine.snapshot();
        for cut in 0..bytes.len() {
            assert!(StateMachine::restore(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge_count = bytes.clone();
        huge_count[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(StateMachine::restore(&huge_count).is_err());
        let mut trailing = bytes;
        trailing.push(0);
        assert!(StateMachine::restore(&trailing).is_err());
    }
}
