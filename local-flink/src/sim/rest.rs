//! The Flink REST subset the controller uses, with Flink 1.20 paths and JSON shapes, for every
//! simulated deployment under `/{namespace}/{name}` on one server.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bluegreen_protocol::flink::JobStatus;
use bluegreen_protocol::wire::metrics;
use serde_json::{Value, json};

use super::faults::RestFault;
use super::job::{JobState, JobView, SavepointOp, SimJob};
use super::shared::Shared;
use super::snapshot::{Snapshot, SnapshotKind};
use super::source::mix;
use crate::DeploymentRef;

/// Name of the source vertex.
pub const SOURCE_VERTEX: &str = "Source: bluegreen-sim-source";

/// The gate operator's name in a job of `color` (as the Java `GateSinkWrapper` names it); gate
/// metric ids are `<this>.bluegreenGate...`.
pub fn gate_operator_name(color: bluegreen_protocol::Color) -> String {
    format!("bluegreen-gate ({color})")
}

/// The id of vertex `index` (0: source, 1: count → gate → sink); the same in every job, as
/// Flink derives vertex ids from the job graph.
pub fn vertex_id(index: u64) -> String {
    format!(
        "{:016x}{:016x}",
        mix(0xB1E6_0000 + index),
        mix(0x6EE7_0000 + index)
    )
}

type Ns = Path<(String, String)>;
type NsJob = Path<(String, String, String)>;

/// A REST error in Flink's shape: `{"errors": [...]}`.
struct RestError(StatusCode, String);

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "errors": [self.1] }))).into_response()
    }
}

type RestResult = Result<Response, RestError>;

/// The routes of Flink's REST API, for every deployment under `/{namespace}/{name}`.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/{ns}/{name}/overview", get(overview))
        .route("/{ns}/{name}/jobs", get(jobs))
        .route("/{ns}/{name}/jobs/overview", get(jobs_overview))
        .route("/{ns}/{name}/jobs/{jid}", get(job_details))
        .route(
            "/{ns}/{name}/jobs/{jid}/savepoints",
            post(trigger_savepoint),
        )
        .route(
            "/{ns}/{name}/jobs/{jid}/savepoints/{trigger}",
            get(savepoint_status),
        )
        .route("/{ns}/{name}/jobs/{jid}/stop", post(stop))
        .route("/{ns}/{name}/jobs/{jid}/checkpoints", get(checkpoints))
        .route(
            "/{ns}/{name}/jobs/{jid}/vertices/{vid}",
            get(vertex_details),
        )
        .route(
            "/{ns}/{name}/jobs/{jid}/vertices/{vid}/watermarks",
            get(watermarks),
        )
        .route(
            "/{ns}/{name}/jobs/{jid}/vertices/{vid}/subtasks/metrics",
            get(subtask_metrics),
        )
        .route(
            "/{ns}/{name}/jobs/{jid}/vertices/{vid}/subtasks/{index}/metrics",
            get(one_subtask_metrics),
        )
        .with_state(shared)
}

/// Applies the deployment's REST fault, if any.
async fn fault(shared: &Shared, d: &DeploymentRef) -> Result<(), RestError> {
    match shared.rt.faults.rest_fault(d) {
        RestFault::Healthy => Ok(()),
        RestFault::ServerError => Err(RestError(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal server error. (injected)".into(),
        )),
        RestFault::Hang => std::future::pending().await,
    }
}

async fn deployment_jobs(
    shared: &Shared,
    (ns, name): (String, String),
) -> Result<Vec<Arc<SimJob>>, RestError> {
    let d = DeploymentRef::new(ns, name);
    fault(shared, &d).await?;
    shared.jobs().get(&d).cloned().ok_or_else(|| {
        RestError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("no JobManager for FlinkDeployment {d} (not deployed, or deleted)"),
        )
    })
}

async fn find_job(
    shared: &Shared,
    (ns, name, jid): (String, String, String),
) -> Result<Arc<SimJob>, RestError> {
    deployment_jobs(shared, (ns, name))
        .await?
        .into_iter()
        .find(|j| j.job_id == jid)
        .ok_or_else(|| RestError(StatusCode::NOT_FOUND, format!("Job {jid} not found")))
}

// Handlers return `RestResult`; these keep their tails uniform.
#[allow(clippy::unnecessary_wraps)]
fn ok(v: Value) -> RestResult {
    Ok(Json(v).into_response())
}

async fn overview(State(s): State<Arc<Shared>>, Path(p): Ns) -> RestResult {
    let jobs = deployment_jobs(&s, p).await?;
    let count = |st: JobState| jobs.iter().filter(|j| j.view().state == st).count();
    let slots: u32 = jobs.last().map_or(1, |j| j.settings.parallelism);
    ok(json!({
        "taskmanagers": 1,
        "slots-total": slots,
        "slots-available": 0,
        "jobs-running": count(JobState::Running) + count(JobState::Restarting) + count(JobState::Created),
        "jobs-finished": count(JobState::Finished),
        "jobs-cancelled": count(JobState::Canceled),
        "jobs-failed": count(JobState::Failed),
        "flink-version": "1.20.1",
        "flink-commit": "bluegreen-local",
    }))
}

async fn jobs(State(s): State<Arc<Shared>>, Path(p): Ns) -> RestResult {
    let jobs = deployment_jobs(&s, p).await?;
    let list: Vec<Value> = jobs
        .iter()
        .map(|j| json!({"id": j.job_id, "status": j.view().state.as_str()}))
        .collect();
    ok(json!({ "jobs": list }))
}

fn task_counts(state: JobState, n: u32) -> Value {
    let mut counts = json!({
        "created": 0, "scheduled": 0, "deploying": 0, "running": 0, "finished": 0,
        "canceling": 0, "canceled": 0, "failed": 0, "reconciling": 0, "initializing": 0,
    });
    let key = match state {
        JobState::Running => "running",
        JobState::Created | JobState::Restarting => "created",
        JobState::Failed => "failed",
        JobState::Canceled => "canceled",
        JobState::Finished => "finished",
    };
    counts[key] = json!(n);
    counts
}

/// A vertex's (or a job's) subtasks by ExecutionState, as `GET /jobs/:jid` reports them (the
/// state names upper case, unlike the overview's `tasks`): all `n` in the state of `state`.
fn state_counts(state: JobState, n: u32) -> Value {
    let mut counts = json!({
        "CREATED": 0, "SCHEDULED": 0, "DEPLOYING": 0, "RUNNING": 0, "FINISHED": 0,
        "CANCELING": 0, "CANCELED": 0, "FAILED": 0, "RECONCILING": 0, "INITIALIZING": 0,
    });
    counts[vertex_status(state)] = json!(n);
    counts
}

/// The ExecutionState of every task while the job is in `state`: a restarting job's tasks were
/// cancelled and wait for the restart delay.
fn vertex_status(state: JobState) -> &'static str {
    match state {
        JobState::Running => "RUNNING",
        JobState::Created => "CREATED",
        JobState::Restarting | JobState::Canceled => "CANCELED",
        JobState::Failed => "FAILED",
        JobState::Finished => "FINISHED",
    }
}

fn end_and_duration(v: &JobView, now: i64) -> (i64, i64) {
    let end = v.end_time_ms.unwrap_or(-1);
    let until = v.end_time_ms.unwrap_or(now);
    (end, until - v.start_time_ms)
}

async fn jobs_overview(State(s): State<Arc<Shared>>, Path(p): Ns) -> RestResult {
    let jobs = deployment_jobs(&s, p).await?;
    let now = s.rt.clock.now_ms();
    let list: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let v = j.view();
            let (end, duration) = end_and_duration(&v, now);
            let mut tasks = task_counts(v.state, 2 * j.settings.parallelism);
            tasks["total"] = json!(2 * j.settings.parallelism);
            tasks["pending"] = json!(0);
            json!({
                "jid": j.job_id,
                "name": j.settings.job_name,
                "state": v.state.as_str(),
                "start-time": v.start_time_ms,
                "end-time": end,
                "duration": duration,
                "last-modification": v.end_time_ms.unwrap_or(v.start_time_ms),
                "tasks": tasks,
            })
        })
        .collect();
    ok(json!({ "jobs": list }))
}

fn vertex_name(job: &SimJob) -> String {
    match job.color() {
        Some(c) => format!("Count -> {} -> Sink: ledger", gate_operator_name(c)),
        None => "Count -> Sink: ledger".into(),
    }
}

async fn job_details(State(s): State<Arc<Shared>>, Path(p): NsJob) -> RestResult {
    let job = find_job(&s, p).await?;
    let v = job.view();
    let now = s.rt.clock.now_ms();
    let (end, duration) = end_and_duration(&v, now);
    let p = job.settings.parallelism;
    let records: u64 = v.positions.iter().sum();
    let out: u64 = v.counters.iter().map(|c| c.records_out).sum();
    // Flink's vertex start-time: the earliest DEPLOYING timestamp of the current attempts of
    // its subtasks (-1 before any was deployed); every restart deploys new attempts.
    let attempt_start = if v.state == JobState::Created {
        -1
    } else {
        v.attempt_started_ms
    };
    let vertex = |i: u64, name: String, read: u64, write: u64| {
        json!({
            "id": vertex_id(i),
            "slotSharingGroupId": vertex_id(100),
            "name": name,
            "maxParallelism": 128,
            "parallelism": p,
            "status": vertex_status(v.state),
            "start-time": attempt_start,
            "end-time": end,
            "duration": duration,
            "tasks": state_counts(v.state, p),
            "metrics": {
                "read-bytes": 0, "read-bytes-complete": true, "write-bytes": 0,
                "write-bytes-complete": true, "read-records": read, "read-records-complete": true,
                "write-records": write, "write-records-complete": true,
                "accumulated-backpressured-time": 0, "accumulated-idle-time": 0,
                "accumulated-busy-time": 0.0,
            },
        })
    };
    let vertices = vec![
        vertex(0, SOURCE_VERTEX.into(), 0, records),
        vertex(1, vertex_name(&job), records, out),
    ];
    let nodes = json!([
        {"id": vertex_id(1), "parallelism": p, "operator": "", "operator_strategy": "",
         "description": vertex_name(&job), "optimizer_properties": {},
         "inputs": [{"num": 0, "id": vertex_id(0), "ship_strategy": "HASH", "exchange": "pipelined_bounded"}]},
        {"id": vertex_id(0), "parallelism": p, "operator": "", "operator_strategy": "",
         "description": SOURCE_VERTEX, "optimizer_properties": {}},
    ]);
    let mut timestamps = json!({});
    for started in [JobStatus::Created, JobStatus::Running] {
        timestamps[started.as_str()] = json!(v.start_time_ms);
    }
    if let Some(end) = v.end_time_ms {
        timestamps[v.state.as_str()] = json!(end);
    }
    ok(json!({
        "jid": job.job_id,
        "name": job.settings.job_name,
        "isStoppable": false,
        "state": v.state.as_str(),
        "job-type": "STREAMING",
        "start-time": v.start_time_ms,
        "end-time": end,
        "duration": duration,
        "maxParallelism": -1,
        "now": now,
        "timestamps": timestamps,
        "vertices": vertices,
        "status-counts": state_counts(v.state, 2),
        "plan": {"jid": job.job_id, "name": job.settings.job_name, "type": "STREAMING", "nodes": nodes},
    }))
}

#[allow(clippy::unnecessary_wraps)]
fn accepted(request_id: &str) -> RestResult {
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "request-id": request_id })),
    )
        .into_response())
}

async fn trigger_savepoint(
    State(s): State<Arc<Shared>>,
    Path(p): NsJob,
    body: Option<Json<Value>>,
) -> RestResult {
    let job = find_job(&s, p).await?;
    let cancel = body
        .as_ref()
        .and_then(|b| b.get("cancel-job"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let trigger_id = body
        .as_ref()
        .and_then(|b| b.get("triggerId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = job
        .trigger_savepoint_under(cancel, trigger_id)
        .map_err(|e| RestError(StatusCode::CONFLICT, e.to_string()))?;
    accepted(&id)
}

/// The body of `POST /jobs/:jid/stop` (Flink's `StopWithSavepointRequestBody`).
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct StopBody {
    drain: bool,
    target_directory: Option<String>,
    trigger_id: Option<String>,
}

async fn stop(
    State(s): State<Arc<Shared>>,
    Path(p): NsJob,
    body: Option<Json<StopBody>>,
) -> RestResult {
    let job = find_job(&s, p).await?;
    let body = body.map(|Json(b)| b).unwrap_or_default();
    if body.drain {
        return Err(RestError(
            StatusCode::BAD_REQUEST,
            "drain=true is not simulated: a handover stops with drain=false".into(),
        ));
    }
    tracing::debug!(job = %job.job_id, target = ?body.target_directory, "stop-with-savepoint");
    let id = job
        .stop_with_savepoint(body.trigger_id)
        .map_err(|e| RestError(StatusCode::CONFLICT, e.to_string()))?;
    accepted(&id)
}

async fn savepoint_status(
    State(s): State<Arc<Shared>>,
    Path((ns, name, jid, trigger)): Path<(String, String, String, String)>,
) -> RestResult {
    let job = find_job(&s, (ns, name, jid)).await?;
    let op = job
        .view()
        .savepoints
        .get(&trigger)
        .cloned()
        .ok_or_else(|| {
            RestError(
                StatusCode::NOT_FOUND,
                format!("Operation not found under key: {trigger}"),
            )
        })?;
    ok(match op {
        SavepointOp::InProgress => json!({"status": {"id": "IN_PROGRESS"}}),
        SavepointOp::Completed { location } => {
            json!({"status": {"id": "COMPLETED"}, "operation": {"location": location}})
        }
        SavepointOp::Failed { cause } => {
            let class = cause
                .split(':')
                .next()
                .unwrap_or("java.lang.Exception")
                .to_owned();
            json!({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
                "class": class,
                "stack-trace": format!("{cause}\n\tat bluegreen-local simulated Flink"),
                "serialized-throwable": "",
            }}})
        }
    })
}

fn checkpoint_stats(s: &Snapshot, parallelism: u32) -> Value {
    let savepoint = s.kind == SnapshotKind::Savepoint;
    json!({
        "className": ".CompletedCheckpointStatistics",
        "id": s.id,
        "status": "COMPLETED",
        "is_savepoint": savepoint,
        "savepointFormat": if savepoint { json!("CANONICAL") } else { Value::Null },
        "trigger_timestamp": s.taken_at_ms,
        "latest_ack_timestamp": s.taken_at_ms,
        "checkpointed_size": 0,
        "state_size": 0,
        "end_to_end_duration": 0,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": 0,
        "num_subtasks": 2 * parallelism,
        "num_acknowledged_subtasks": 2 * parallelism,
        "checkpoint_type": if savepoint { "SAVEPOINT" } else { "CHECKPOINT" },
        "tasks": {},
        "external_path": s.path,
        "discarded": false,
    })
}

async fn checkpoints(State(s): State<Arc<Shared>>, Path(p): NsJob) -> RestResult {
    let job = find_job(&s, p).await?;
    let v = job.view();
    let par = job.settings.parallelism;
    let restored = v.restored.as_ref().map(|(snap, at)| {
        json!({
            "id": snap.id,
            "restore_timestamp": at,
            "is_savepoint": snap.kind == SnapshotKind::Savepoint,
            "external_path": snap.path,
        })
    });
    let history: Vec<Value> = [&v.latest_checkpoint, &v.latest_savepoint]
        .into_iter()
        .flatten()
        .map(|snap| checkpoint_stats(snap, par))
        .collect();
    ok(json!({
        "counts": {
            "restored": u64::from(v.restored.is_some()),
            "total": v.completed_checkpoints + v.failed_checkpoints,
            "in_progress": 0,
            "completed": v.completed_checkpoints,
            "failed": v.failed_checkpoints,
        },
        "summary": {
            "checkpointed_size": {"min": 0, "max": 0, "avg": 0},
            "state_size": {"min": 0, "max": 0, "avg": 0},
            "end_to_end_duration": {"min": 0, "max": 0, "avg": 0},
        },
        "latest": {
            "completed": v.latest_checkpoint.as_ref().map(|c| checkpoint_stats(c, par)),
            "savepoint": v.latest_savepoint.as_ref().map(|c| checkpoint_stats(c, par)),
            "failed": Value::Null,
            "restored": restored,
        },
        "history": history,
    }))
}

/// Which vertex a vertex id names.
fn vertex_index(vid: &str) -> Result<u64, RestError> {
    (0..2)
        .find(|i| vertex_id(*i) == vid)
        .ok_or_else(|| RestError(StatusCode::NOT_FOUND, format!("JobVertex {vid} not found")))
}

/// `GET /jobs/:jid/vertices/:vid` (Flink's JobVertexDetailsInfo): every subtask's current
/// execution attempt, its state and start-time (the attempt's DEPLOYING timestamp). The simulated
/// job restarts all its subtasks together, so they share the attempt number and start time.
async fn vertex_details(
    State(s): State<Arc<Shared>>,
    Path((ns, name, jid, vid)): Path<(String, String, String, String)>,
) -> RestResult {
    let job = find_job(&s, (ns, name, jid)).await?;
    let index = vertex_index(&vid)?;
    let v = job.view();
    let now = s.rt.clock.now_ms();
    let (end, duration) = end_and_duration(&v, now);
    let start = if v.state == JobState::Created {
        -1
    } else {
        v.attempt_started_ms
    };
    let name = if index == 0 {
        SOURCE_VERTEX.to_owned()
    } else {
        vertex_name(&job)
    };
    let subtasks: Vec<Value> = (0..job.settings.parallelism)
        .map(|i| {
            json!({
                "subtask": i,
                "status": vertex_status(v.state),
                "attempt": v.attempt,
                "endpoint": "localhost:0",
                "start-time": start,
                "end-time": end,
                "duration": duration,
                "taskmanager-id": "local-taskmanager",
            })
        })
        .collect();
    ok(json!({
        "id": vid,
        "name": name,
        "parallelism": job.settings.parallelism,
        "maxParallelism": 128,
        "now": now,
        "subtasks": subtasks,
    }))
}

async fn watermarks(
    State(s): State<Arc<Shared>>,
    Path((ns, name, jid, vid)): Path<(String, String, String, String)>,
) -> RestResult {
    let d = DeploymentRef::new(ns.clone(), name.clone());
    let job = find_job(&s, (ns, name, jid)).await?;
    let index = vertex_index(&vid)?;
    if index == 0 && s.rt.faults.gate_in_source(&d) {
        // Flink: a source vertex has no input watermark.
        return ok(Value::Array(Vec::new()));
    }
    let v = job.view();
    let list: Vec<Value> = (0..job.settings.parallelism as usize)
        .map(|i| {
            let wm = if index == 0 {
                v.source_watermarks.get(i).copied().unwrap_or(i64::MIN)
            } else {
                v.job_watermark
            };
            json!({"id": format!("{i}.currentInputWatermark"), "value": wm.to_string()})
        })
        .collect();
    ok(Value::Array(list))
}

/// Every subtask's numeric metrics of one vertex, by id; the gate's on `gate_vertex`.
#[allow(clippy::cast_precision_loss)]
fn vertex_metrics(
    job: &SimJob,
    view: &JobView,
    index: u64,
    gate_vertex: u64,
) -> BTreeMap<String, Vec<f64>> {
    let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let p = job.settings.parallelism as usize;
    let v = view;
    let mut put = |id: String, value: f64| metrics.entry(id).or_default().push(value);
    for i in 0..p {
        if index == 0 {
            let read: u64 = v
                .positions
                .iter()
                .enumerate()
                .filter(|(s, _)| s % p == i)
                .map(|(_, n)| *n)
                .sum();
            put("numRecordsOut".into(), read as f64);
            let wm = v.source_watermarks.get(i).copied().unwrap_or(i64::MIN);
            put("currentOutputWatermark".into(), wm as f64);
        } else {
            let c = v.counters.get(i).copied().unwrap_or_default();
            put("numRecordsIn".into(), c.records_in as f64);
            put("numRecordsOut".into(), c.records_out as f64);
            put("currentInputWatermark".into(), v.job_watermark as f64);
        }
        if index != gate_vertex {
            continue;
        }
        let (Some(color), Some(gate)) = (job.color(), v.gates.get(i)) else {
            continue;
        };
        let g = gate.snapshot();
        let op = gate_operator_name(color);
        put(format!("{op}.{}", metrics::PASSED), g.passed as f64);
        put(format!("{op}.{}", metrics::DROPPED), g.dropped as f64);
        put(format!("{op}.{}", metrics::HELD), g.held as f64);
        put(
            format!("{op}.{}", metrics::MAX_PASSED_EVENT_TIME),
            g.max_passed_event_time_ms.unwrap_or(i64::MIN) as f64,
        );
        // Same conventions as the Java GateProcessFunction: -1 / -1 / 0 before a state.
        put(
            format!("{op}.{}", metrics::EPOCH),
            g.epoch().map_or(-1.0, |e| e as f64),
        );
        let stage = g.watermark_stage().map_or(-1.0, |s| match s {
            bluegreen_protocol::WatermarkStage::NotSet => 0.0,
            bluegreen_protocol::WatermarkStage::WaitingForWatermark => 1.0,
            bluegreen_protocol::WatermarkStage::Set => 2.0,
        });
        put(format!("{op}.{}", metrics::WATERMARK_STAGE), stage);
        put(
            format!("{op}.{}", metrics::TOGGLE),
            g.watermark_ms().map_or(0.0, |w| w as f64),
        );
    }
    metrics
}

/// The `bluegreenGateAppliedState` line of every gate subtask on `index`, with its metric id.
fn gate_reports(
    job: &SimJob,
    view: &JobView,
    index: u64,
    gate_vertex: u64,
) -> Option<(String, Vec<String>)> {
    let color = job.color().filter(|_| index == gate_vertex)?;
    let watermark = Some(view.job_watermark).filter(|w| *w != i64::MIN);
    let lines = view
        .gates
        .iter()
        .map(|g| g.snapshot().report(watermark, view.inputs_idle).to_string())
        .collect();
    Some((
        format!(
            "{}.{}",
            gate_operator_name(color),
            bluegreen_protocol::GATE_REPORT_METRIC
        ),
        lines,
    ))
}

/// The vertex the gate is served on: 1, or 0 when it is chained into the source.
fn gate_vertex(s: &Shared, ns: &str, name: &str) -> u64 {
    u64::from(!s.rt.faults.gate_in_source(&DeploymentRef::new(ns, name)))
}

async fn subtask_metrics(
    State(s): State<Arc<Shared>>,
    Path((ns, name, jid, vid)): Path<(String, String, String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
) -> RestResult {
    let gate_vertex = gate_vertex(&s, &ns, &name);
    let job = find_job(&s, (ns, name, jid)).await?;
    let index = vertex_index(&vid)?;
    let v = job.view();
    let metrics = vertex_metrics(&job, &v, index, gate_vertex);
    let Some(get) = q.get("get") else {
        // String gauges are listed, not aggregated, as in Flink.
        let report = gate_reports(&job, &v, index, gate_vertex).map(|(id, _)| id);
        let ids: Vec<Value> = metrics
            .keys()
            .chain(report.as_ref())
            .map(|id| json!({ "id": id }))
            .collect();
        return ok(Value::Array(ids));
    };
    let aggs: Vec<&str> = q.get("agg").map_or_else(
        || vec!["min", "max", "avg", "sum", "skew"],
        |a| a.split(',').map(str::trim).collect(),
    );
    let subtasks: Option<Vec<usize>> = q
        .get("subtasks")
        .map(|s| s.split(',').filter_map(|i| i.trim().parse().ok()).collect());
    let list: Vec<Value> = get
        .split(',')
        .map(str::trim)
        .filter_map(|id| {
            let values: Vec<f64> = metrics
                .get(id)?
                .iter()
                .enumerate()
                .filter(|(i, _)| subtasks.as_ref().is_none_or(|s| s.contains(i)))
                .map(|(_, v)| *v)
                .collect();
            Some(aggregate(id, &values, &aggs))
        })
        .collect();
    ok(Value::Array(list))
}

/// `GET /jobs/:jid/vertices/:vid/subtasks/:index/metrics[?get=a,b]`: one subtask's metrics as
/// `[{"id", "value"}]` with string values (ids only without `get`), as Flink serves them.
async fn one_subtask_metrics(
    State(s): State<Arc<Shared>>,
    Path((ns, name, jid, vid, subtask)): Path<(String, String, String, String, usize)>,
    Query(q): Query<BTreeMap<String, String>>,
) -> RestResult {
    let gate_vertex = gate_vertex(&s, &ns, &name);
    let job = find_job(&s, (ns, name, jid)).await?;
    let index = vertex_index(&vid)?;
    if subtask >= job.settings.parallelism as usize {
        return Err(RestError(
            StatusCode::NOT_FOUND,
            format!("Subtask {subtask} of vertex {vid} not found"),
        ));
    }
    let v = job.view();
    let mut values: BTreeMap<String, String> = vertex_metrics(&job, &v, index, gate_vertex)
        .into_iter()
        .filter_map(|(id, per)| per.get(subtask).map(|x| (id, x.to_string())))
        .collect();
    if let Some((id, lines)) = gate_reports(&job, &v, index, gate_vertex)
        && let Some(line) = lines.get(subtask)
    {
        values.insert(id, line.clone());
    }
    let wanted: Option<Vec<&str>> = q.get("get").map(|g| g.split(',').map(str::trim).collect());
    let list: Vec<Value> = values
        .iter()
        .filter(|(id, _)| wanted.as_ref().is_none_or(|w| w.contains(&id.as_str())))
        .map(|(id, value)| match wanted {
            Some(_) => json!({ "id": id, "value": value }),
            None => json!({ "id": id }),
        })
        .collect();
    ok(Value::Array(list))
}

/// Flink's `AggregatedMetric`: only the requested aggregates.
#[allow(clippy::cast_precision_loss)]
fn aggregate(id: &str, values: &[f64], aggs: &[&str]) -> Value {
    let mut out = json!({ "id": id });
    if values.is_empty() {
        return out;
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = values.iter().sum();
    let avg = sum / values.len() as f64;
    for agg in aggs {
        let value = match *agg {
            "min" => min,
            "max" => max,
            "sum" => sum,
            "avg" => avg,
            "skew" => {
                if avg == 0.0 {
                    0.0
                } else {
                    (max - avg) / avg * 100.0
                }
            }
            _ => continue,
        };
        out[*agg] = json!(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_only_what_was_asked() {
        let v = aggregate("m", &[1.0, 3.0], &["min", "max", "sum"]);
        assert_eq!(v, json!({"id": "m", "min": 1.0, "max": 3.0, "sum": 4.0}));
        assert_eq!(aggregate("m", &[], &["min"]), json!({"id": "m"}));
    }

    #[test]
    fn vertex_ids_are_32_hex_digits_and_stable() {
        assert_eq!(vertex_id(0).len(), 32);
        assert_ne!(vertex_id(0), vertex_id(1));
        assert_eq!(vertex_id(1), vertex_id(1));
    }
}
