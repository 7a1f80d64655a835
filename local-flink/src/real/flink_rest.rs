//! The few Flink REST calls the runner makes to its own jobs (Flink 1.20 paths and fields), each
//! bounded by a timeout.

use std::time::Duration;

use bluegreen_protocol::flink::JobStatus;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::Error;

/// How long one REST request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often an operation (savepoint, cancel) is polled.
const POLL: Duration = Duration::from_millis(100);

/// `GET /jobs/:jid` (the fields used).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct JobDetails {
    pub state: String,
    #[serde(rename = "start-time")]
    pub start_time: i64,
}

#[derive(Debug, Deserialize)]
struct TriggerResponse {
    #[serde(rename = "request-id")]
    request_id: String,
}

#[derive(Debug, Deserialize)]
struct OperationStatus {
    status: QueueStatus,
    operation: Option<SavepointOperation>,
}

#[derive(Debug, Deserialize)]
struct QueueStatus {
    id: String,
}

#[derive(Debug, Deserialize)]
struct SavepointOperation {
    location: Option<String>,
    #[serde(rename = "failure-cause")]
    failure_cause: Option<FailureCause>,
}

#[derive(Debug, Deserialize)]
struct FailureCause {
    class: Option<String>,
    #[serde(rename = "stack-trace")]
    stack_trace: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Checkpoints {
    latest: LatestCheckpoints,
}

#[derive(Debug, Deserialize)]
struct LatestCheckpoints {
    completed: Option<CompletedCheckpoint>,
}

/// `latest.completed` of `GET /jobs/:jid/checkpoints`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CompletedCheckpoint {
    pub external_path: String,
    pub latest_ack_timestamp: i64,
}

/// `GET /jobs/:jid/exceptions` (`JobExceptionsInfoWithHistory`), as far as the runner reads it:
/// the exception history, which Flink 1.20 and 2.x both answer (2.x dropped 1.x's deprecated
/// `root-exception`, `timestamp` and `all-exceptions`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exceptions {
    exception_history: ExceptionHistory,
}

/// `exceptionHistory`.
#[derive(Debug, Deserialize)]
struct ExceptionHistory {
    entries: Vec<RootFailure>,
}

/// One entry of the history: a root failure of the job.
#[derive(Debug, Deserialize)]
struct RootFailure {
    stacktrace: String,
    timestamp: i64,
}

impl Exceptions {
    /// The stack trace of the job's latest root failure.
    fn root_trace(self) -> Option<String> {
        self.exception_history
            .entries
            .into_iter()
            .max_by_key(|e| e.timestamp)
            .map(|e| e.stacktrace)
    }
}

/// A job's REST API, at `http://127.0.0.1:<port>`.
#[derive(Debug, Clone)]
pub(crate) struct FlinkRest {
    http: reqwest::Client,
    base: String,
}

impl FlinkRest {
    pub fn new(http: reqwest::Client, port: u16) -> Self {
        Self {
            http,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn rest_error(url: &str, reason: &dyn std::fmt::Display) -> Error {
        Error::Rest {
            url: url.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// Sends a request; `Ok(None)` on 404.
    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<Option<T>, Error> {
        let response = request
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| Self::rest_error(url, &e))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            return Err(Self::rest_error(url, &format!("{status}: {body}")));
        }
        response
            .json()
            .await
            .map(Some)
            .map_err(|e| Self::rest_error(url, &e))
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, Error> {
        let url = format!("{}{path}", self.base);
        self.send(self.http.get(&url), &url).await
    }

    /// The job, or `None` while it is not (yet) known to the cluster.
    pub async fn job(&self, job_id: &str) -> Result<Option<JobDetails>, Error> {
        self.get(&format!("/jobs/{job_id}")).await
    }

    /// The job's latest completed checkpoint.
    pub async fn latest_checkpoint(
        &self,
        job_id: &str,
    ) -> Result<Option<CompletedCheckpoint>, Error> {
        Ok(self
            .get::<Checkpoints>(&format!("/jobs/{job_id}/checkpoints"))
            .await?
            .and_then(|c| c.latest.completed))
    }

    /// The job's root exception (why it failed).
    pub async fn root_exception(&self, job_id: &str) -> Result<Option<String>, Error> {
        Ok(self
            .get::<Exceptions>(&format!("/jobs/{job_id}/exceptions"))
            .await?
            .and_then(Exceptions::root_trace))
    }

    /// `POST /jobs/:jid/stop` with `drain: false` (never drain: that fires every event-time
    /// timer), then polls the operation until it completes; returns the savepoint's location.
    pub async fn stop_with_savepoint(
        &self,
        job_id: &str,
        timeout: Duration,
    ) -> Result<String, Error> {
        let url = format!("{}/jobs/{job_id}/stop", self.base);
        let trigger: TriggerResponse = self
            .send(self.http.post(&url).json(&json!({"drain": false})), &url)
            .await?
            .ok_or_else(|| Self::rest_error(&url, &"the job is not known"))?;
        let deadline = tokio::time::Instant::now() + timeout;
        let path = format!("/jobs/{job_id}/savepoints/{}", trigger.request_id);
        loop {
            let status: Option<OperationStatus> = self.get(&path).await?;
            if let Some(OperationStatus {
                status,
                operation: Some(op),
            }) = status
                && status.id == "COMPLETED"
            {
                return match (op.location, op.failure_cause) {
                    (Some(location), _) => Ok(location),
                    (None, cause) => Err(Error::Savepoint {
                        job_id: job_id.to_owned(),
                        cause: cause.map_or_else(|| "no location and no cause".into(), describe),
                    }),
                };
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("stop-with-savepoint of job {job_id}"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `PATCH /jobs/:jid?mode=cancel`, then waits until the job is no longer running. A job that
    /// already ended (e.g. stopped with a savepoint by the controller) is left as it is.
    pub async fn cancel(&self, job_id: &str, timeout: Duration) -> Result<(), Error> {
        match self.job(job_id).await? {
            None => return Ok(()),
            Some(job) if is_terminal(&job.state) => return Ok(()),
            Some(_) => {}
        }
        let url = format!("{}/jobs/{job_id}?mode=cancel", self.base);
        let response = self
            .http
            .patch(&url)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| Self::rest_error(&url, &e))?;
        let status = response.status();
        // 409: the job reached another terminal state meanwhile (checked below).
        if !status.is_success()
            && status != reqwest::StatusCode::NOT_FOUND
            && status != reqwest::StatusCode::CONFLICT
        {
            let body = response.text().await.unwrap_or_default();
            return Err(Self::rest_error(&url, &format!("{status}: {body}")));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.job(job_id).await? {
                None => return Ok(()),
                Some(job) if is_terminal(&job.state) => return Ok(()),
                Some(_) => {}
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("job {job_id} to cancel"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Whether a Flink job state is globally terminal (an unknown spelling is not).
fn is_terminal(state: &str) -> bool {
    state.parse().is_ok_and(JobStatus::is_terminal)
}

/// The first line of a failure cause's stack trace (the exception and its message).
fn describe(cause: FailureCause) -> String {
    cause
        .stack_trace
        .as_deref()
        .and_then(|t| t.lines().next())
        .map(str::to_owned)
        .or(cause.class)
        .unwrap_or_else(|| "unknown cause".into())
}

#[cfg(test)]
mod tests {
    use super::Exceptions;

    /// `GET /jobs/:jid/exceptions` of a failed job as Flink 2.3.0 answers it (the example job
    /// failing on its fail trigger with `restart-strategy.type: none`; stack traces cut short):
    /// `root-exception`, `timestamp` and `all-exceptions` of Flink 1.x are gone, only the
    /// exception history is left, newest entry first.
    const FLINK_2_3_EXCEPTIONS: &str = r#"{"exceptionHistory":{"entries":[
        {"exceptionName":"org.apache.flink.runtime.JobException","stacktrace":"org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(ExecutionFailureHandler.java:213)\nCaused by: java.lang.IllegalStateException: fail trigger /tmp/trig found: failing this task on cue\n\tat io.bluegreen.examples.ExampleJob$ToLine.map(ExampleJob.java:388)\n","timestamp":1795817879085,"failureLabels":{},"concurrentExceptions":[]},
        {"exceptionName":"java.lang.RuntimeException","stacktrace":"java.lang.RuntimeException: an earlier failure\n","timestamp":1795817870000,"failureLabels":{},"concurrentExceptions":[]}
    ],"truncated":false}}"#;

    #[test]
    fn the_root_failure_is_read_from_flink_2s_exception_history() {
        let exceptions: Exceptions =
            serde_json::from_str(FLINK_2_3_EXCEPTIONS).expect("Flink 2.3.0's answer");
        let trace = exceptions.root_trace().expect("a root failure");
        assert!(
            trace.starts_with("org.apache.flink.runtime.JobException: Recovery is suppressed")
                && trace.contains("Caused by: java.lang.IllegalStateException: fail trigger"),
            "{trace}"
        );
    }
}
