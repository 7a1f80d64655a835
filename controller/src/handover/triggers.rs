//! The trigger ids the plan chooses for Flink's savepoint and stop requests: 32 hex digits
//! (Flink's `TriggerId`) derived from what the request stands for, recorded in the status before
//! the request is sent and the same on every replan, so that a request resent after a crash is
//! the same request to Flink.

/// The id of attempt `attempt` at the savepoint that starts the handover to `template_hash` at
/// `epoch`.
pub fn savepoint_trigger_id(template_hash: &str, epoch: u64, attempt: u32) -> String {
    trigger_id(&format!(
        "bluegreen-savepoint/{template_hash}/{epoch}/{attempt}"
    ))
}

/// The id of attempt `attempt` to stop the outgoing job of the handover to `template_hash` at
/// `epoch`.
pub fn stop_trigger_id(template_hash: &str, epoch: u64, attempt: u32) -> String {
    trigger_id(&format!("bluegreen-stop/{template_hash}/{epoch}/{attempt}"))
}

/// The id of the final savepoint of the resource with `uid`: one per resource, however often the
/// cleanup is retried.
pub fn final_savepoint_trigger_id(uid: &str) -> String {
    trigger_id(&format!("bluegreen-final-savepoint/{uid}"))
}

/// The first 16 bytes of the SHA-256 of `seed`, in hex.
fn trigger_id(seed: &str) -> String {
    use sha2::{Digest as _, Sha256};
    Sha256::digest(seed)
        .iter()
        .take(16)
        .fold(String::with_capacity(32), |mut hex, b| {
            use std::fmt::Write as _;
            write!(hex, "{b:02x}").expect("writing to a String cannot fail");
            hex
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_has_its_own_id_of_32_hex_digits_the_same_on_every_replan() {
        let ids = [
            savepoint_trigger_id("h2", 1, 0),
            savepoint_trigger_id("h2", 1, 1),
            savepoint_trigger_id("h2", 2, 0),
            stop_trigger_id("h2", 1, 0),
            final_savepoint_trigger_id("uid-1"),
        ];
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
            assert!(!ids[..i].contains(id), "{id} twice");
        }
        assert_eq!(savepoint_trigger_id("h2", 1, 0), ids[0]);
    }
}
