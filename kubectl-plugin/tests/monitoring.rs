//! Every metric the Grafana dashboard and the alert rules under deploy/monitoring/ query is
//! one the code exports: the controller's (controller/src/metrics.rs), the Rust gate's
//! (gate/src/metrics.rs) or the JVM gate's (`METRIC_*` constants, exported by Flink's
//! Prometheus reporter as `flink_taskmanager_job_task_operator_<name>`).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const FLINK_OPERATOR_SCOPE: &str = "flink_taskmanager_job_task_operator_";

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The string literals of `text` that start with `prefix`.
fn literals(text: &str, prefix: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// Metric names the code exports.
fn exported() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = literals(&read("controller/src/metrics.rs"), "bluegreen_")
        .into_iter()
        .chain(literals(&read("gate/src/metrics.rs"), "bluegreen_"))
        .collect();
    let jvm = Path::new(ROOT).join("jvm/src/main/java/io/bluegreen/gate");
    for entry in std::fs::read_dir(&jvm).expect("jvm gate sources") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "java") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("java source");
        for line in text.lines().filter(|l| l.contains("String METRIC_")) {
            for name in literals(line, "bluegreenGate") {
                names.insert(format!("{FLINK_OPERATOR_SCOPE}{name}"));
            }
        }
    }
    names
}

/// Metric-like identifiers in a PromQL expression.
fn metrics_in(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| t.starts_with("bluegreen_") || t.starts_with("flink_"))
        .map(str::to_owned)
        .collect()
}

fn known(name: &str, exported: &BTreeSet<String>) -> bool {
    exported.contains(name)
        || ["_bucket", "_sum", "_count"]
            .iter()
            .any(|s| name.strip_suffix(s).is_some_and(|b| exported.contains(b)))
}

#[derive(Deserialize)]
struct Rules {
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
struct Rule {
    alert: String,
    expr: String,
}

#[derive(Deserialize)]
struct Dashboard {
    panels: Vec<Panel>,
    templating: Templating,
}

#[derive(Deserialize)]
struct Panel {
    title: String,
    targets: Vec<Target>,
}

#[derive(Deserialize)]
struct Target {
    expr: String,
}

#[derive(Deserialize)]
struct Templating {
    list: Vec<Variable>,
}

#[derive(Deserialize)]
struct Variable {
    name: String,
    #[serde(default)]
    query: serde_json::Value,
}

#[test]
fn every_queried_metric_is_exported() {
    let exported = exported();
    assert!(
        exported.contains("bluegreen_controller_stage"),
        "{exported:?}"
    );
    assert!(
        exported.iter().any(|n| n.starts_with(FLINK_OPERATOR_SCOPE)),
        "no JVM gate metric constants found: {exported:?}"
    );
    let mut exprs: Vec<(String, String)> = Vec::new();
    let rules: Rules =
        serde_yaml::from_str(&read("deploy/monitoring/alerts.yaml")).expect("alerts");
    for rule in rules.groups.into_iter().flat_map(|g| g.rules) {
        exprs.push((format!("alert {}", rule.alert), rule.expr));
    }
    let dashboard: Dashboard =
        serde_json::from_str(&read("deploy/monitoring/grafana-dashboard.json")).expect("dashboard");
    for panel in dashboard.panels {
        for t in panel.targets {
            exprs.push((format!("panel {:?}", panel.title), t.expr));
        }
    }
    for v in dashboard.templating.list {
        if let Some(q) = v.query.as_str() {
            exprs.push((format!("variable {}", v.name), q.to_owned()));
        }
    }
    let mut unknown = Vec::new();
    let mut used = 0;
    for (place, expr) in &exprs {
        for name in metrics_in(expr) {
            used += 1;
            if !known(&name, &exported) {
                unknown.push(format!("{place}: {name}"));
            }
        }
    }
    assert!(used > 10, "too few metrics found in the expressions");
    assert!(
        unknown.is_empty(),
        "metrics queried but not exported (rename them in deploy/monitoring/ or export them): {unknown:#?}"
    );
}
