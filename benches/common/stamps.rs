//! Chunks stamped with the time they were written (`STAMP_DIGITS` digits of
//! microseconds since the epoch, then `;`), read back from a task's output stream: the
//! live-output benches time every chunk from its writer to an observer this way.

use std::time::{SystemTime, UNIX_EPOCH};

use tasklane::mockllm::STAMP_DIGITS;

/// Microseconds since the epoch, as the stamps count them.
pub fn now_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

/// Follows one task's output stream (`GET /v1/tasks/{id}/output`) to its end: the
/// latency of every stamped chunk, in microseconds from its stamp to its arrival here.
pub async fn latencies(mut response: reqwest::Response) -> anyhow::Result<Vec<u128>> {
    let mut buffer = String::new();
    let mut latencies = Vec::new();
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
            for stamp in delta["text"].as_str().unwrap_or("").split(';') {
                if stamp.len() == STAMP_DIGITS {
                    if let Ok(written) = stamp.parse::<u128>() {
                        latencies.push(arrived.saturating_sub(written));
                    }
                }
            }
        }
    }
    Ok(latencies)
}
