//! The processes behind one running deployment, as in a pod: the launcher JVM (a MiniCluster
//! running the job) and, next to it, the `bluegreen-sidecar`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bluegreen_protocol::wire::env;

use super::ports::free_port;
use super::spec::DeploymentSpec;
use super::{FlinkLine, RealFlinkOptions};
use crate::Error;
use crate::secret_volume::{self, SecretMount};

/// How often a Secret volume is written again while its job runs (a rotated token reaches the
/// sidecar within this).
const SECRET_REFRESH: Duration = Duration::from_secs(3);

/// Environment variables a pod's own env must not inherit from the runner's process.
const POD_ENV: [&str; 4] = [env::COLOR, env::CONFIGMAP, env::NAMESPACE, env::SIDECAR_URL];

/// The log4j2 configuration of every launcher JVM: one log file, named by `-Dlog.file`. The two
/// REST handlers whose ERRORs include known-harmless ones every handover produces (a status poll
/// of an unknown savepoint trigger id, a checkpoint poll while the JobManager is initializing) log
/// through the launcher's `HarmlessRestErrors` rewrite policy, which writes exactly those as one
/// INFO line and passes every other event unchanged.
pub(crate) const LOG4J: &str = "rootLogger.level = INFO
rootLogger.appenderRef.file.ref = File
appender.file.name = File
appender.file.type = File
appender.file.fileName = ${sys:log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %c - %m%n
appender.harmless.name = Harmless
appender.harmless.type = Rewrite
appender.harmless.file.type = AppenderRef
appender.harmless.file.ref = File
appender.harmless.policy.type = HarmlessRestErrors
logger.savepointStatus.name = org.apache.flink.runtime.rest.handler.job.savepoints.SavepointHandlers$SavepointStatusHandler
logger.savepointStatus.additivity = false
logger.savepointStatus.appenderRef.harmless.ref = Harmless
logger.checkpointStatistics.name = org.apache.flink.runtime.rest.handler.job.checkpoints.CheckpointingStatisticsHandler
logger.checkpointStatistics.additivity = false
logger.checkpointStatistics.appenderRef.harmless.ref = Harmless
";

/// A Flink option the runner gives a default: its key and the deprecated keys Flink still reads
/// for it. Flink 1.20.3 and 2.3.0 spell these alike (their `CheckpointingOptions`: each key with
/// the same deprecated keys), so one table serves both lines.
pub(crate) struct DefaultedOption {
    key: &'static str,
    deprecated: &'static [&'static str],
}

/// `CheckpointingOptions.CHECKPOINTS_DIRECTORY`.
const CHECKPOINTS_DIR: DefaultedOption = DefaultedOption {
    key: "execution.checkpointing.dir",
    deprecated: &["state.checkpoints.dir"],
};
/// `CheckpointingOptions.SAVEPOINT_DIRECTORY`.
const SAVEPOINTS_DIR: DefaultedOption = DefaultedOption {
    key: "execution.checkpointing.savepoint-dir",
    deprecated: &["state.savepoints.dir", "savepoints.state.backend.fs.dir"],
};
/// `CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION`.
const CHECKPOINT_RETENTION: DefaultedOption = DefaultedOption {
    key: "execution.checkpointing.externalized-checkpoint-retention",
    deprecated: &[],
};

impl DefaultedOption {
    /// Sets `default` under the key unless the deployment set the option under any of its keys
    /// (a default under the key would override the user's deprecated one).
    fn default_into(&self, conf: &mut BTreeMap<String, String>, default: String) {
        let set = std::iter::once(&self.key)
            .chain(self.deprecated)
            .any(|k| conf.contains_key(*k));
        if !set {
            conf.insert(self.key.to_owned(), default);
        }
    }
}

/// The number of the next run under a deployment's directory: one more than the highest of
/// `after` and every `run-N` there, so that a redeployed color (a new runner, or a new actor
/// after its FlinkDeployment was deleted) never reuses a run's directory.
pub(crate) fn next_run(dir: &Path, after: u32) -> u32 {
    let highest = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("run-")?
                .parse::<u32>()
                .ok()
        })
        .fold(after, u32::max);
    highest.saturating_add(1)
}

/// Writes `text` to `path` unless it holds it already, through a temporary file and a rename
/// (a JVM starting meanwhile reads the old or the new file, never half of one).
fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&tmp, text).map_err(io_error("writing", &tmp))?;
    fs::rename(&tmp, path).map_err(io_error("writing", path))
}

/// The directory of run `run` under a deployment's directory `dir`.
pub(crate) fn run_dir(dir: &Path, run: u32) -> PathBuf {
    dir.join(format!("run-{run}"))
}

/// A Secret the TaskManager pod template mounts for the sidecar's kubeconfig, written under the
/// run's directory as a kubelet fills a Secret volume, and rewritten every [`SECRET_REFRESH`]
/// until dropped.
#[derive(Debug)]
pub(crate) struct SecretVolume {
    /// The file the sidecar's `KUBECONFIG` names.
    kubeconfig: PathBuf,
    refresh: tokio::task::AbortHandle,
}

impl SecretVolume {
    /// Writes the Secret `mount` names, read through `client` from `namespace`, into
    /// `run_dir/volumes/<secret>`. A missing Secret or key is an error: the pod does not start.
    pub async fn mount(
        client: &kube::Client,
        namespace: &str,
        mount: &SecretMount,
        run_dir: &Path,
    ) -> Result<Self, Error> {
        let dir = run_dir.join("volumes").join(&mount.secret);
        secret_volume::materialize(client, namespace, mount, &dir).await?;
        let kubeconfig = dir.join(&mount.file);
        let (client, namespace, mount) = (client.clone(), namespace.to_owned(), mount.clone());
        let refresh = tokio::spawn(async move {
            loop {
                tokio::time::sleep(SECRET_REFRESH).await;
                if let Err(error) =
                    secret_volume::materialize(&client, &namespace, &mount, &dir).await
                {
                    tracing::warn!(%error, secret = %mount.secret, "cannot refresh a Secret volume; its files stay as they were");
                }
            }
        })
        .abort_handle();
        Ok(Self {
            kubeconfig,
            refresh,
        })
    }
}

impl Drop for SecretVolume {
    fn drop(&mut self) {
        self.refresh.abort();
    }
}

/// What a deployment's run needs to know to start its processes.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    pub namespace: &'a str,
    /// The Flink line `spec.flinkVersion` picked.
    pub line: &'a FlinkLine,
    pub spec: &'a DeploymentSpec,
    pub jar: &'a Path,
    pub job_id: &'a str,
    pub restore: Option<&'a str>,
    /// The deployment's directory (checkpoints, savepoints, one `run-N` per process).
    pub dir: &'a Path,
    /// `N` of the run's directory `run-N`, from [`next_run`].
    pub run: u32,
}

/// The running processes of one deployment. Dropping it kills them.
#[derive(Debug)]
pub(crate) struct JobProcess {
    jvm: Child,
    sidecar: Option<Child>,
    /// The port of the job's Flink REST API on 127.0.0.1.
    pub rest_port: u16,
    /// The port of the sidecar on 127.0.0.1, if one runs.
    pub sidecar_port: Option<u16>,
    /// The Flink job id the launcher submits the job under.
    pub job_id: String,
    run_dir: PathBuf,
    /// The sidecar's kubeconfig volume, kept fresh while the processes run.
    _volume: Option<SecretVolume>,
}

fn io_error(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.display().to_string();
    move |source| Error::Io { what, path, source }
}

/// `key=value` lines in Java properties syntax; every character that is not alphanumeric is
/// written as a `\uXXXX` escape, which `Properties.load` reads back verbatim.
pub(crate) fn to_properties<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    fn escape(out: &mut String, text: &str) {
        for unit in text.encode_utf16() {
            match char::from_u32(u32::from(unit)) {
                Some(c) if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' => {
                    out.push(c);
                }
                _ => {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    let mut out = String::new();
    for (key, value) in entries {
        escape(&mut out, key);
        out.push('=');
        escape(&mut out, value);
        out.push('\n');
    }
    out
}

/// A file URI for a local directory.
pub(crate) fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

impl JobProcess {
    /// Starts the sidecar (when the options name its binary and the main container's env names
    /// a ConfigMap; its `KUBECONFIG` the file in `volume`, else the runner's) and the launcher
    /// JVM.
    pub fn spawn(
        options: &RealFlinkOptions,
        launch: &Launch<'_>,
        volume: Option<SecretVolume>,
    ) -> Result<Self, Error> {
        let run_dir = run_dir(launch.dir, launch.run);
        fs::create_dir_all(&run_dir).map_err(io_error("creating", &run_dir))?;
        let env = launch.spec.env()?;
        let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let mut sidecar = None;
        let mut sidecar_port = None;
        if let (Some(binary), Some(configmap)) = (&options.sidecar_binary, lookup(env::CONFIGMAP)) {
            let port = free_port()?;
            let namespace = lookup(env::NAMESPACE).unwrap_or_else(|| launch.namespace.into());
            let mut cmd = Command::new(binary);
            cmd.arg("--configmap")
                .arg(&configmap)
                .arg("--namespace")
                .arg(&namespace)
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"));
            if let Some(color) = lookup(env::COLOR) {
                cmd.arg("--color").arg(color);
            }
            for name in POD_ENV {
                cmd.env_remove(name);
            }
            let kubeconfig = volume.as_ref().map_or_else(
                || options.work_dir.join("kubeconfig.yaml"),
                |v| v.kubeconfig.clone(),
            );
            cmd.env(secret_volume::KUBECONFIG_ENV, kubeconfig)
                .env("RUST_LOG", "info");
            sidecar = Some(spawn_logged(cmd, &run_dir.join("sidecar.log"), binary)?);
            sidecar_port = Some(port);
        }
        let jvm = match Self::spawn_jvm(options, launch, &run_dir, &env, sidecar_port) {
            Ok(jvm) => jvm,
            Err(e) => {
                if let Some(mut s) = sidecar {
                    kill(&mut s);
                }
                return Err(e);
            }
        };
        let (jvm, rest_port) = jvm;
        Ok(Self {
            jvm,
            sidecar,
            rest_port,
            sidecar_port,
            job_id: launch.job_id.to_owned(),
            run_dir,
            _volume: volume,
        })
    }

    fn spawn_jvm(
        options: &RealFlinkOptions,
        launch: &Launch<'_>,
        run_dir: &Path,
        env: &[(String, String)],
        sidecar_port: Option<u16>,
    ) -> Result<(Child, u16), Error> {
        let checkpoints = launch.dir.join("checkpoints");
        let savepoints = launch.dir.join("savepoints");
        let mut conf = launch.spec.flink_configuration.clone();
        for (option, default) in [
            (&CHECKPOINTS_DIR, file_uri(&checkpoints)),
            (&SAVEPOINTS_DIR, file_uri(&savepoints)),
            (&CHECKPOINT_RETENTION, "RETAIN_ON_CANCELLATION".to_owned()),
        ] {
            option.default_into(&mut conf, default);
        }
        let conf_file = run_dir.join("flink-conf.properties");
        fs::write(
            &conf_file,
            to_properties(conf.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        )
        .map_err(io_error("writing", &conf_file))?;
        let log4j = options.work_dir.join("log4j.properties");
        // Rewritten when it differs: a work directory kept from an older version has its config.
        write_if_changed(&log4j, LOG4J)?;
        let job = launch.spec.job()?;
        let rest_port = free_port()?;
        let classpath = format!(
            "{}:{}/*",
            launch.line.launcher_jar.display(),
            launch.line.lib.display()
        );
        // Flink's temporary files in the run's own directory, as in a pod's: a killed JVM
        // never deletes them (its RPC jar alone is 24 MB).
        let tmp = run_dir.join("tmp");
        fs::create_dir_all(&tmp).map_err(io_error("creating", &tmp))?;
        let mut cmd = Command::new(&options.java);
        cmd.arg(format!("-Xmx{}", options.jvm_heap))
            .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
            .args(&options.jvm_options)
            .arg(format!("-Dlog4j.configurationFile={}", log4j.display()))
            .arg(format!(
                "-Dlog.file={}",
                run_dir.join("flink.log").display()
            ))
            .arg("-cp")
            .arg(classpath)
            .arg("io.bluegreen.local.LocalJobLauncher")
            .arg("--rest-port")
            .arg(rest_port.to_string())
            .arg("--jar")
            .arg(launch.jar)
            .arg("--job-id")
            .arg(launch.job_id)
            .arg("--parallelism")
            .arg(launch.spec.parallelism()?.to_string())
            .arg("--conf")
            .arg(&conf_file)
            .arg("--error-file")
            .arg(run_dir.join("error.txt"));
        if let Some(class) = &job.entry_class {
            cmd.arg("--entry-class").arg(class);
        }
        if let Some(path) = launch.restore {
            cmd.arg("--savepoint").arg(path);
            if job.allow_non_restored_state {
                cmd.arg("--allow-non-restored-state");
            }
        }
        cmd.arg("--").args(&job.args);
        for name in POD_ENV {
            cmd.env_remove(name);
        }
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        if let Some(port) = sidecar_port {
            cmd.env(env::SIDECAR_URL, format!("http://127.0.0.1:{port}"));
        }
        let child = spawn_logged(cmd, &run_dir.join("launcher.log"), &options.java)?;
        Ok((child, rest_port))
    }

    /// If the JVM has exited: how, with the launcher's reported cause when it wrote one.
    pub fn exited(&mut self) -> Option<String> {
        let status = self.jvm.try_wait().ok().flatten()?;
        let cause = fs::read_to_string(self.run_dir.join("error.txt")).ok();
        Some(match cause {
            Some(cause) => format!("the job could not be submitted: {}", cause.trim()),
            None => format!(
                "the JobManager process exited ({status}); see {}",
                self.run_dir.join("launcher.log").display()
            ),
        })
    }

    /// The JVM's process id.
    pub fn pid(&self) -> u32 {
        self.jvm.id()
    }
}

impl Drop for JobProcess {
    /// Kills the JVM and the sidecar (as Kubernetes does when a pod is deleted).
    fn drop(&mut self) {
        kill(&mut self.jvm);
        if let Some(sidecar) = &mut self.sidecar {
            kill(sidecar);
        }
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn spawn_logged(mut cmd: Command, log: &Path, program: &Path) -> Result<Child, Error> {
    let out = File::create(log).map_err(io_error("creating", log))?;
    let err = out.try_clone().map_err(io_error("opening", log))?;
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|source| Error::Spawn {
            program: program.display().to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use serde_json::json;

    use super::{CHECKPOINTS_DIR, LOG4J, SAVEPOINTS_DIR, SECRET_REFRESH, SecretVolume, next_run};
    use crate::secret_volume::SecretMount;

    #[tokio::test]
    async fn a_secret_volume_follows_its_secret_until_dropped() {
        let server = bluegreen_local_apiserver::LocalApiServer::start(
            bluegreen_local_apiserver::Options::default(),
        )
        .await
        .expect("API server");
        let secret = |token: &str| {
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "home", "namespace": "default"},
                "stringData": {"kubeconfig": "tokenFile: token", "token": token},
            })
        };
        let mount = SecretMount {
            secret: "home".into(),
            dir: "/etc/bluegreen/home".into(),
            file: "kubeconfig".into(),
        };
        let run = tempfile::tempdir().expect("tempdir");
        let client = server.client();
        assert!(
            SecretVolume::mount(&client, "default", &mount, run.path())
                .await
                .is_err(),
            "no Secret, no volume"
        );
        server.apply_object(&secret("t1")).expect("Secret");
        let volume = SecretVolume::mount(&client, "default", &mount, run.path())
            .await
            .expect("mounted");
        let token = volume.kubeconfig.with_file_name("token");
        assert_eq!(
            std::fs::read_to_string(&volume.kubeconfig).expect("kubeconfig"),
            "tokenFile: token"
        );
        assert_eq!(std::fs::read_to_string(&token).expect("token"), "t1");
        // Rotated: the file follows within a refresh.
        server.apply_object(&secret("t2")).expect("rotate");
        tokio::time::sleep(SECRET_REFRESH + Duration::from_secs(1)).await;
        assert_eq!(std::fs::read_to_string(&token).expect("token"), "t2");
        // Dropped (the job's processes killed): no more writes.
        drop(volume);
        server.apply_object(&secret("t3")).expect("rotate");
        tokio::time::sleep(SECRET_REFRESH + Duration::from_secs(1)).await;
        assert_eq!(std::fs::read_to_string(&token).expect("token"), "t2");
    }

    #[test]
    fn a_default_never_overrides_the_users_option_under_a_deprecated_key() {
        let mut conf: BTreeMap<String, String> =
            [("state.savepoints.dir".to_owned(), "file:///mine".to_owned())].into();
        CHECKPOINTS_DIR.default_into(&mut conf, "file:///chk".into());
        SAVEPOINTS_DIR.default_into(&mut conf, "file:///sp".into());
        assert_eq!(
            conf,
            [
                (
                    "execution.checkpointing.dir".to_owned(),
                    "file:///chk".to_owned()
                ),
                ("state.savepoints.dir".to_owned(), "file:///mine".to_owned()),
            ]
            .into()
        );
    }

    #[test]
    fn a_run_never_reuses_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(next_run(dir.path(), 0), 1);
        assert_eq!(next_run(&dir.path().join("absent"), 0), 1);
        for name in ["run-1", "run-2", "run-10", "run-x", "checkpoints"] {
            std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        // A new actor (its counter at 0) of a color that ran before: after the highest run.
        assert_eq!(next_run(dir.path(), 0), 11);
        assert_eq!(next_run(dir.path(), 12), 13);
    }

    #[test]
    fn the_log4j_config_routes_the_harmless_handlers_through_the_launchers_policy() {
        let policy =
            include_str!("../../launcher/src/main/java/io/bluegreen/local/HarmlessRestErrors.java");
        assert!(policy.contains("name = \"HarmlessRestErrors\""));
        assert!(LOG4J.contains("policy.type = HarmlessRestErrors"));
        let routed: Vec<&str> = LOG4J
            .lines()
            .filter_map(|l| l.split_once(".name = ").map(|(_, v)| v))
            .filter(|v| v.starts_with("org.apache.flink"))
            .collect();
        assert_eq!(routed.len(), 2, "{LOG4J}");
        for logger in routed {
            assert!(
                policy.contains(&format!("\"{logger}\"")),
                "{logger} is not one the policy knows"
            );
        }
        assert!(LOG4J.contains("rootLogger.appenderRef.file.ref = File"));
    }
}
