//! The subset of Flink's REST API the controller uses (Flink 1.20 / 2.x paths and shapes), on
//! reqwest with timeouts. URLs come from a template so that the same code reaches
//! `http://<name>-rest.<namespace>.svc:8081` in a cluster and a local runner elsewhere.

use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::observed::{FlinkObs, GateObs, SavepointObs};
use bluegreen_protocol::{GATE_REPORT_METRIC, GateReport};
use serde::Deserialize;

/// The default REST URL template: the Apache operator's `<name>-rest` Service.
pub const DEFAULT_URL_TEMPLATE: &str = "http://{name}-rest.{namespace}.svc:8081";

/// A client of one Flink cluster's REST API.
#[derive(Clone, Debug)]
pub struct FlinkRest {
    http: reqwest::Client,
    base: String,
}

/// Builds the HTTP client used for every Flink REST call.
pub fn http_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .expect("a reqwest client with timeouts always builds")
}

impl FlinkRest {
    /// The client of the FlinkDeployment `name` in `namespace`, per `template`.
    pub fn new(http: reqwest::Client, template: &str, namespace: &str, name: &str) -> Self {
        let base = template
            .replace("{name}", name)
            .replace("{namespace}", namespace);
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    async fn get(&self, path: &str) -> Result<Value> {
        let (url, response) = self.send_get(path).await?;
        decode(&url, response).await
    }

    /// GETs `path` under the base URL; returns the full URL (for errors) and the response.
    async fn send_get(&self, path: &str) -> Result<(String, reqwest::Response)> {
        let url = format!("{}{path}", self.base);
        match self.http.get(&url).send().await {
            Ok(response) => Ok((url, response)),
            Err(source) => Err(Error::FlinkRequest { url, source }),
        }
    }

    /// Everything `plan` needs about job `job_id`; `savepoint_trigger` is polled when given;
    /// `readiness`: also when its tasks started (one more request per vertex), which `plan` reads
    /// only for the incoming job before W is set.
    pub async fn observe(
        &self,
        job_id: &str,
        savepoint_trigger: Option<&str>,
        readiness: bool,
    ) -> Result<FlinkObs> {
        let checkpoints = self.checkpoints(job_id).await?;
        let savepoint = match savepoint_trigger {
            Some(trigger) => Some(self.savepoint_status(job_id, trigger).await?),
            None => None,
        };
        let job: JobDetails = self.get_typed(&format!("/jobs/{job_id}")).await?;
        let gates = self.gates(job_id, &job.vertices).await?;
        let tasks_started_at = if readiness {
            self.tasks_started_at(job_id, &job.vertices).await?
        } else {
            None
        };
        Ok(FlinkObs {
            savepoint,
            gates,
            tasks_started_at,
            ..checkpoints
        })
    }

    /// When the current attempts of the job's tasks started: the latest start-time of any
    /// subtask's current attempt (`GET /jobs/:jid/vertices/:vid`), when every vertex and every
    /// subtask is RUNNING; `None` otherwise. Per subtask, because a region failover restarts only
    /// the subtasks of the failed region: the vertex's own start-time is the earliest of its
    /// subtasks' and stays put when others keep running.
    async fn tasks_started_at(&self, job_id: &str, vertices: &[Vertex]) -> Result<Option<i64>> {
        if vertices.is_empty() || !vertices.iter().all(Vertex::running) {
            return Ok(None);
        }
        let mut latest = i64::MIN;
        for vertex in vertices {
            let details: VertexDetails = self
                .get_typed(&format!("/jobs/{job_id}/vertices/{}", vertex.id))
                .await?;
            match latest_start(&details.subtasks) {
                Some(t) => latest = latest.max(t),
                None => return Ok(None),
            }
        }
        Ok(Some(latest))
    }

    /// The completed checkpoints of `job_id` and the latest one's path (only those fields are
    /// set). Flink answers for a job that has ended too, so a FAILED job names the checkpoint it
    /// would resume from.
    pub async fn checkpoints(&self, job_id: &str) -> Result<FlinkObs> {
        let checkpoints: Checkpoints = self
            .get_typed(&format!("/jobs/{job_id}/checkpoints"))
            .await?;
        Ok(FlinkObs {
            checkpoints_completed: checkpoints.counts.completed,
            latest_checkpoint: checkpoints
                .latest
                .and_then(|l| l.completed)
                .and_then(|c| c.external_path),
            ..FlinkObs::default()
        })
    }

    async fn get_typed<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T> {
        let value = self.get(path).await?;
        typed(&format!("{}{path}", self.base), value)
    }

    /// Every gate subtask's `bluegreenGateAppliedState` line, on every vertex: gates are found by
    /// the metric's name alone (ids ending in it), whatever the operator is called and whichever
    /// vertex it is chained into. `None` when no vertex has a gate.
    async fn gates(&self, job_id: &str, vertices: &[Vertex]) -> Result<Option<GateObs>> {
        let mut reports = Vec::new();
        let mut layout = std::collections::BTreeMap::new();
        for vertex in vertices {
            let vid = &vertex.id;
            let listed: Vec<MetricId> = self
                .get_typed(&format!("/jobs/{job_id}/vertices/{vid}/subtasks/metrics"))
                .await?;
            // Every gate of the vertex: two gates chained into one vertex have one id each.
            let mut ids: Vec<&str> = listed
                .iter()
                .map(|m| m.id.as_str())
                .filter(|id| id.ends_with(GATE_REPORT_METRIC))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            if !ids.is_empty() {
                layout.insert(vid.clone(), u32::try_from(ids.len()).unwrap_or(u32::MAX));
            }
            for metric in ids {
                self.gate_reports(job_id, vertex, metric, &mut reports)
                    .await?;
            }
        }
        Ok((!reports.is_empty()).then_some(GateObs {
            reports,
            vertices: layout,
        }))
    }

    /// Every subtask's line of the gate metric `metric` of `vertex`, appended to `reports`; an
    /// error when a subtask does not report it or its line does not parse.
    async fn gate_reports(
        &self,
        job_id: &str,
        vertex: &Vertex,
        metric: &str,
        reports: &mut Vec<GateReport>,
    ) -> Result<()> {
        let vid = &vertex.id;
        for subtask in 0..vertex.parallelism {
            let path =
                format!("/jobs/{job_id}/vertices/{vid}/subtasks/{subtask}/metrics?get={metric}");
            let values: Vec<MetricValue> = self.get_typed(&path).await?;
            let line =
                values
                    .into_iter()
                    .find(|v| v.id == metric)
                    .ok_or_else(|| Error::FlinkRest {
                        url: format!("{}{path}", self.base),
                        message: format!("subtask {subtask} does not report {metric}"),
                    })?;
            let report = line
                .value
                .parse::<GateReport>()
                .map_err(|source| Error::GateReport {
                    url: format!("{}{path}", self.base),
                    metric: metric.to_owned(),
                    subtask,
                    source,
                })?;
            reports.push(report);
        }
        Ok(())
    }

    /// POSTs `body` as JSON to `path` under the base URL; returns the full URL (for errors) and
    /// the decoded answer.
    async fn post(&self, path: &str, body: &impl serde::Serialize) -> Result<(String, Value)> {
        let url = format!("{}{path}", self.base);
        let response = self
            .http
            .post(&url)
            .json(body)
            .send()
            .await
            .map_err(|source| Error::FlinkRequest {
                url: url.clone(),
                source,
            })?;
        let answer = decode(&url, response).await?;
        Ok((url, answer))
    }

    /// Triggers a savepoint of `job_id` (the job keeps running) under `trigger_id` (Flink's
    /// `triggerId`, which the status already records): Flink deduplicates a resent request under
    /// the same id, so a controller that died after sending it takes no second savepoint. A
    /// trigger id the job already knows (in progress, completed or failed) is not sent again.
    pub async fn trigger_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
        trigger_id: &str,
    ) -> Result<()> {
        if self.savepoint_status(job_id, trigger_id).await? != SavepointObs::Unknown {
            return Ok(());
        }
        let (url, answer) = self
            .post(
                &format!("/jobs/{job_id}/savepoints"),
                &json!({
                    "target-directory": target_directory,
                    "cancel-job": false,
                    "triggerId": trigger_id,
                }),
            )
            .await?;
        let answered = request_id(&url, answer)?;
        if answered != trigger_id {
            return Err(Error::FlinkRest {
                url,
                message: format!(
                    "asked for a savepoint under trigger {trigger_id}, Flink answered {answered}"
                ),
            });
        }
        Ok(())
    }

    /// Stops `job_id` with a savepoint (`POST /jobs/:jid/stop`), which commits the job's
    /// transactional output; with `drain`, Flink first emits the maximum watermark, which fires
    /// every event-time window and timer. `trigger_id` makes a resent request a no-op.
    pub async fn stop_with_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
        trigger_id: &str,
        drain: bool,
    ) -> Result<()> {
        let body = StopRequest {
            drain,
            target_directory,
            trigger_id,
        };
        let (url, answer) = self.post(&format!("/jobs/{job_id}/stop"), &body).await?;
        let answered = request_id(&url, answer)?;
        if answered != trigger_id {
            return Err(Error::FlinkRest {
                url,
                message: format!(
                    "asked to stop under trigger {trigger_id}, Flink answered {answered}"
                ),
            });
        }
        Ok(())
    }

    /// The status of savepoint (or stop) `trigger` of `job_id`, or `Unknown` when the job
    /// does not know it.
    pub async fn savepoint_status(&self, job_id: &str, trigger: &str) -> Result<SavepointObs> {
        let (url, response) = self
            .send_get(&format!("/jobs/{job_id}/savepoints/{trigger}"))
            .await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(SavepointObs::Unknown);
        }
        let value = decode(&url, response).await?;
        let answer: SavepointAnswer = typed(&url, value)?;
        Ok(answer.into())
    }
}

/// `GET /jobs/:jid`, as far as the controller reads it.
#[derive(Deserialize)]
struct JobDetails {
    vertices: Vec<Vertex>,
}

#[derive(Deserialize)]
struct Vertex {
    id: String,
    parallelism: u32,
    /// The vertex's aggregate ExecutionState.
    #[serde(default)]
    status: Option<String>,
    /// Its subtasks by ExecutionState.
    #[serde(default)]
    tasks: Option<std::collections::BTreeMap<String, u32>>,
}

impl Vertex {
    /// The vertex and every one of its subtasks are RUNNING (Flink's aggregate state alone is
    /// RUNNING while some subtasks still deploy).
    fn running(&self) -> bool {
        self.status.as_deref() == Some("RUNNING")
            && self.tasks.as_ref().is_none_or(|tasks| {
                let running = tasks
                    .iter()
                    .find(|(state, _)| state.eq_ignore_ascii_case("RUNNING"))
                    .map_or(0, |(_, n)| *n);
                running >= self.parallelism
            })
    }
}

/// `GET /jobs/:jid/vertices/:vid` (JobVertexDetailsInfo), as far as the controller reads it.
#[derive(Deserialize)]
struct VertexDetails {
    subtasks: Vec<SubtaskAttempt>,
}

/// One subtask's current execution attempt.
#[derive(Deserialize)]
struct SubtaskAttempt {
    /// Its ExecutionState.
    status: String,
    /// Its DEPLOYING timestamp (-1: not deployed): every restart of the subtask is a new attempt
    /// with a later one.
    #[serde(rename = "start-time")]
    start_time: i64,
}

/// The latest start-time of `subtasks` when every one is RUNNING; `None` otherwise.
fn latest_start(subtasks: &[SubtaskAttempt]) -> Option<i64> {
    if subtasks.is_empty() {
        return None;
    }
    subtasks
        .iter()
        .map(|s| (s.status == "RUNNING" && s.start_time > 0).then_some(s.start_time))
        .collect::<Option<Vec<i64>>>()?
        .into_iter()
        .max()
}

/// An entry of a metric listing (`…/subtasks/metrics` without `get`).
#[derive(Deserialize)]
struct MetricId {
    id: String,
}

/// A metric value of one subtask (`…/subtasks/:i/metrics?get=`); Flink sends values as strings.
#[derive(Deserialize)]
struct MetricValue {
    id: String,
    value: String,
}

/// `GET /jobs/:jid/checkpoints`, as far as the controller reads it.
#[derive(Deserialize)]
struct Checkpoints {
    counts: CheckpointCounts,
    #[serde(default)]
    latest: Option<LatestCheckpoints>,
}

#[derive(Deserialize)]
struct CheckpointCounts {
    completed: u64,
}

#[derive(Deserialize)]
struct LatestCheckpoints {
    #[serde(default)]
    completed: Option<CompletedCheckpoint>,
}

#[derive(Deserialize)]
struct CompletedCheckpoint {
    #[serde(default)]
    external_path: Option<String>,
}

/// `GET /jobs/:jid/savepoints/:triggerid`: an asynchronous operation's state and, once
/// completed, its result.
#[derive(Deserialize)]
struct SavepointAnswer {
    status: OperationStatus,
    #[serde(default)]
    operation: Option<SavepointOperation>,
}

#[derive(Deserialize)]
struct OperationStatus {
    id: OperationState,
}

/// Flink's `QueueStatus.Id`.
#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum OperationState {
    InProgress,
    Completed,
}

/// The result of a completed savepoint: its location, or why it failed.
#[derive(Deserialize)]
struct SavepointOperation {
    #[serde(default)]
    location: Option<String>,
    #[serde(default, rename = "failure-cause")]
    failure_cause: Option<FailureCause>,
}

/// Flink's `SerializedThrowable` as JSON.
#[derive(Deserialize)]
struct FailureCause {
    #[serde(default)]
    class: Option<String>,
    #[serde(default, rename = "stack-trace")]
    stack_trace: Option<String>,
}

impl From<SavepointAnswer> for SavepointObs {
    fn from(answer: SavepointAnswer) -> Self {
        let operation = match answer.status.id {
            OperationState::InProgress => return Self::InProgress,
            OperationState::Completed => answer.operation,
        };
        let (location, cause) = operation.map_or((None, None), |o| (o.location, o.failure_cause));
        if let Some(location) = location {
            return Self::Completed(location);
        }
        let why = cause
            .and_then(|c| c.stack_trace.or(c.class))
            .and_then(|text| text.lines().next().map(str::to_owned))
            .unwrap_or_else(|| "savepoint failed".to_owned());
        Self::Failed(why)
    }
}

/// The body of `POST /jobs/:jid/stop` (Flink's `StopWithSavepointRequestBody`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StopRequest<'a> {
    drain: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_directory: Option<&'a str>,
    trigger_id: &'a str,
}

/// The answer to a savepoint or stop request.
#[derive(serde::Deserialize)]
struct TriggerResponse {
    #[serde(rename = "request-id")]
    request_id: String,
}

/// The trigger id of a savepoint or stop answer.
fn request_id(url: &str, value: Value) -> Result<String> {
    typed::<TriggerResponse>(url, value).map(|r| r.request_id)
}

/// `value`, the answer from `url`, as a `T`: another shape is an error.
fn typed<T: serde::de::DeserializeOwned>(url: &str, value: Value) -> Result<T> {
    let excerpt = value.to_string().chars().take(300).collect();
    serde_json::from_value(value).map_err(|source| Error::FlinkAnswer {
        url: url.to_owned(),
        excerpt,
        source,
    })
}

async fn decode(url: &str, response: reqwest::Response) -> Result<Value> {
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|source| Error::FlinkRequest {
            url: url.to_owned(),
            source,
        })?;
    if !status.is_success() {
        return Err(Error::FlinkRest {
            url: url.to_owned(),
            message: format!(
                "HTTP {status}: {}",
                text.chars().take(300).collect::<String>()
            ),
        });
    }
    serde_json::from_str(&text).map_err(|source| Error::FlinkAnswer {
        url: url.to_owned(),
        excerpt: text.chars().take(300).collect(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn savepoint(answer: Value) -> std::result::Result<SavepointObs, serde_json::Error> {
        serde_json::from_value::<SavepointAnswer>(answer).map(SavepointObs::from)
    }

    #[test]
    fn a_savepoint_answer_is_in_progress_completed_or_failed_and_any_other_shape_is_an_error() {
        assert_eq!(
            savepoint(json!({"status": {"id": "IN_PROGRESS"}})).unwrap(),
            SavepointObs::InProgress
        );
        assert_eq!(
            savepoint(
                json!({"status": {"id": "COMPLETED"}, "operation": {"location": "s3://sp/1"}})
            )
            .unwrap(),
            SavepointObs::Completed("s3://sp/1".into())
        );
        let failed = json!({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
            "class": "java.io.IOException",
            "stack-trace": "java.io.IOException: disk full\n\tat somewhere",
            "serialized-throwable": "",
        }}});
        assert_eq!(
            savepoint(failed).unwrap(),
            SavepointObs::Failed("java.io.IOException: disk full".into())
        );
        let class_only = json!({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
            "class": "java.lang.Exception"
        }}});
        assert_eq!(
            savepoint(class_only).unwrap(),
            SavepointObs::Failed("java.lang.Exception".into())
        );
        for changed in [
            json!({"status": {"id": "DONE"}}),
            json!({"status": "COMPLETED"}),
            json!({"state": {"id": "COMPLETED"}}),
        ] {
            assert!(savepoint(changed.clone()).is_err(), "{changed}");
        }
    }

    #[test]
    fn the_url_template_names_the_deployment() {
        let rest = FlinkRest::new(
            http_client(Duration::from_secs(1)),
            DEFAULT_URL_TEMPLATE,
            "prod",
            "orders-green",
        );
        assert_eq!(rest.base, "http://orders-green-rest.prod.svc:8081");
    }

    /// A Flink REST fake: vertex `src` (parallelism 2) has a gate chained into the source under
    /// an arbitrary operator name, vertex `sink` (parallelism 1) another gate; `lines` are the
    /// `bluegreenGateAppliedState` values by (vertex, subtask).
    async fn fake(lines: [(&'static str, u32, &'static str); 3]) -> String {
        use axum::extract::Path;
        use axum::routing::get;
        let router = axum::Router::new()
            .route(
                "/jobs/{jid}",
                get(|| async {
                    axum::Json(json!({"vertices": [
                        {"id": "src", "name": "Source: orders -> Filter", "parallelism": 2,
                         "status": "RUNNING", "start-time": 1_700_000_000_100_i64,
                         "tasks": {"RUNNING": 2, "DEPLOYING": 0}},
                        {"id": "sink", "name": "Count -> Sink", "parallelism": 1,
                         "status": "RUNNING", "start-time": 1_700_000_000_200_i64,
                         "tasks": {"RUNNING": 1}},
                    ]}))
                }),
            )
            .route(
                // Subtask 1 of the source was restarted alone (a region failover): its attempt
                // started last, while the vertex's start-time (the earliest) stays put.
                "/jobs/{jid}/vertices/{vid}",
                get(|Path((_, vid)): Path<(String, String)>| async move {
                    let starts: &[i64] = if vid == "src" {
                        &[1_700_000_000_100, 1_700_000_000_300]
                    } else {
                        &[1_700_000_000_200]
                    };
                    let subtasks: Vec<_> = starts
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({"subtask": i, "status": "RUNNING", "attempt": i, "start-time": t}))
                        .collect();
                    axum::Json(json!({"id": vid, "subtasks": subtasks}))
                }),
            )
            .route(
                "/jobs/{jid}/vertices/{vid}/subtasks/metrics",
                get(|Path((_, vid)): Path<(String, String)>| async move {
                    axum::Json(json!([
                        {"id": "numRecordsOut"},
                        {"id": format!("my_gate_{vid}.bluegreenGateAppliedState")},
                    ]))
                }),
            )
            .route(
                "/jobs/{jid}/vertices/{vid}/subtasks/{i}/metrics",
                get(move |Path((_, vid, i)): Path<(String, String, u32)>| async move {
                    let line = lines
                        .iter()
                        .find(|(v, s, _)| *v == vid && *s == i)
                        .map_or("", |l| l.2);
                    axum::Json(json!([
                        {"id": format!("my_gate_{vid}.bluegreenGateAppliedState"), "value": line},
                    ]))
                }),
            )
            .route(
                "/jobs/{jid}/checkpoints",
                get(|| async { axum::Json(json!({"counts": {"completed": 4}, "latest": {"completed": null}})) }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}")
    }

    fn line(toggle: i64, max_passed: i64) -> String {
        format!(
            "epoch=2 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle={toggle} floor= max-passed={max_passed} watermark=990 idle=false"
        )
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    #[tokio::test]
    async fn every_gate_subtask_on_every_vertex_must_acknowledge_by_content() {
        // Subtask 1 of the source vertex still reports the previous proposal (W = 900) with the
        // maximum it had then: a fresh stage with a stale maximum, which aggregated gauges
        // (min epoch, min stage, max passed) accepted.
        let base = fake([
            ("src", 0, leak(line(1000, 998))),
            ("src", 1, leak(line(900, 899))),
            ("sink", 0, leak(line(1000, 995))),
        ])
        .await;
        let rest = FlinkRest::new(http_client(Duration::from_secs(2)), &base, "ns", "d");
        let obs = rest.observe("job", None, true).await.expect("observe");
        let gates = obs.gates.expect("gates found by metric name");
        assert_eq!(gates.reports.len(), 3, "both vertices, every subtask");
        assert_eq!(gates.vertices.len(), 2, "one gate on each vertex");
        assert!(
            !gates.acknowledge(2, 1000),
            "a stale subtask does not acknowledge"
        );
        assert_eq!(obs.checkpoints_completed, 4);
        assert_eq!(
            obs.tasks_started_at,
            Some(1_700_000_000_300),
            "the latest start of any subtask's attempt"
        );
        let base = fake([
            ("src", 0, leak(line(1000, 998))),
            ("src", 1, leak(line(1000, 1001))),
            ("sink", 0, leak(line(1000, 995))),
        ])
        .await;
        let rest = FlinkRest::new(http_client(Duration::from_secs(2)), &base, "ns", "d");
        let observed = rest.observe("job", None, false).await.unwrap();
        assert_eq!(observed.tasks_started_at, None, "not asked for");
        let gates = observed.gates.unwrap();
        assert!(gates.acknowledge(2, 1000));
        assert_eq!(gates.max_passed(), Some(1001), "W must be raised above it");
        assert_eq!(gates.watermark(), Some(990));
    }

    /// Two gates chained into one vertex (two gated sinks after one operator): each has its
    /// own metric id, and both are read; W proposed from the first alone would be below what
    /// the second already passed.
    #[tokio::test]
    async fn two_gates_in_one_vertex_are_both_read() {
        use axum::extract::Path;
        use axum::routing::get;
        let ids = [
            "map.bluegreenGate.a1.bluegreenGateAppliedState",
            "map.bluegreenGate.b2.bluegreenGateAppliedState",
        ];
        let router = axum::Router::new()
            .route(
                "/jobs/{jid}",
                get(|| async {
                    axum::Json(json!({"vertices": [
                        {"id": "v", "name": "Source -> Map -> Sink: a -> Sink: b", "parallelism": 1,
                         "status": "RUNNING", "start-time": 1, "tasks": {"RUNNING": 1}},
                    ]}))
                }),
            )
            .route(
                "/jobs/{jid}/vertices/{vid}/subtasks/metrics",
                get(move || async move {
                    axum::Json(json!([{"id": ids[1]}, {"id": "numRecordsIn"}, {"id": ids[0]}]))
                }),
            )
            .route(
                "/jobs/{jid}/vertices/{vid}/subtasks/{i}/metrics",
                get(
                    move |axum::extract::Query(q): axum::extract::Query<
                        std::collections::HashMap<String, String>,
                    >,
                          Path((_, _, _)): Path<(String, String, u32)>| async move {
                        let id = q.get("get").cloned().unwrap_or_default();
                        let max = if id == ids[0] { 998 } else { 1_005 };
                        axum::Json(json!([{"id": id, "value": line(1000, max)}]))
                    },
                ),
            )
            .route(
                "/jobs/{jid}/checkpoints",
                get(|| async {
                    axum::Json(json!({"counts": {"completed": 1}, "latest": {"completed": null}}))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        let rest = FlinkRest::new(
            http_client(Duration::from_secs(2)),
            &format!("http://{addr}"),
            "ns",
            "d",
        );
        let gates = rest
            .observe("job", None, false)
            .await
            .unwrap()
            .gates
            .unwrap();
        assert_eq!(gates.reports.len(), 2, "one report per gate of the vertex");
        assert_eq!(
            gates.max_passed(),
            Some(1_005),
            "the second gate's maximum is read"
        );
        assert_eq!(
            gates.vertices,
            [("v".to_owned(), 2)].into(),
            "the layout the controller expects from then on: two gates on vertex v"
        );
    }

    #[tokio::test]
    async fn a_line_that_does_not_parse_is_an_error() {
        let base = fake([
            ("src", 0, "epoch=2 stage=SOMETHING"),
            ("src", 1, leak(line(1000, 998))),
            ("sink", 0, leak(line(1000, 995))),
        ])
        .await;
        let rest = FlinkRest::new(http_client(Duration::from_secs(2)), &base, "ns", "d");
        let err = rest
            .observe("job", None, false)
            .await
            .expect_err("bad line");
        assert!(
            err.to_string().contains("bluegreenGateAppliedState"),
            "{err}"
        );
    }

    /// `GET /jobs/:jid` as Flink 1.20 answers it (`JobDetailsInfo`, trimmed): a vertex is
    /// running when its aggregate state and every one of its subtasks are RUNNING.
    #[test]
    fn a_vertex_runs_when_every_subtask_runs() {
        let running = |vertex: serde_json::Value| {
            let job: super::JobDetails = serde_json::from_value(
                json!({"jid": "j", "state": "RUNNING", "vertices": [vertex]}),
            )
            .expect("JobDetailsInfo");
            job.vertices[0].running()
        };
        let vertex = |status: &str, running: u32| {
            json!({"id": "a", "name": "a", "maxParallelism": 128, "parallelism": 2,
                   "status": status, "start-time": 100, "end-time": -1, "duration": 5,
                   "tasks": {"RUNNING": running, "DEPLOYING": 2 - running, "CREATED": 0}})
        };
        assert!(running(vertex("RUNNING", 2)));
        // A region failover: the job stays RUNNING, the vertex is redeploying.
        assert!(!running(vertex("DEPLOYING", 0)));
        // Flink's aggregate is RUNNING while one subtask still deploys.
        assert!(!running(vertex("RUNNING", 1)));
        // An older Flink without `tasks`: the vertex status decides.
        assert!(running(
            json!({"id": "a", "parallelism": 1, "status": "RUNNING"})
        ));
    }

    /// `GET /jobs/:jid/vertices/:vid` as Flink 1.20 answers it (`JobVertexDetailsInfo`,
    /// trimmed): the tasks' start time is the latest start of the subtasks' current attempts,
    /// known only while every subtask is RUNNING.
    #[test]
    fn the_tasks_start_time_is_the_latest_subtask_start_while_every_subtask_runs() {
        let latest = |subtasks: serde_json::Value| {
            let details: super::VertexDetails = serde_json::from_value(json!({
                "id": "v", "name": "v", "parallelism": 2, "maxParallelism": 128, "now": 1_000,
                "subtasks": subtasks
            }))
            .expect("JobVertexDetailsInfo");
            super::latest_start(&details.subtasks)
        };
        let subtask = |i: u32, status: &str, attempt: u32, start: i64| {
            json!({"subtask": i, "status": status, "attempt": attempt, "endpoint": "tm:6121",
                   "start-time": start, "end-time": -1, "duration": 5, "metrics": {},
                   "taskmanager-id": "tm-1", "status-duration": {}})
        };
        assert_eq!(
            latest(json!([
                subtask(0, "RUNNING", 0, 100),
                subtask(1, "RUNNING", 0, 120)
            ])),
            Some(120)
        );
        // A region failover restarted subtask 1 alone: the vertex's start-time (the earliest)
        // stays 100, the latest start moves on.
        assert_eq!(
            latest(json!([
                subtask(0, "RUNNING", 0, 100),
                subtask(1, "RUNNING", 1, 900)
            ])),
            Some(900)
        );
        assert_eq!(
            latest(json!([
                subtask(0, "RUNNING", 0, 100),
                subtask(1, "DEPLOYING", 1, 900)
            ])),
            None
        );
        assert_eq!(latest(json!([subtask(0, "CREATED", 0, -1)])), None);
        assert_eq!(latest(json!([])), None);
    }
}
