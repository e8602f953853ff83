//! The HTTP/JSON client API. Every kv, log and transaction operation goes through the replicated log, except a
//! `get` or log read the primary answers on its read lease (see `replica::lease`); so does an operator's
//! `POST /reconfigure` (see `replica::reconfiguration`).

use std::collections::BTreeMap;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::config::Members;
use crate::replica::{ClientOutcome, ClientRequest, ClockReading, Event, StatusSnapshot};
use crate::state_machine::{Operation, Reply, TxnOp, LOG_READ_LIMIT_MAX};
use crate::wal::entry::{RequestIdentity, BODY_SIZE_MAX_BYTES};

/// Largest accepted HTTP request body.
const HTTP_BODY_SIZE_MAX_BYTES: usize = 64 * 1024;

/// Shared state of the HTTP handlers.
#[derive(Clone)]
pub struct ApiState {
    /// Feeds client requests to the replica core.
    pub events: SyncSender<Event>,
    /// The core's latest status.
    pub status: Arc<Mutex<StatusSnapshot>>,
    /// Client addresses of every replica (for 421 answers).
    pub client_addresses: Arc<BTreeMap<u8, String>>,
    /// Default request deadline.
    pub request_timeout_ms: u64,
}

/// Builds the router.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/kv/{key}", get(kv_get).put(kv_put))
        .route("/kv/{key}/cas", post(kv_cas))
        .route("/log/{name}", post(log_append).get(log_read))
        .route("/txn", post(txn))
        .route("/reconfigure", post(reconfigure))
        .layer(DefaultBodyLimit::max(HTTP_BODY_SIZE_MAX_BYTES))
        .with_state(state)
}

async fn status(State(state): State<ApiState>) -> Json<StatusSnapshot> {
    let mut snapshot = state.status.lock().expect("status lock is never poisoned").clone();
    snapshot.clock = ClockReading::now();
    Json(snapshot)
}

#[derive(Deserialize)]
struct ValueBody {
    value: String,
}

#[derive(Deserialize)]
struct CasBody {
    from: String,
    to: String,
}

#[derive(Deserialize)]
struct LogRange {
    from: Option<u64>,
    limit: Option<u64>,
}

fn error(code: StatusCode, message: &str, outcome: &str) -> Response {
    (code, Json(json!({ "error": message, "outcome": outcome }))).into_response()
}

fn parse<T: for<'de> Deserialize<'de>>(body: &Bytes) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("bad request body: {e}"),
            "not-applied",
        ))
    })
}

async fn kv_get(State(state): State<ApiState>, Path(key): Path<String>, headers: HeaderMap) -> Response {
    submit(&state, &headers, Operation::Get { key }).await
}

async fn kv_put(State(state): State<ApiState>, Path(key): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    match parse::<ValueBody>(&body) {
        Ok(body) => submit(&state, &headers, Operation::Put { key, value: body.value }).await,
        Err(response) => *response,
    }
}

async fn kv_cas(State(state): State<ApiState>, Path(key): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    match parse::<CasBody>(&body) {
        Ok(body) => {
            submit(
                &state,
                &headers,
                Operation::Cas {
                    key,
                    from: body.from,
                    to: body.to,
                },
            )
            .await
        }
        Err(response) => *response,
    }
}

async fn log_append(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match parse::<ValueBody>(&body) {
        Ok(body) => {
            submit(
                &state,
                &headers,
                Operation::Append {
                    name,
                    value: body.value,
                },
            )
            .await
        }
        Err(response) => *response,
    }
}

async fn log_read(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    Query(range): Query<LogRange>,
    headers: HeaderMap,
) -> Response {
    let limit = range.limit.unwrap_or(LOG_READ_LIMIT_MAX).min(LOG_READ_LIMIT_MAX);
    submit(
        &state,
        &headers,
        Operation::ReadLog {
            name,
            from: range.from.unwrap_or(0),
            limit,
        },
    )
    .await
}

/// `POST /txn`, body: the micro-op list (`[["append","k3",7],["r","k1",null]]`), run as one operation.
async fn txn(State(state): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    let ops = parse::<Vec<Value>>(&body).and_then(|ops| {
        let ops: Result<Vec<TxnOp>, String> = ops.iter().map(TxnOp::from_json).collect();
        match ops {
            Ok(ops) if !ops.is_empty() => Ok(ops),
            Ok(_) => Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                "a transaction needs at least one micro-op",
                "not-applied",
            ))),
            Err(why) => Err(Box::new(error(StatusCode::BAD_REQUEST, &why, "not-applied"))),
        }
    });
    match ops {
        Ok(ops) => submit(&state, &headers, Operation::Txn { ops }).await,
        Err(response) => *response,
    }
}

#[derive(Deserialize)]
struct ReconfigureBody {
    members: Vec<u8>,
}

/// `POST /reconfigure`, body `{"members": [0, 1, 3]}`: the members of the next epoch (one replica more or fewer than
/// now). 200 `{"epoch", "members"}` once the reconfiguration has committed (or at once when they are the members).
async fn reconfigure(State(state): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    let members = match parse::<ReconfigureBody>(&body).and_then(|body| {
        Members::from_ids(body.members).map_err(|why| Box::new(error(StatusCode::BAD_REQUEST, &why, "not-applied")))
    }) {
        Ok(members) => members,
        Err(response) => return *response,
    };
    let meta = match request_meta(&state, &headers) {
        Ok(meta) => meta,
        Err(response) => return *response,
    };
    let (reply, outcome) = oneshot::channel();
    deliver(&state, Event::Reconfigure { members, reply }, outcome, meta.deadline_ms).await
}

fn header_u64(headers: &HeaderMap, name: &str) -> Result<Option<u64>, Box<Response>> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let parsed = value.to_str().ok().and_then(|text| text.trim().parse::<u64>().ok());
    match parsed {
        Some(number) => Ok(Some(number)),
        None => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("header {name} is not a u64"),
            "not-applied",
        ))),
    }
}

struct RequestMeta {
    identity: RequestIdentity,
    deadline_ms: u64,
}

fn request_meta(state: &ApiState, headers: &HeaderMap) -> Result<RequestMeta, Box<Response>> {
    let client_id = header_u64(headers, "x-client-id")?.unwrap_or(0);
    let request_number = header_u64(headers, "x-request-number")?.unwrap_or(0);
    let deadline_ms = header_u64(headers, "x-faultline-deadline-ms")?
        .map_or(state.request_timeout_ms, |ms| ms.min(state.request_timeout_ms));
    Ok(RequestMeta {
        identity: RequestIdentity {
            client_id,
            request_number,
        },
        deadline_ms,
    })
}

async fn submit(state: &ApiState, headers: &HeaderMap, operation: Operation) -> Response {
    let meta = match request_meta(state, headers) {
        Ok(meta) => meta,
        Err(response) => return *response,
    };
    if operation.encode().len() > BODY_SIZE_MAX_BYTES {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "operation too large", "not-applied");
    }
    let (reply, outcome) = oneshot::channel();
    let request = ClientRequest {
        operation,
        identity: meta.identity,
    };
    deliver(state, Event::Client { request, reply }, outcome, meta.deadline_ms).await
}

/// Hands `event` to the replica core and answers with its outcome, or with an error once `deadline_ms` passed.
async fn deliver(
    state: &ApiState,
    event: Event,
    outcome: oneshot::Receiver<ClientOutcome>,
    deadline_ms: u64,
) -> Response {
    match state.events.try_send(event) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => return error(StatusCode::SERVICE_UNAVAILABLE, "replica busy", "not-applied"),
        Err(TrySendError::Disconnected(_)) => {
            return error(StatusCode::SERVICE_UNAVAILABLE, "replica stopped", "not-applied")
        }
    }
    match tokio::time::timeout(Duration::from_millis(deadline_ms), outcome).await {
        Ok(Ok(outcome)) => respond(state, outcome),
        Ok(Err(_)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "replica dropped the request",
            "unknown",
        ),
        Err(_) => error(StatusCode::GATEWAY_TIMEOUT, "deadline exceeded", "unknown"),
    }
}

fn respond(state: &ApiState, outcome: ClientOutcome) -> Response {
    match outcome {
        ClientOutcome::Done(reply) => reply_response(reply),
        ClientOutcome::NotPrimary { primary } => {
            let address = primary.and_then(|p| state.client_addresses.get(&p).cloned());
            let body = json!({ "error": "not primary", "primary": address, "outcome": "not-applied" });
            (StatusCode::MISDIRECTED_REQUEST, Json(body)).into_response()
        }
        ClientOutcome::Busy => error(StatusCode::SERVICE_UNAVAILABLE, "primary queue full", "not-applied"),
        ClientOutcome::Stale => error(StatusCode::CONFLICT, "stale request number", "unknown"),
        ClientOutcome::Unknown(reason) => error(StatusCode::SERVICE_UNAVAILABLE, &reason, "unknown"),
        ClientOutcome::Reconfigured { epoch, members } => {
            let members: Vec<u8> = members.ids().collect();
            (StatusCode::OK, Json(json!({ "epoch": epoch, "members": members }))).into_response()
        }
        ClientOutcome::Refused(reason) => error(StatusCode::CONFLICT, &reason, "not-applied"),
    }
}

fn reply_response(reply: Reply) -> Response {
    let (code, body): (StatusCode, Value) = match reply {
        Reply::Value(value) => (StatusCode::OK, json!({ "value": value })),
        Reply::Written => (StatusCode::OK, json!({ "ok": true })),
        Reply::CasFailed { current } => (
            StatusCode::CONFLICT,
            json!({ "error": "precondition failed", "current": current }),
        ),
        Reply::Offset(offset) => (StatusCode::OK, json!({ "offset": offset })),
        Reply::Entries { entries, end } => {
            let entries: Vec<Value> = entries
                .into_iter()
                .map(|(offset, value)| json!({ "offset": offset, "value": value }))
                .collect();
            (StatusCode::OK, json!({ "entries": entries, "end": end }))
        }
        Reply::Txn(filled) => match serde_json::from_str::<Value>(&filled) {
            Ok(filled) => (StatusCode::OK, json!({ "value": filled })),
            Err(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": "unreadable transaction reply", "outcome": "unknown" }),
            ),
        },
        // Aborted, with nothing applied: certainly not applied (the client records `fail`).
        Reply::TxnAborted(why) => (
            StatusCode::CONFLICT,
            json!({ "error": format!("transaction aborted: {why}"), "outcome": "not-applied" }),
        ),
        Reply::Malformed => (
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({ "error": "malformed op", "outcome": "unknown" }),
        ),
        Reply::Stale => (
            StatusCode::CONFLICT,
            json!({ "error": "stale request number", "outcome": "unknown" }),
        ),
    };
    (code, Json(body)).into_response()
}
