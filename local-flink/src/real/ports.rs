//! Ports for the job JVMs' REST APIs and the sidecars. A port found free is only free until
//! someone else binds it, and a child process binds it seconds later (a JVM starting). Ports
//! found with `bind(0)` come from the kernel's ephemeral range, which every outgoing connection
//! and every other `bind(0)` (Flink's blob server, another JVM's RPC) draws from in the meantime:
//! a JobManager then fails to bind its REST port. So ports are taken from just below the
//! ephemeral range, where only listeners that name their port live, and handed out in rotation,
//! so that a port released by a stopped job is not handed out again at once.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// How many ports below the ephemeral range are used.
const SPAN: u16 = 10_000;
/// Linux's default ephemeral range starts here (`net.ipv4.ip_local_port_range`).
const DEFAULT_EPHEMERAL_START: u16 = 32_768;

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START)
}

/// The range ports are handed out from: `SPAN` ports below the ephemeral range, never below
/// 1024.
fn range() -> (u16, u16) {
    let end = ephemeral_start().max(1024 + SPAN);
    (end - SPAN, end)
}

/// The rotation's position; starts at a per-process offset so that two runners on one machine
/// (two test binaries, the demo beside a test) do not walk the same ports in step.
fn next_offset() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let seed = || {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        nanos ^ std::process::id().wrapping_mul(2_654_435_761)
    };
    let _ = NEXT.compare_exchange(
        u32::MAX,
        seed() % u32::from(SPAN),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A port on 127.0.0.1 that is free now (bound, then released for a child to bind), below the
/// ephemeral range, not handed out by this process in the last `SPAN` allocations.
pub(crate) fn free_port() -> Result<u16, Error> {
    let (start, end) = range();
    for _ in 0..SPAN {
        let port = start + u16::try_from(next_offset() % u32::from(end - start)).unwrap_or(0);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(Error::NoFreePort {
        from: start,
        to: end,
    })
}

#[cfg(test)]
mod tests {
    use super::{free_port, range};

    #[test]
    fn ports_are_below_the_ephemeral_range_bindable_and_not_reused_at_once() {
        let (start, end) = range();
        let ports: Vec<u16> = (0..50).map(|_| free_port().expect("a port")).collect();
        for port in &ports {
            assert!((start..end).contains(port), "{port} not in {start}..{end}");
        }
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ports.len(),
            "a port handed out twice: {ports:?}"
        );
        let port = free_port().expect("a port");
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}
