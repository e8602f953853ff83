//! Checks that depend on when reads ran: final reads that end before an acknowledged offset (lost), reads that began
//! after an acknowledgement but end before its offset (stale), and each consumer's reads against its previous one
//! (non-monotonic).

use super::findings::Findings;
use super::findings::{Cause, Detail};
use super::parse::Read;
use super::{AnomalyKind, LogCtx};
use crate::models::FxBuild;
use std::collections::HashMap;

/// True when a read began after every append event on its log: no append can still arrive.
fn is_final(ctx: &LogCtx<'_, '_>, read: &Read) -> bool {
    ctx.log.last_append_pos.is_none_or(|last| read.invoke_pos > last)
}

/// Reports acknowledged appends at or past the shortest final read's end as lost; returns the number of final reads.
pub(super) fn check_final_reads(ctx: &LogCtx<'_, '_>, findings: &mut Findings, lost: &mut [bool]) -> u64 {
    let log = ctx.log;
    let finals = log.reads.iter().enumerate().filter(|(_, r)| is_final(ctx, r));
    let count = finals.clone().count() as u64;
    let Some((shortest, read)) = finals.min_by_key(|(_, r)| r.end) else {
        return count;
    };
    let shortest = shortest as u32;
    for (a, append) in log.appends.iter().enumerate() {
        let Some((offset, _)) = append.acked() else { continue };
        if offset < read.end || std::mem::replace(&mut lost[a], true) {
            continue;
        }
        findings.report(AnomalyKind::Lost, log.name, Cause::MaybeLoss, || Detail {
            offsets: vec![offset],
            payloads: vec![ctx.payload(append.payload)],
            ops: vec![ctx.append_ref(a as u32), ctx.read_ref(shortest)],
            reason: format!(
                "{} was acknowledged at offset {offset} (append event {}), but the final read (event {}) reports \
                 the log ends at {}",
                ctx.show(append.payload),
                ctx.append_index(a as u32),
                ctx.read_index(shortest),
                read.end
            ),
        });
    }
    count
}

/// With linearizable reads: a non-final read that began after an append was acknowledged at offset O must report an
/// end past O. One sweep over reads by invocation and acknowledgements by completion, keeping the highest offset
/// acknowledged so far. A read missing an append that was lost anyway is not reported again.
pub(super) fn check_stale_reads(ctx: &LogCtx<'_, '_>, findings: &mut Findings, lost: &[bool]) {
    let log = ctx.log;
    let mut acks: Vec<(usize, u64, u32)> = log
        .appends
        .iter()
        .enumerate()
        .filter_map(|(a, append)| append.acked().map(|(offset, ack_pos)| (ack_pos, offset, a as u32)))
        .collect();
    acks.sort_unstable();
    let mut next_ack = 0;
    let mut highest: Option<(u64, u32)> = None;
    for (r, read) in log.reads.iter().enumerate() {
        while let Some(&(_, offset, a)) = acks.get(next_ack).filter(|(ack_pos, _, _)| *ack_pos < read.invoke_pos) {
            if highest.is_none_or(|(o, _)| offset > o) {
                highest = Some((offset, a));
            }
            next_ack += 1;
        }
        let Some((offset, append)) = highest else { continue };
        if read.end > offset || lost[append as usize] || is_final(ctx, read) {
            continue;
        }
        let payload = log.appends[append as usize].payload;
        findings.report(AnomalyKind::Stale, log.name, Cause::MaybeLoss, || Detail {
            offsets: vec![offset],
            payloads: vec![ctx.payload(payload)],
            ops: vec![ctx.append_ref(append), ctx.read_ref(r as u32)],
            reason: format!(
                "read (event {}) began after {} was acknowledged at offset {offset} (append event {}), but reports \
                 the log ends at {}",
                ctx.read_index(r as u32),
                ctx.show(payload),
                ctx.append_index(append),
                read.end
            ),
        });
    }
}

/// Compares each consumer's read with its previous one: offsets both returned must hold the same payload, and with
/// linearizable reads the log's end must not go backwards.
pub(super) fn check_consumers(ctx: &LogCtx<'_, '_>, findings: &mut Findings) {
    let mut previous: HashMap<u64, u32, FxBuild> = HashMap::default();
    for (r, read) in ctx.log.reads.iter().enumerate() {
        if let Some(before) = previous.insert(read.process, r as u32) {
            compare_consumer_reads(ctx, findings, before, r as u32);
        }
    }
}

fn compare_consumer_reads(ctx: &LogCtx<'_, '_>, findings: &mut Findings, before: u32, after: u32) {
    let log = ctx.log;
    let (earlier, later) = (log.entries_of(before), log.entries_of(after));
    let last_earlier = earlier.last().map_or(0, |e| e.0);
    let changed = later
        .iter()
        .take_while(|e| !earlier.is_empty() && e.0 <= last_earlier)
        .find_map(|&(offset, payload)| {
            let i = earlier.binary_search_by_key(&offset, |e| e.0).ok()?;
            (earlier[i].1 != payload).then_some((offset, earlier[i].1, payload))
        });
    let process = log.reads[after as usize].process;
    if let Some((offset, was, now)) = changed {
        findings.report(AnomalyKind::NonMonotonic, log.name, Cause::MaybeLoss, || Detail {
            offsets: vec![offset],
            payloads: vec![ctx.payload(was), ctx.payload(now)],
            ops: vec![ctx.read_ref(before), ctx.read_ref(after)],
            reason: format!(
                "consumer process {process} re-read offset {offset}: its read (event {}) returned {}, its next read \
                 (event {}) returned {}",
                ctx.read_index(before),
                ctx.show(was),
                ctx.read_index(after),
                ctx.show(now)
            ),
        });
        return;
    }
    let (end_before, end_after) = (log.reads[before as usize].end, log.reads[after as usize].end);
    if ctx.options.linearizable_reads && end_after < end_before {
        findings.report(AnomalyKind::NonMonotonic, log.name, Cause::MaybeLoss, || Detail {
            offsets: vec![end_before, end_after],
            payloads: Vec::new(),
            ops: vec![ctx.read_ref(before), ctx.read_ref(after)],
            reason: format!(
                "consumer process {process} saw the log end go backwards from {end_before} (read event {}) to \
                 {end_after} (read event {})",
                ctx.read_index(before),
                ctx.read_index(after)
            ),
        });
    }
}
