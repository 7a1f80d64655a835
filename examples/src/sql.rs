//! The SQL job on **real Flink**: an unchanged SQL script run by `bluegreen-sql-runner`
//! (`sql-runner/`, docs/sql.md) over CSV input files written while it runs, its
//! `FlinkBlueGreenDeployment`, and the ledger that judges its five filesystem outputs: every
//! input record projected exactly once, every event-time window counted exactly once, every
//! interval-join pair joined exactly once, each by the color that owns its event time (the
//! projection's and the join's `ts`, the window's `window_time`), with the values the input implies.
//!
//! The script (v1): `orders` (`id,k,ts_ms` CSV files, watermark `ts - 30 s`, no idle timeout) →
//! `projected` (`id, k, ts_ms, ts`); → `per_window`, `per_hop`, `per_cumulate` (per key:
//! `k, window_start, window_end, cnt, id_sum, window_time` over [`WINDOWS`]: a 2 s TUMBLE, a 3 s HOP
//! sliding by 1 s, a CUMULATE by 1 s up to 3 s); → `joined` (`id, prev_id, prev_ts_ms, ts`: each
//! order with its key's previous order, `orders` interval-joined with itself on
//! `a.id = b.id + KEYS` within [`JOIN_BOUND_MS`], the rowtime kept `a.ts`). v2 projects one more
//! column, `k10 = k * 10`, into a sink table with that column: a changed query. `refused` adds an
//! unwindowed `GROUP BY` the runner must refuse.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec;
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
/// The interval join's bound, ms: `a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '1' SECOND`.
pub const JOIN_BOUND_MS: i64 = 1000;
/// Every output table of the script (`refused` adds `counts`).
pub const OUTPUTS: [&str; 5] = [
    "projected",
    "per_window",
    "per_hop",
    "per_cumulate",
    "joined",
];

/// A window table-valued function of the script, by what decides a record's windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windowing {
    /// `TUMBLE(…, size)`: one window `[n * size, (n + 1) * size)`.
    Tumble {
        /// ms
        size: i64,
    },
    /// `HOP(…, slide, size)`: every window `[n * slide, n * slide + size)` that holds the record.
    Hop {
        /// ms
        slide: i64,
        /// ms, a multiple of `slide`
        size: i64,
    },
    /// `CUMULATE(…, step, max)`: `[n * max, n * max + m * step)` for each m = 1..=max/step whose
    /// window holds the record.
    Cumulate {
        /// ms
        step: i64,
        /// ms, a multiple of `step`
        max: i64,
    },
}

impl Windowing {
    /// The windows `[start, end)` that hold event time `ts`, as the SQL standard's window TVFs define them.
    pub fn windows_of(self, ts: i64) -> Vec<(i64, i64)> {
        match self {
            Self::Tumble { size } => {
                let start = ts.div_euclid(size) * size;
                vec![(start, start + size)]
            }
            Self::Hop { slide, size } => {
                let last = ts.div_euclid(slide) * slide;
                (0..size / slide)
                    .map(|i| last - i * slide)
                    .filter(|start| ts < start + size)
                    .map(|start| (start, start + size))
                    .collect()
            }
            Self::Cumulate { step, max } => {
                let start = ts.div_euclid(max) * max;
                (1..=max / step)
                    .map(|m| start + m * step)
                    .filter(|end| ts < *end)
                    .map(|end| (start, end))
                    .collect()
            }
        }
    }

    /// The window TVF call over `orders`' rowtime.
    fn sql(self) -> String {
        let s = |ms: i64| format!("INTERVAL '{}' SECOND", ms / 1000);
        match self {
            Self::Tumble { size } => format!("TUMBLE(TABLE orders, DESCRIPTOR(ts), {})", s(size)),
            Self::Hop { slide, size } => {
                format!(
                    "HOP(TABLE orders, DESCRIPTOR(ts), {}, {})",
                    s(slide),
                    s(size)
                )
            }
            Self::Cumulate { step, max } => format!(
                "CUMULATE(TABLE orders, DESCRIPTOR(ts), {}, {})",
                s(step),
                s(max)
            ),
        }
    }
}

/// The window aggregations of the script: sink table, windows. Each counts and sums the ids per key
/// and window.
pub const WINDOWS: [(&str, Windowing); 3] = [
    ("per_window", Windowing::Tumble { size: WINDOW_MS }),
    (
        "per_hop",
        Windowing::Hop {
            slide: 1000,
            size: 3000,
        },
    ),
    (
        "per_cumulate",
        Windowing::Cumulate {
            step: 1000,
            max: 3000,
        },
    ),
];
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
    /// More runner arguments (e.g. `--state-source static-running` in the incoming job: gates that
    /// never learn W, the misconfiguration that shows the ledger failing).
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
CREATE TABLE projected ({projected_sink})
  WITH ('connector' = 'filesystem', 'path' = '{projected}', 'format' = 'csv');
INSERT INTO projected SELECT {projected_select} FROM orders;
",
            version = self.version,
            input = Self::uri(&self.input()),
            projected = Self::uri(&self.output("projected")),
        );
        for (table, windowing) in WINDOWS {
            let _ = write!(
                script,
                "CREATE TABLE {table} (
  k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, id_sum BIGINT, window_time TIMESTAMP_LTZ(3)
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv');
INSERT INTO {table}
  SELECT k, window_start, window_end, COUNT(*) AS cnt, SUM(id) AS id_sum, window_time
  FROM TABLE({tvf})
  GROUP BY k, window_start, window_end, window_time;
",
                path = Self::uri(&self.output(table)),
                tvf = windowing.sql(),
            );
        }
        let _ = write!(
            script,
            "CREATE TABLE joined (id BIGINT, prev_id BIGINT, prev_ts_ms BIGINT, ts TIMESTAMP_LTZ(3))
  WITH ('connector' = 'filesystem', 'path' = '{joined}', 'format' = 'csv');
INSERT INTO joined
  SELECT a.id, b.id AS prev_id, b.ts_ms AS prev_ts_ms, a.ts
  FROM orders a, orders b
  WHERE a.id = b.id + {KEYS} AND a.ts BETWEEN b.ts - INTERVAL '{bound}' SECOND AND b.ts + INTERVAL '{bound}' SECOND;
",
            joined = Self::uri(&self.output("joined")),
            bound = JOIN_BOUND_MS / 1000,
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
    /// Lines of `per_hop`, per color.
    pub hop: BTreeMap<Color, u64>,
    /// Lines of `per_cumulate`, per color.
    pub cumulate: BTreeMap<Color, u64>,
    /// Lines of `joined`, per color.
    pub joined: BTreeMap<Color, u64>,
    /// `projected` lines with the extra column (v2).
    pub projected_v2: u64,
    /// Extra emissions (a record or window emitted n > 1 times adds n - 1), both outputs.
    pub duplicates: u64,
    /// Records, windows or joined pairs never emitted though they had to be (below the horizon).
    pub losses: u64,
    /// Emitted once, by the color that does not own the event time.
    pub wrong_color: u64,
    /// Lines whose values are not what the input implies (key, event time, count, sum, k10, the
    /// joined pair), or that do not parse, or ids that were never written.
    pub wrong_value: u64,
    /// A few examples of every defect.
    pub examples: Vec<String>,
}

impl SqlLedgerReport {
    /// No duplicate, loss, wrong color or wrong value.
    pub fn is_exactly_once_by_owner(&self) -> bool {
        self.duplicates == 0 && self.losses == 0 && self.wrong_color == 0 && self.wrong_value == 0
    }

    /// Counts the `n`-th emission of `what` (event time `t`) by `color`: a duplicate when it is
    /// not the first, else a wrong color when another color owns `t`.
    fn emitted(
        &mut self,
        n: u64,
        t: i64,
        color: Color,
        handovers: &[(i64, Color)],
        what: impl FnOnce() -> String,
    ) {
        let owner = owner(handovers, t);
        if n > 1 {
            self.duplicates += 1;
            self.note(format!("{} emitted {n} times (now by {color})", what()));
        } else if owner != color {
            self.wrong_color += 1;
            self.note(format!(
                "{} (t = {t}) emitted by {color}, owned by {owner}",
                what()
            ));
        }
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
            "SQL ledger: {} files; projected {:?} ({} with k10), per_window {:?}, per_hop {:?}, per_cumulate {:?}, joined {:?}; duplicates {}, losses {}, wrong color {}, wrong value {}",
            self.files,
            self.projected,
            self.projected_v2,
            self.windows,
            self.hop,
            self.cumulate,
            self.joined,
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

/// Judges every output of `job` against the `input` written and the promoted `handovers`
/// (`(W, incoming color)`, in order). Every record with `ts <= horizon` must have been projected,
/// every pair of such records joined, and every window ending at or before
/// `horizon - BOUND_MS - WINDOW_MS` counted.
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
    for table in OUTPUTS {
        let dir = job.output(table);
        if dir.exists() {
            report.files += file_ledger::committed_part_files(&dir)?.len();
        }
    }
    judge_projected(job, input, &by_id, handovers, horizon, &mut report)?;
    for (table, windowing) in WINDOWS {
        judge_windows(
            job,
            table,
            windowing,
            input,
            handovers,
            horizon,
            &mut report,
        )?;
    }
    judge_joined(job, input, &by_id, handovers, horizon, &mut report)?;
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
        report.emitted(*n, r.ts, color, handovers, || format!("projected: id {id}"));
    }
    for r in input.iter().filter(|r| r.ts <= horizon) {
        if !seen.contains_key(&r.id) {
            report.losses += 1;
            report.note(format!("projected: id {} (t = {}) lost", r.id, r.ts));
        }
    }
    Ok(())
}

/// A window aggregation's table (`per_window`, `per_hop`, `per_cumulate`):
/// `k,window_start,window_end,cnt,id_sum,window_time`, each closed window of `windowing` once, by
/// the owner of its `window_time`, with the count and id sum of the input.
fn judge_windows(
    job: &SqlJob,
    table: &str,
    windowing: Windowing,
    input: &[InputRecord],
    handovers: &[(i64, Color)],
    horizon: i64,
    report: &mut SqlLedgerReport,
) -> anyhow::Result<()> {
    let mut expected: BTreeMap<(u64, i64, i64), (u64, u64)> = BTreeMap::new();
    for r in input {
        for (start, end) in windowing.windows_of(r.ts) {
            let e = expected.entry((r.k, start, end)).or_default();
            e.0 += 1;
            e.1 += r.id;
        }
    }
    let mut windows: HashMap<(u64, i64, i64), u64> = HashMap::new();
    for (color, line) in committed_lines(&job.output(table))? {
        let lines = match windowing {
            Windowing::Tumble { .. } => &mut report.windows,
            Windowing::Hop { .. } => &mut report.hop,
            Windowing::Cumulate { .. } => &mut report.cumulate,
        };
        *lines.entry(color).or_default() += 1;
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
            report.note(format!("{table}: unparsable line {line:?}"));
            continue;
        };
        if time != end - 1 || expected.get(&(k, start, end)) != Some(&(cnt, id_sum)) {
            report.wrong_value += 1;
            report.note(format!(
                "{table}: {line:?} by {color}, the input has (count, id sum) {:?}",
                expected.get(&(k, start, end))
            ));
        }
        let n = windows.entry((k, start, end)).or_default();
        *n += 1;
        report.emitted(*n, time, color, handovers, || {
            format!("{table}: window ({k}, {start}, {end})")
        });
    }
    for &(k, start, end) in expected.keys() {
        if end <= horizon - BOUND_MS - WINDOW_MS && !windows.contains_key(&(k, start, end)) {
            report.losses += 1;
            report.note(format!("{table}: window ({k}, {start}, {end}) lost"));
        }
    }
    Ok(())
}

/// `joined`: `id,prev_id,prev_ts_ms,ts`, each order `a` with `b`, its key's previous order
/// (`a.id = b.id + KEYS`), when their event times are at most `JOIN_BOUND_MS` apart; once, by the
/// owner of `a.ts`. Every pair of records with `ts <= horizon` must have been joined.
fn judge_joined(
    job: &SqlJob,
    input: &[InputRecord],
    by_id: &HashMap<u64, InputRecord>,
    handovers: &[(i64, Color)],
    horizon: i64,
    report: &mut SqlLedgerReport,
) -> anyhow::Result<()> {
    let pair = |a: &InputRecord| {
        let b = by_id.get(&a.id.checked_sub(KEYS)?)?;
        ((a.ts - b.ts).abs() <= JOIN_BOUND_MS).then_some(*b)
    };
    let mut seen: HashMap<u64, u64> = HashMap::new();
    for (color, line) in committed_lines(&job.output("joined"))? {
        *report.joined.entry(color).or_default() += 1;
        let f: Vec<&str> = line.split(',').collect();
        let parsed = (f.len() == 4)
            .then(|| {
                Some((
                    f[0].parse::<u64>().ok()?,
                    f[1].parse::<u64>().ok()?,
                    f[2].parse::<i64>().ok()?,
                    epoch_ms(f[3])?,
                ))
            })
            .flatten();
        let Some((id, prev_id, prev_ts, ts)) = parsed else {
            report.wrong_value += 1;
            report.note(format!("joined: unparsable line {line:?}"));
            continue;
        };
        let Some((a, b)) = by_id.get(&id).and_then(|a| Some((*a, pair(a)?))) else {
            report.wrong_value += 1;
            report.note(format!("joined: {line:?} is no pair of the input"));
            continue;
        };
        if (prev_id, prev_ts, ts) != (b.id, b.ts, a.ts) {
            report.wrong_value += 1;
            report.note(format!(
                "joined: {line:?} does not match the input {a:?}, {b:?}"
            ));
        }
        let n = seen.entry(id).or_default();
        *n += 1;
        report.emitted(*n, a.ts, color, handovers, || format!("joined: id {id}"));
    }
    for a in input.iter().filter(|a| a.ts <= horizon) {
        if let Some(b) = pair(a)
            && b.ts <= horizon
            && !seen.contains_key(&a.id)
        {
            report.losses += 1;
            report.note(format!(
                "joined: id {} with {} (t = {}) lost",
                a.id, b.id, a.ts
            ));
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

/// Commits what `name`'s active job read (a checkpoint), then judges every output against what
/// `input` has written by then, with every record written more than `settle` ago expected. (The
/// input is read after the checkpoint: the committed output holds records written while it ran.)
///
/// # Errors
/// When the checkpoint fails or a file cannot be read.
pub async fn report(
    stack: &LocalStack,
    name: &str,
    job: &SqlJob,
    input: &InputWriter,
    settle: Duration,
) -> anyhow::Result<SqlLedgerReport> {
    let horizon = now_ms() - i64::try_from(settle.as_millis()).expect("small");
    stack.commit_active(name).await?;
    let handovers = stack.promoted_handovers(name).await?;
    judge(job, &input.records(), &handovers, horizon)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;

    use super::{
        InputRecord, KEYS, SqlJob, SqlLedgerReport, Windowing, epoch_ms, judge_joined,
        judge_windows, owner,
    };
    use bluegreen_protocol::Color;

    #[test]
    fn the_windows_of_an_event_time_are_those_of_the_sql_window_functions() {
        let tumble = Windowing::Tumble { size: 2000 };
        assert_eq!(tumble.windows_of(2500), [(2000, 4000)]);
        assert_eq!(tumble.windows_of(-1), [(-2000, 0)]);
        let hop = Windowing::Hop {
            slide: 1000,
            size: 3000,
        };
        assert_eq!(
            hop.windows_of(2500),
            [(2000, 5000), (1000, 4000), (0, 3000)]
        );
        assert_eq!(
            hop.windows_of(3000),
            [(3000, 6000), (2000, 5000), (1000, 4000)]
        );
        let cumulate = Windowing::Cumulate {
            step: 1000,
            max: 3000,
        };
        assert_eq!(cumulate.windows_of(4500), [(3000, 5000), (3000, 6000)]);
        assert_eq!(
            cumulate.windows_of(3000),
            [(3000, 4000), (3000, 5000), (3000, 6000)]
        );
    }

    fn ts(ms: i64) -> String {
        jiff::Timestamp::from_millisecond(ms)
            .expect("in range")
            .strftime("%Y-%m-%d %H:%M:%S%.3fZ")
            .to_string()
    }

    /// Writes `lines` as `color`'s committed part file `n` of `table`.
    fn write(job: &SqlJob, table: &str, color: Color, n: usize, lines: &[String]) {
        let dir = job.output(table);
        std::fs::create_dir_all(&dir).expect("dir");
        let name = format!("part-{}-{n}", color.suffix());
        let text = lines.iter().fold(String::new(), |mut text, l| {
            let _ = writeln!(text, "{l}");
            text
        });
        std::fs::write(dir.join(name), text).expect("write");
    }

    /// Ids 0..18, key id % 8, 100 ms apart but for 16 and 17 (5 s later, too far from 8 and 9 to join).
    fn input() -> Vec<InputRecord> {
        (0..18)
            .map(|id| InputRecord {
                id,
                k: id % KEYS,
                ts: if id < 16 {
                    100 * i64::try_from(id).expect("small")
                } else {
                    5000
                },
            })
            .collect()
    }

    /// One handover to green at W = 1000.
    const HANDOVERS: [(i64, Color); 1] = [(1000, Color::Green)];

    fn judge_join(job: &SqlJob) -> SqlLedgerReport {
        let input = input();
        let by_id = input.iter().map(|r| (r.id, *r)).collect();
        let mut report = SqlLedgerReport::default();
        judge_joined(job, &input, &by_id, &HANDOVERS, 5000, &mut report).expect("judged");
        report
    }

    #[test]
    fn the_join_ledger_finds_every_pair_once_by_its_owner_and_catches_each_defect() {
        let job = SqlJob::new(
            &std::env::temp_dir().join(format!("bluegreen-sql-join-ledger-{}", std::process::id())),
        );
        let _ = std::fs::remove_dir_all(&job.work);
        // Written by hand from the input: 8..=15 joined with 0..=7 (800 ms apart), 16 and 17 with
        // nothing; a.ts <= 1000 is blue's.
        let line = |a: i64| format!("{a},{},{},{}", a - 8, 100 * (a - 8), ts(100 * a));
        let blue: Vec<String> = (8..=10).map(line).collect();
        let green: Vec<String> = (11..=15).map(line).collect();
        write(&job, "joined", Color::Blue, 0, &blue);
        write(&job, "joined", Color::Green, 0, &green);
        let report = judge_join(&job);
        assert!(report.is_exactly_once_by_owner(), "{report}");
        assert_eq!(
            report.joined,
            BTreeMap::from([(Color::Blue, 3), (Color::Green, 5)])
        );
        // A pair twice, across colors.
        write(&job, "joined", Color::Blue, 1, &[line(11)]);
        let report = judge_join(&job);
        assert_eq!((report.duplicates, report.wrong_color), (1, 1), "{report}");
        // A pair lost, a pair that is not one (16 with 8: 4.2 s apart), a wrong prev_ts_ms.
        write(&job, "joined", Color::Blue, 1, &[]);
        write(&job, "joined", Color::Green, 0, &green[1..]);
        write(
            &job,
            "joined",
            Color::Green,
            1,
            &[
                format!("16,8,800,{}", ts(5000)),
                format!("12,4,401,{}", ts(1200)),
            ],
        );
        let report = judge_join(&job);
        assert_eq!(
            (report.losses, report.duplicates, report.wrong_value),
            (1, 1, 2),
            "{report}"
        );
        let _ = std::fs::remove_dir_all(&job.work);
    }

    #[test]
    fn the_window_ledger_finds_every_hop_and_cumulate_window_once_and_catches_each_defect() {
        let job = SqlJob::new(&std::env::temp_dir().join(format!(
            "bluegreen-sql-window-ledger-{}",
            std::process::id()
        )));
        let _ = std::fs::remove_dir_all(&job.work);
        let input = input();
        for (table, windowing) in [
            (
                "per_hop",
                Windowing::Hop {
                    slide: 1000,
                    size: 3000,
                },
            ),
            (
                "per_cumulate",
                Windowing::Cumulate {
                    step: 1000,
                    max: 3000,
                },
            ),
        ] {
            // The right output, by color: (count, id sum) per key and window.
            let mut windows: BTreeMap<(u64, i64, i64), (u64, u64)> = BTreeMap::new();
            for r in &input {
                for (start, end) in windowing.windows_of(r.ts) {
                    let e = windows.entry((r.k, start, end)).or_default();
                    e.0 += 1;
                    e.1 += r.id;
                }
            }
            let mut lines: BTreeMap<Color, Vec<String>> = BTreeMap::new();
            for (&(k, start, end), &(cnt, sum)) in &windows {
                let mut line = String::new();
                let _ = write!(
                    line,
                    "{k},{},{},{cnt},{sum},{}",
                    ts(start),
                    ts(end),
                    ts(end - 1)
                );
                lines
                    .entry(owner(&HANDOVERS, end - 1))
                    .or_default()
                    .push(line);
            }
            let judged = |job: &SqlJob| {
                let mut report = SqlLedgerReport::default();
                // Every window ending by 4 s must be there (the horizon minus BOUND_MS and WINDOW_MS).
                let horizon = 4000 + super::BOUND_MS + super::WINDOW_MS;
                judge_windows(
                    job,
                    table,
                    windowing,
                    &input,
                    &HANDOVERS,
                    horizon,
                    &mut report,
                )
                .expect("judged");
                report
            };
            for (color, l) in &lines {
                write(&job, table, *color, 0, l);
            }
            let report = judged(&job);
            assert!(report.is_exactly_once_by_owner(), "{table}: {report}");
            // A window that straddles W = 1000 (one of [0, 3000) by green) lost, one counted twice
            // by the wrong color, one with a wrong count.
            let green = &lines[&Color::Green];
            let straddling = green
                .iter()
                .position(|l| l.contains(&format!(",{},", ts(0))))
                .expect("a green window starts at 0");
            let mut changed = green.clone();
            let lost = changed.remove(straddling);
            let mut wrong: Vec<String> = changed
                .pop()
                .expect("more")
                .split(',')
                .map(String::from)
                .collect();
            wrong[3] = "999".into();
            write(&job, table, Color::Green, 0, &changed);
            write(&job, table, Color::Green, 1, &[wrong.join(",")]);
            // Blue's files are read first: the copy by blue is the wrong color, green's the duplicate.
            write(&job, table, Color::Blue, 1, &[changed[0].clone()]);
            let report = judged(&job);
            assert_eq!(
                (
                    report.losses,
                    report.duplicates,
                    report.wrong_color,
                    report.wrong_value
                ),
                (1, 1, 1, 1),
                "{table}, {lost} lost: {report}"
            );
        }
        let _ = std::fs::remove_dir_all(&job.work);
    }

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
