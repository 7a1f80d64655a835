//! The subset of Flink's REST API the controller uses (Flink 1.20 / 2.x paths and shapes), on
//! reqwest with timeouts. URLs come from a template so that the same code reaches
//! `http://<name>-rest.<namespace>.svc:8081` in a cluster and a local runner elsewhere.

use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::observed::{FlinkObs, GateObs, SavepointObs};

/// The default REST URL template: the Apache operator's `<name>-rest` Service.
pub const DEFAULT_URL_TEMPLATE: &str = "http://{name}-rest.{namespace}.svc:8081";

/// Suffixes of the gate metrics every gate registers (`<operator>.<metric>` in Flink's REST API).
pub mod gate_metrics {
    /// Epoch the gate applied.
    pub const EPOCH: &str = "bluegreenGateEpoch";
    /// Watermark stage the gate applied (0, 1, 2).
    pub const WATERMARK_STAGE: &str = "bluegreenGateWatermarkStage";
    /// Highest event time the gate passed.
    pub const MAX_PASSED: &str = "bluegreenGateMaxPassedEventTime";
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
        let checkpoints = self.get(&format!("/jobs/{job_id}/checkpoints")).await?;
        let completed = checkpoints["counts"]["completed"].as_u64().unwrap_or(0);
        let latest = checkpoints["latest"]["completed"]["external_path"]
            .as_str()
            .map(str::to_owned);
        let savepoint = match savepoint_trigger {
            Some(trigger) => Some(self.savepoint_status(job_id, trigger).await?),
            None => None,
        };
        let (gates, watermark) = self.gates(job_id).await?;
        Ok(FlinkObs {
            checkpoints_completed: completed,
            latest_checkpoint: latest,
            savepoint,
            gates,
            watermark,
        })
    }

    /// Finds the vertex that holds the gate and reads its aggregated metrics and watermark.
    async fn gates(&self, job_id: &str) -> Result<(Option<GateObs>, Option<i64>)> {
        let job = self.get(&format!("/jobs/{job_id}")).await?;
        let vertices = job["vertices"].as_array().cloned().unwrap_or_default();
        for vertex in vertices {
            let Some(vid) = vertex["id"].as_str() else {
                continue;
            };
            let listed = self
                .get(&format!("/jobs/{job_id}/vertices/{vid}/subtasks/metrics"))
                .await?;
            let ids: Vec<&str> = listed
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["id"].as_str())
                .collect();
            let Some(epoch_id) = ids.iter().find(|id| id.ends_with(gate_metrics::EPOCH)) else {
                continue;
            };
            let prefix = &epoch_id[..epoch_id.len() - gate_metrics::EPOCH.len()];
            let names = [
                gate_metrics::EPOCH,
                gate_metrics::WATERMARK_STAGE,
                gate_metrics::MAX_PASSED,
            ]
            .map(|m| format!("{prefix}{m}"));
            let values = self
                .get(&format!(
                    "/jobs/{job_id}/vertices/{vid}/subtasks/metrics?get={}&agg=min,max",
                    names.join(",")
                ))
                .await?;
            let agg = |name: &str, which: &str| {
                values
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m["id"].as_str() == Some(name))
                    .and_then(|m| number(&m[which]))
            };
            let gates = GateObs {
                min_epoch: agg(&names[0], "min").map_or(0, |v| u64::try_from(v).unwrap_or(0)),
                min_watermark_stage: agg(&names[1], "min")
                    .map_or(0, |v| u8::try_from(v).unwrap_or(0)),
                max_passed: agg(&names[2], "max").filter(|v| *v > i64::MIN / 2),
            };
            let watermarks = self
                .get(&format!("/jobs/{job_id}/vertices/{vid}/watermarks"))
                .await?;
            let watermark = watermarks
                .as_array()
                .into_iter()
                .flatten()
                .filter(|w| {
                    w["id"]
                        .as_str()
                        .is_some_and(|id| id.ends_with("currentInputWatermark"))
                })
                .filter_map(|w| number(&w["value"]))
                .min();
            return Ok((Some(gates), watermark));
        }
        Ok((None, None))
    }

    /// Triggers a savepoint of `job_id` (the job keeps running); returns the trigger id.
    pub async fn trigger_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
    ) -> Result<String> {
        let url = format!("{}/jobs/{job_id}/savepoints", self.base);
        let body = json!({ "target-directory": target_directory, "cancel-job": false });
        let response = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|e| rest_error(&url, &e))?;
        request_id(&url, &decode(&url, response).await?)
    }

    /// Stops `job_id` with a savepoint and without drain (`POST /jobs/:jid/stop`), which
    /// commits the job's transactional output. `trigger_id` makes a resent request a no-op.
    pub async fn stop_with_savepoint(
        &self,
        job_id: &str,
        target_directory: Option<&str>,
        trigger_id: &str,
    ) -> Result<()> {
        let url = format!("{}/jobs/{job_id}/stop", self.base);
        let body = StopRequest {
            drain: false,
            target_directory,
            trigger_id,
        };
        let response = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|e| rest_error(&url, &e))?;
        let answered = request_id(&url, &decode(&url, response).await?)?;
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

/// Flink reports metric values as JSON numbers and watermarks as strings.
fn number(value: &Value) -> Option<i64> {
    match value {
        Value::String(s) => s
            .parse::<i64>()
            .ok()
            .or_else(|| s.parse::<f64>().ok().map(saturate)),
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(saturate)),
        _ => None,
    }
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "saturating float-to-int conversion is the intent"
)]
fn saturate(v: f64) -> i64 {
    v as i64
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

    #[test]
    fn numbers_come_as_strings_or_floats() {
        assert_eq!(number(&json!("-9223372036854775808")), Some(i64::MIN));
        assert_eq!(number(&json!(1.7e12)), Some(1_700_000_000_000));
        assert_eq!(number(&json!(3)), Some(3));
        assert_eq!(number(&json!(null)), None);
    }
}
