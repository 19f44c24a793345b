//! Chunks stamped with the time they were written (`STAMP_DIGITS` digits of
//! microseconds since the epoch, then `;`), read back from a task's output stream: the
//! live-output benches time every chunk from its writer to an observer this way. A
//! chunk may carry more than one stamp, joined by `,` (a remote worker's chunk: when it
//! was produced, and when the request that carried it was sent).

use std::time::{SystemTime, UNIX_EPOCH};

use tasklane::mockllm::STAMP_DIGITS;

/// Microseconds since the epoch, as the stamps count them.
pub fn now_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

/// `micros` as a stamp.
pub fn stamp(micros: u128) -> String {
    format!("{micros:0width$}", width = STAMP_DIGITS)
}

/// Follows one task's output stream (`GET /v1/tasks/{id}/output`) to its end: the
/// latency of every chunk stamped once, in microseconds from its stamp to its arrival
/// here.
pub async fn latencies(response: reqwest::Response) -> anyhow::Result<Vec<u128>> {
    Ok(arrivals(response)
        .await?
        .into_iter()
        .map(|a| a.arrived.saturating_sub(a.stamps[0]))
        .collect())
}

/// One stamped chunk as an observer got it.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// Its stamps, in order (at least one).
    pub stamps: Vec<u128>,
    /// When it arrived here, in microseconds since the epoch.
    pub arrived: u128,
}

/// Follows one task's output stream to its end: every stamped chunk, in order.
pub async fn arrivals(mut response: reqwest::Response) -> anyhow::Result<Vec<Arrival>> {
    let mut buffer = String::new();
    let mut arrivals = Vec::new();
    while let Some(bytes) = response.chunk().await? {
        let arrived = now_micros();
        buffer.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if !block.contains("event: output.delta") {
                continue;
            }
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let delta: serde_json::Value = serde_json::from_str(data)?;
            for chunk in delta["text"].as_str().unwrap_or("").split(';') {
                let stamps: Option<Vec<u128>> = chunk
                    .split(',')
                    .map(|s| (s.len() == STAMP_DIGITS).then(|| s.parse::<u128>().ok())?)
                    .collect();
                if let Some(stamps) = stamps.filter(|s| !s.is_empty()) {
                    arrivals.push(Arrival { stamps, arrived });
                }
            }
        }
    }
    Ok(arrivals)
}
