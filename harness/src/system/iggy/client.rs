//! The Iggy adapter's workload clients: a set is stream names on the metadata plane, a log a partition of one topic.

use super::login;
use crate::system::{error_chain, transport_outcome, LogClient, Outcome, SetClient};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The stream and topic that hold the message workload's logs.
const LOG_STREAM: &str = "faultline-log";
const LOG_TOPIC: &str = "t";
/// The body code of a request Iggy promises it never applied.
const NOT_ACCEPTED: &str = "transient_not_accepted";

/// A set client on one node: elements are stream names on the metadata plane. Adds go to the home node (a backup
/// forwards control-plane writes to the primary); reads are linearizable stream lists (a backup forwards them).
/// Each client logs in for its own token, so each has its own VSR session.
pub(super) struct IggySetClient {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) home: usize,
    pub(super) token: Mutex<Option<String>>,
}

impl IggySetClient {
    async fn token(&self) -> Result<String, String> {
        if let Some(token) = self.token.lock().expect("token lock").clone() {
            return Ok(token);
        }
        let token = login(&self.http, &self.base).await?;
        *self.token.lock().expect("token lock") = Some(token.clone());
        Ok(token)
    }

    async fn create_stream(&self, name: &str) -> Outcome {
        let token = match self.token().await {
            Ok(token) => token,
            Err(why) => return Outcome::Fail(format!("{why} (the add was not sent)")),
        };
        let sent = self
            .http
            .post(format!("{}/streams", self.base))
            .bearer_auth(&token)
            .json(&json!({"name": name}))
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return transport_outcome(&e, false),
        };
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let code = body["code"].as_str().unwrap_or("");
        match status {
            200 | 201 => Outcome::Ok(Value::Null),
            401 => {
                self.token.lock().expect("token lock").take();
                Outcome::Fail(format!("HTTP 401 {code}: not authenticated, nothing applied"))
            }
            // Already there: only this add could have made it, so its outcome is unknown, not failed.
            400 if code.contains("already_exists") => Outcome::Info(format!("HTTP 400 {code}")),
            400 => Outcome::Fail(format!("HTTP 400 {code}: {}", body["reason"])),
            // Iggy's documented promise: the request never entered any pipeline.
            503 if code == "transient_not_accepted" => Outcome::Fail(format!("HTTP 503 {code}")),
            _ => Outcome::Info(format!("HTTP {status} {code}: {}", body["reason"])),
        }
    }

    async fn linearizable_list(&self) -> Outcome {
        let token = match self.token().await {
            Ok(token) => token,
            Err(why) => return Outcome::Fail(why),
        };
        let response = self
            .http
            .get(format!("{}/streams", self.base))
            .query(&[("consistency", "linearizable")])
            .bearer_auth(&token)
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(e) => return transport_outcome(&e, true),
        };
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        match (status, body.as_array()) {
            (200, Some(streams)) => Outcome::Ok(Value::from(
                streams
                    .iter()
                    .filter_map(|s| s["name"].as_str())
                    .map(Value::from)
                    .collect::<Vec<_>>(),
            )),
            _ => Outcome::Fail(format!("HTTP {status} {} (a read has no effect)", body["code"])),
        }
    }
}

#[async_trait]
impl SetClient for IggySetClient {
    async fn add(&self, element: &str) -> (Outcome, usize) {
        (self.create_stream(element).await, self.home)
    }

    async fn read_all(&self) -> (Outcome, usize) {
        (self.linearizable_list().await, self.home)
    }
}

/// A log client: appends go to the partition's primary (found by trying the nodes from `home` on), reads to the
/// first node that serves them.
pub(super) struct IggyLogClient {
    pub(super) http: reqwest::Client,
    pub(super) bases: Vec<String>,
    pub(super) home: usize,
    pub(super) token: Mutex<Option<String>>,
    pub(super) partitions: u32,
    pub(super) topic_ready: Arc<AtomicBool>,
}

impl IggyLogClient {
    /// The nodes in the order this client tries them.
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.bases.len()).map(move |i| (self.home + i) % self.bases.len())
    }

    /// `logK` -> partition K; the final phase's probe logs take the last two partitions.
    fn partition(&self, log: &str) -> Result<u32, String> {
        match log {
            "probe-heal" => Ok(self.partitions - 2),
            "probe-restart-all" => Ok(self.partitions - 1),
            _ => log
                .strip_prefix("log")
                .and_then(|k| k.parse::<u32>().ok())
                .filter(|k| *k < self.partitions - 2)
                .ok_or_else(|| format!("log `{log}` has no partition")),
        }
    }

    async fn token(&self) -> Result<String, String> {
        if let Some(token) = self.token.lock().expect("token lock").clone() {
            return Ok(token);
        }
        let mut last = String::new();
        for node in self.order() {
            match login(&self.http, &self.bases[node]).await {
                Ok(token) => {
                    *self.token.lock().expect("token lock") = Some(token.clone());
                    return Ok(token);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Creates the stream and its topic once (an existing one is fine: another client made it).
    async fn ensure_topic(&self, token: &str) -> Result<(), String> {
        if self.topic_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let topic = json!({"name": LOG_TOPIC, "partitions_count": self.partitions, "compression_algorithm": "none",
                           "max_topic_size": 0, "message_expiry": 0});
        let steps = [
            ("/streams".to_string(), json!({"name": LOG_STREAM})),
            (format!("/streams/{LOG_STREAM}/topics"), topic),
        ];
        for (path, body) in steps {
            let base = &self.bases[self.home];
            let response = self
                .http
                .post(format!("{base}{path}"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("creating {path}: {}", error_chain(&e)))?;
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            let exists = answer["code"].as_str().is_some_and(|c| c.contains("already_exists"));
            if !(200..300).contains(&status) && !exists {
                return Err(format!("creating {path}: HTTP {status}: {answer}"));
            }
        }
        self.topic_ready.store(true, Ordering::Release);
        Ok(())
    }

    async fn send(&self, log: &str, payload: &str) -> (Outcome, usize) {
        let prepared = async {
            let partition = self.partition(log)?;
            let token = self.token().await?;
            self.ensure_topic(&token).await?;
            Ok::<_, String>((partition, token))
        };
        let (partition, token) = match prepared.await {
            Ok(ready) => ready,
            Err(why) => return (Outcome::Fail(format!("{why} (the append was not sent)")), self.home),
        };
        let body = json!({
            "partitioning": {"kind": "partition_id", "value": BASE64.encode(partition.to_le_bytes())},
            "messages": [{"id": 0, "payload": BASE64.encode(payload)}],
        });
        let mut refused = Vec::new();
        for node in self.order() {
            let url = format!("{}/streams/{LOG_STREAM}/topics/{LOG_TOPIC}/messages", self.bases[node]);
            let response = match self.http.post(url).bearer_auth(&token).json(&body).send().await {
                Ok(response) => response,
                Err(e) if e.is_connect() => {
                    refused.push(format!("{}: {}", node + 1, error_chain(&e)));
                    continue;
                }
                Err(e) => return (transport_outcome(&e, false), node),
            };
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            let code = answer["code"].as_str().unwrap_or("");
            return match status {
                200 | 201 => match answer["confirmations"][0]["base_offset"].as_u64() {
                    Some(offset) => (Outcome::Ok(json!({"offset": offset})), node),
                    None => (
                        Outcome::Info(format!("HTTP {status} without an offset: {answer}")),
                        node,
                    ),
                },
                503 if code == NOT_ACCEPTED => {
                    refused.push(format!("n{}: HTTP 503 {code}", node + 1));
                    continue;
                }
                400 | 401 | 403 | 404 => (Outcome::Fail(format!("HTTP {status} {code}")), node),
                _ => (
                    Outcome::Info(format!("HTTP {status} {code}: {}", answer["reason"])),
                    node,
                ),
            };
        }
        (
            Outcome::Fail(format!("no node accepted it: {}", refused.join("; "))),
            self.home,
        )
    }

    async fn poll(&self, log: &str, from: u64, limit: u64) -> (Outcome, usize) {
        let prepared = async {
            let partition = self.partition(log)?;
            let token = self.token().await?;
            self.ensure_topic(&token).await?;
            Ok::<_, String>((partition, token))
        };
        let (partition, token) = match prepared.await {
            Ok(ready) => ready,
            Err(why) => return (Outcome::Fail(why), self.home),
        };
        let mut last = String::new();
        for node in self.order() {
            let url = format!("{}/streams/{LOG_STREAM}/topics/{LOG_TOPIC}/messages", self.bases[node]);
            let query = [
                ("consumer_id", "1".to_string()),
                ("partition_id", partition.to_string()),
                ("kind", "offset".into()),
                ("value", from.to_string()),
                ("count", limit.to_string()),
                ("auto_commit", "false".into()),
                ("consistency", "linearizable".into()),
            ];
            let response = match self.http.get(url).query(&query).bearer_auth(&token).send().await {
                Ok(response) => response,
                Err(e) => {
                    last = error_chain(&e);
                    continue;
                }
            };
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            if status != 200 {
                last = format!("n{}: HTTP {status} {}", node + 1, answer["code"]);
                continue;
            }
            return match polled_entries(&answer, from) {
                Ok(read) => (Outcome::Ok(read), node),
                Err(why) => (Outcome::Fail(why), node),
            };
        }
        (
            Outcome::Fail(format!("no node served the read (a read has no effect): {last}")),
            self.home,
        )
    }
}

/// A poll answer as the log checker's read: `{from, entries: [[offset, payload]], end}`. Iggy's `current_offset` is
/// the partition's last offset (0 for an empty partition too): the log ends after it unless the partition is empty,
/// which only a read from 0 that returned nothing can show.
pub(super) fn polled_entries(answer: &Value, from: u64) -> Result<Value, String> {
    let messages = answer["messages"].as_array().ok_or("a poll answer without messages")?;
    let mut entries = Vec::with_capacity(messages.len());
    for message in messages {
        let offset = message["header"]["offset"]
            .as_u64()
            .ok_or("a message without an offset")?;
        let bytes = BASE64
            .decode(message["payload"].as_str().unwrap_or(""))
            .map_err(|e| format!("payload at offset {offset} is not base64: {e}"))?;
        entries.push(json!([offset, String::from_utf8_lossy(&bytes)]));
    }
    let current = answer["current_offset"]
        .as_u64()
        .ok_or("a poll answer without current_offset")?;
    let end = if entries.is_empty() && from == 0 {
        0
    } else {
        current + 1
    };
    Ok(json!({"from": from, "entries": entries, "end": end}))
}

#[async_trait]
impl LogClient for IggyLogClient {
    async fn append(&self, log: &str, payload: &str) -> (Outcome, usize) {
        self.send(log, payload).await
    }

    async fn read(&self, log: &str, from: u64, limit: u64) -> (Outcome, usize) {
        self.poll(log, from, limit).await
    }
}
