//! The broker: one KRaft node on two free loopback ports, its storage in a temp dir, and the
//! `KafkaTool` commands run against it (topics, the producer, the oracle's readings).

use std::collections::BTreeMap;
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};

use super::{KAFKA_VERSION, kafka_home, tail};

/// How long the broker may take to answer (a loaded 2-core machine).
const START: Duration = Duration::from_secs(90);

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A random KRaft cluster id: 16 bytes, URL-safe base64 without padding (Kafka's `Uuid`). The
/// first byte's top bit is cleared so that the id never starts with `-` (or `_`), which
/// `kafka-storage format -t` would read as an option (Kafka's own `Uuid.randomUuid` avoids it too).
fn cluster_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = Vec::with_capacity(16);
    for _ in 0..2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        bytes.extend_from_slice(&h.finish().to_le_bytes());
    }
    bytes[0] &= 0x7f;
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// A running single-node KRaft broker; stopped (killed) and its directory removed when dropped.
pub struct KafkaBroker {
    /// `127.0.0.1:<port>`.
    pub bootstrap: String,
    /// The broker's log (its stdout and stderr).
    pub log: PathBuf,
    home: PathBuf,
    child: Child,
    producers: Vec<Child>,
    dir: tempfile::TempDir,
}

impl KafkaBroker {
    /// Formats storage in a temp dir and starts the broker on two free loopback ports; returns
    /// once it answers (the topics are created by [`create_topics`](Self::create_topics)). A broker
    /// that exits or does not listen within 90 s is an error naming its log, with the log's tail.
    pub async fn start() -> anyhow::Result<Self> {
        let home = kafka_home()?;
        let dir = tempfile::Builder::new()
            .prefix("bluegreen-kafka-")
            .tempdir()?;
        let (port, controller) = (free_port()?, free_port()?);
        let data = dir.path().join("data");
        let props = dir.path().join("server.properties");
        let config = format!(
            "process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={}
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
",
            data.display()
        );
        fs::write(&props, config)?;
        let log = dir.path().join("broker.log");
        let java = |main: &str| {
            let mut cmd = Command::new("java");
            cmd.arg("-Xmx512m")
                .arg(format!(
                    "-Dlog4j2.configurationFile={}",
                    home.join("log4j2.properties").display()
                ))
                .arg("-cp")
                .arg(format!("{}/libs/*", home.display()))
                .arg(main);
            cmd
        };
        let format = java("kafka.tools.StorageTool")
            .args(["format", "-t", &cluster_id(), "-c"])
            .arg(&props)
            .output()?;
        ensure!(
            format.status.success(),
            "kafka-storage format failed ({}): {}{}",
            format.status,
            String::from_utf8_lossy(&format.stdout),
            String::from_utf8_lossy(&format.stderr)
        );
        let out = fs::File::create(&log)?;
        let child = java("kafka.Kafka")
            .arg(&props)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("starting the Kafka broker")?;
        let mut broker = Self {
            bootstrap: format!("127.0.0.1:{port}"),
            log,
            home,
            child,
            producers: Vec::new(),
            dir,
        };
        let started = Instant::now();
        loop {
            if let Some(status) = broker.child.try_wait()? {
                bail!(
                    "the Kafka broker exited ({status}) before it answered; its log {}:\n{}",
                    broker.log.display(),
                    tail(&broker.log, 40)
                );
            }
            if TcpStream::connect(&broker.bootstrap).is_ok()
                && fs::read_to_string(&broker.log)?.contains("Kafka Server started")
            {
                break;
            }
            if started.elapsed() > START {
                bail!(
                    "the Kafka broker did not answer on {} within {START:?}; its log {}:\n{}",
                    broker.bootstrap,
                    broker.log.display(),
                    tail(&broker.log, 40)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "Kafka {KAFKA_VERSION} broker on {} in {:?} (log {})",
            broker.bootstrap,
            started.elapsed(),
            broker.log.display()
        );
        Ok(broker)
    }

    /// The directory of the broker's files (its storage, config, log, the tools' output).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `java -cp … KafkaTool`: the tool on the broker's class path, without arguments.
    fn tool(&self) -> Command {
        let mut cmd = Command::new("java");
        cmd.arg("-cp")
            .arg(format!("{0}/libs/*:{0}/tool", self.home.display()))
            .arg("KafkaTool");
        cmd
    }

    /// Runs `KafkaTool args…` off the async threads; its stdout, or an error with its stderr and
    /// the broker log's name.
    async fn run_tool(&self, args: Vec<String>) -> anyhow::Result<String> {
        let mut cmd = self.tool();
        cmd.arg(args[0].clone())
            .arg(&self.bootstrap)
            .args(&args[1..]);
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || {
            let out = cmd.output()?;
            ensure!(
                out.status.success(),
                "KafkaTool {args:?} failed ({}): {}\n(broker log {}:\n{})",
                out.status,
                String::from_utf8_lossy(&out.stderr),
                log.display(),
                tail(&log, 20)
            );
            Ok(String::from_utf8(out.stdout)?)
        })
        .await?
    }

    /// Creates `topics` (name, partitions); waits up to 60 s for the broker to accept them.
    pub async fn create_topics(&self, topics: &[(&str, u32)]) -> anyhow::Result<()> {
        let mut args = vec!["create-topics".to_owned()];
        args.extend(topics.iter().map(|(t, p)| format!("{t}:{p}")));
        self.run_tool(args).await?;
        Ok(())
    }

    /// Starts the producer of `topic` (see `KafkaTool produce`): record `o` of each of `partitions`
    /// partitions at `t0 + o * 1000 / rate` ms, event time within `jitter_ms` of that, key
    /// `p * keys + o % keys`; it runs until the broker is dropped or [`stop_producers`](Self::stop_producers).
    #[allow(clippy::too_many_arguments)]
    pub fn start_producer(
        &mut self,
        topic: &str,
        partitions: u32,
        rate: u64,
        t0: u64,
        jitter_ms: u64,
        seed: u64,
        keys: u64,
    ) -> anyhow::Result<()> {
        let log = self.dir.path().join(format!("producer-{topic}.log"));
        let mut args = vec![topic.to_owned(), partitions.to_string()];
        args.extend([rate, t0, jitter_ms, seed, keys].map(|n| n.to_string()));
        let child = self.spawn_tool("produce", &args, &log, &log)?;
        self.producers.push(child);
        Ok(())
    }

    /// The shell command that reads `topic` as a `read_committed` consumer (for users to try).
    pub fn read_command(&self, topic: &str) -> String {
        format!(
            "java -cp '{0}/libs/*:{0}/tool' KafkaTool read {1} {topic} read_committed",
            self.home.display(),
            self.bootstrap
        )
    }

    /// Starts `KafkaTool command BOOTSTRAP args…` in the background, its stdout into `out` and its
    /// stderr into `err` (the same file or not).
    pub(crate) fn spawn_tool(
        &self,
        command: &str,
        args: &[String],
        out: &Path,
        err: &Path,
    ) -> anyhow::Result<Child> {
        let stdout = fs::File::create(out)?;
        let stderr = if out == err {
            stdout.try_clone()?
        } else {
            fs::File::create(err)?
        };
        self.tool()
            .arg(command)
            .arg(&self.bootstrap)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting KafkaTool {command}"))
    }

    /// Stops every producer (killed: what it wrote is a prefix of each partition).
    pub fn stop_producers(&mut self) {
        for mut p in self.producers.drain(..) {
            let _ = p.kill();
            let _ = p.wait();
        }
    }

    /// Every record of `topic` read by a plain consumer with `isolation` (`read_committed` or
    /// `read_uncommitted`), up to the end offsets at its start: one value per line.
    pub async fn read(&self, topic: &str, isolation: &str) -> anyhow::Result<Vec<String>> {
        let out = self
            .run_tool(vec!["read".into(), topic.into(), isolation.into()])
            .await?;
        Ok(out.lines().map(str::to_owned).collect())
    }

    /// The end offset of each partition of `topic`.
    pub async fn end_offsets(&self, topic: &str) -> anyhow::Result<BTreeMap<u32, u64>> {
        let out = self
            .run_tool(vec!["end-offsets".into(), topic.into()])
            .await?;
        out.lines()
            .map(|l| {
                let (p, o) = l.split_once(' ').context("`partition offset`")?;
                Ok((p.parse()?, o.parse()?))
            })
            .collect()
    }
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        self.stop_producers();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::cluster_id;

    /// `kafka-storage format -t <id>` reads an id starting with `-` as an option and fails (one
    /// id in 64 did, which failed a real test's broker start).
    #[test]
    fn cluster_ids_are_22_url_safe_characters_and_never_start_with_a_dash() {
        for _ in 0..5000 {
            let id = cluster_id();
            assert_eq!(id.len(), 22, "{id}");
            assert!(!id.starts_with('-'), "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{id}"
            );
        }
    }
}
