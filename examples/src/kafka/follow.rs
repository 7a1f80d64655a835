//! When each record of a topic became visible to a `read_committed` consumer: `KafkaTool follow`,
//! a consumer from the start of every partition that notes the wall-clock time each poll returned
//! a record (within `fetch.max.wait.ms`, 20 ms, of the commit that made it visible).

use std::path::PathBuf;
use std::process::Child;

use anyhow::Context as _;

use super::KafkaBroker;

/// A record seen by the follower.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// When the consumer's poll returned it (epoch ms).
    pub at_ms: i64,
    /// Its value.
    pub value: String,
}

/// `KafkaTool follow` running on one topic; killed when dropped.
pub struct Follower {
    child: Child,
    out: PathBuf,
}

impl KafkaBroker {
    /// Starts following `topic` as a `read_committed` consumer.
    pub fn follow(&self, topic: &str) -> anyhow::Result<Follower> {
        let out = self.dir().join(format!("follow-{topic}.txt"));
        let err = self.dir().join(format!("follow-{topic}.log"));
        let child = self.spawn_tool("follow", &[topic.to_owned()], &out, &err)?;
        Ok(Follower { child, out })
    }
}

impl Follower {
    /// Every record seen so far, in order (a partly written last line is left out).
    pub fn seen(&self) -> anyhow::Result<Vec<Seen>> {
        let text = std::fs::read_to_string(&self.out)?;
        parse(&text)
    }
}

/// The complete `epochMs value` lines of `text`.
fn parse(text: &str) -> anyhow::Result<Vec<Seen>> {
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| {
            let (at, value) = l
                .split_once(' ')
                .with_context(|| format!("not `epochMs value`: {l:?}"))?;
            Ok(Seen {
                at_ms: at.parse()?,
                value: value.to_owned(),
            })
        })
        .collect()
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn a_partly_written_last_line_is_left_out() {
        let seen = parse("5 0,1,2,3,1,BLUE,v1,1\n6 0,2,3,3,2,BLUE,v1,2\n7 0,3").unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].at_ms, 6);
        assert_eq!(seen[1].value, "0,2,3,3,2,BLUE,v1,2");
        assert!(parse("x y\n").is_err());
    }
}
