//! GET and LIST: selectors, pagination, and the response shapes (full objects,
//! `PartialObjectMetadata`, `Table`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::api_error::ApiError;
use super::meta::ObjExt;
use super::resources::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};
use super::store::{Inner, ObjKey};

/// What the client asked to receive, from its `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Full,
    /// `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`
    Metadata,
    /// `as=Table;g=meta.k8s.io;v=v1` (kubectl get)
    Table,
}

impl Shape {
    pub fn from_accept(accept: &str) -> Self {
        // The first acceptable alternative wins; we serve every alternative kubectl and kube send.
        for alt in accept.split(',') {
            let alt = alt.replace(' ', "");
            if alt.contains("as=Table") && alt.contains("g=meta.k8s.io") {
                return Self::Table;
            }
            if alt.contains("as=PartialObjectMetadata") && alt.contains("g=meta.k8s.io") {
                return Self::Metadata;
            }
            if alt.starts_with("application/json") || alt.starts_with("*/*") || alt.is_empty() {
                return Self::Full;
            }
        }
        Self::Full
    }
}

/// Selectors and paging of a list or watch.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListQuery {
    pub label: LabelSelector,
    pub field: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub version_match: Option<String>,
}

impl ListQuery {
    pub fn matches(&self, obj: &Value) -> bool {
        self.label.matches(obj) && self.field.matches(obj)
    }
}

/// A page of a list.
pub(crate) struct ListPage {
    pub items: Vec<Arc<Value>>,
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

fn encode_token(rv: u64, key: &ObjKey) -> String {
    let raw = format!("{rv}\u{0}{}\u{0}{}", key.0, key.1);
    super::meta::to_hex(raw.as_bytes())
}

fn decode_token(token: &str) -> Option<(u64, ObjKey)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    let raw = String::from_utf8(bytes?).ok()?;
    let mut parts = raw.split('\u{0}');
    let rv = parts.next()?.parse().ok()?;
    let ns = parts.next()?.to_string();
    let name = parts.next()?.to_string();
    Some((rv, (ns, name)))
}

fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion: \"{rv}\"")))
}

/// Lists objects of `rt` (in `ns`, or all namespaces).
pub(crate) fn list(
    inner: &Inner,
    rt: &ResourceType,
    ns: Option<&str>,
    q: &ListQuery,
) -> Result<ListPage, ApiError> {
    let mut list_rv = inner.rv;
    let mut start_after: Option<ObjKey> = None;
    if let Some(token) = q.continue_token.as_deref().filter(|t| !t.is_empty()) {
        let (rv, key) = decode_token(token)
            .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
        if inner.is_compacted(rv) {
            return Err(ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            ));
        }
        list_rv = rv;
        start_after = Some(key);
    } else if let Some(rv) = q
        .resource_version
        .as_deref()
        .filter(|r| !r.is_empty() && *r != "0")
    {
        let n = parse_rv(rv)?;
        if n > inner.rv {
            return Err(ApiError::new(
                504,
                "Timeout",
                format!("Too large resource version: {n}, current: {}", inner.rv),
            ));
        }
        if q.version_match.as_deref() == Some("Exact") && n != inner.rv {
            return Err(ApiError::expired(format!(
                "too old resource version: {n} ({})",
                inner.rv
            )));
        }
    }
    let limit = q.limit.filter(|l| *l > 0);
    let mut items = Vec::new();
    let mut last_key: Option<ObjKey> = None;
    let mut remaining = 0usize;
    for (key, obj) in inner.iter(&rt.gr(), ns) {
        if start_after.as_ref().is_some_and(|s| key <= s) || !q.matches(obj) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            remaining += 1;
            continue;
        }
        items.push(Arc::clone(obj));
        last_key = Some(key.clone());
    }
    let continue_token = (remaining > 0)
        .then(|| last_key.map(|k| encode_token(list_rv, &k)))
        .flatten();
    Ok(ListPage {
        items,
        resource_version: list_rv,
        remaining: continue_token.as_ref().map(|_| remaining),
        continue_token,
    })
}

/// The object as the client sees it in `version` (same storage, `apiVersion` rewritten).
pub(crate) fn render(obj: &Value, rt: &ResourceType, version: &str) -> Value {
    let mut out = obj.clone();
    if version != rt.storage_version {
        out["apiVersion"] = json!(rt.api_version(version));
    }
    out
}

pub(crate) fn partial(obj: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({}))})
}

/// One object in the requested shape.
pub(crate) fn shape_one(obj: &Value, rt: &ResourceType, version: &str, shape: Shape) -> Value {
    match shape {
        Shape::Full => render(obj, rt, version),
        Shape::Metadata => partial(obj),
        Shape::Table => table(
            rt,
            version,
            std::slice::from_ref(&Arc::new(obj.clone())),
            &json!({}),
        ),
    }
}

/// A list response in the requested shape.
pub(crate) fn shape_list(rt: &ResourceType, version: &str, page: &ListPage, shape: Shape) -> Value {
    let mut meta = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
    }
    match shape {
        Shape::Table => table(rt, version, &page.items, &meta),
        Shape::Metadata => json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": meta,
            "items": page.items.iter().map(|o| partial(o)).collect::<Vec<_>>(),
        }),
        Shape::Full => json!({
            "apiVersion": rt.api_version(version), "kind": rt.list_kind, "metadata": meta,
            "items": page.items.iter().map(|o| render(o, rt, version)).collect::<Vec<_>>(),
        }),
    }
}

/// Human-readable age like kubectl's (`45s`, `3m`, `5h`, `2d`).
fn age(ts: &str) -> String {
    let Ok(then) = ts.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = k8s_openapi::jiff::Timestamp::now().as_second() - then.as_second();
    match secs.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// A printer column's value: the column's JSONPath (Kubernetes writes `.status.x`, without the
/// leading `$`) evaluated on the object; several matches are joined with commas, as the API
/// server's table converter prints them. A path that does not parse gives no value.
fn json_path(obj: &Value, path: &str) -> Option<Value> {
    let query = serde_json_path::JsonPath::parse(&format!("${path}")).ok()?;
    let found = query.query(obj).all();
    match found.as_slice() {
        [] => None,
        [one] => Some((*one).clone()),
        many => Some(Value::String(
            many.iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(","),
        )),
    }
}

fn cell(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => json!("<none>"),
        Some(Value::String(s)) => json!(s),
        Some(other) => json!(other.to_string()),
    }
}

/// Computes one table cell from an object.
type Extract = Box<dyn Fn(&Value) -> Value>;

/// The columns kubectl shows for Events, from either view's field names.
fn event_columns(core: bool) -> Vec<(&'static str, &'static str, Extract)> {
    let (object, message) = if core {
        ("/involvedObject", "/message")
    } else {
        ("/regarding", "/note")
    };
    vec![
        (
            "Type",
            "Type of this event",
            Box::new(|o: &Value| cell(o.get("type"))),
        ),
        (
            "Reason",
            "Why the event happened",
            Box::new(|o: &Value| cell(o.get("reason"))),
        ),
        (
            "Object",
            "The object the event is about",
            Box::new(move |o: &Value| {
                let part = |k: &str| o.pointer(&format!("{object}/{k}")).and_then(Value::as_str);
                json!(format!(
                    "{}/{}",
                    part("kind").unwrap_or_default().to_lowercase(),
                    part("name").unwrap_or_default()
                ))
            }),
        ),
        (
            "Message",
            "A description of the event",
            Box::new(move |o: &Value| cell(o.pointer(message))),
        ),
    ]
}

/// A `meta.k8s.io/v1` Table (what `kubectl get` asks for).
fn table(rt: &ResourceType, version: &str, items: &[Arc<Value>], meta: &Value) -> Value {
    let col = |name: &str, ty: &str, format: &str, description: &str| json!({"name": name, "type": ty, "format": format, "description": description, "priority": 0});
    let mut columns = vec![col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
    )];
    let mut extract: Vec<Extract> = Vec::new();
    let mut age_column = true;
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "configmaps" | "secrets") => {
            if rt.plural == "secrets" {
                columns.push(col("Type", "string", "", "Secret type"));
                extract.push(Box::new(|o| cell(o.get("type"))));
            }
            columns.push(col("Data", "string", "", "Number of data entries"));
            extract.push(Box::new(|o| {
                json!(
                    o.get("data")
                        .and_then(Value::as_object)
                        .map_or(0, serde_json::Map::len)
                        + o.get("binaryData")
                            .and_then(Value::as_object)
                            .map_or(0, serde_json::Map::len)
                )
            }));
        }
        ("", "namespaces") => {
            columns.push(col("Status", "string", "", "The status of the namespace"));
            extract.push(Box::new(|o| cell(o.pointer("/status/phase"))));
        }
        ("" | "events.k8s.io", "events") => {
            for (name, description, f) in event_columns(rt.group.is_empty()) {
                columns.push(col(name, "string", "", description));
                extract.push(f);
            }
        }
        ("coordination.k8s.io", "leases") => {
            columns.push(col("Holder", "string", "", "The holder of the lease"));
            extract.push(Box::new(|o| cell(o.pointer("/spec/holderIdentity"))));
        }
        _ => {
            let printer_columns = rt
                .version(version)
                .map(|v| v.printer_columns.clone())
                .unwrap_or_default();
            age_column = printer_columns.is_empty();
            for pc in printer_columns {
                let name = pc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let ty = pc
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("string")
                    .to_string();
                let path = pc
                    .get("jsonPath")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let is_date = ty == "date";
                columns.push(col(&name, if is_date { "string" } else { &ty }, "", ""));
                extract.push(Box::new(move |o| match json_path(o, &path) {
                    Some(Value::String(s)) if is_date => json!(age(&s)),
                    v => cell(v.as_ref()),
                }));
            }
        }
    }
    // Kubernetes adds AGE to built-in kinds and to custom resources without printer columns;
    // a CRD that lists columns gets exactly those (plus NAME).
    if age_column {
        columns.push(col("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created."));
    }
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut cells = vec![json!(o.name())];
            cells.extend(extract.iter().map(|f| f(o)));
            if age_column {
                cells.push(json!(age(o
                    .meta_str("creationTimestamp")
                    .unwrap_or_default())));
            }
            json!({"cells": cells, "object": partial(o)})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let key = ("ns".to_string(), "a-b".to_string());
        assert_eq!(decode_token(&encode_token(42, &key)), Some((42, key)));
        assert_eq!(decode_token("zz"), None);
    }

    #[test]
    fn accept_headers() {
        assert_eq!(
            Shape::from_accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
            Shape::Table
        );
        assert_eq!(
            Shape::from_accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
            Shape::Metadata
        );
        assert_eq!(Shape::from_accept("application/json"), Shape::Full);
        assert_eq!(
            Shape::from_accept("application/vnd.kubernetes.protobuf, application/json"),
            Shape::Full
        );
    }
}
