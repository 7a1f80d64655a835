//! Query parameters and bodies of requests: list/watch selectors, write settings, DeleteOptions.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::Query;
use http::{HeaderMap, Uri, header};
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::delete::{Cascade, DeleteOpts};
use super::meta::parse_body;
use super::read::ListQuery;
use super::resources::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};
use super::write_ctx::{FieldValidation, WriteCtx};

pub(crate) fn params(uri: &Uri) -> Result<HashMap<String, String>, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))?;
    Ok(pairs.into_iter().collect())
}

pub(crate) fn flag(p: &HashMap<String, String>, key: &str) -> bool {
    p.get(key).is_some_and(|v| v == "true" || v == "1")
}

pub(crate) fn list_query(p: &HashMap<String, String>) -> Result<ListQuery, ApiError> {
    Ok(ListQuery {
        label: LabelSelector::parse(p.get("labelSelector").map_or("", String::as_str))?,
        field: FieldSelector::parse(p.get("fieldSelector").map_or("", String::as_str))?,
        limit: p
            .get("limit")
            .map(|l| {
                l.parse::<usize>()
                    .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))
            })
            .transpose()?,
        continue_token: p.get("continue").cloned(),
        resource_version: p.get("resourceVersion").cloned(),
        version_match: p.get("resourceVersionMatch").cloned(),
    })
}

pub(crate) fn write_ctx(
    rt: &Arc<ResourceType>,
    version: &str,
    ns: &str,
    status: bool,
    p: &HashMap<String, String>,
    headers: &HeaderMap,
) -> WriteCtx {
    let manager = p.get("fieldManager").cloned().unwrap_or_else(|| {
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .and_then(|ua| ua.split('/').next())
            .filter(|s| !s.is_empty())
            .unwrap_or("unknown")
            .to_string()
    });
    let validation = match p.get("fieldValidation").map(String::as_str) {
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        _ => FieldValidation::Warn,
    };
    WriteCtx {
        rt: Arc::clone(rt),
        version: version.to_string(),
        namespace: ns.to_string(),
        status,
        manager,
        dry_run: p.get("dryRun").is_some_and(|d| d == "All"),
        validation,
        warnings: Vec::new(),
        guard: None,
    }
}

pub(crate) fn delete_opts(
    p: &HashMap<String, String>,
    body: &Bytes,
) -> Result<DeleteOpts, ApiError> {
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_body(body, false).map_err(ApiError::bad_request)?
    };
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| p.get("propagationPolicy").cloned());
    let orphan = body.get("orphanDependents").and_then(Value::as_bool) == Some(true)
        || flag(p, "orphanDependents");
    let cascade = match policy.as_deref() {
        Some("Orphan") => Cascade::Orphan,
        None if orphan => Cascade::Orphan,
        Some("Background" | "Foreground") | None => Cascade::Background,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown propagationPolicy: {other}"
            )));
        }
    };
    let dry_run = p.get("dryRun").is_some_and(|d| d == "All")
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x == "All"));
    Ok(DeleteOpts {
        cascade,
        uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
    })
}
