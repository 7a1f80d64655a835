//! The file ledger (`bluegreen_local_flink::file_ledger`) over part files written by the test: a clean
//! output is clean, and each planted defect is reported exactly. Then the output of a real run of
//! the example job on Flink (`SelfTest`, built by `mvn -B package -DskipTests`), if it can be had.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bluegreen_local_flink::Error;
use bluegreen_local_flink::file_ledger::{
    Expectation, FileDefect, FileLedgerReport, JobVersion, LineError, OutputLine, RecordId,
    judge_lines, read_dir,
};
use bluegreen_protocol::Color;

const SPLITS: u32 = 4;
const OFFSETS: u64 = 100;
const KEYS: u64 = 16;
const W: i64 = 1_500;

/// The line the example job writes for `(split, offset)` with event time `1000 + offset * 10`
/// (so W = 1500 falls at offset 50), as emitted by the owner of its event time.
fn line(split: u32, offset: u64) -> (Color, String) {
    let t = 1_000 + i64::try_from(offset).unwrap() * 10;
    let color = if t <= W { Color::Blue } else { Color::Green };
    let version = if color == Color::Blue { "v1" } else { "v2" };
    let count = offset / KEYS + 1;
    let value = if version == "v2" { 2 * count } else { count };
    let key = u64::from(split) * KEYS + offset % KEYS;
    (
        color,
        format!("{split},{offset},{t},{key},{count},{color},{version},{value}"),
    )
}

/// A clean output: per color, one part file for the even splits and one for the odd splits
/// (`even/` and `odd/` subdirectories, as a bucket assigner might make).
fn clean() -> Vec<(String, Vec<String>)> {
    let mut files = Vec::new();
    for (dir, parity) in [("even", 0), ("odd", 1)] {
        for color in [Color::Blue, Color::Green] {
            let lines = (0..SPLITS)
                .filter(|s| s % 2 == parity)
                .flat_map(|s| (0..OFFSETS).map(move |o| line(s, o)))
                .filter(|(c, _)| *c == color)
                .map(|(_, l)| l)
                .collect();
            files.push((format!("{dir}/part-{color}-{dir}-0.csv"), lines));
        }
    }
    files
}

fn write(dir: &Path, files: &[(String, Vec<String>)]) {
    for (name, lines) in files {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body: String = lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect();
        fs::write(path, body).unwrap();
    }
}

fn expectation() -> Expectation {
    Expectation::new(Color::Blue)
        .handover(W, Color::Green)
        .horizons(SPLITS, OFFSETS)
        .keys_per_split(KEYS)
}

/// The counts of a report: (duplicates, losses, wrong color, wrong count, damaged files).
fn counts(r: &FileLedgerReport) -> (u64, u64, u64, u64, usize) {
    (
        r.duplicates,
        r.losses,
        r.wrong_color,
        r.wrong_count,
        r.damaged.len(),
    )
}

/// Writes `files` into a fresh temp dir, applies `plant` to the dir, reads it.
fn judge(files: &[(String, Vec<String>)], plant: impl FnOnce(&Path)) -> FileLedgerReport {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    plant(dir.path());
    let report = read_dir(dir.path(), &expectation()).unwrap();
    println!("{report}");
    report
}

fn file(files: &mut [(String, Vec<String>)], name: &str) -> usize {
    files.iter().position(|(n, _)| n == name).unwrap()
}

/// Every line of a clean output in one list, both colors interleaved, as a `read_committed`
/// consumer of the Kafka shape's output topic prints them.
fn topic_lines() -> Vec<String> {
    (0..OFFSETS)
        .flat_map(|o| (0..SPLITS).map(move |s| line(s, o).1))
        .collect()
}

fn judge_topic(lines: &[String]) -> FileLedgerReport {
    let report = judge_lines(
        Path::new("topic out (read_committed)"),
        lines.iter().map(String::as_str),
        &expectation(),
    );
    println!("{report}");
    report
}

#[test]
fn lines_from_a_topic_are_judged_as_part_files_are() {
    let clean = topic_lines();
    let report = judge_topic(&clean);
    assert_eq!(counts(&report), (0, 0, 0, 0, 0));
    assert!(report.is_exactly_once_by_owner());
    assert_eq!(report.total_lines(), u64::from(SPLITS) * OFFSETS);
    let summary = report.to_string();
    assert!(
        summary.starts_with("ledger of topic out (read_committed): "),
        "the summary names the topic, not part files: {summary}"
    );

    // What a second writer with the same transactional ids could leave: records committed twice,
    // one lost, one written by the color that does not own it, and a line that is not one.
    let mut bad = clean.clone();
    bad.extend(clean[10..13].iter().cloned());
    let lost = bad.iter().position(|l| l.starts_with("2,7,")).unwrap();
    bad.remove(lost);
    let late = bad.iter().position(|l| l.starts_with("1,80,")).unwrap();
    bad[late] = bad[late].replace("GREEN,v2", "BLUE,v2");
    bad.push("not a line".into());
    let report = judge_topic(&bad);
    assert_eq!(counts(&report), (3, 1, 1, 0, 1), "{report}");
    assert!(!report.is_exactly_once());
    assert_eq!(
        report.loss_examples,
        [RecordId {
            split: 2,
            offset: 7
        }]
    );
}

#[test]
fn a_clean_output_has_no_defect() {
    let r = judge(&clean(), |_| {});
    assert_eq!(counts(&r), (0, 0, 0, 0, 0));
    assert_eq!(r.files, 4);
    assert_eq!(r.skipped_files, 0);
    assert_eq!(r.total_lines(), u64::from(SPLITS) * OFFSETS);
    assert_eq!(r.lines[&Color::Blue], u64::from(SPLITS) * 51);
    assert!(r.is_exactly_once_by_owner());
    assert!(r.to_string().contains("exactly once: yes; by owner: yes"));
}

#[test]
fn a_duplicate_line_in_another_file_of_its_color_is_one_duplicate() {
    let mut files = clean();
    let from = file(&mut files, "even/part-BLUE-even-0.csv");
    let dup = files[from].1[7].clone();
    let to = file(&mut files, "odd/part-BLUE-odd-0.csv");
    files[to].1.push(dup);
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (1, 0, 0, 0, 0));
    assert_eq!(
        r.duplicate_examples,
        vec![(
            RecordId {
                split: 0,
                offset: 7
            },
            2
        )]
    );
    assert!(!r.is_exactly_once());
    assert!(r.to_string().contains("duplicates: 1 (e.g. (0, 7) x2)"));
}

#[test]
fn a_missing_line_is_one_loss() {
    let mut files = clean();
    let i = file(&mut files, "odd/part-GREEN-odd-0.csv");
    let removed = files[i].1.remove(10);
    assert!(removed.starts_with("1,61,"), "{removed}");
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (0, 1, 0, 0, 0));
    assert_eq!(
        r.loss_examples,
        vec![RecordId {
            split: 1,
            offset: 61
        }]
    );
    assert!(!r.is_exactly_once());
}

#[test]
fn the_highest_offsets_missing_are_losses_only_below_the_horizon() {
    let mut files = clean();
    let i = file(&mut files, "even/part-GREEN-even-0.csv");
    // The last two offsets of split 2 (98, 99) are the last lines of this file.
    let n = files[i].1.len();
    assert!(files[i].1[n - 1].starts_with("2,99,"));
    files[i].1.truncate(n - 2);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &files);
    let with = read_dir(dir.path(), &expectation()).unwrap();
    assert_eq!(counts(&with), (0, 2, 0, 0, 0));
    // Without a horizon the ledger cannot know that offsets above the highest seen exist.
    let without = Expectation::new(Color::Blue)
        .handover(W, Color::Green)
        .keys_per_split(KEYS);
    let without = read_dir(dir.path(), &without).unwrap();
    assert_eq!(counts(&without), (0, 0, 0, 0, 0));
}

#[test]
fn a_record_emitted_once_by_the_other_color_is_one_wrong_color() {
    let mut files = clean();
    let blue = file(&mut files, "even/part-BLUE-even-0.csv");
    let moved = files[blue].1.remove(3);
    let recolored = moved.replace(",BLUE,", ",GREEN,");
    let green = file(&mut files, "even/part-GREEN-even-0.csv");
    files[green].1.push(recolored);
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (0, 0, 1, 0, 0));
    let w = &r.wrong_color_examples[0];
    assert_eq!(
        (w.id, w.emitted_by, w.owner),
        (
            RecordId {
                split: 0,
                offset: 3
            },
            Color::Green,
            Color::Blue
        )
    );
    assert!(r.is_exactly_once());
    assert!(!r.is_exactly_once_by_owner());
}

#[test]
fn a_wrong_running_count_is_one_wrong_count() {
    let mut files = clean();
    let i = file(&mut files, "odd/part-BLUE-odd-0.csv");
    // Line "1,20,1200,20,2,BLUE,v1,2": count 2 -> 3 (value kept consistent with v1).
    let l = &mut files[i].1[20];
    assert_eq!(l, "1,20,1200,20,2,BLUE,v1,2");
    *l = "1,20,1200,20,3,BLUE,v1,3".to_owned();
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (0, 0, 0, 1, 0));
    assert_eq!(r.wrong_count_examples[0].expected_count, Some(2));
    assert!(!r.is_exactly_once());
}

#[test]
fn a_value_that_does_not_match_the_version_is_a_wrong_count() {
    let mut files = clean();
    let i = file(&mut files, "odd/part-GREEN-odd-0.csv");
    // v2 writes value = 2 * count; a v1 value in a v2 line is wrong.
    let l = &mut files[i].1[0];
    assert_eq!(l, "1,51,1510,19,4,GREEN,v2,8");
    *l = "1,51,1510,19,4,GREEN,v2,4".to_owned();
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (0, 0, 0, 1, 0));
}

#[test]
fn nul_bytes_damage_the_file_and_nothing_else() {
    let r = judge(&clean(), |dir| {
        let path = dir.join("even/part-BLUE-even-0.csv");
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0; 16]);
        bytes.push(b'\n');
        fs::write(&path, bytes).unwrap();
    });
    assert_eq!(counts(&r), (0, 0, 0, 0, 1));
    assert_eq!(r.damaged[0].defects, vec![FileDefect::NulBytes]);
    assert!(r.damaged[0].path.ends_with("even/part-BLUE-even-0.csv"));
    assert!(!r.is_exactly_once());
}

#[test]
fn a_cut_last_line_damages_the_file_and_nothing_else() {
    let r = judge(&clean(), |dir| {
        let path = dir.join("odd/part-GREEN-odd-0.csv");
        let mut body = fs::read_to_string(&path).unwrap();
        body.push_str("3,99,1990,5");
        fs::write(&path, body).unwrap();
    });
    assert_eq!(counts(&r), (0, 0, 0, 0, 1));
    assert_eq!(r.damaged[0].defects, vec![FileDefect::CutLine]);
    assert!(r.to_string().contains("cut last line"));
}

#[test]
fn a_line_that_does_not_parse_damages_the_file() {
    let r = judge(&clean(), |dir| {
        let path = dir.join("odd/part-GREEN-odd-0.csv");
        let mut body = fs::read_to_string(&path).unwrap();
        body.push_str("3,99,1990,5\n");
        fs::write(&path, body).unwrap();
    });
    assert_eq!(counts(&r), (0, 0, 0, 0, 1));
    assert_eq!(
        r.damaged[0].defects,
        vec![FileDefect::BadLine {
            line: 99,
            error: LineError::FieldCount(4)
        }]
    );
}

#[test]
fn a_file_with_lines_of_both_colors_is_damaged() {
    let mut files = clean();
    let green = file(&mut files, "odd/part-GREEN-odd-0.csv");
    let moved = files[green].1.remove(0);
    let blue = file(&mut files, "odd/part-BLUE-odd-0.csv");
    files[blue].1.push(moved);
    let r = judge(&files, |_| {});
    assert_eq!(counts(&r), (0, 0, 0, 0, 1));
    assert_eq!(r.damaged[0].defects, vec![FileDefect::MixedColors]);
    assert!(r.damaged[0].path.ends_with("odd/part-BLUE-odd-0.csv"));
}

#[test]
fn in_progress_and_pending_files_are_not_read() {
    let files = clean();
    let r = judge(&files, |dir| {
        // FileSink's in-progress and pending files: hidden, with a duplicate and garbage.
        let dup = format!("{}\n", files[0].1[0]);
        fs::write(
            dir.join("even/.part-BLUE-even-1.csv.inprogress.0b1c"),
            format!("{dup}{dup}\0cut"),
        )
        .unwrap();
        fs::write(dir.join("odd/.part-GREEN-odd-1.csv.inprogress.77aa"), &dup).unwrap();
    });
    assert_eq!(counts(&r), (0, 0, 0, 0, 0));
    assert_eq!((r.files, r.skipped_files), (4, 2));
    // The oracle reads the same content once it is committed (not hidden).
    let r = judge(&files, |dir| {
        fs::write(
            dir.join("even/part-BLUE-even-1.csv"),
            format!("{}\n", files[0].1[0]),
        )
        .unwrap();
    });
    assert_eq!(counts(&r), (1, 0, 0, 0, 0));
}

#[test]
fn lines_parse_into_their_fields_and_errors_name_the_field() {
    let l: OutputLine = "3,17,1700000000123,49,2,GREEN,v2,4".parse().unwrap();
    assert_eq!(
        l.id,
        RecordId {
            split: 3,
            offset: 17
        }
    );
    assert_eq!(
        (l.event_time, l.key, l.count, l.color, l.version, l.value),
        (1_700_000_000_123, 49, 2, Color::Green, JobVersion::V2, 4)
    );
    let err = "3,17,x,49,2,GREEN,v2,4".parse::<OutputLine>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "field eventTime must be an integer (epoch ms), got \"x\""
    );
    let err = "3,17,1,49,2,blue,v1,2".parse::<OutputLine>().unwrap_err();
    assert!(err.to_string().contains("BLUE or GREEN"), "{err}");
    let err = "3,17,1,49,2,BLUE,v3,2".parse::<OutputLine>().unwrap_err();
    assert!(err.to_string().contains("v1 or v2"), "{err}");
}

#[test]
fn ownership_follows_the_last_handover_below_t() {
    let e = Expectation::new(Color::Blue)
        .handover(100, Color::Green)
        .handover(200, Color::Blue);
    assert_eq!(e.owner(i64::MIN), Color::Blue);
    assert_eq!(e.owner(100), Color::Blue);
    assert_eq!(e.owner(101), Color::Green);
    assert_eq!(e.owner(200), Color::Green);
    assert_eq!(e.owner(201), Color::Blue);
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = read_dir(&missing, &expectation()).unwrap_err();
    assert!(matches!(err, Error::NotADirectory(_)));
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

/// The workspace root (this crate is `local-flink/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// The output of `SelfTest` (examples/jobs/src/test/java): `BLUEGREEN_EXAMPLE_OUTPUT` if set,
/// else a fresh run when the jar, the test classes, the Flink jars and `java` are there.
fn self_test_output() -> Option<(PathBuf, Option<tempfile::TempDir>)> {
    if let Ok(dir) = std::env::var("BLUEGREEN_EXAMPLE_OUTPUT") {
        return Some((PathBuf::from(dir), None));
    }
    let root = root();
    let jar = root.join("target/examples/bluegreen-example-job.jar");
    let tests = root.join("target/examples/test-classes/io/bluegreen/examples/SelfTest.class");
    let lib = root.join("target/flink/1.20.3/lib");
    for (what, path) in [
        ("the example job jar", &jar),
        ("SelfTest", &tests),
        ("the Flink jars", &lib),
    ] {
        if !path.exists() {
            eprintln!(
                "SKIPPED: {what} not found at {} (run `mvn -B -q package -DskipTests` and `scripts/flink-jars.sh`)",
                path.display()
            );
            return None;
        }
    }
    let out = tempfile::tempdir().unwrap();
    // Flink's temporary files (24 MB per MiniCluster) go with the test, not into the shared /tmp.
    let java_tmp = tempfile::tempdir().unwrap();
    let classpath = format!(
        "{}:{}:{}/*",
        jar.display(),
        root.join("target/examples/test-classes").display(),
        lib.display()
    );
    // Output captured (Flink logs to stderr), shown by the test harness on failure.
    let run = match Command::new("java")
        .args([
            "-Xmx1g",
            &format!("-Djava.io.tmpdir={}", java_tmp.path().display()),
            "-cp",
            &classpath,
            "io.bluegreen.examples.SelfTest",
        ])
        .arg(out.path())
        .output()
    {
        Ok(run) => run,
        Err(e) => {
            eprintln!("SKIPPED: cannot run java ({e}): install a JDK 17");
            return None;
        }
    };
    print!("{}", String::from_utf8_lossy(&run.stdout));
    eprint!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "SelfTest failed: {}", run.status);
    Some((out.path().to_owned(), Some(out)))
}

#[test]
fn a_real_blue_green_run_of_the_example_job_is_exactly_once_by_owner() {
    let Some((out, _keep)) = self_test_output() else {
        return;
    };
    let run = fs::read_to_string(out.join("run.txt")).unwrap();
    let param = |key: &str| -> &str {
        run.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{key} missing in run.txt"))
    };
    let w: i64 = param("w").parse().unwrap();
    let splits: u32 = param("splits").parse().unwrap();
    let records: u64 = param("records-per-split").parse().unwrap();
    let keys: u64 = param("keys-per-split").parse().unwrap();
    // A real upgrade: green (v2) started from a savepoint of blue (v1) while blue ran on.
    let savepoint_w: i64 = param("savepoint-w").parse().unwrap();
    let savepoint_records: u64 = param("savepoint-records-per-split").parse().unwrap();
    let upgrade = Expectation::new(Color::Blue)
        .handover(savepoint_w, Color::Green)
        .horizons(splits, savepoint_records)
        .keys_per_split(keys);
    let r = read_dir(&out.join("savepoint"), &upgrade).unwrap();
    println!("savepoint: {r}");
    assert!(r.is_exactly_once_by_owner(), "savepoint: {r}");
    assert_eq!(r.total_lines(), u64::from(splits) * savepoint_records);
    assert!(
        r.lines[&Color::Blue] > 0 && r.lines[&Color::Green] > 0,
        "savepoint: {r}"
    );
    let expect = Expectation::new(Color::Blue)
        .handover(w, Color::Green)
        .horizons(splits, records)
        .keys_per_split(keys);
    for (dir, expect) in [
        ("keyed", expect.clone()),
        ("chained", expect.clone().without_count_check()),
        ("two-sinks/a", expect.clone()),
        ("two-sinks/b", expect.clone()),
    ] {
        let r = read_dir(&out.join(dir), &expect).unwrap();
        println!("{dir}: {r}");
        assert!(r.is_exactly_once_by_owner(), "{dir}: {r}");
        assert_eq!(r.total_lines(), u64::from(splits) * records, "{dir}");
        assert!(
            r.lines[&Color::Blue] > 0 && r.lines[&Color::Green] > 0,
            "{dir}: {r}"
        );
        // The oracle can fail on this very output: the wrong W makes wrong colors.
        let shifted = Expectation::new(Color::Blue)
            .handover(w - 1_000, Color::Green)
            .horizons(splits, records)
            .keys_per_split(keys);
        let shifted = if dir == "chained" {
            shifted.without_count_check()
        } else {
            shifted
        };
        let r = read_dir(&out.join(dir), &shifted).unwrap();
        assert!(r.wrong_color > 0, "{dir}: {r}");
    }
}
