//! What one attempt leaves behind besides the task's state: where it ran (provenance)
//! and what the provider reported it consumed (usage). Every attempt keeps both, failed
//! ones included, in `tasklane.task_attempts`; the task view shows the last attempt's
//! provenance and the sum of the usage.

use super::bounds;
use super::locality::Locality;
use super::outcome::Outcome;
use chrono::{DateTime, Utc};

/// Longest provider, model or route name kept, in bytes (longer ones are cut).
pub const PROVENANCE_BYTES: usize = 200;

/// Tokens a provider reported for one call (OpenAI's `prompt_tokens`,
/// `completion_tokens`, `total_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub total_tokens: i64,
}

impl Usage {
    /// The sum of two calls' usage (an attempt may make more than one call).
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
        }
    }
}

/// Where an attempt ran: the provider and model it called over which route, and what
/// the provider's answer said produced it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    pub provider: String,
    /// The model asked for (the route's).
    pub model: String,
    #[serde(rename = "route")]
    pub locality: Locality,
    pub route_name: String,
    /// The model the provider says answered, often a dated snapshot of `model`
    /// (`gpt-4o-2024-08-06`); `None` until an answer names one.
    pub response_model: Option<String>,
    /// The provider's `system_fingerprint` (the backend configuration that answered),
    /// when it gave one.
    pub system_fingerprint: Option<String>,
}

impl Provenance {
    /// The same provenance with every name cut to [`PROVENANCE_BYTES`]. The names an
    /// answer reported lose their control characters too (PostgreSQL's `text` cannot
    /// hold U+0000).
    pub fn bounded(self) -> Provenance {
        let cut = |s: String| bounds::truncate(&s, PROVENANCE_BYTES).to_owned();
        let reported =
            |s: Option<String>| s.map(|s| cut(s.chars().filter(|c| !c.is_control()).collect()));
        Provenance {
            provider: cut(self.provider),
            model: cut(self.model),
            locality: self.locality,
            route_name: cut(self.route_name),
            response_model: reported(self.response_model),
            system_fingerprint: reported(self.system_fingerprint),
        }
    }
}

/// What a handler learned during an attempt, written with the attempt whatever its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub provenance: Option<Provenance>,
    pub usage: Option<Usage>,
}

/// One attempt as the attempts listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    /// 1-based over the task's whole life (an owner's retry keeps counting).
    pub attempt: i32,
    pub route: Option<String>,
    pub route_name: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The model the provider says answered, and its system fingerprint.
    pub response_model: Option<String>,
    pub system_fingerprint: Option<String>,
    pub started_at: DateTime<Utc>,
    /// `None` while running.
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: Outcome,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    /// What the provider reported; `None` when nothing was.
    pub usage: Option<Usage>,
}

/// What the task view shows of its attempts.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AttemptSummary {
    /// Summed over every attempt; `None` when no attempt reported tokens.
    pub usage: Option<Usage>,
    /// Budget units charged over every attempt; `None` when none were.
    pub usage_units: Option<i64>,
    /// The last attempt's provenance (the last one that recorded any).
    pub provider: Option<String>,
    pub model: Option<String>,
    pub route: Option<String>,
    pub route_name: Option<String>,
    pub response_model: Option<String>,
    pub system_fingerprint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_is_cut_to_its_bound() {
        let long = "é".repeat(PROVENANCE_BYTES);
        let cut = Provenance {
            provider: long.clone(),
            model: "m".into(),
            locality: Locality::Local,
            route_name: long.clone(),
            response_model: Some(long),
            system_fingerprint: Some("fp_\u{0}1\n2".into()),
        }
        .bounded();
        assert!(cut.provider.len() <= PROVENANCE_BYTES);
        assert!(cut.route_name.len() <= PROVENANCE_BYTES);
        assert!(cut.response_model.unwrap().len() <= PROVENANCE_BYTES);
        assert_eq!(cut.model, "m");
        assert_eq!(cut.system_fingerprint.as_deref(), Some("fp_12"));
    }
}
