//! The simulated Flink REST endpoint: the subset the controller uses, with Flink's paths and
//! JSON shapes, under the runner's URL template, plus injected 500s and hangs.

mod flink_support;

use std::time::Duration;

use bluegreen_local_flink::ledger::SinkMode;
use bluegreen_local_flink::{JobState, RestFault};
use bluegreen_protocol::{Color, CoordinationState, Stage};
use flink_support::{NS, WAIT, deployment, dref, env, start, status, write_configmap};
use serde_json::{Value, json};

async fn get(client: &reqwest::Client, url: &str) -> Value {
    let r = client.get(url).send().await.expect("request");
    assert!(r.status().is_success(), "GET {url}: {}", r.status());
    r.json().await.expect("JSON")
}

async fn post(client: &reqwest::Client, url: &str, body: Value) -> Value {
    let r = client.post(url).json(&body).send().await.expect("request");
    assert_eq!(r.status().as_u16(), 202, "POST {url}");
    r.json().await.expect("JSON")
}

/// A gated blue job that ran 12 s; returns the env, its REST base URL and job id.
async fn running_blue() -> (flink_support::Env, String, String) {
    let env = env(SinkMode::Transactional).await;
    let conf = [
        ("bluegreen.gate.color", "BLUE"),
        ("bluegreen.gate.configmap", "orders-bluegreen"),
        ("execution.checkpointing.interval", "5s"),
    ];
    let mut running = CoordinationState::initial(Color::Blue, 0);
    write_configmap(&env.client, "orders-bluegreen", &running).await;
    start(&env, &deployment("orders-blue", 2, &conf)).await;
    running.stage = Stage::Running;
    write_configmap(&env.client, "orders-bluegreen", &running).await;
    env.flink
        .advance(12_000, 1000, WAIT)
        .await
        .expect("time passes");

    let template = env.flink.rest_url_template();
    assert!(template.starts_with("http://127.0.0.1:") && template.ends_with("/{namespace}/{name}"));
    let base = template
        .replace("{namespace}", NS)
        .replace("{name}", "orders-blue");
    assert_eq!(base, env.flink.rest_url(&dref("orders-blue")));
    let http = reqwest::Client::new();
    let jobs = get(&http, &format!("{base}/jobs/overview")).await;
    let jid = jobs["jobs"][0]["jid"].as_str().expect("jid").to_owned();
    (env, base, jid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rest_endpoint_serves_overview_job_checkpoints_and_watermarks() {
    let (env, base, _) = running_blue().await;
    let http = reqwest::Client::new();
    let overview = get(&http, &format!("{base}/overview")).await;
    assert_eq!(overview["jobs-running"], 1);
    assert!(overview["flink-version"].is_string());

    let jobs = get(&http, &format!("{base}/jobs/overview")).await;
    let jid = jobs["jobs"][0]["jid"].as_str().expect("jid").to_owned();
    assert_eq!(jobs["jobs"][0]["state"], "RUNNING");
    assert_eq!(
        status(&env.client, "orders-blue").await["jobStatus"]["jobId"],
        jid.as_str()
    );

    let job = get(&http, &format!("{base}/jobs/{jid}")).await;
    assert_eq!(job["jid"], jid.as_str());
    assert_eq!(job["state"], "RUNNING");
    let vertices = job["vertices"].as_array().expect("vertices");
    assert_eq!(vertices.len(), 2);
    assert!(
        vertices
            .iter()
            .all(|v| v["parallelism"] == 2 && v["id"].as_str().is_some_and(|id| id.len() == 32))
    );
    let gate_vertex = vertices[1]["id"].as_str().expect("id").to_owned();
    assert!(
        vertices[1]["name"]
            .as_str()
            .is_some_and(|n| n.contains("bluegreen-gate (BLUE)"))
    );

    let checkpoints = get(&http, &format!("{base}/jobs/{jid}/checkpoints")).await;
    assert!(
        checkpoints["counts"]["completed"]
            .as_u64()
            .is_some_and(|c| c >= 2),
        "{checkpoints}"
    );
    assert!(
        checkpoints["latest"]["completed"]["external_path"]
            .as_str()
            .is_some_and(|p| p.contains("/chk-"))
    );

    let watermarks = get(
        &http,
        &format!("{base}/jobs/{jid}/vertices/{gate_vertex}/watermarks"),
    )
    .await;
    assert_eq!(watermarks[0]["id"], "0.currentInputWatermark");
    let wm: i64 = watermarks[1]["value"]
        .as_str()
        .expect("string value")
        .parse()
        .expect("number");
    assert_eq!(
        wm,
        env.flink
            .job(&dref("orders-blue"))
            .expect("job")
            .view()
            .job_watermark
    );

    let ids = get(
        &http,
        &format!("{base}/jobs/{jid}/vertices/{gate_vertex}/subtasks/metrics"),
    )
    .await;
    let ids: Vec<&str> = ids
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    for metric in [
        "Passed",
        "Dropped",
        "Held",
        "MaxPassedEventTime",
        "Epoch",
        "WatermarkStage",
        "Toggle",
    ] {
        assert!(
            ids.contains(&format!("bluegreen-gate (BLUE).bluegreenGate{metric}").as_str()),
            "{ids:?}"
        );
    }
    let op = "bluegreen-gate (BLUE)";
    let url = format!(
        "{base}/jobs/{jid}/vertices/{gate_vertex}/subtasks/metrics?get={op}.bluegreenGateEpoch,{op}.bluegreenGatePassed,{op}.bluegreenGateMaxPassedEventTime&agg=min,max,sum"
    );
    let agg = get(&http, &url).await;
    assert_eq!(agg[0]["id"], format!("{op}.bluegreenGateEpoch"));
    assert_eq!(
        (agg[0]["min"].as_f64(), agg[0]["max"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    assert!(
        agg[0].get("avg").is_none(),
        "only the requested aggregates: {agg}"
    );
    assert!(agg[1]["sum"].as_f64().is_some_and(|s| s > 100.0));
    assert!(agg[2]["max"].as_f64().is_some_and(|m| m > 1.7e12));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoint_and_stop_are_asynchronous_operations() {
    let (env, base, jid) = running_blue().await;
    let http = reqwest::Client::new();
    let trigger = post(
        &http,
        &format!("{base}/jobs/{jid}/savepoints"),
        json!({"cancel-job": false}),
    )
    .await;
    let request = trigger["request-id"].as_str().expect("request-id");
    let op = loop {
        let s = get(&http, &format!("{base}/jobs/{jid}/savepoints/{request}")).await;
        if s["status"]["id"] == "COMPLETED" {
            break s;
        }
        assert_eq!(s["status"]["id"], "IN_PROGRESS");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let location = op["operation"]["location"].as_str().expect("location");
    assert!(env.flink.snapshot(location).is_ok());
    let stop = post(
        &http,
        &format!("{base}/jobs/{jid}/stop"),
        json!({"drain": false}),
    )
    .await;
    let request = stop["request-id"].as_str().expect("request-id");
    let job = env.flink.job(&dref("orders-blue")).expect("job");
    assert_eq!(
        job.await_terminal(WAIT).await.expect("stops"),
        JobState::Finished
    );
    let s = get(&http, &format!("{base}/jobs/{jid}/savepoints/{request}")).await;
    assert!(s["operation"]["location"].is_string(), "{s}");
    let missing = http
        .get(format!("{base}/jobs/{jid}/savepoints/nope"))
        .send()
        .await
        .expect("request");
    assert_eq!(missing.status().as_u16(), 404);
    let body: Value = missing.json().await.expect("JSON");
    assert!(body["errors"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_resent_under_its_trigger_id_is_one_savepoint() {
    let (env, base, jid) = running_blue().await;
    let http = reqwest::Client::new();
    let id = "0123456789abcdef0123456789abcdef";
    let body = json!({"cancel-job": false, "triggerId": id});
    let url = format!("{base}/jobs/{jid}/savepoints");
    let first = post(&http, &url, body.clone()).await;
    assert_eq!(first["request-id"], id);
    let job = env.flink.job(&dref("orders-blue")).expect("job");
    let before = job.view().savepoints.len();
    // Resent while in progress and once completed: the same operation, no second savepoint.
    let again = post(&http, &url, body.clone()).await;
    assert_eq!(again["request-id"], id);
    loop {
        let s = get(&http, &format!("{url}/{id}")).await;
        if s["status"]["id"] == "COMPLETED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let late = post(&http, &url, body).await;
    assert_eq!(late["request-id"], id);
    assert_eq!(job.view().savepoints.len(), before);
    // Another id is another savepoint.
    let other = post(
        &http,
        &url,
        json!({"triggerId": "fedcba9876543210fedcba9876543210"}),
    )
    .await;
    assert_eq!(other["request-id"], "fedcba9876543210fedcba9876543210");
    assert_eq!(job.view().savepoints.len(), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_rest_faults_return_500s_or_hang() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("orders", 1, &[])).await;
    let d = dref("orders");
    let base = env.flink.rest_url(&d);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");

    env.flink.faults().rest(&d, RestFault::ServerError);
    let r = http
        .get(format!("{base}/jobs/overview"))
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 500);

    env.flink.faults().rest(&d, RestFault::Hang);
    let r = http.get(format!("{base}/jobs/overview")).send().await;
    assert!(r.is_err_and(|e| e.is_timeout()));

    env.flink.faults().rest(&d, RestFault::Healthy);
    get(&http, &format!("{base}/jobs/overview")).await;
    let unknown = http
        .get(format!(
            "{}/jobs/overview",
            env.flink.rest_url(&dref("nope"))
        ))
        .send()
        .await
        .expect("answers");
    assert_eq!(unknown.status().as_u16(), 503);
}

/// Flink's `GET /jobs/:jid` vertices: `status` (the aggregate ExecutionState), `tasks` (subtasks
/// by state, upper case) and `start-time` (the earliest DEPLOYING timestamp of the current
/// attempts), which a restart moves on; the controller's `minReady` wait reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_restart_deploys_the_vertices_again_with_a_new_start_time() {
    let (env, base, jid) = running_blue().await;
    let http = reqwest::Client::new();
    let vertices = |job: &Value| job["vertices"].as_array().expect("vertices").clone();
    let job = get(&http, &format!("{base}/jobs/{jid}")).await;
    let before = vertices(&job);
    assert!(
        before
            .iter()
            .all(|v| v["status"] == "RUNNING" && v["tasks"]["RUNNING"] == 2),
        "{job}"
    );
    let started = before[0]["start-time"].as_i64().expect("start-time");
    assert!(started > 0, "{job}");

    let d = dref("orders-blue");
    env.flink
        .faults()
        .fail_job_now(&d, bluegreen_local_flink::JobFailure::Restart);
    env.flink.settle(WAIT).await.expect("settles");
    let restarting = get(&http, &format!("{base}/jobs/{jid}")).await;
    assert_eq!(restarting["state"], "RESTARTING", "{restarting}");
    assert!(
        vertices(&restarting)
            .iter()
            .all(|v| v["status"] != "RUNNING" && v["tasks"]["RUNNING"] == 0),
        "{restarting}"
    );
    env.flink
        .advance(5_000, 1000, WAIT)
        .await
        .expect("time passes");
    let job = get(&http, &format!("{base}/jobs/{jid}")).await;
    assert_eq!(job["state"], "RUNNING", "{job}");
    for v in vertices(&job) {
        assert_eq!(v["status"], "RUNNING", "{job}");
        assert!(
            v["start-time"].as_i64().is_some_and(|t| t > started),
            "start-time moves on with the restart: {job}"
        );
        // Each subtask's current attempt (JobVertexDetailsInfo): a new attempt number and start.
        let vid = v["id"].as_str().expect("vertex id");
        let details = get(&http, &format!("{base}/jobs/{jid}/vertices/{vid}")).await;
        let subtasks = details["subtasks"].as_array().expect("subtasks");
        assert_eq!(subtasks.len(), 2, "{details}");
        for t in subtasks {
            assert_eq!(t["status"], "RUNNING", "{details}");
            assert_eq!(t["attempt"], 1, "{details}");
            assert_eq!(t["start-time"], v["start-time"], "{details}");
        }
    }
    assert_eq!(
        env.flink.job(&d).expect("job").view().state,
        JobState::Running
    );
}
