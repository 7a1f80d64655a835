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

/// A Flink `TriggerId` (32 hex digits) derived from `seed`: the same seed, the same id, so a
/// request resent after a crash is the same request to Flink.
pub fn trigger_id(seed: &str) -> String {
    use sha2::{Digest as _, Sha256};
    Sha256::digest(seed)
        .iter()
        .take(16)
        .fold(String::with_capacity(32), |mut hex, b| {
            use std::fmt::Write as _;
            write!(hex, "{b:02x}").expect("writing to a String cannot fail");
            hex
        })
}

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
            Err(e) => Err(rest_error(&url, &e)),
        }
    }

    /// Everything `plan` needs about job `job_id`; `savepoint_trigger` is polled when given.
    pub async fn observe(&self, job_id: &str, savepoint_trigger: Option<&str>) -> Result<FlinkObs> {
        let checkpoints = self.checkpoints(job_id).await?;
        let savepoint = match savepoint_trigger {
            Some(trigger) => Some(self.savepoint_status(job_id, trigger).await?),
            None => None,
        };
        let gates = self.gates(job_id).await?;
        Ok(FlinkObs {
            savepoint,
            gates,
            ..checkpoints
        })
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
        serde_json::from_value(value).map_err(|e| Error::FlinkRest {
            url: format!("{}{path}", self.base),
            message: format!("unexpected answer: {e}"),
        })
    }

    /// Every gate subtask's `bluegreenGateAppliedState` line, on every vertex: gates are found by
    /// the metric's name alone (ids ending in it), whatever the operator is called and whichever
    /// vertex it is chained into. `None` when no vertex has a gate.
    async fn gates(&self, job_id: &str) -> Result<Option<GateObs>> {
        let job: JobDetails = self.get_typed(&format!("/jobs/{job_id}")).await?;
        let mut reports = Vec::new();
        for vertex in job.vertices {
            let vid = &vertex.id;
            let listed: Vec<MetricId> = self
                .get_typed(&format!("/jobs/{job_id}/vertices/{vid}/subtasks/metrics"))
                .await?;
            let Some(metric) = listed.iter().find(|m| m.id.ends_with(GATE_REPORT_METRIC)) else {
                continue;
            };
            for subtask in 0..vertex.parallelism {
                let path = format!(
                    "/jobs/{job_id}/vertices/{vid}/subtasks/{subtask}/metrics?get={}",
                    metric.id
                );
                let values: Vec<MetricValue> = self.get_typed(&path).await?;
                let line = values
                    .into_iter()
                    .find(|v| v.id == metric.id)
                    .ok_or_else(|| Error::FlinkRest {
                        url: format!("{}{path}", self.base),
                        message: format!("subtask {subtask} does not report {}", metric.id),
                    })?;
                let report = line
                    .value
                    .parse::<GateReport>()
                    .map_err(|e| Error::FlinkRest {
                        url: format!("{}{path}", self.base),
                        message: format!("{} of subtask {subtask} does not parse: {e}", metric.id),
                    })?;
                reports.push(report);
            }
        }
        Ok((!reports.is_empty()).then_some(GateObs { reports }))
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
            .map_err(|e| rest_error(&url, &e))?;
        let answer = decode(&url, response).await?;
        Ok((url, answer))
    }

    /// Triggers a savepoint of `job_id` (the job keeps running) under `trigger_id` (Flink's
    /// `triggerId`): Flink deduplicates a resent request under the same id, so a controller that
    /// died between the trigger and recording it takes no second savepoint. A trigger id the job
    /// already knows (in progress, completed or failed) is not sent again. Returns the trigger id.
    pub async fn trigger_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
        trigger_id: &str,
    ) -> Result<String> {
        if self.savepoint_status(job_id, trigger_id).await? != SavepointObs::Unknown {
            return Ok(trigger_id.to_owned());
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
        let answered = request_id(&url, &answer)?;
        if answered != trigger_id {
            return Err(Error::FlinkRest {
                url,
                message: format!(
                    "asked for a savepoint under trigger {trigger_id}, Flink answered {answered}"
                ),
            });
        }
        Ok(answered)
    }

    /// Stops `job_id` with a savepoint and without drain (`POST /jobs/:jid/stop`), which
    /// commits the job's transactional output. `trigger_id` makes a resent request a no-op.
    pub async fn stop_with_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
        trigger_id: &str,
    ) -> Result<()> {
        let body = StopRequest {
            drain: false,
            target_directory,
            trigger_id,
        };
        let (url, answer) = self.post(&format!("/jobs/{job_id}/stop"), &body).await?;
        let answered = request_id(&url, &answer)?;
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
        Ok(match value["status"]["id"].as_str() {
            Some("COMPLETED") => match value["operation"]["location"].as_str() {
                Some(location) => SavepointObs::Completed(location.to_owned()),
                None => SavepointObs::Failed(
                    value["operation"]["failure-cause"]["stack-trace"]
                        .as_str()
                        .or_else(|| value["operation"]["failure-cause"]["class"].as_str())
                        .unwrap_or("savepoint failed")
                        .lines()
                        .next()
                        .unwrap_or("savepoint failed")
                        .to_owned(),
                ),
            },
            _ => SavepointObs::InProgress,
        })
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
fn request_id(url: &str, value: &Value) -> Result<String> {
    serde_json::from_value::<TriggerResponse>(value.clone())
        .map(|r| r.request_id)
        .map_err(|e| Error::FlinkRest {
            url: url.to_owned(),
            message: format!("no request-id in {value}: {e}"),
        })
}

fn rest_error(url: &str, e: &reqwest::Error) -> Error {
    Error::FlinkRest {
        url: url.to_owned(),
        message: e.to_string(),
    }
}

async fn decode(url: &str, response: reqwest::Response) -> Result<Value> {
    let status = response.status();
    let text = response.text().await.map_err(|e| rest_error(url, &e))?;
    if !status.is_success() {
        return Err(Error::FlinkRest {
            url: url.to_owned(),
            message: format!(
                "HTTP {status}: {}",
                text.chars().take(300).collect::<String>()
            ),
        });
    }
    serde_json::from_str(&text).map_err(|e| Error::FlinkRest {
        url: url.to_owned(),
        message: format!(
            "invalid JSON ({e}): {}",
            text.chars().take(300).collect::<String>()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
                        {"id": "src", "name": "Source: orders -> Filter", "parallelism": 2},
                        {"id": "sink", "name": "Count -> Sink", "parallelism": 1},
                    ]}))
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
        let obs = rest.observe("job", None).await.expect("observe");
        let gates = obs.gates.expect("gates found by metric name");
        assert_eq!(gates.reports.len(), 3, "both vertices, every subtask");
        assert!(
            !gates.acknowledge(2, 1000),
            "a stale subtask does not acknowledge"
        );
        assert_eq!(obs.checkpoints_completed, 4);
        let base = fake([
            ("src", 0, leak(line(1000, 998))),
            ("src", 1, leak(line(1000, 1001))),
            ("sink", 0, leak(line(1000, 995))),
        ])
        .await;
        let rest = FlinkRest::new(http_client(Duration::from_secs(2)), &base, "ns", "d");
        let gates = rest.observe("job", None).await.unwrap().gates.unwrap();
        assert!(gates.acknowledge(2, 1000));
        assert_eq!(gates.max_passed(), Some(1001), "W must be raised above it");
        assert_eq!(gates.watermark(), Some(990));
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
        let err = rest.observe("job", None).await.expect_err("bad line");
        assert!(
            err.to_string().contains("bluegreenGateAppliedState"),
            "{err}"
        );
    }
}
