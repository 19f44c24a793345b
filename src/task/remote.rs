//! A remote worker's batches: what one item of a batched heartbeat or output write
//! carries, and the rules a batch must meet before anything is written (its size, no task twice). The
//! batches answer each item on its own, so one lost lease never fails the others; the
//! checks here are about the request as a whole, which is refused (nothing written)
//! when it breaks them.

use std::collections::HashSet;
use std::ops::RangeInclusive;

use uuid::Uuid;

use super::bounds::Invalid;

/// Items in one batched heartbeat or completion.
pub const BATCH_ITEMS: RangeInclusive<usize> = 1..=500;
/// The most text one live output write (or heartbeat item) may append, in bytes.
pub const OUTPUT_WRITE_BYTES: usize = 64 * 1024;

/// One item of a batched heartbeat: a lease to extend and what the worker reports
/// with it, already validated.
#[derive(Debug, Clone, PartialEq)]
pub struct BeatItem {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub progress: Option<i16>,
    pub snapshot: Option<serde_json::Value>,
    /// Text to append to the attempt's live output.
    pub output: Option<String>,
}

/// One item of a batched live output write: text for a running attempt's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputItem {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub text: String,
}

/// A batched output write, checked as a whole: [`check_batch`] of its ids, and every
/// item's text within [`OUTPUT_WRITE_BYTES`] (`items[n].text` names the first that is
/// not).
pub fn check_outputs(items: &[OutputItem]) -> Result<(), Invalid> {
    check_batch(items.iter().map(|i| i.id))?;
    for (n, item) in items.iter().enumerate() {
        check_output(&format!("items[{n}].text"), &item.text)?;
    }
    Ok(())
}

/// A batch's ids, checked: 1..=500 of them, none twice (two items of one task would
/// race each other inside one statement, and their answers could not be told apart).
pub fn check_batch(ids: impl ExactSizeIterator<Item = Uuid>) -> Result<(), Invalid> {
    let count = ids.len();
    if !BATCH_ITEMS.contains(&count) {
        return Err(Invalid::new(
            "items",
            format!("must hold 1 to {} items", BATCH_ITEMS.end()),
        ));
    }
    let mut seen = HashSet::with_capacity(count);
    for (n, id) in ids.enumerate() {
        if !seen.insert(id) {
            return Err(Invalid::new(
                format!("items[{n}].id"),
                "names a task an earlier item names",
            ));
        }
    }
    Ok(())
}

/// Live output text, checked: at most [`OUTPUT_WRITE_BYTES`].
pub fn check_output(field: &str, text: &str) -> Result<(), Invalid> {
    if text.len() > OUTPUT_WRITE_BYTES {
        return Err(Invalid::new(
            field,
            format!("must be at most {OUTPUT_WRITE_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The order that visits `ids` sorted (the order rows are locked in, so two batches
/// never wait on each other in opposite orders): positions into `ids`.
pub fn lock_order(ids: &[Uuid]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&n| ids[n]);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_holds_1_to_500_distinct_tasks() {
        let ids: Vec<Uuid> = (0..500).map(|_| Uuid::now_v7()).collect();
        assert!(check_batch(ids.iter().copied()).is_ok());
        assert_eq!(check_batch(std::iter::empty()).unwrap_err().field, "items");
        let mut more = ids.clone();
        more.push(Uuid::now_v7());
        assert_eq!(check_batch(more.into_iter()).unwrap_err().field, "items");
        let twice = vec![ids[0], ids[1], ids[0]];
        assert_eq!(
            check_batch(twice.into_iter()).unwrap_err().field,
            "items[2].id"
        );
    }

    #[test]
    fn output_text_is_bounded() {
        assert!(check_output("text", &"x".repeat(OUTPUT_WRITE_BYTES)).is_ok());
        let long = "x".repeat(OUTPUT_WRITE_BYTES + 1);
        assert_eq!(check_output("text", &long).unwrap_err().field, "text");
    }

    #[test]
    fn a_batched_output_write_names_its_first_bad_item() {
        let item = |text: &str| OutputItem {
            id: Uuid::now_v7(),
            lease_token: Uuid::now_v7(),
            text: text.to_owned(),
        };
        let long = "x".repeat(OUTPUT_WRITE_BYTES + 1);
        assert!(check_outputs(&[item("a"), item("")]).is_ok());
        let refused = check_outputs(&[item("a"), item(&long), item(&long)]).unwrap_err();
        assert_eq!(refused.field, "items[1].text");
        assert_eq!(check_outputs(&[]).unwrap_err().field, "items");
        let one = item("a");
        let twice = check_outputs(&[one.clone(), one]).unwrap_err();
        assert_eq!(twice.field, "items[1].id");
    }

    #[test]
    fn the_lock_order_sorts_by_id() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        assert_eq!(lock_order(&[c, a, b]), vec![1, 2, 0]);
    }
}
