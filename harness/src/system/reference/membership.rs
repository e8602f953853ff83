//! The reference node's membership hooks: a change is `POST /reconfigure` to the primary (nodes/README.md,
//! "Reconfiguration"), the members are what `/status` says in the newest epoch, and a joiner is a node formatted
//! with `--join` and started before its addition (it learns the epoch from the others and waits to be added).

use super::ReferenceSystem;
use crate::system::membership::{ChangeOutcome, JoinOrder, Listed, Membership};
use crate::system::ProbeError;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::time::Duration;

/// Bound on one reconfiguration: finding the primary, the request, and the commit it waits for.
const RECONFIGURE_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on one request: the node answers once the reconfiguration committed, or at its deadline.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Bound on one status probe of [`Membership::list`].
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// Pause between attempts while no primary answers.
const RETRY_DELAY: Duration = Duration::from_millis(200);
/// Rounds of status probes a list tries before it gives up.
const LIST_ATTEMPTS_MAX: usize = 5;

#[async_trait]
impl Membership for ReferenceSystem {
    fn join_order(&self) -> JoinOrder {
        JoinOrder::StartThenAdd
    }

    async fn prepare_joiner(&self, node: usize, _members: &[usize]) -> anyhow::Result<()> {
        self.format(node, &["--force", "--join"]).await
    }

    async fn add(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        let mut target = members.to_vec();
        target.push(node);
        self.reconfigure(target).await
    }

    async fn remove(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        let target = members.iter().copied().filter(|&member| member != node).collect();
        self.reconfigure(target).await
    }

    /// The members `/status` reports in the newest epoch any node answers with (a removed node knows the epoch that
    /// removed it; a joiner that knows none yet says epoch 0), asked again a few times while no node answers.
    async fn list(&self, _members: &[usize]) -> Result<Listed, String> {
        for _ in 0..LIST_ATTEMPTS_MAX {
            let probes = (0..self.node_count).map(|node| crate::system::System::probe(self, node, PROBE_TIMEOUT));
            let statuses = futures::future::join_all(probes).await;
            let newest = statuses
                .iter()
                .filter_map(|status| status.as_ref().ok())
                .filter_map(|status| self.members_in_status(&status.raw))
                .max_by_key(|listed| listed.epoch);
            if let Some(listed) = newest {
                return Ok(listed);
            }
            tokio::time::sleep(RETRY_DELAY).await;
        }
        Err(format!("no node answered with an epoch ({LIST_ATTEMPTS_MAX} tries)"))
    }

    /// `{"epoch", "members"}`, the answer of `POST /reconfigure`.
    fn members_in_answer(&self, answer: &Value) -> Option<Listed> {
        self.members_in_status(answer)
    }

    /// `/status`'s `epoch` and `members` (epoch 0: a joiner that knows none).
    fn members_in_status(&self, status: &Value) -> Option<Listed> {
        let epoch = status["epoch"].as_u64().filter(|&epoch| epoch > 0)?;
        let members = ids(&status["members"]);
        *self.members.lock().expect("members lock") = members.clone();
        Some(Listed {
            epoch: Some(epoch),
            members,
        })
    }
}

/// Replica ids of a JSON list.
fn ids(list: &Value) -> Vec<usize> {
    list.as_array()
        .map(|ids| ids.iter().filter_map(Value::as_u64).map(|id| id as usize).collect())
        .unwrap_or_default()
}

impl ReferenceSystem {
    /// Asks the primary to make `members` the members of the next epoch, following 421 answers to the primary they
    /// name, until one answers or [`RECONFIGURE_TIMEOUT`] passes.
    async fn reconfigure(&self, mut members: Vec<usize>) -> ChangeOutcome {
        members.sort_unstable();
        members.dedup();
        let body = json!({ "members": members });
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(500))
            .timeout(REQUEST_DEADLINE + Duration::from_secs(1))
            .build()
            .expect("building an HTTP client with static settings");
        let deadline = tokio::time::Instant::now() + RECONFIGURE_TIMEOUT;
        let mut sent = false;
        let mut last = "no node is primary".to_string();
        while tokio::time::Instant::now() < deadline {
            let Some(primary) = self.primary_now().await else {
                tokio::time::sleep(RETRY_DELAY).await;
                continue;
            };
            let url = format!(
                "http://{}/reconfigure",
                crate::system::System::addrs(self, primary).client
            );
            let request = http
                .post(url)
                .header("X-Faultline-Deadline-Ms", REQUEST_DEADLINE.as_millis().to_string())
                .json(&body);
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) if error.is_connect() => {
                    last = format!("n{} refused the connection", primary + 1);
                    tokio::time::sleep(RETRY_DELAY).await;
                    continue;
                }
                Err(error) => return ChangeOutcome::Info(crate::system::error_chain(&error)),
            };
            sent = true;
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            match status {
                200 => return ChangeOutcome::Ok(answer),
                421 => last = format!("n{} is no longer primary", primary + 1),
                _ if answer["outcome"] == "not-applied" => {
                    return ChangeOutcome::Fail(format!("HTTP {status}: {}", answer["error"]))
                }
                _ => return ChangeOutcome::Info(format!("HTTP {status}: {answer}")),
            }
            tokio::time::sleep(RETRY_DELAY).await;
        }
        let why = format!("no primary took it within {RECONFIGURE_TIMEOUT:?} ({last})");
        // Only a request that never reached a primary is known not to have been applied.
        if sent {
            ChangeOutcome::Info(why)
        } else {
            ChangeOutcome::Fail(why)
        }
    }

    /// The node that claims to be primary in the newest epoch and view, if one answers.
    async fn primary_now(&self) -> Option<usize> {
        let probes = (0..self.node_count).map(|node| crate::system::System::probe(self, node, PROBE_TIMEOUT));
        let statuses: Vec<Result<crate::system::NodeStatus, ProbeError>> = futures::future::join_all(probes).await;
        statuses
            .iter()
            .enumerate()
            .filter_map(|(node, status)| {
                let status = status.as_ref().ok()?;
                let primary = status.raw["role"] == "primary" && status.raw["status"] == "normal";
                let epoch = status.raw["epoch"].as_u64()?;
                let view = status.raw["view"].as_u64()?;
                primary.then_some(((epoch, view), node))
            })
            .max()
            .map(|(_, node)| node)
    }
}
