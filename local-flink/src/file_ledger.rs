//! The file ledger: judges the committed output of the example job (`examples/jobs`), read back
//! from the part files of its exactly-once `FileSink`.
//!
//! Every line is `split,offset,eventTime,key,count,color,version,value` (see [`OutputLine`]).
//! [`read_dir`] reads every committed part file under a directory, recursively (files named
//! `part-*`; in-progress and pending files are hidden with a leading dot and skipped), and counts
//! per record id `(split, offset)`: duplicates, losses, wrong colors, wrong running counts and
//! damaged files ([`FileLedgerReport`]). [`judge_lines`] judges lines read from elsewhere (the
//! Kafka shape's output topic, read with `read_committed`) the same way.
//!
//! The job's topic is deterministic: the key of `(s, o)` is `s * K + o % K` and its running count
//! after `(s, o)` is `o / K + 1`, with `K` keys per split ([`Expectation::keys_per_split`]). The
//! ledger takes each record's event time from its line. The job writes no late records (its
//! watermark bound covers its jitter), so the ledger has no class for them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use bluegreen_protocol::Color;

use crate::Error;

/// The example job's default number of keys per split (`--keys-per-split`).
pub const DEFAULT_KEYS_PER_SPLIT: u64 = 16;

/// How many examples of each defect a report keeps.
const EXAMPLES: usize = 5;

/// Why a line does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not 8 comma-separated fields.
    #[error(
        "expected 8 comma-separated fields (split,offset,eventTime,key,count,color,version,value), got {0}"
    )]
    FieldCount(usize),
    /// A field has a bad value.
    #[error("field {field} must be {expected}, got {value:?}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it was.
        value: String,
    },
}

/// A source record: split and offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId {
    /// The split.
    pub split: u32,
    /// The offset within the split.
    pub offset: u64,
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.split, self.offset)
    }
}

/// The job version that wrote a line (`--version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobVersion {
    /// `v1`: value = count.
    V1,
    /// `v2`: value = 2 * count.
    V2,
}

impl JobVersion {
    /// The value this version writes for `count`.
    pub fn value_of(self, count: u64) -> u64 {
        match self {
            Self::V1 => count,
            Self::V2 => 2 * count,
        }
    }
}

/// One parsed output line: `split,offset,eventTime,key,count,color,version,value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    /// The record.
    pub id: RecordId,
    /// Its event time, epoch ms.
    pub event_time: i64,
    /// Its key.
    pub key: u64,
    /// The running count of its key after it (0 in the `chained` topology, which does not count).
    pub count: u64,
    /// The color of the job that emitted it.
    pub color: Color,
    /// The version of the job that emitted it.
    pub version: JobVersion,
    /// `count` (v1) or `2 * count` (v2).
    pub value: u64,
}

fn field<T: FromStr>(
    raw: &str,
    field: &'static str,
    expected: &'static str,
) -> Result<T, LineError> {
    raw.parse().map_err(|_| LineError::Field {
        field,
        expected,
        value: raw.to_owned(),
    })
}

impl FromStr for OutputLine {
    type Err = LineError;

    fn from_str(line: &str) -> Result<Self, LineError> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 8 {
            return Err(LineError::FieldCount(f.len()));
        }
        let version = match f[6] {
            "v1" => JobVersion::V1,
            "v2" => JobVersion::V2,
            other => {
                return Err(LineError::Field {
                    field: "version",
                    expected: "v1 or v2",
                    value: other.to_owned(),
                });
            }
        };
        Ok(Self {
            id: RecordId {
                split: field(f[0], "split", "an integer 0..2^32")?,
                offset: field(f[1], "offset", "a non-negative integer")?,
            },
            event_time: field(f[2], "eventTime", "an integer (epoch ms)")?,
            key: field(f[3], "key", "a non-negative integer")?,
            count: field(f[4], "count", "a non-negative integer")?,
            color: field(f[5], "color", "BLUE or GREEN")?,
            version,
            value: field(f[7], "value", "a non-negative integer")?,
        })
    }
}

/// A handover at W: from then on the incoming color `to` owns `t > W`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// The toggle value W (epoch ms).
    pub w: i64,
    /// The incoming color.
    pub to: Color,
}

/// What the output should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// The color that owns every event time before the first handover.
    pub initial: Color,
    /// The handovers, in the order they happened.
    pub handovers: Vec<Handover>,
    /// Per split, the number of offsets that must be present (`0..n`) even if no higher offset
    /// was seen. Without an entry, a split's offsets are expected up to the highest one seen.
    pub horizons: BTreeMap<u32, u64>,
    /// The job's `--keys-per-split`.
    pub keys_per_split: u64,
    /// Whether to compare the running count with `offset / keys_per_split + 1` (off for the
    /// `chained` topology, which writes 0).
    pub check_counts: bool,
}

impl Expectation {
    /// Everything owned by `initial`, no horizon, [`DEFAULT_KEYS_PER_SPLIT`], counts checked.
    pub fn new(initial: Color) -> Self {
        Self {
            initial,
            handovers: Vec::new(),
            horizons: BTreeMap::new(),
            keys_per_split: DEFAULT_KEYS_PER_SPLIT,
            check_counts: true,
        }
    }

    /// Adds a handover at `w` to `to` (call in order).
    #[must_use]
    pub fn handover(mut self, w: i64, to: Color) -> Self {
        self.handovers.push(Handover { w, to });
        self
    }

    /// Expects offsets `0..offsets` of `split`.
    #[must_use]
    pub fn horizon(mut self, split: u32, offsets: u64) -> Self {
        self.horizons.insert(split, offsets);
        self
    }

    /// Expects offsets `0..offsets` of every split `0..splits` (a bounded run).
    #[must_use]
    pub fn horizons(mut self, splits: u32, offsets: u64) -> Self {
        for s in 0..splits {
            self.horizons.insert(s, offsets);
        }
        self
    }

    /// Sets the job's `--keys-per-split` (must be at least 1).
    ///
    /// # Panics
    /// If `k` is 0.
    #[must_use]
    pub fn keys_per_split(mut self, k: u64) -> Self {
        assert!(k > 0, "keys per split must be at least 1");
        self.keys_per_split = k;
        self
    }

    /// Does not compare running counts (the `chained` topology).
    #[must_use]
    pub fn without_count_check(mut self) -> Self {
        self.check_counts = false;
        self
    }

    /// The color that owns event time `t`: the incoming color of the last handover with `W < t`,
    /// otherwise the initial color.
    pub fn owner(&self, t: i64) -> Color {
        self.handovers
            .iter()
            .rev()
            .find(|h| h.w < t)
            .map_or(self.initial, |h| h.to)
    }

    /// The key of record `id`.
    pub fn expected_key(&self, id: RecordId) -> u64 {
        u64::from(id.split) * self.keys_per_split + id.offset % self.keys_per_split
    }

    /// The running count of the key of record `id` after it.
    pub fn expected_count(&self, id: RecordId) -> u64 {
        id.offset / self.keys_per_split + 1
    }
}

/// What is wrong with a damaged file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileDefect {
    /// The file contains NUL bytes (lines with them are not counted).
    NulBytes,
    /// The file does not end with a newline; its last, cut line is not counted.
    CutLine,
    /// A line (1-based) does not parse; it is not counted.
    BadLine {
        /// The line number.
        line: usize,
        /// Why it does not parse.
        error: LineError,
    },
    /// The file holds lines of both colors.
    MixedColors,
}

impl fmt::Display for FileDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NulBytes => f.write_str("NUL bytes"),
            Self::CutLine => f.write_str("cut last line (no trailing newline)"),
            Self::BadLine { line, error } => write!(f, "line {line}: {error}"),
            Self::MixedColors => f.write_str("lines of both colors"),
        }
    }
}

/// A committed part file with at least one defect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedFile {
    /// The file.
    pub path: PathBuf,
    /// Its defects (a bad line is listed once per line).
    pub defects: Vec<FileDefect>,
}

/// A record emitted, once, by the color that does not own its event time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongColor {
    /// The record.
    pub id: RecordId,
    /// Its event time.
    pub event_time: i64,
    /// The color that emitted it.
    pub emitted_by: Color,
    /// The color that owns its event time.
    pub owner: Color,
}

/// A line whose key, running count or value is not what the topic and its version imply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongCount {
    /// The line as parsed.
    pub line: OutputLine,
    /// The expected key.
    pub expected_key: u64,
    /// The expected running count (`None`: counts not checked).
    pub expected_count: Option<u64>,
}

/// The verdict over one output directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileLedgerReport {
    /// The one stream judged instead of part files ([`judge_lines`]: a topic, say), as named there.
    pub stream: Option<String>,
    /// Committed part files read.
    pub files: usize,
    /// Files skipped: hidden (in-progress or pending, `.part-…`) or not named `part-*`.
    pub skipped_files: usize,
    /// Lines counted (parsed), per color.
    pub lines: BTreeMap<Color, u64>,
    /// Extra emissions: a record emitted n > 1 times adds n - 1.
    pub duplicates: u64,
    /// Records never emitted: below the highest offset seen in their split, or below its horizon.
    pub losses: u64,
    /// Records emitted exactly once, by the color that does not own their event time.
    pub wrong_color: u64,
    /// Lines with a wrong key, running count or value.
    pub wrong_count: u64,
    /// Files with defects.
    pub damaged: Vec<DamagedFile>,
    /// Some duplicated records, with their number of emissions.
    pub duplicate_examples: Vec<(RecordId, u64)>,
    /// Some lost records.
    pub loss_examples: Vec<RecordId>,
    /// Some wrong-color records.
    pub wrong_color_examples: Vec<WrongColor>,
    /// Some wrong-count lines.
    pub wrong_count_examples: Vec<WrongCount>,
}

impl FileLedgerReport {
    /// Every record once, with the right state, in undamaged files (colors not judged).
    pub fn is_exactly_once(&self) -> bool {
        self.duplicates == 0 && self.losses == 0 && self.wrong_count == 0 && self.damaged.is_empty()
    }

    /// [`is_exactly_once`](Self::is_exactly_once), and every record emitted by its owner.
    pub fn is_exactly_once_by_owner(&self) -> bool {
        self.is_exactly_once() && self.wrong_color == 0
    }

    /// Lines counted, all colors.
    pub fn total_lines(&self) -> u64 {
        self.lines.values().sum()
    }
}

fn list<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for FileLedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_color = list(self.lines.iter().map(|(c, n)| format!("{c} {n}")));
        match &self.stream {
            Some(stream) => writeln!(
                f,
                "ledger of {stream}: {} lines ({per_color})",
                self.total_lines()
            )?,
            None => writeln!(
                f,
                "file ledger: {} part files ({} skipped), {} lines ({per_color})",
                self.files,
                self.skipped_files,
                self.total_lines()
            )?,
        }
        write!(f, "  duplicates: {}", self.duplicates)?;
        if !self.duplicate_examples.is_empty() {
            let ex = self
                .duplicate_examples
                .iter()
                .map(|(id, n)| format!("{id} x{n}"));
            write!(f, " (e.g. {})", list(ex))?;
        }
        write!(f, "\n  losses: {}", self.losses)?;
        if !self.loss_examples.is_empty() {
            write!(f, " (e.g. {})", list(&self.loss_examples))?;
        }
        write!(f, "\n  wrong color: {}", self.wrong_color)?;
        if !self.wrong_color_examples.is_empty() {
            let ex = self.wrong_color_examples.iter().map(|w| {
                format!(
                    "{} t={} by {} owned by {}",
                    w.id, w.event_time, w.emitted_by, w.owner
                )
            });
            write!(f, " (e.g. {})", list(ex))?;
        }
        write!(f, "\n  wrong count: {}", self.wrong_count)?;
        if !self.wrong_count_examples.is_empty() {
            let ex = self.wrong_count_examples.iter().map(|w| {
                let expected = w
                    .expected_count
                    .map_or_else(|| "unchecked".to_owned(), |c| c.to_string());
                format!(
                    "{} key {} (expected {}) count {} (expected {expected}) value {} ({:?})",
                    w.line.id,
                    w.line.key,
                    w.expected_key,
                    w.line.count,
                    w.line.value,
                    w.line.version
                )
            });
            write!(f, " (e.g. {})", list(ex))?;
        }
        write!(f, "\n  damaged files: {}", self.damaged.len())?;
        for d in self.damaged.iter().take(EXAMPLES) {
            write!(f, "\n    {}: {}", d.path.display(), list(&d.defects))?;
        }
        let yes = |b: bool| if b { "yes" } else { "NO" };
        write!(
            f,
            "\n  exactly once: {}; by owner: {}",
            yes(self.is_exactly_once()),
            yes(self.is_exactly_once_by_owner())
        )
    }
}

/// Every committed part file under `dir`, recursively, sorted; counts the skipped ones.
/// Every committed part file under `dir`, recursively, in name order: files named `part-*` (the
/// in-progress and pending ones are hidden with a leading dot).
///
/// # Errors
/// When a directory cannot be read.
pub fn committed_part_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut skipped = 0;
    part_files(dir, &mut files, &mut skipped)?;
    Ok(files)
}

fn part_files(dir: &Path, files: &mut Vec<PathBuf>, skipped: &mut usize) -> Result<(), Error> {
    let io = |source| Error::LedgerIo {
        path: dir.to_owned(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            part_files(&path, files, skipped)?;
        } else if kind.is_file() && name.starts_with("part-") {
            files.push(path);
        } else {
            *skipped += 1;
        }
    }
    Ok(())
}

/// Where a record was seen.
struct Seen {
    emissions: u64,
    color: Color,
    event_time: i64,
}

/// Reads the committed part files under `dir` (recursively) and judges them against `expect`.
///
/// # Errors
/// [`Error::NotADirectory`] if `dir` is not a directory, [`Error::LedgerIo`] if a
/// directory cannot be listed or a file cannot be read. Defects in the files are not errors:
/// they are counted in the report.
pub fn read_dir(dir: &Path, expect: &Expectation) -> Result<FileLedgerReport, Error> {
    if !dir.is_dir() {
        return Err(Error::NotADirectory(dir.to_owned()));
    }
    let mut files = Vec::new();
    let mut report = FileLedgerReport::default();
    part_files(dir, &mut files, &mut report.skipped_files)?;
    report.files = files.len();
    let mut seen: HashMap<RecordId, Seen> = HashMap::new();
    for path in files {
        let bytes = std::fs::read(&path).map_err(|source| Error::LedgerIo {
            path: path.clone(),
            source,
        })?;
        let mut defects = Vec::new();
        if bytes.contains(&0) {
            defects.push(FileDefect::NulBytes);
        }
        let mut body = bytes.as_slice();
        if !body.is_empty() && !body.ends_with(b"\n") {
            defects.push(FileDefect::CutLine);
            let end = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            body = &body[..end];
        }
        let mut colors = [false; 2];
        // `body` is empty or ends with a newline: its lines are what precedes each newline.
        let lines = body
            .strip_suffix(b"\n")
            .map(|b| b.split(|&c| c == b'\n'))
            .into_iter()
            .flatten();
        for (i, raw) in lines.enumerate() {
            if raw.contains(&0) {
                continue;
            }
            let parsed = std::str::from_utf8(raw)
                .map_err(|_| LineError::Field {
                    field: "line",
                    expected: "UTF-8",
                    value: String::from_utf8_lossy(raw).into_owned(),
                })
                .and_then(str::parse::<OutputLine>);
            let line = match parsed {
                Ok(line) => line,
                Err(error) => {
                    defects.push(FileDefect::BadLine { line: i + 1, error });
                    continue;
                }
            };
            colors[usize::from(line.color == Color::Green)] = true;
            *report.lines.entry(line.color).or_default() += 1;
            judge_state(&line, expect, &mut report);
            let s = seen.entry(line.id).or_insert(Seen {
                emissions: 0,
                color: line.color,
                event_time: line.event_time,
            });
            s.emissions += 1;
        }
        if colors[0] && colors[1] {
            defects.push(FileDefect::MixedColors);
        }
        if !defects.is_empty() {
            report.damaged.push(DamagedFile { path, defects });
        }
    }
    judge_ids(&seen, expect, &mut report);
    Ok(report)
}

/// Judges output lines read from somewhere other than part files (a Kafka topic read by a
/// `read_committed` consumer, say) against `expect`, exactly as [`read_dir`] judges the lines of
/// its files. `source` names where they were read (the report's [`stream`](FileLedgerReport::stream)); a line that does not
/// parse is a [`FileDefect::BadLine`] of it. Lines of both colors are expected there, so
/// [`FileDefect::MixedColors`] is never reported.
pub fn judge_lines<'a>(
    source: &Path,
    lines: impl IntoIterator<Item = &'a str>,
    expect: &Expectation,
) -> FileLedgerReport {
    let mut report = FileLedgerReport {
        stream: Some(source.display().to_string()),
        ..FileLedgerReport::default()
    };
    let mut seen: HashMap<RecordId, Seen> = HashMap::new();
    let mut defects = Vec::new();
    for (i, raw) in lines.into_iter().enumerate() {
        let line = match raw.parse::<OutputLine>() {
            Ok(line) => line,
            Err(error) => {
                defects.push(FileDefect::BadLine { line: i + 1, error });
                continue;
            }
        };
        *report.lines.entry(line.color).or_default() += 1;
        judge_state(&line, expect, &mut report);
        seen.entry(line.id)
            .or_insert(Seen {
                emissions: 0,
                color: line.color,
                event_time: line.event_time,
            })
            .emissions += 1;
    }
    if !defects.is_empty() {
        report.damaged.push(DamagedFile {
            path: source.to_owned(),
            defects,
        });
    }
    judge_ids(&seen, expect, &mut report);
    report
}

/// Counts a line with a wrong key, running count or value.
fn judge_state(line: &OutputLine, expect: &Expectation, report: &mut FileLedgerReport) {
    let expected_key = expect.expected_key(line.id);
    let expected_count = expect.check_counts.then(|| expect.expected_count(line.id));
    let count_ok = expected_count.is_none_or(|c| c == line.count);
    if line.key != expected_key || !count_ok || line.value != line.version.value_of(line.count) {
        report.wrong_count += 1;
        if report.wrong_count_examples.len() < EXAMPLES {
            report.wrong_count_examples.push(WrongCount {
                line: line.clone(),
                expected_key,
                expected_count,
            });
        }
    }
}

/// Counts duplicates, losses and wrong colors over every record seen.
fn judge_ids(seen: &HashMap<RecordId, Seen>, expect: &Expectation, report: &mut FileLedgerReport) {
    let mut ids: Vec<(&RecordId, &Seen)> = seen.iter().collect();
    ids.sort_by_key(|(id, _)| **id);
    let mut upper: BTreeMap<u32, u64> = expect.horizons.clone();
    for (id, s) in &ids {
        let u = upper.entry(id.split).or_default();
        *u = (*u).max(id.offset + 1);
        if s.emissions > 1 {
            report.duplicates += s.emissions - 1;
            if report.duplicate_examples.len() < EXAMPLES {
                report.duplicate_examples.push((**id, s.emissions));
            }
        } else {
            let owner = expect.owner(s.event_time);
            if s.color != owner {
                report.wrong_color += 1;
                if report.wrong_color_examples.len() < EXAMPLES {
                    report.wrong_color_examples.push(WrongColor {
                        id: **id,
                        event_time: s.event_time,
                        emitted_by: s.color,
                        owner,
                    });
                }
            }
        }
    }
    for (&split, &n) in &upper {
        for offset in 0..n {
            let id = RecordId { split, offset };
            if !seen.contains_key(&id) {
                report.losses += 1;
                if report.loss_examples.len() < EXAMPLES {
                    report.loss_examples.push(id);
                }
            }
        }
    }
}
