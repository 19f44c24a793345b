//! What an admin may set (the admin routes of docs/api.md), validated before anything
//! reaches the database: which keys a limit of each kind can have, windows, and bounds
//! that keep the reservation rows (one per slot or token) reasonable.

use std::ops::RangeInclusive;

use crate::task::bounds::{self, Invalid};

/// Kinds of admission limits.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Most non-terminal tasks at once.
    Capacity,
    /// Most admissions per sliding window.
    Rate,
    /// Most usage units per UTC day.
    Budget,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Capacity => "capacity",
            LimitKind::Rate => "rate",
            LimitKind::Budget => "budget",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Capacity, Self::Rate, Self::Budget]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// Capacity and rate limits are one row per unit: at most a million.
pub const ROW_LIMIT: RangeInclusive<i64> = 0..=1_000_000;
pub const BUDGET_LIMIT: RangeInclusive<i64> = 0..=i64::MAX;
/// Rate windows: a second to a day (the admission history kept).
pub const WINDOW_SECONDS: RangeInclusive<i64> = 1..=86_400;
/// Slots of one resource.
pub const RESOURCE_SLOTS: RangeInclusive<i64> = 0..=10_000;

/// The body of `PUT /v1/admin/limits`. No app: global. A subject belongs to an app.
/// For budgets, the app alone is its background budget (tasks without a subject).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitSpec {
    pub kind: LimitKind,
    #[serde(default)]
    pub app: Option<String>,
    #[serde(default)]
    pub usage_subject: Option<String>,
    pub limit: i64,
    #[serde(default)]
    pub window_seconds: Option<i64>,
}

impl LimitSpec {
    /// Checks the key, window and bound, naming the offending field.
    pub fn validate(&self) -> Result<(), Invalid> {
        if let Some(app) = &self.app {
            bounds::key("app", app)?;
        }
        if let Some(subject) = &self.usage_subject {
            bounds::key("usage_subject", subject)?;
            if self.app.is_none() {
                return Err(Invalid::new(
                    "usage_subject",
                    "a usage subject belongs to an app: name the app",
                ));
            }
        }
        match (self.kind, self.window_seconds) {
            (LimitKind::Rate, Some(window)) => {
                bounds::within("window_seconds", window, &WINDOW_SECONDS)?
            }
            (LimitKind::Rate, None) => {
                return Err(Invalid::new(
                    "window_seconds",
                    "a rate limit needs a window",
                ))
            }
            (_, Some(_)) => {
                return Err(Invalid::new(
                    "window_seconds",
                    "only rate limits have a window",
                ))
            }
            (_, None) => {}
        }
        if self.kind == LimitKind::Budget && self.app.is_none() {
            return Err(Invalid::new(
                "app",
                "budgets are per app (background) or per usage subject",
            ));
        }
        let range = if self.kind == LimitKind::Budget {
            &BUDGET_LIMIT
        } else {
            &ROW_LIMIT
        };
        bounds::within("limit", self.limit, range)
    }
}

/// The body of `PUT /v1/admin/emergency-stop`. No app: global.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmergencyStopSpec {
    pub enabled: bool,
    #[serde(default)]
    pub app: Option<String>,
}

impl EmergencyStopSpec {
    pub fn validate(&self) -> Result<(), Invalid> {
        match &self.app {
            Some(app) => bounds::key("app", app),
            None => Ok(()),
        }
    }
}

/// Checks `PUT /v1/admin/resources/{name}`.
pub fn validate_resource(name: &str, slots: i64) -> Result<(), Invalid> {
    bounds::key("name", name)?;
    bounds::within("slots", slots, &RESOURCE_SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> Result<LimitSpec, String> {
        let spec: LimitSpec = serde_json::from_value(json).map_err(|e| e.to_string())?;
        spec.validate().map_err(|e| e.field)?;
        Ok(spec)
    }

    #[test]
    fn accepts_every_documented_key() {
        use serde_json::json;
        assert!(spec(json!({"kind": "capacity", "limit": 100})).is_ok());
        assert!(spec(json!({"kind": "capacity", "app": "mail", "limit": 10})).is_ok());
        assert!(
            spec(json!({"kind": "capacity", "app": "mail", "usage_subject": "u", "limit": 1}))
                .is_ok()
        );
        assert!(
            spec(json!({"kind": "rate", "app": "mail", "limit": 100, "window_seconds": 3600}))
                .is_ok()
        );
        assert!(spec(json!({"kind": "budget", "app": "mail", "limit": 50000})).is_ok());
        assert!(
            spec(json!({"kind": "budget", "app": "mail", "usage_subject": "u", "limit": 0}))
                .is_ok()
        );
    }

    #[test]
    fn refuses_impossible_keys_and_bounds_by_field() {
        use serde_json::json;
        assert_eq!(
            spec(json!({"kind": "capacity", "usage_subject": "u", "limit": 1})),
            Err("usage_subject".into())
        );
        assert_eq!(
            spec(json!({"kind": "rate", "app": "a", "limit": 1})),
            Err("window_seconds".into())
        );
        assert_eq!(
            spec(json!({"kind": "rate", "app": "a", "limit": 1, "window_seconds": 86_401})),
            Err("window_seconds".into())
        );
        assert_eq!(
            spec(json!({"kind": "capacity", "limit": 1, "window_seconds": 60})),
            Err("window_seconds".into())
        );
        assert_eq!(
            spec(json!({"kind": "budget", "limit": 1})),
            Err("app".into())
        );
        assert_eq!(
            spec(json!({"kind": "capacity", "limit": -1})),
            Err("limit".into())
        );
        assert_eq!(
            spec(json!({"kind": "capacity", "limit": 1_000_001})),
            Err("limit".into())
        );
        assert!(spec(json!({"kind": "capacity", "limit": 1, "colour": "red"})).is_err());
    }

    #[test]
    fn resources_and_stops() {
        assert!(validate_resource("local-model", 1).is_ok());
        assert_eq!(validate_resource("", 1).unwrap_err().field, "name");
        assert_eq!(validate_resource("gpu", -1).unwrap_err().field, "slots");
        assert!(EmergencyStopSpec {
            enabled: true,
            app: None
        }
        .validate()
        .is_ok());
        assert!(EmergencyStopSpec {
            enabled: true,
            app: Some(String::new())
        }
        .validate()
        .is_err());
        assert_eq!(LimitKind::parse("rate"), Some(LimitKind::Rate));
    }
}
