//! An app's weight: its share of the claims' turns against the other apps with
//! claimable work in the same priority level. An app without a stored weight weighs
//! [`DEFAULT_WEIGHT`]. A task takes its turn when it becomes claimable, so a weight set
//! now applies to the tasks that take their turn after it is set; tasks already waiting
//! keep the turn they took.
//!
//! What an operator may set is checked here, before anything reaches the database (whose
//! `CHECK` constraints hold the same bounds).

use crate::task::bounds::{self, Invalid, APP_WEIGHT};

/// The weight of an app that has none stored.
pub const DEFAULT_WEIGHT: i16 = 1;

/// Checks `PUT /v1/admin/apps/{app}/weight`: the app is a key as a token's app is
/// (1..=200 bytes), the weight within [`APP_WEIGHT`]; the weight as stored.
pub fn validate(app: &str, weight: i64) -> Result<i16, Invalid> {
    bounds::key("app", app)?;
    bounds::within("weight", weight, &APP_WEIGHT)?;
    i16::try_from(weight).map_err(|_| Invalid::new("weight", "out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_bounded_at_both_edges() {
        assert_eq!(validate("mail", 1), Ok(1));
        assert_eq!(validate("mail", 100), Ok(100));
        assert_eq!(validate("mail", 0).unwrap_err().field, "weight");
        assert_eq!(validate("mail", 101).unwrap_err().field, "weight");
        assert_eq!(validate("mail", -1).unwrap_err().field, "weight");
        assert_eq!(validate("mail", i64::MAX).unwrap_err().field, "weight");
    }

    #[test]
    fn apps_are_checked_as_token_apps_are() {
        assert_eq!(validate("", 2).unwrap_err().field, "app");
        assert_eq!(validate(&"a".repeat(201), 2).unwrap_err().field, "app");
        assert_eq!(validate("a\0b", 2).unwrap_err().field, "app");
        assert_eq!(validate(&"a".repeat(200), 2), Ok(2));
    }
}
