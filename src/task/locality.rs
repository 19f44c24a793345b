//! Locality: whether a model call stays on the operator's own servers (`local`) or goes
//! to an outside provider (`external`), and a task's privacy, which says whether it may
//! ever go external. A claim loop serves one locality and claims only what it may run;
//! a task type's routes (`routes.rs`) each name theirs. Pure.

/// Where a worker's calls go: `Local` to the operator's own model servers, `External` to
/// an outside provider. A claim loop serves one locality, each `[[task_type.routes]]`
/// entry and each attempt has one (on the wire and in the database it is the `route`
/// field, `local` or `external`); a `local_only` task never goes to an external worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Locality {
    Local,
    External,
}

impl Locality {
    pub fn as_str(self) -> &'static str {
        match self {
            Locality::Local => "local",
            Locality::External => "external",
        }
    }
}

/// Whether a task may go external (to an outside provider), snapshotted at submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privacy {
    LocalOnly,
    ExternalAllowed,
}

impl Privacy {
    pub fn as_str(self) -> &'static str {
        match self {
            Privacy::LocalOnly => "local_only",
            Privacy::ExternalAllowed => "external_allowed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "local_only" => Some(Privacy::LocalOnly),
            "external_allowed" => Some(Privacy::ExternalAllowed),
            _ => None,
        }
    }
}
