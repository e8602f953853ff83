//! etcd 3.4's membership hooks, through its v3 JSON gateway: `member add` names the joiner's peer URL before it
//! starts (a member that does not exist yet cannot join), so the joiner is started after its addition, with
//! `--initial-cluster-state existing` and the current members plus itself in `--initial-cluster`; `member remove`
//! takes the member's ID, found by its peer URL in `member list`; and the members are `member list`'s, each matched
//! to its node by peer URL (a member added but not started yet has no name, and counts: it is in the configuration).
//!
//! etcd refuses a change while its leader has not been in touch with a quorum for 5 s (`unhealthy cluster`, its
//! strict reconfiguration check), which is usual right after a fault: a change is tried through each live member in
//! turn until [`CHANGE_TIMEOUT`].

use super::{post_ok, EtcdSystem};
use crate::system::membership::{ChangeOutcome, JoinOrder, Listed, Membership};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::time::Duration;

/// Bound on one membership change, retries included.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between attempts.
const RETRY_DELAY: Duration = Duration::from_millis(500);

#[async_trait]
impl Membership for EtcdSystem {
    fn join_order(&self) -> JoinOrder {
        JoinOrder::AddThenStart
    }

    async fn prepare_joiner(&self, node: usize, members: &[usize]) -> anyhow::Result<()> {
        self.empty_data_dir(node).await?;
        let mut cluster = members.to_vec();
        cluster.push(node);
        cluster.sort_unstable();
        cluster.dedup();
        self.rejoined.lock().expect("rejoined lock")[node] = Some(cluster);
        self.member_ids.lock().expect("member ids lock")[node] = None;
        Ok(())
    }

    async fn add(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        let peer_url = json!(self.peer_url(node));
        self.change(members, node, |listed| {
            if listed.iter().any(|m| has_url(m, &peer_url)) {
                return None; // added by an earlier attempt
            }
            Some(("/v3/cluster/member/add", json!({"peerURLs": [peer_url]})))
        })
        .await
    }

    async fn remove(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        let peer_url = json!(self.peer_url(node));
        self.change(members, node, |listed| {
            let member = listed.iter().find(|m| has_url(m, &peer_url))?;
            Some(("/v3/cluster/member/remove", json!({"ID": member["ID"]})))
        })
        .await
    }

    async fn list(&self, _members: &[usize]) -> Result<Listed, String> {
        self.list_members().await.map(|members| Listed { epoch: None, members })
    }

    /// `member add` and `member remove` answer with the members after the change (a `member list` right after
    /// may reach a member that has not applied it yet, and name a removed member still).
    fn members_in_answer(&self, answer: &Value) -> Option<Listed> {
        answer.get("members")?;
        Some(Listed {
            epoch: None,
            members: self.nodes_of(answer),
        })
    }
}

impl EtcdSystem {
    /// The members, by node, as any live member's `member list` says.
    pub(super) async fn list_members(&self) -> Result<Vec<usize>, String> {
        let http = Self::http(REQUEST_TIMEOUT);
        let mut last = "no member answered".to_string();
        for peer in 0..self.node_count {
            match post_ok(&http, &self.client_url(peer), "/v3/cluster/member/list", json!({})).await {
                Ok(answer) => return Ok(self.nodes_of(&answer)),
                Err(error) => last = format!("{}: {error:#}", Self::name(peer)),
            }
        }
        Err(last)
    }

    /// The nodes a `member list` answer names (by peer URL; members of other clusters are ignored).
    fn nodes_of(&self, answer: &Value) -> Vec<usize> {
        let listed = answer["members"].as_array().cloned().unwrap_or_default();
        (0..self.node_count)
            .filter(|&node| {
                let url = json!(self.peer_url(node));
                listed.iter().any(|member| has_url(member, &url))
            })
            .collect()
    }

    /// Asks a live member of `members` (not `node`, when another answers) for the call `plan` makes of the current
    /// `member list` (`None`: nothing left to do), retrying through the others until [`CHANGE_TIMEOUT`].
    async fn change(
        &self,
        members: &[usize],
        node: usize,
        plan: impl Fn(&[Value]) -> Option<(&'static str, Value)> + Send + Sync,
    ) -> ChangeOutcome {
        let http = Self::http(REQUEST_TIMEOUT);
        let deadline = tokio::time::Instant::now() + CHANGE_TIMEOUT;
        let mut peers: Vec<usize> = members.iter().copied().filter(|&m| m != node).collect();
        peers.push(node);
        let (mut attempt, mut sent, mut last) = (0usize, false, String::new());
        while tokio::time::Instant::now() < deadline {
            let peer = peers[attempt % peers.len()];
            attempt += 1;
            let base = self.client_url(peer);
            let listed = match post_ok(&http, &base, "/v3/cluster/member/list", json!({})).await {
                Ok(answer) => answer["members"].as_array().cloned().unwrap_or_default(),
                Err(error) => {
                    last = format!("{}: {error:#}", Self::name(peer));
                    tokio::time::sleep(RETRY_DELAY).await;
                    continue;
                }
            };
            let Some((path, body)) = plan(&listed) else {
                return ChangeOutcome::Ok(json!({"already": true}));
            };
            match post(&http, &base, path, body).await {
                Ok(answer) => return ChangeOutcome::Ok(answer),
                Err((maybe_applied, error)) => {
                    sent |= maybe_applied;
                    last = format!("{path} through {}: {error}", Self::name(peer));
                }
            }
            tokio::time::sleep(RETRY_DELAY).await;
        }
        let why = format!("not done within {CHANGE_TIMEOUT:?}: {last}");
        if sent {
            ChangeOutcome::Info(why)
        } else {
            ChangeOutcome::Fail(why)
        }
    }
}

/// POSTs a change; on error, whether it may have been applied (it was sent and no answer came back: a refusal such
/// as `unhealthy cluster`, or a connection never made, applied nothing) and why.
async fn post(http: &reqwest::Client, base: &str, path: &str, body: Value) -> Result<Value, (bool, String)> {
    let response = match http.post(format!("{base}{path}")).json(&body).send().await {
        Ok(response) => response,
        Err(error) => return Err((!error.is_connect(), crate::system::error_chain(&error))),
    };
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    if status.is_success() {
        Ok(answer)
    } else {
        Err((false, format!("HTTP {status}: {answer}")))
    }
}

/// Whether a `member list` entry has `url` among its peer URLs.
fn has_url(member: &Value, url: &Value) -> bool {
    member["peerURLs"].as_array().is_some_and(|urls| urls.contains(url))
}
