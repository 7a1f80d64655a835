//! Plain-text views: the `get` tree, the `list` and `history` tables.

use std::fmt::Write as _;

use bluegreen_controller::resource::{FlinkBlueGreenDeploymentStatus, TransitionRecord};
use bluegreen_protocol::{Color, Toggle};
use serde_json::Value;

use crate::model::{Child, Coordination, Deployment, Snapshot, raw_stage_epoch};
use crate::verdict::{Verdict, judge};

fn or_dash(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

fn child_line(child: &Child, status: Option<&FlinkBlueGreenDeploymentStatus>) -> String {
    let role = status.and_then(|s| {
        let t = s.transition.as_ref();
        if t.is_some_and(|t| t.to == child.color) {
            Some("incoming")
        } else if t.is_some_and(|t| t.from == Some(child.color)) {
            Some("outgoing")
        } else if s.active_color == Some(child.color) {
            Some("active")
        } else {
            None
        }
    });
    let mut line = format!("FlinkDeployment {}", child.name);
    if let Some(role) = role {
        let _ = write!(line, " ({role})");
    }
    // A child in another cluster (`spec.cluster`) is not read from this one.
    let elsewhere = status.and_then(|s| s.clusters.of(child.color));
    if let Some(cluster) = elsewhere {
        let _ = write!(
            line,
            "  cluster: Secret {}, namespace {}",
            cluster.kubeconfig_secret.name,
            cluster.namespace.as_deref().unwrap_or("(same)")
        );
    }
    match &child.doc {
        None if elsewhere.is_some() => line.push_str("  (not read: another cluster)"),
        None => line.push_str("  not found"),
        Some(Err(e)) => {
            let _ = write!(line, "  unreadable: {e}");
        }
        Some(Ok(doc)) => {
            let job = doc.status.job_status.as_ref();
            let _ = write!(
                line,
                "  job {}  lifecycle {}  parallelism {}",
                or_dash(job.and_then(|j| j.state.as_deref())),
                or_dash(doc.status.lifecycle_state.as_deref()),
                or_dash(doc.spec.job.parallelism),
            );
            if doc.spec.job.state.as_deref() == Some("suspended") {
                line.push_str("  (suspended)");
            }
            if let Some(error) = &doc.status.error {
                let _ = write!(line, "  error: {error}");
            }
        }
    }
    line
}

fn coordination_line(c: &Coordination) -> String {
    match &c.state {
        Ok(s) => {
            let w = match s.toggle {
                Toggle::NotSet => "W not set".to_owned(),
                Toggle::Proposed(w) => format!("W {w} (proposed)"),
                Toggle::Set(w) => format!("W {w} (set)"),
            };
            let mut line = format!(
                "ConfigMap {}  stage {}  epoch {}  {w}  active-deployment-type {}",
                c.name, s.stage, s.epoch, s.active
            );
            if let Some(f) = s.floor {
                let _ = write!(line, "  floor {f}");
            }
            line
        }
        Err((data, reason)) => {
            let (stage, epoch) = raw_stage_epoch(data);
            format!(
                "ConfigMap {}  stage {stage}  epoch {epoch}  INVALID: {reason}",
                c.name
            )
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `get` tree.
pub fn tree(s: &Snapshot) -> String {
    let d = &s.deployment;
    let status = d.status.as_ref().ok();
    let mut out = String::new();
    let _ = writeln!(out, "Name:       {}", d.name);
    let _ = writeln!(out, "Namespace:  {}", d.namespace);
    if let Err(e) = &d.status {
        let _ = writeln!(out, "Status:     unreadable by this plugin version: {e}");
    }
    if let Some(st) = status {
        let _ = writeln!(out, "Active:     {}", or_dash(st.active_color));
        let _ = writeln!(
            out,
            "Stage:      {}  (epoch {})",
            or_dash(st.stage),
            st.epoch
        );
        if let Some(floor) = st.floor {
            let _ = writeln!(
                out,
                "Floor:      {floor}  (records at or below it are dropped)"
            );
        }
        match &st.transition {
            Some(t) => {
                let _ = writeln!(
                    out,
                    "Handover:   {} -> {}  phase {:?}  W {}  started {}",
                    or_dash(t.from),
                    t.to,
                    t.phase,
                    or_dash(t.toggle),
                    t.started_at.0
                );
                if let Some(r) = &t.abort_reason {
                    let _ = writeln!(out, "            aborting: {r}");
                }
            }
            None => {
                let _ = writeln!(out, "Handover:   none");
            }
        }
    }
    for (k, v) in &d.unknown_status {
        let _ = writeln!(out, "{:<12}{}", format!("{k}:"), scalar(v));
    }
    let judged = judge(d);
    let verdict = match &judged {
        Verdict::Healthy => "Healthy".to_owned(),
        Verdict::Waiting(m)
        | Verdict::Degraded(m)
        | Verdict::Aborted(m)
        | Verdict::Suspended(m) => {
            format!("{} ({m})", judged.name())
        }
    };
    let _ = writeln!(out, "Verdict:    {verdict}");
    let _ = writeln!(out);
    let _ = writeln!(out, "FlinkBlueGreenDeployment {}", d.name);
    let mut lines: Vec<String> = s.children.iter().map(|c| child_line(c, status)).collect();
    lines.push(s.coordination.as_ref().map_or_else(
        || format!("ConfigMap {}-bluegreen  not found", d.name),
        coordination_line,
    ));
    for (i, line) in lines.iter().enumerate() {
        let branch = if i + 1 == lines.len() {
            "└──"
        } else {
            "├──"
        };
        let _ = writeln!(out, "{branch} {line}");
    }
    if let Some(st) = status {
        if !st.conditions.is_empty() {
            let _ = writeln!(out, "\nConditions:");
            let mut rows = vec![vec![
                "  TYPE".into(),
                "STATUS".into(),
                "REASON".into(),
                "MESSAGE".into(),
            ]];
            rows.extend(st.conditions.iter().map(|c| {
                vec![
                    format!("  {}", c.type_),
                    c.status.clone(),
                    c.reason.clone(),
                    c.message.clone(),
                ]
            }));
            out.push_str(&table(&rows));
        }
        if !st.history.is_empty() {
            let _ = writeln!(out, "\nLast handovers:");
            out.push_str(&history(&st.history[..st.history.len().min(3)]));
        }
    }
    out
}

/// The `history` table, newest first.
pub fn history(records: &[TransitionRecord]) -> String {
    let mut rows = vec![
        [
            "EPOCH", "FROM", "TO", "OUTCOME", "W", "DURATION", "FINISHED", "REASON",
        ]
        .map(String::from)
        .to_vec(),
    ];
    rows.extend(records.iter().map(|r| {
        vec![
            r.epoch.to_string(),
            or_dash(r.from),
            r.to.to_string(),
            r.outcome.to_string(),
            or_dash(r.toggle),
            format!("{:.0}s", r.duration_seconds),
            r.finished_at.0.to_string(),
            or_dash(r.reason.as_deref()),
        ]
    }));
    table(&rows)
}

/// The `list` table.
pub fn list(items: &[Deployment], all_namespaces: bool) -> String {
    let mut header = vec!["NAME", "ACTIVE", "STAGE", "EPOCH", "HANDOVER", "VERDICT"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for d in items {
        let st = d.status.as_ref().ok();
        let verdict = judge(d).name();
        let mut row = vec![
            d.name.clone(),
            or_dash(st.and_then(|s| s.active_color)),
            or_dash(st.and_then(|s| s.stage)),
            or_dash(st.map(|s| s.epoch)),
            or_dash(st.and_then(|s| s.transition.as_ref()).map(|t| {
                format!(
                    "{}->{} {:?}",
                    t.from.map_or("-", Color::as_str),
                    t.to,
                    t.phase
                )
            })),
            verdict.to_owned(),
        ];
        if all_namespaces {
            row.insert(0, d.namespace.clone());
        }
        rows.push(row);
    }
    table(&rows)
}

#[cfg(test)]
mod tests {
    use bluegreen_controller::resource::{
        FlinkBlueGreenDeploymentStatus, KubeconfigSecret, TargetCluster,
    };
    use bluegreen_protocol::Color;

    use super::child_line;
    use crate::model::Child;

    #[test]
    fn a_child_in_another_cluster_shows_that_cluster_and_is_not_called_missing() {
        let mut status = FlinkBlueGreenDeploymentStatus {
            active_color: Some(Color::Green),
            ..FlinkBlueGreenDeploymentStatus::default()
        };
        status.clusters.set(
            Color::Green,
            Some(Box::new(TargetCluster {
                kubeconfig_secret: KubeconfigSecret {
                    name: "east".into(),
                    key: "kubeconfig".into(),
                },
                namespace: Some("jobs".into()),
                flink_rest_url: "https://{name}.east".into(),
                home_api_server: None,
            })),
        );
        let child = |color: Color| Child {
            color,
            name: format!("orders-{}", color.suffix()),
            doc: None,
            raw: None,
        };
        assert_eq!(
            child_line(&child(Color::Green), Some(&status)),
            "FlinkDeployment orders-green (active)  cluster: Secret east, namespace jobs  (not read: another cluster)"
        );
        assert_eq!(
            child_line(&child(Color::Blue), Some(&status)),
            "FlinkDeployment orders-blue  not found"
        );
    }
}
