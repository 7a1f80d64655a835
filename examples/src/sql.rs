//! The SQL job on **real Flink**: an unchanged SQL script run by `bluegreen-sql-runner`
//! (`sql-runner/`, docs/sql.md) over CSV input files written while it runs, its
//! `FlinkBlueGreenDeployment`, and the ledger that judges its two filesystem outputs: every
//! input record projected exactly once, every event-time window counted exactly once, each by the
//! color that owns its event time (the projection's `ts_ms`, the window's `window_time`).
//!
//! The script (v1): `orders` (`id,k,ts_ms` CSV files, watermark `ts - 30 s`, no idle timeout) →
//! `projected` (`id, k, ts_ms, ts`) and → `per_window` (2 s tumbling windows per key:
//! `k, window_start, window_end, cnt, id_sum, window_time`). v2 projects one more column,
//! `k10 = k * 10`, into a sink table with that column: a changed query. `refused` adds an
//! unwindowed `GROUP BY` the runner must refuse.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bluegreen_controller::resource::{FlinkBlueGreenDeploymentSpec, Outcome};
use bluegreen_local_flink::file_ledger;
use bluegreen_protocol::Color;
use bluegreen_protocol::flink::JobStatus;
use serde_json::{Value, json};

use crate::LocalStack;
use crate::real::{Artifacts, ExampleJob};

/// The runner's main class.
pub const ENTRY_CLASS: &str = "io.bluegreen.sql.SqlRunner";
/// Keys of the input: `k = id % KEYS`.
pub const KEYS: u64 = 8;
/// The tumbling window of `per_window`, ms.
pub const WINDOW_MS: i64 = 2000;
/// The source's watermark bound, ms: longer than any backlog of input files a job starts with
/// (the filesystem source reads a backlog's files in no particular order, so a bound shorter than
/// the backlog makes the older files' records late, and windows drop them) (the script's `WATERMARK FOR ts AS ts - INTERVAL '30' SECOND`).
pub const BOUND_MS: i64 = 30_000;

/// `target/sql-runner/bluegreen-sql-runner.jar` beside the other built jars.
///
/// # Errors
/// When it is not built, naming the command that builds it.
pub fn runner_jar(artifacts: &Artifacts) -> anyhow::Result<PathBuf> {
    let target = artifacts
        .launcher
        .parent()
        .and_then(Path::parent)
        .context("the launcher jar is under target/launcher")?;
    let jar = target.join("sql-runner/bluegreen-sql-runner.jar");
    anyhow::ensure!(
        jar.exists(),
        "{} is missing: run `mvn -B -q package -DskipTests` (scripts/test and scripts/demo do it)",
        jar.display()
    );
    Ok(jar)
}

/// One deployment of the SQL job.
#[derive(Debug, Clone)]
pub struct SqlJob {
    /// `v1`, `v2` (one more projected column) or `refused` (v2 and an unwindowed GROUP BY).
    pub version: String,
    /// `job.parallelism`.
    pub parallelism: i32,
    /// Input files, outputs and scripts live here.
    pub work: PathBuf,
    /// More runner arguments (e.g. `--color BLUE` in both jobs: the misconfiguration that shows
    /// the ledger failing).
    pub extra_args: Vec<String>,
}

impl SqlJob {
    /// v1, parallelism 2, under `work`.
    pub fn new(work: &Path) -> Self {
        Self {
            version: "v1".into(),
            parallelism: 2,
            work: work.to_owned(),
            extra_args: Vec::new(),
        }
    }

    /// Where the input CSV files are written.
    pub fn input(&self) -> PathBuf {
        self.work.join("input")
    }

    /// The output directory of sink table `table`.
    pub fn output(&self, table: &str) -> PathBuf {
        self.work.join("output").join(table)
    }

    fn uri(path: &Path) -> String {
        format!("file://{}", path.display())
    }

    /// The script of this version.
    pub fn script(&self) -> String {
        let (projected_sink, projected_select) = if self.version == "v1" {
            (
                "id BIGINT, k INT, ts_ms BIGINT, ts TIMESTAMP_LTZ(3)",
                "id, k, ts_ms, ts",
            )
        } else {
            (
                "id BIGINT, k INT, ts_ms BIGINT, ts TIMESTAMP_LTZ(3), k10 INT",
                "id, k, ts_ms, ts, k * 10 AS k10",
            )
        };
        let mut script = format!(
            "-- The SQL job of tests/tests/real_sql.rs ({version}), run unchanged by bluegreen-sql-runner.
SET 'table.local-time-zone' = 'UTC';
CREATE TABLE orders (
  id BIGINT, k INT, ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '30' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{input}', 'format' = 'csv', 'source.monitor-interval' = '1 s');
CREATE TABLE per_window (
  k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, id_sum BIGINT, window_time TIMESTAMP_LTZ(3)
) WITH ('connector' = 'filesystem', 'path' = '{per_window}', 'format' = 'csv');
CREATE TABLE projected ({projected_sink})
  WITH ('connector' = 'filesystem', 'path' = '{projected}', 'format' = 'csv');
INSERT INTO per_window
  SELECT k, window_start, window_end, COUNT(*) AS cnt, SUM(id) AS id_sum, window_time
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '2' SECOND))
  GROUP BY k, window_start, window_end, window_time;
INSERT INTO projected SELECT {projected_select} FROM orders;
",
            version = self.version,
            input = Self::uri(&self.input()),
            per_window = Self::uri(&self.output("per_window")),
            projected = Self::uri(&self.output("projected")),
        );
        if self.version == "refused" {
            let _ = write!(
                script,
                "CREATE TABLE counts (k INT, cnt BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
INSERT INTO counts SELECT k, COUNT(*) AS cnt FROM orders GROUP BY k;
",
                Self::uri(&self.output("counts"))
            );
        }
        script
    }

    /// Writes this version's script (`work/script-<version>.sql`, as a mounted ConfigMap would
    /// hold it) and returns its path.
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn write_script(&self) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(&self.work)?;
        let path = self.work.join(format!("script-{}.sql", self.version));
        std::fs::write(&path, self.script())?;
        Ok(path)
    }

    /// The runner's arguments.
    fn args(&self) -> Vec<String> {
        let script = self.work.join(format!("script-{}.sql", self.version));
        let mut args = vec!["--script".into(), script.display().to_string()];
        args.extend(self.extra_args.iter().cloned());
        args
    }

    /// The merge patch of `spec` that moves a deployment to this job (write the script first).
    pub fn template_patch(&self) -> Value {
        json!({"template": {"spec": {
            "image": format!("example.com/bluegreen-sql:{}", self.version),
            "job": {"parallelism": self.parallelism, "args": self.args()},
        }}})
    }

    /// The resource's spec: the example job's (deletion delay 0 s, checkpoints every 60 s, so
    /// that the outgoing job's last records are committed by its stop-with-savepoint) with the
    /// runner jar, its main class and the script.
    pub fn spec(&self, runner_jar: &Path) -> FlinkBlueGreenDeploymentSpec {
        let mut spec = ExampleJob::new(&self.work).spec(runner_jar);
        spec.template.spec.image = Some(format!("example.com/bluegreen-sql:{}", self.version));
        spec.template.spec.job.entry_class = Some(ENTRY_CLASS.into());
        spec.template.spec.job.args = self.args();
        spec.template.spec.job.parallelism = Some(self.parallelism);
        spec
    }
}

/// One input record: `id,k,ts_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputRecord {
    /// Its id, 0, 1, 2, … in writing order.
    pub id: u64,
    /// `id % KEYS`.
    pub k: u64,
    /// Its event time, epoch ms.
    pub ts: i64,
}

/// Writes one CSV file of input records a second (50 records, event times within the last
/// second, in random order) into the job's input directory until stopped; every record written
/// is kept for the ledger.
pub struct InputWriter {
    records: Arc<Mutex<Vec<InputRecord>>>,
    paused: Arc<AtomicBool>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_millis(),
    )
    .expect("epoch ms fit in i64")
}

impl InputWriter {
    /// Starts writing into `dir` (created).
    ///
    /// # Errors
    /// When `dir` cannot be created.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let records = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let (dir, shared) = (dir.to_owned(), records.clone());
        let paused = Arc::new(AtomicBool::new(false));
        let pause = paused.clone();
        let task = tokio::spawn(async move {
            let mut next_id = 0u64;
            let mut file = 0u64;
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
            loop {
                if pause.load(Ordering::SeqCst) {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        _ = stopped.changed() => return Ok(()),
                    }
                }
                let now = now_ms();
                let mut batch: Vec<InputRecord> = (0..50)
                    .map(|i| {
                        let id = next_id + i;
                        seed = seed
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        let jitter = i64::try_from((seed >> 33) % 1000).expect("small");
                        InputRecord {
                            id,
                            k: id % KEYS,
                            ts: now - jitter,
                        }
                    })
                    .collect();
                next_id += 50;
                batch.sort_by_key(|r| (r.id * 7919) % 50);
                let mut text = String::new();
                for r in &batch {
                    let _ = writeln!(text, "{},{},{}", r.id, r.k, r.ts);
                }
                // Written under a hidden name, then renamed: the source never reads a half file.
                let hidden = dir.join(format!(".in-{file:06}.csv"));
                let mut f = std::fs::File::create(&hidden)?;
                f.write_all(text.as_bytes())?;
                f.sync_all()?;
                std::fs::rename(&hidden, dir.join(format!("in-{file:06}.csv")))?;
                file += 1;
                shared.lock().expect("not poisoned").extend(batch);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stopped.changed() => return Ok(()),
                }
            }
        });
        Ok(Self {
            records,
            paused,
            stop,
            task,
        })
    }

    /// Stops writing files until [`Self::resume`].
    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    /// Writes files again.
    pub fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    /// Every record written so far.
    pub fn records(&self) -> Vec<InputRecord> {
        self.records.lock().expect("not poisoned").clone()
    }

    /// Stops writing; returns every record written.
    ///
    /// # Errors
    /// When writing failed.
    pub async fn stop(self) -> anyhow::Result<Vec<InputRecord>> {
        let _ = self.stop.send(true);
        let records = self.records.clone();
        self.task.await??;
        let written = records.lock().expect("not poisoned").clone();
        Ok(written)
    }
}

/// The verdict over both outputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqlLedgerReport {
    /// Committed part files read.
    pub files: usize,
    /// Lines of `projected`, per color.
    pub projected: BTreeMap<Color, u64>,
    /// Lines of `per_window`, per color.
    pub windows: BTreeMap<Color, u64>,
    /// `projected` lines with the extra column (v2).
    pub projected_v2: u64,
    /// Extra emissions (a record or window emitted n > 1 times adds n - 1), both outputs.
    pub duplicates: u64,
    /// Records or windows never emitted though they had to be (below the horizon).
    pub losses: u64,
    /// Emitted once, by the color that does not own the event time.
    pub wrong_color: u64,
    /// Lines whose values are not what the input implies (key, event time, count, sum, k10), or
    /// that do not parse, or ids that were never written.
    pub wrong_value: u64,
    /// A few examples of every defect.
    pub examples: Vec<String>,
}

impl SqlLedgerReport {
    /// No duplicate, loss, wrong color or wrong value.
    pub fn is_exactly_once_by_owner(&self) -> bool {
        self.duplicates == 0 && self.losses == 0 && self.wrong_color == 0 && self.wrong_value == 0
    }

    fn note(&mut self, what: String) {
        if self.examples.len() < 12 {
            self.examples.push(what);
        }
    }
}

impl fmt::Display for SqlLedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SQL ledger: {} files; projected {:?} ({} with k10), per_window {:?}; duplicates {}, losses {}, wrong color {}, wrong value {}",
            self.files,
            self.projected,
            self.projected_v2,
            self.windows,
            self.duplicates,
            self.losses,
            self.wrong_color,
            self.wrong_value
        )?;
        for e in &self.examples {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// Who owns event time `t`: the incoming color of the last handover with `W < t`, else blue.
fn owner(handovers: &[(i64, Color)], t: i64) -> Color {
    handovers
        .iter()
        .rev()
        .find(|(w, _)| *w < t)
        .map_or(Color::Blue, |(_, to)| *to)
}

/// Epoch ms of a csv timestamp: `2026-11-27 19:00:02`, `"2026-11-27 19:00:02.5"` or with a
/// trailing `Z` (TIMESTAMP_LTZ), all UTC.
fn epoch_ms(text: &str) -> Option<i64> {
    let t = text.trim().trim_matches('"').trim_end_matches('Z');
    let dt: jiff::civil::DateTime = t.replace(' ', "T").parse().ok()?;
    Some(
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()?
            .timestamp()
            .as_millisecond(),
    )
}

/// The color whose part file `path` is (`part-blue-…`, `part-green-…`).
fn file_color(path: &Path) -> Option<Color> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with("part-blue-") {
        Some(Color::Blue)
    } else if name.starts_with("part-green-") {
        Some(Color::Green)
    } else {
        None
    }
}

/// The committed lines of one output directory, with the color of their file (none if the
/// directory does not exist yet).
///
/// # Errors
/// When a file cannot be read.
pub fn committed_lines(dir: &Path) -> anyhow::Result<Vec<(Color, String)>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut lines = Vec::new();
    for file in file_ledger::committed_part_files(dir)? {
        let color = file_color(&file)
            .with_context(|| format!("{}: not a part-<color>- file", file.display()))?;
        let text = std::fs::read_to_string(&file)?;
        lines.extend(text.lines().map(|l| (color, l.to_owned())));
    }
    Ok(lines)
}

/// Judges both outputs of `job` against the `input` written and the promoted `handovers`
/// (`(W, incoming color)`, in order). Every record with `ts <= horizon` must have been projected
/// and every window ending at or before `horizon - BOUND_MS - WINDOW_MS` counted.
///
/// # Errors
/// When a file cannot be read.
pub fn judge(
    job: &SqlJob,
    input: &[InputRecord],
    handovers: &[(i64, Color)],
    horizon: i64,
) -> anyhow::Result<SqlLedgerReport> {
    let mut report = SqlLedgerReport::default();
    let by_id: HashMap<u64, InputRecord> = input.iter().map(|r| (r.id, *r)).collect();
    for dir in [job.output("projected"), job.output("per_window")] {
        if dir.exists() {
            report.files += file_ledger::committed_part_files(&dir)?.len();
        }
    }
    judge_projected(job, input, &by_id, handovers, horizon, &mut report)?;
    judge_windows(job, input, handovers, horizon, &mut report)?;
    Ok(report)
}

/// `projected`: `id,k,ts_ms,ts[,k10]`, each written id once, by its owner, as written.
fn judge_projected(
    job: &SqlJob,
    input: &[InputRecord],
    by_id: &HashMap<u64, InputRecord>,
    handovers: &[(i64, Color)],
    horizon: i64,
    report: &mut SqlLedgerReport,
) -> anyhow::Result<()> {
    let mut seen: HashMap<u64, u64> = HashMap::new();
    for (color, line) in committed_lines(&job.output("projected"))? {
        *report.projected.entry(color).or_default() += 1;
        let f: Vec<&str> = line.split(',').collect();
        let parsed = (f.len() == 4 || f.len() == 5)
            .then(|| {
                Some((
                    f[0].parse::<u64>().ok()?,
                    f[1].parse::<u64>().ok()?,
                    f[2].parse::<i64>().ok()?,
                ))
            })
            .flatten();
        let Some((id, k, ts)) = parsed else {
            report.wrong_value += 1;
            report.note(format!("projected: unparsable line {line:?}"));
            continue;
        };
        let Some(r) = by_id.get(&id) else {
            report.wrong_value += 1;
            report.note(format!("projected: id {id} was never written: {line:?}"));
            continue;
        };
        let k10_ok = f.len() == 4 || f[4].parse::<u64>().ok() == Some(r.k * 10);
        if f.len() == 5 {
            report.projected_v2 += 1;
        }
        if k != r.k || ts != r.ts || epoch_ms(f[3]) != Some(r.ts) || !k10_ok {
            report.wrong_value += 1;
            report.note(format!(
                "projected: {line:?} does not match the input {r:?}"
            ));
        }
        let n = seen.entry(id).or_default();
        *n += 1;
        if *n > 1 {
            report.duplicates += 1;
            report.note(format!(
                "projected: id {id} emitted {n} times (now by {color})"
            ));
        } else if owner(handovers, r.ts) != color {
            report.wrong_color += 1;
            report.note(format!(
                "projected: id {id} (t = {}) emitted by {color}, owned by {}",
                r.ts,
                owner(handovers, r.ts)
            ));
        }
    }
    for r in input.iter().filter(|r| r.ts <= horizon) {
        if !seen.contains_key(&r.id) {
            report.losses += 1;
            report.note(format!("projected: id {} (t = {}) lost", r.id, r.ts));
        }
    }
    Ok(())
}

/// `per_window`: `k,window_start,window_end,cnt,id_sum,window_time`, each closed window once, by
/// the owner of its `window_time`, with the count and id sum of the input.
fn judge_windows(
    job: &SqlJob,
    input: &[InputRecord],
    handovers: &[(i64, Color)],
    horizon: i64,
    report: &mut SqlLedgerReport,
) -> anyhow::Result<()> {
    let mut expected: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
    for r in input {
        let e = expected
            .entry((r.k, r.ts.div_euclid(WINDOW_MS) * WINDOW_MS))
            .or_default();
        e.0 += 1;
        e.1 += r.id;
    }
    let mut windows: HashMap<(u64, i64), u64> = HashMap::new();
    for (color, line) in committed_lines(&job.output("per_window"))? {
        *report.windows.entry(color).or_default() += 1;
        let f: Vec<&str> = line.split(',').collect();
        let parsed = (f.len() == 6)
            .then(|| {
                Some((
                    f[0].parse::<u64>().ok()?,
                    epoch_ms(f[1])?,
                    epoch_ms(f[2])?,
                    f[3].parse::<u64>().ok()?,
                    f[4].parse::<u64>().ok()?,
                    epoch_ms(f[5])?,
                ))
            })
            .flatten();
        let Some((k, start, end, cnt, id_sum, time)) = parsed else {
            report.wrong_value += 1;
            report.note(format!("per_window: unparsable line {line:?}"));
            continue;
        };
        if end != start + WINDOW_MS
            || time != end - 1
            || expected.get(&(k, start)) != Some(&(cnt, id_sum))
        {
            report.wrong_value += 1;
            report.note(format!(
                "per_window: {line:?} by {color}, the input has (count, id sum) {:?}",
                expected.get(&(k, start))
            ));
        }
        let n = windows.entry((k, start)).or_default();
        *n += 1;
        if *n > 1 {
            report.duplicates += 1;
            report.note(format!(
                "per_window: window ({k}, {start}) emitted {n} times (now by {color})"
            ));
        } else if owner(handovers, time) != color {
            report.wrong_color += 1;
            report.note(format!(
                "per_window: window ({k}, {start}) (t = {time}) emitted by {color}, owned by {}",
                owner(handovers, time)
            ));
        }
    }
    for &(k, start) in expected.keys() {
        if start + WINDOW_MS <= horizon - BOUND_MS - WINDOW_MS && !windows.contains_key(&(k, start))
        {
            report.losses += 1;
            report.note(format!("per_window: window ({k}, {start}) lost"));
        }
    }
    Ok(())
}

/// Waits until the job of `name`'s `color` child runs with every task running (its sources have
/// started), through the real runner's REST proxy.
///
/// # Errors
/// When it does not within `timeout`, or the stack is not a real-Flink one.
pub async fn wait_running(
    stack: &LocalStack,
    name: &str,
    color: Color,
    timeout: Duration,
) -> anyhow::Result<()> {
    let real = stack
        .real_flink
        .as_ref()
        .context("not a real-Flink stack")?;
    let base = real.rest_url(&bluegreen_local_flink::DeploymentRef::new(
        crate::NAMESPACE,
        format!("{name}-{}", color.suffix()),
    ));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let running = async {
            let jobs: Value = reqwest::get(format!("{base}/jobs")).await?.json().await?;
            let Some(id) = jobs["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|j| j["status"] == JobStatus::Running.as_str())
                .and_then(|j| j["id"].as_str())
            else {
                return anyhow::Ok(false);
            };
            let job: Value = reqwest::get(format!("{base}/jobs/{id}"))
                .await?
                .json()
                .await?;
            let vertices = job["vertices"].as_array().cloned().unwrap_or_default();
            Ok(!vertices.is_empty() && vertices.iter().all(|v| v["status"] == "RUNNING"))
        }
        .await
        .unwrap_or(false);
        if running {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{name}-{}: no running job within {timeout:?}",
            color.suffix()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The promoted handovers of `name` (`(W, incoming color)`, in order), from its status.
///
/// # Errors
/// When the resource cannot be read or has no status.
pub async fn handovers(stack: &LocalStack, name: &str) -> anyhow::Result<Vec<(i64, Color)>> {
    let status = stack
        .fbgds()
        .get(name)
        .await?
        .status
        .context("no status yet")?;
    let mut handovers: Vec<(i64, Color)> = status
        .history
        .iter()
        .filter(|h| h.outcome == Outcome::Promoted)
        .filter_map(|h| h.toggle.map(|w| (w, h.to)))
        .collect();
    handovers.sort_unstable();
    Ok(handovers)
}

/// Commits what `name`'s active job read (a checkpoint), then judges both outputs with every
/// record written more than `settle` ago expected.
///
/// # Errors
/// When the checkpoint fails or a file cannot be read.
pub async fn report(
    stack: &LocalStack,
    name: &str,
    job: &SqlJob,
    input: &[InputRecord],
    settle: Duration,
) -> anyhow::Result<SqlLedgerReport> {
    let horizon = now_ms() - i64::try_from(settle.as_millis()).expect("small");
    stack.commit_active(name).await?;
    let handovers = handovers(stack, name).await?;
    judge(job, input, &handovers, horizon)
}

#[cfg(test)]
mod tests {
    use super::{epoch_ms, owner};
    use bluegreen_protocol::Color;

    #[test]
    fn csv_timestamps_are_read_as_utc() {
        assert_eq!(epoch_ms("1970-01-01 00:00:01"), Some(1000));
        assert_eq!(epoch_ms("\"1970-01-01 00:00:01.5Z\""), Some(1500));
        assert_eq!(epoch_ms("1970-01-01 00:00:02.999Z"), Some(2999));
        assert_eq!(epoch_ms("nope"), None);
    }

    #[test]
    fn the_owner_is_the_incoming_color_of_the_last_handover_below() {
        let h = [(100, Color::Green), (200, Color::Blue)];
        assert_eq!(owner(&h, 100), Color::Blue);
        assert_eq!(owner(&h, 101), Color::Green);
        assert_eq!(owner(&h, 201), Color::Blue);
    }
}
