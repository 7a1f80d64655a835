//! Object metadata helpers: identifiers, timestamps, name validation and JSON accessors.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 random bits from the standard library's per-process random hasher keys plus a counter.
pub(crate) fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// A random RFC 4122 version-4 UUID string, used for `metadata.uid`.
pub(crate) fn new_uid() -> String {
    let hi = random_u64();
    let lo = random_u64();
    let bytes: [u8; 16] = ((u128::from(hi) << 64) | u128::from(lo)).to_be_bytes();
    let mut b = bytes;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = to_hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Lowercase hex of bytes.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Five random characters for `generateName`, from the real server's alphabet.
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let len = ALPHABET.len() as u64;
            #[allow(clippy::cast_possible_truncation, reason = "index is < 27")]
            let c = ALPHABET[(r % len) as usize];
            r /= len;
            char::from(c)
        })
        .collect()
}

/// The current time as an RFC 3339 timestamp with second precision (`metav1.Time`).
pub(crate) fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Checks a DNS-1123 subdomain name (what most object names must be).
pub(crate) fn validate_subdomain(name: &str) -> Result<(), String> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let ends_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 253 || !ok_chars || !ends_ok {
        return Err(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

/// Checks a DNS-1123 label (namespace names).
pub(crate) fn validate_label(name: &str) -> Result<(), String> {
    if name.len() > 63 || name.contains('.') {
        return Err(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric \
             characters or '-', and must start and end with an alphanumeric character"
        ));
    }
    validate_subdomain(name)
}

/// Checks a path segment name (RBAC object names such as `system:discovery`): not `.` or `..`
/// and without `/` or `%`.
pub(crate) fn validate_path_segment(name: &str) -> Result<(), String> {
    if name == "." || name == ".." {
        return Err(format!("Invalid value: \"{name}\": may not be '{name}'"));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '%')) {
        return Err(format!("Invalid value: \"{name}\": may not contain '{c}'"));
    }
    Ok(())
}

/// Read-only accessors on a JSON object.
pub(crate) trait ObjExt {
    fn meta(&self) -> Option<&Map<String, Value>>;
    fn meta_str(&self, key: &str) -> Option<&str>;
    fn name(&self) -> &str;
    fn namespace(&self) -> &str;
    fn uid(&self) -> &str;
    fn finalizers(&self) -> Vec<String>;
    fn deleting(&self) -> bool;
    fn labels(&self) -> Option<&Map<String, Value>>;
}

impl ObjExt for Value {
    fn meta(&self) -> Option<&Map<String, Value>> {
        self.get("metadata").and_then(Value::as_object)
    }
    fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta().and_then(|m| m.get(key)).and_then(Value::as_str)
    }
    fn name(&self) -> &str {
        self.meta_str("name").unwrap_or("")
    }
    fn namespace(&self) -> &str {
        self.meta_str("namespace").unwrap_or("")
    }
    fn uid(&self) -> &str {
        self.meta_str("uid").unwrap_or("")
    }
    fn finalizers(&self) -> Vec<String> {
        self.meta()
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
    fn deleting(&self) -> bool {
        self.meta()
            .is_some_and(|m| m.get("deletionTimestamp").is_some_and(|v| !v.is_null()))
    }
    fn labels(&self) -> Option<&Map<String, Value>> {
        self.meta()
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
    }
}

/// Mutable access to `metadata`, creating it when missing or not an object.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("just made an object");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("just made an object")
}

/// Sets or removes (`None`) a `metadata` field.
pub(crate) fn set_meta(obj: &mut Value, key: &str, value: Option<Value>) {
    let meta = meta_mut(obj);
    match value {
        Some(v) => {
            meta.insert(key.to_string(), v);
        }
        None => {
            meta.remove(key);
        }
    }
}

/// Parses a request body as JSON (or, when `yaml` is set, YAML, of which JSON is a subset).
pub(crate) fn parse_body(body: &[u8], yaml: bool) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(json_err) if yaml => serde_yaml::from_slice::<Value>(body)
            .map_err(|e| format!("error decoding YAML: {e} (as JSON: {json_err})")),
        Err(e) => Err(format!("error decoding JSON body: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_has_uuid_shape() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uid());
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_subdomain("a.b-c").is_ok());
        assert!(validate_subdomain("Abc").is_err());
        assert!(validate_subdomain("-a").is_err());
        assert!(validate_label("a.b").is_err());
        assert_eq!(random_suffix().len(), 5);
    }
}
