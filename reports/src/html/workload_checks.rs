//! The evidence of Jepsen's workload checks in the checks table: the bank's unbalanced reads, the long forks, the
//! counter's out-of-bounds reads, and a set's latencies; each row linked to its history event.

use super::escape::Shown;
use faultline_workloads::bank_check::BankCheckResult;
use faultline_workloads::counter_check::CounterCheckResult;
use faultline_workloads::long_fork_check::LongForkResult;
use faultline_workloads::SetCheckStats;
use maud::{html, Markup};

/// Rows listed per table; the rest are counted (and in results.json).
const ROWS_SHOWN: usize = 20;

fn event_link(index: u64) -> Markup {
    html! { a href={ "#ev-" (index) } { "event " (index) } }
}

fn more(total: usize, what: &str) -> Markup {
    html! {
        @if total > ROWS_SHOWN {
            p class="hint" { "… and " (total - ROWS_SHOWN) " more " (what) " (see results.json)." }
        }
    }
}

/// The bank: what every read had to sum to, the range the reads showed, and each unbalanced read with its balances.
pub fn bank(result: &BankCheckResult) -> Markup {
    let total = result.total.map_or("unknown".to_string(), |t| t.to_string());
    html! {
        div class="detail" {
            "total " b { (total) } " (" (Shown(&result.total_from)) ") over " (result.accounts.len()) " accounts · "
            (result.read_count) " reads · " (result.transfers_ok) " of " (result.transfers) " transfers acknowledged"
            @if let Some((lo, hi)) = result.totals_seen { " · totals seen " (lo) "–" (hi) }
        }
        @if !result.errors.is_empty() {
            table class="inner bank-reads" {
                thead { tr { th { "read" } th { "completed" } th { "process" } th { "problem" } th { "total" } th { "balances" } } }
                tbody {
                    @for read in result.errors.iter().take(ROWS_SHOWN) {
                        tr {
                            td { (event_link(read.index)) }
                            td class="num" { (format!("{:.3} s", read.time_ns as f64 / 1e9)) }
                            td { "p" (read.process) @if let Some(node) = &read.node { " · " (Shown(node)) } }
                            td { (Shown(&read.kind)) }
                            td class="num" { (read.total) }
                            td {
                                code {
                                    @for (account, balance) in &read.balances {
                                        (Shown(account)) ": " (balance.map_or("nil".to_string(), |b| b.to_string())) " "
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (more(result.errors.len(), "reads that broke a promise"))
        }
    }
}

/// The long forks: the group's keys and what each of the two reads saw.
pub fn long_fork(result: &LongForkResult) -> Markup {
    html! {
        div class="detail" {
            (result.writes) " inserts · " (result.reads) " reads in " (result.groups_compared) " groups compared · "
            (result.fork_count) " forks"
        }
        @if !result.forks.is_empty() {
            table class="inner long-forks" {
                thead { tr { th { "keys" } th { "one read" } th { "saw" } th { "the other" } th { "saw" } } }
                tbody {
                    @for fork in result.forks.iter().take(ROWS_SHOWN) {
                        tr {
                            td { code { (Shown(&fork.keys.join(" "))) } }
                            td { (event_link(fork.a.index)) }
                            td { code { (Shown(&fork.a.saw.join(" "))) } }
                            td { (event_link(fork.b.index)) }
                            td { code { (Shown(&fork.b.saw.join(" "))) } }
                        }
                    }
                }
            }
            (more(result.forks.len(), "forks"))
        }
    }
}

/// The counter: each read outside what could have been added before it.
pub fn counter(result: &CounterCheckResult) -> Markup {
    html! {
        div class="detail" {
            (result.reads) " reads · " (result.adds_ok) " of " (result.adds) " adds acknowledged · "
            (result.error_count) " reads out of bounds"
        }
        @if !result.errors.is_empty() {
            table class="inner counter-reads" {
                thead { tr { th { "read" } th { "process" } th { "at least" } th { "read" } th { "at most" } } }
                tbody {
                    @for read in result.errors.iter().take(ROWS_SHOWN) {
                        tr {
                            td { (event_link(read.index)) }
                            td { "p" (read.process) }
                            td class="num" { (read.lower) }
                            td class="num" { b { (read.value) } }
                            td class="num" { (read.upper) }
                        }
                    }
                }
            }
            (more(result.errors.len(), "reads"))
        }
    }
}

/// A set's latencies (Jepsen's set-full quantiles) and its never-read count, when it has them.
pub fn set_latencies(stats: &SetCheckStats) -> Markup {
    let quantiles = |q: &std::collections::BTreeMap<String, u64>| {
        q.iter()
            .map(|(p, ms)| format!("p{p} {ms} ms"))
            .collect::<Vec<_>>()
            .join(" · ")
    };
    html! {
        @if !stats.stable_latencies_ms.is_empty() || stats.never_read > 0 || stats.recovered > 0 {
            div class="detail" {
                (stats.stable) " elements stable · " (stats.never_read) " never read (no read after they were known, or only reads concurrent with their add)"
                @if stats.recovered > 0 { " · " (stats.recovered) " recovered (added with an unknown or failed outcome, then read)" }
                @if !stats.stable_latencies_ms.is_empty() { br; "stable latency: " (quantiles(&stats.stable_latencies_ms)) }
                @if !stats.lost_latencies_ms.is_empty() { br; "lost latency: " (quantiles(&stats.lost_latencies_ms)) }
            }
        }
    }
}
