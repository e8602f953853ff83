//! Faults on one directed link (slow, throttled, corrupting, resetting, lossy), and which backend can do which.

use crate::units::Millis;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A fault on the traffic `from` sends to `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LinkFault {
    /// Every chunk is delivered `latency` ± up to `jitter` later; order within a connection is kept. Proxy only.
    Delay {
        /// Added one-way latency.
        latency: Millis,
        /// Uniform jitter around the latency (the result never goes below zero).
        #[serde(default)]
        jitter: Millis,
    },
    /// At most `bytes_per_s` bytes per second per connection and direction. Proxy only.
    Rate {
        /// Throughput cap.
        bytes_per_s: u64,
    },
    /// Each byte is replaced by a different random byte with probability `probability`. Proxy, peer links only: the
    /// receiver's checksums must catch it.
    Corrupt {
        /// Per-byte probability, in (0, 1].
        probability: f64,
    },
    /// Connections `from` opened to `to` are reset and new ones refused (proxy); on netns, TCP segments from `from`
    /// are answered with a reset by `to`.
    Reset,
    /// Each packet from `from` to `to` is dropped with probability `percent`/100 (TCP retransmits). Netns only.
    Loss {
        /// Drop percentage, 1..=100.
        percent: u8,
    },
}

/// The kind of a [`LinkFault`], for capability checks and bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkFaultKind {
    /// [`LinkFault::Delay`].
    Delay,
    /// [`LinkFault::Rate`].
    Rate,
    /// [`LinkFault::Corrupt`].
    Corrupt,
    /// [`LinkFault::Reset`].
    Reset,
    /// [`LinkFault::Loss`].
    Loss,
}

impl fmt::Display for LinkFaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkFaultKind::Delay => "delay",
            LinkFaultKind::Rate => "rate",
            LinkFaultKind::Corrupt => "corrupt",
            LinkFaultKind::Reset => "reset",
            LinkFaultKind::Loss => "loss",
        })
    }
}

impl LinkFault {
    /// Its kind.
    pub fn kind(&self) -> LinkFaultKind {
        match self {
            LinkFault::Delay { .. } => LinkFaultKind::Delay,
            LinkFault::Rate { .. } => LinkFaultKind::Rate,
            LinkFault::Corrupt { .. } => LinkFaultKind::Corrupt,
            LinkFault::Reset => LinkFaultKind::Reset,
            LinkFault::Loss { .. } => LinkFaultKind::Loss,
        }
    }

    /// Rejects values that mean nothing (zero rate, probability outside (0, 1], loss outside 1..=100).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            LinkFault::Rate { bytes_per_s: 0 } => Err("rate fault with bytes_per_s: 0 would stop the link: use a \
                                                       partition for that"
                .into()),
            LinkFault::Corrupt { probability } if !(*probability > 0.0 && *probability <= 1.0) => Err(format!(
                "corrupt probability {probability} must be in (0, 1] (it is per byte: 0.001 flips about one byte in a \
                 thousand)"
            )),
            LinkFault::Loss { percent } if !(1..=100).contains(percent) => {
                Err(format!("loss percent {percent} must be in 1..=100"))
            }
            _ => Ok(()),
        }
    }
}

/// Which backend runs the lab's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Userspace TCP proxies on loopback (no root; the system must accept per-node peer addresses).
    Proxy,
    /// Network namespaces and nftables (root, `ip` and `nft`; black-box systems).
    Netns,
    /// nftables on each host of a run on hosts (`--hosts`): partitions as Jepsen's grudges and packet loss; the other
    /// link faults through each host's proxies of its node's peer links.
    Hosts,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Proxy => "proxy",
            BackendKind::Netns => "netns",
            BackendKind::Hosts => "hosts",
        })
    }
}

impl BackendKind {
    /// Whether this backend can inject `kind`. Both backends apply any grudge (partitions, one-way cuts).
    pub fn supports(self, kind: LinkFaultKind) -> bool {
        use LinkFaultKind::*;
        match self {
            BackendKind::Proxy => matches!(kind, Delay | Rate | Corrupt | Reset),
            BackendKind::Netns => matches!(kind, Reset | Loss),
            // Each host's proxies of its node's peer links; loss in each host's nftables.
            BackendKind::Hosts => matches!(kind, Delay | Rate | Corrupt | Reset | Loss),
        }
    }

    /// `Err` naming the backend that can, when this one cannot inject `kind`.
    pub fn check(self, kind: LinkFaultKind) -> Result<(), String> {
        if self.supports(kind) {
            return Ok(());
        }
        let other = match self {
            BackendKind::Proxy => BackendKind::Netns,
            BackendKind::Netns => BackendKind::Proxy,
            BackendKind::Hosts => {
                return Err(format!(
                    "a run on hosts injects link faults through each host's proxies (delay, rate, corrupt, reset), \
                     not `{kind}` yet: drop the fault"
                ))
            }
        };
        Err(format!(
            "the {self} network backend cannot inject `{kind}` link faults (the {other} backend can): choose \
             `network: {other}` or drop the fault"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_link_fault_yaml_when_parsed_should_accept_known_kinds_and_reject_unknown_fields() {
        let delay: LinkFault = serde_saphyr::from_str("{kind: delay, latency: 50ms, jitter: 5ms}").unwrap();
        assert_eq!(
            delay,
            LinkFault::Delay {
                latency: Millis(50),
                jitter: Millis(5)
            }
        );
        let reset: LinkFault = serde_saphyr::from_str("{kind: reset}").unwrap();
        assert_eq!(reset, LinkFault::Reset);
        assert!(serde_saphyr::from_str::<LinkFault>("{kind: delay, latency: 5ms, jiter: 1ms}").is_err());
        assert!(LinkFault::Corrupt { probability: 1.5 }.validate().is_err());
        assert!(LinkFault::Rate { bytes_per_s: 0 }.validate().is_err());
    }

    #[test]
    fn given_a_backend_when_asked_for_a_fault_it_cannot_do_should_name_the_one_that_can() {
        assert!(BackendKind::Proxy.check(LinkFaultKind::Delay).is_ok());
        let error = BackendKind::Netns.check(LinkFaultKind::Delay).unwrap_err();
        assert!(error.contains("network: proxy"), "{error}");
        assert!(BackendKind::Proxy.check(LinkFaultKind::Loss).is_err());
    }
}
