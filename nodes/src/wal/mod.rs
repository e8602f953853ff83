//! The write-ahead log: entry format, boot scan, head tracking and the on-disk journal.

pub mod entry;
pub mod head;
pub mod journal;
pub mod scan;

#[cfg(test)]
mod tests;
