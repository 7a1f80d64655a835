//! The `bluegreen-sidecar` binary's log: written to a pipe or a file (the local Flink runner's
//! `sidecar.log`, a container's log), it carries no ANSI colour codes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use bluegreen_local_apiserver::{LocalApiServer, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_to_a_pipe_has_no_ansi_codes() {
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("local API server");
    let kubeconfig = std::env::temp_dir().join(format!(
        "bluegreen-sidecar-log-output-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).expect("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bluegreen-sidecar"))
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("RUST_LOG")
        .args(["--configmap", "orders-bluegreen", "--namespace", "default"])
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bluegreen-sidecar");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let serving = tokio::task::spawn_blocking(move || {
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
            let done = line.contains("bluegreen sidecar serving");
            seen.push(line);
            if done {
                break;
            }
        }
        seen
    })
    .await
    .expect("join");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&kubeconfig);
    server.shutdown().await;
    assert!(
        serving
            .iter()
            .any(|l| l.contains("bluegreen sidecar serving")),
        "no start line: {serving:?}"
    );
    for line in &serving {
        assert!(!line.contains('\u{1b}'), "ANSI escape in {line:?}");
    }
}
