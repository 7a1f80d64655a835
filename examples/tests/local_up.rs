//! `bluegreen-local up --simulated` as a user runs it: a child process on a free port, then
//! `kubectl` with the kubeconfig it writes: the simulated example manifest applied in a namespace
//! of its own, one upgrade by a patch of the image, and a clean exit on SIGTERM; and
//! `--manifest` with the real example manifest, rendered, applied and upgraded by re-applying it;
//! `--kafka`: the broker's address in the rendered Kafka manifest, and the broker gone after SIGTERM.
//!
//! Needs `kubectl` on PATH (fails, does not skip, when it is missing).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const NAME: &str = "orders";
const NAMESPACE: &str = "try-it";

fn kubectl_path() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("kubectl not found on PATH: this test needs kubectl 1.32"))
}

/// The `bluegreen-local` process; killed if the test fails before it is stopped.
struct Up {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Up {
    fn log(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
        format!(
            "--- bluegreen-local stdout\n{}--- stderr\n{}",
            read("stdout.log"),
            read("stderr.log")
        )
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("config/kubeconfig")
    }

    /// Runs kubectl with the kubeconfig; its stdout, panicking (with the server's log) on failure.
    fn kubectl(&self, args: &[&str]) -> String {
        let out = Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .output()
            .expect("run kubectl");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        stdout
    }

    /// Runs `kubectl get <args>` (a watch) for a moment: it must still be running then.
    fn kubectl_keeps_watching(&self, args: &[&str]) {
        let mut child = Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(["-n", NAMESPACE, "get"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        std::thread::sleep(Duration::from_secs(2));
        let exited = child.try_wait().expect("kubectl state");
        let _ = child.kill();
        let out = child.wait_with_output().expect("kubectl output");
        assert!(
            exited.is_none(),
            "kubectl get {args:?} ended ({exited:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Waits until the resource is active on `color`, Ready, with no handover in progress and
    /// `promoted` promoted handovers in its history.
    fn wait_steady(&self, color: &str, promoted: usize, timeout: Duration) {
        self.wait_steady_in(NAMESPACE, NAME, color, promoted, timeout);
    }

    /// [`Up::wait_steady`] of `name` in `namespace`.
    fn wait_steady_in(
        &self,
        namespace: &str,
        name: &str,
        color: &str,
        promoted: usize,
        timeout: Duration,
    ) {
        let jsonpath = "jsonpath={.status.activeColor}/{.status.transition.phase}/\
                        {.status.conditions[?(@.type==\"Ready\")].status}/\
                        {.status.history[?(@.outcome==\"Promoted\")].epoch}";
        let want = |got: &str| {
            let parts: Vec<&str> = got.split('/').collect();
            parts.len() == 4
                && parts[0] == color
                && parts[1].is_empty()
                && parts[2] == "True"
                && parts[3].split_whitespace().count() == promoted
        };
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.kubectl(&["get", "fbgd", name, "-n", namespace, "-o", jsonpath]);
            if want(&got) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not steady on {color} with {promoted} promoted handover(s) within {timeout:?}: \
                 active/phase/ready/promoted = {got:?}\n{}\n{}",
                self.kubectl(&["get", "fbgd", name, "-n", namespace, "-o", "yaml"]),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Sends SIGTERM and waits (bounded) for the exit.
    fn terminate(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        let sent = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return (status, sent.elapsed());
            }
            if sent.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "bluegreen-local did not exit within {timeout:?} of SIGTERM\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn start(port: u16) -> Up {
    start_with(port, &[])
}

fn start_with(port: u16, more: &[&Path]) -> Up {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str| std::fs::File::create(dir.path().join(name)).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_bluegreen-local"))
        .args(["up", "--simulated", "--port", &port.to_string()])
        .args(more)
        .arg("--work-dir")
        .arg(dir.path().join("work"))
        .arg("--kubeconfig")
        .arg(dir.path().join("config/kubeconfig"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(file("stdout.log"))
        .stderr(file("stderr.log"))
        .spawn()
        .expect("start bluegreen-local");
    Up {
        child: Some(child),
        dir,
    }
}

fn wait_for_file(up: &mut Up, path: &Path, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        if let Some(status) = up.child.as_mut().and_then(|c| c.try_wait().expect("wait")) {
            panic!("bluegreen-local exited early ({status})\n{}", up.log());
        }
        assert!(
            Instant::now() < deadline,
            "no kubeconfig at {} within {timeout:?}\n{}",
            path.display(),
            up.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The whole user journey on the simulated Flink: up, apply, upgrade, SIGTERM.
#[test]
fn up_apply_upgrade_and_stop() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/orders-simulated.yaml");
    let port = free_port();
    let mut up = start(port);
    let path = up.kubeconfig();
    let kubeconfig = wait_for_file(&mut up, &path, Duration::from_secs(30));
    assert!(
        kubeconfig.contains(&format!("server: http://127.0.0.1:{port}")),
        "{kubeconfig}"
    );
    let mode = std::fs::metadata(&path).expect("kubeconfig").permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600,
        "the kubeconfig is for its owner only"
    );
    let banner = std::fs::read_to_string(up.dir.path().join("stdout.log")).expect("stdout");
    assert!(
        banner.contains("SIMULATED Flink")
            && banner.contains(&format!("export KUBECONFIG={}", up.kubeconfig().display()))
            && banner.contains(&format!("kubectl apply -f {}", manifest.display())),
        "{banner}"
    );

    // Both CRDs are installed and the controller watches every namespace.
    up.kubectl(&["create", "namespace", NAMESPACE]);
    let out = up.kubectl(&[
        "apply",
        "-n",
        NAMESPACE,
        "-f",
        manifest.to_str().expect("utf-8"),
    ]);
    assert!(
        out.contains("flinkbluegreendeployment.bluegreen.dev/orders created"),
        "{out}"
    );
    up.wait_steady("BLUE", 0, Duration::from_secs(20));
    // Every `kubectl get ... -w` the banner suggests is one kubectl accepts (it refuses several
    // types at once with "you may only specify a single resource type").
    let watches: Vec<&str> = banner
        .lines()
        .filter_map(|l| l.trim().strip_prefix("kubectl get "))
        .filter(|l| l.split_whitespace().any(|w| w == "-w"))
        .collect();
    assert!(!watches.is_empty(), "{banner}");
    for args in watches {
        up.kubectl_keeps_watching(&args.split_whitespace().collect::<Vec<_>>());
    }
    let children = up.kubectl(&["get", "flinkdeployments", "-n", NAMESPACE, "-o", "name"]);
    assert_eq!(
        children.trim(),
        "flinkdeployment.flink.apache.org/orders-blue"
    );

    up.kubectl(&[
        "patch",
        "fbgd",
        NAME,
        "-n",
        NAMESPACE,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"spec":{"image":"example.com/orders:v2"}}}}"#,
    ]);
    up.wait_steady("GREEN", 1, Duration::from_secs(30));
    let children = up.kubectl(&["get", "flinkdeployments", "-n", NAMESPACE, "-o", "name"]);
    assert_eq!(
        children.trim(),
        "flinkdeployment.flink.apache.org/orders-green"
    );

    let (status, took) = up.terminate(Duration::from_secs(15));
    assert!(
        status.success(),
        "bluegreen-local exited with {status}\n{}",
        up.log()
    );
    assert!(took < Duration::from_secs(10), "stopping took {took:?}");
    let stdout = std::fs::read_to_string(up.dir.path().join("stdout.log")).expect("stdout");
    assert!(stdout.contains("bluegreen-local: stopped"), "{stdout}");
}

/// `up --manifest` with the real example manifest: its placeholders filled in, applied at start,
/// and the rendered copy re-applied by kubectl as an upgrade (no "missing last-applied" warning).
#[test]
fn up_renders_and_applies_a_users_manifest() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = examples.parent().expect("repository");
    let manifest = examples.join("manifests/example-job-real.yaml");
    let mut up = start_with(free_port(), &[Path::new("--manifest"), &manifest]);
    let path = up.kubeconfig();
    wait_for_file(&mut up, &path, Duration::from_secs(30));
    let work = up.dir.path().join("work");
    let rendered = work.join("example-job-real.yaml");
    let text = std::fs::read_to_string(&rendered).expect("the rendered copy");
    assert!(!text.contains("@REPO@") && !text.contains("@WORK@") && !text.contains("@T0@"));
    let banner = std::fs::read_to_string(up.dir.path().join("stdout.log")).expect("stdout");
    assert!(
        banner.contains(&format!("kubectl apply -f {}", rendered.display()))
            && banner.contains("kubectl bluegreen get example-job -w"),
        "{banner}"
    );

    let job = |field: &str| {
        up.kubectl(&[
            "get",
            "fbgd",
            "example-job",
            "-n",
            "default",
            "-o",
            &format!("jsonpath={{.spec.template.spec.job.{field}}}"),
        ])
    };
    assert_eq!(
        job("jarURI"),
        format!(
            "local://{}/target/examples/bluegreen-example-job.jar",
            repo.display()
        )
    );
    let args: Vec<String> = serde_json::from_str(&job("args")).expect("args");
    let at = |flag: &str| {
        let i = args.iter().position(|a| a == flag).expect(flag);
        args[i + 1].clone()
    };
    assert_eq!(
        at("--output"),
        format!("{}/output/example-job", work.display())
    );
    let t0: u128 = at("--t0").parse().expect("--t0 in epoch ms");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis();
    assert!(
        t0 <= now && now - t0 < 120_000,
        "--t0 {t0} is when up started"
    );
    up.wait_steady_in("default", "example-job", "BLUE", 0, Duration::from_secs(30));

    // The rendered copy is the file to edit: applying it again is an upgrade.
    std::fs::write(&rendered, text.replace("--version, v1", "--version, v2")).expect("edit");
    let out = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(up.kubeconfig())
        .args(["apply", "-f"])
        .arg(&rendered)
        .output()
        .expect("run kubectl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", up.log());
    assert!(
        !stderr.contains("last-applied-configuration"),
        "kubectl apply of the rendered copy warned: {stderr}"
    );
    up.wait_steady_in(
        "default",
        "example-job",
        "GREEN",
        1,
        Duration::from_secs(40),
    );
    let (status, _) = up.terminate(Duration::from_secs(15));
    assert!(status.success(), "{}", up.log());
}

/// `up --kafka` (on the simulated Flink, which does not run the job: the broker alone): the
/// example Kafka manifest rendered with the broker's address, the broker answering on it, the
/// `read_committed` command printed, and after SIGTERM a clean exit with the broker stopped and
/// its directory removed. Passes without running when no `java` runs (the broker is a JVM).
#[test]
fn up_kafka_starts_a_broker_for_manifests_and_removes_it_on_sigterm() {
    if !Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIPPED: no `java` on the PATH; the Kafka broker is a JVM");
        return;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/kafka-job-real.yaml");
    let mut up = start_with(
        free_port(),
        &[Path::new("--kafka"), Path::new("--manifest"), &manifest],
    );
    let path = up.kubeconfig();
    // The broker starts first (up to 90 s on a loaded machine).
    wait_for_file(&mut up, &path, Duration::from_mins(2));
    let banner = std::fs::read_to_string(up.dir.path().join("stdout.log")).expect("stdout");
    let bootstrap = banner
        .split_whitespace()
        .skip_while(|w| *w != "broker")
        .nth(2)
        .unwrap_or_else(|| panic!("no broker address in the banner:\n{banner}"))
        .to_owned();
    assert!(
        banner.contains(&format!("KafkaTool read {bootstrap} out read_committed")),
        "{banner}"
    );
    let rendered =
        std::fs::read_to_string(up.dir.path().join("work/kafka-job-real.yaml")).expect("rendered");
    assert!(
        rendered.contains(&format!("--kafka, \"{bootstrap}\"")) && !rendered.contains("@KAFKA@"),
        "{rendered}"
    );
    std::net::TcpStream::connect(&bootstrap).expect("the broker answers");
    let log = banner
        .split_whitespace()
        .skip_while(|w| *w != "log")
        .nth(1)
        .unwrap_or_else(|| panic!("no broker log in the banner:\n{banner}"));
    let log_dir = Path::new(log).parent().expect("the broker's directory");
    assert!(log_dir.is_dir(), "{}", log_dir.display());
    let (status, _) = up.terminate(Duration::from_secs(30));
    assert!(
        status.success(),
        "bluegreen-local exited with {status}\n{}",
        up.log()
    );
    assert!(
        std::net::TcpStream::connect(&bootstrap).is_err(),
        "the broker still answers on {bootstrap} after SIGTERM"
    );
    assert!(!log_dir.exists(), "{} is still there", log_dir.display());
}
