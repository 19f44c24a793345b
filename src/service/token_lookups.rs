//! Token lookups gathered: the lookups of concurrent requests
//! ([`super::Tasklane::authenticate`]) are read by one statement
//! (`store::tokens::lookup_many`) instead of one each, every request answered exactly as
//! its own lookup would answer it.
//!
//! Every API request looks its token up first, so under a steady stream of submits the
//! lookups are most of a replica's statements: at 1,000 submits a second, 1,000 lookups
//! against a few dozen submit groups. Each is a round trip, a transaction and a turn of
//! a connection; behind a pooler in transaction mode also a server connection lent and
//! returned, two more hops through the pooler's single process, and the statement
//! parsed and planned again (nothing stays prepared there). Gathered, they cost one of
//! each for all the requests that arrived while the previous lookups were being read.
//!
//! As in the group commit of submits (`service::submit_coalesce`), there is no timer: a
//! lookup that finds a reader free goes at once, with whatever is ready beside it
//! ([`crate::gather::ready`]), so a quiet replica answers as before, and lookups wait
//! for each other only while they are queueing anyway. Nothing is cached: a lookup
//! reads after its request arrived, so a token revoked before that is refused.
//!
//! A group's statement that fails is followed by each of its lookups alone, so each
//! answers with its own error (which says whether the caller should try again on a
//! fresh connection, as after a lookup of its own).

use super::groups::{Bounds, Groups, Pending};
use super::ServiceError;
use crate::store::tokens::{self, TokenRow};

/// The handle lookups go through; cloning shares the queue.
#[derive(Clone)]
pub struct TokenLookups {
    groups: Groups<[u8; 32], Option<TokenRow>>,
}

impl TokenLookups {
    /// Most lookups in one statement.
    pub const MAX_GROUP: usize = 64;

    /// Most lookups waiting for a group: sixteen full groups. Beyond that a lookup
    /// waits for room.
    pub const QUEUED: usize = 16 * TokenLookups::MAX_GROUP;

    /// Starts the gathering loop on the current runtime, reading at most `readers` (at
    /// least 1) groups at once, each on a connection of `pool`; it ends when every
    /// handle is dropped.
    pub fn start(pool: crate::store::Pool, readers: usize) -> Self {
        let bounds = Bounds {
            flights: readers,
            max_group: TokenLookups::MAX_GROUP,
            queued: TokenLookups::QUEUED,
        };
        TokenLookups {
            groups: Groups::start(pool, bounds, "token lookup", read),
        }
    }

    /// The live token whose SHA-256 is `hash`, read in the next group.
    pub async fn lookup(&self, hash: [u8; 32]) -> Result<Option<TokenRow>, ServiceError> {
        self.groups.ask(hash).await
    }
}

/// Reads one group on its connection and answers each of its lookups: a group of one
/// by the single lookup's statement, a larger one by the gathered statement.
async fn read(client: crate::store::Pooled, group: Vec<Pending<[u8; 32], Option<TokenRow>>>) {
    if group.len() > 1 {
        let hashes: Vec<&[u8]> = group.iter().map(|p| p.item.as_slice()).collect();
        match tokens::lookup_many(&client, &hashes).await {
            Ok(rows) => {
                for pending in group {
                    let row = rows.iter().find(|row| row.token_hash == pending.item);
                    let _ = pending.answer.send(Ok(row.cloned()));
                }
                return;
            }
            // Each alone then fails (or not) with its own error, which says whether to
            // try again on a fresh connection.
            Err(error) => {
                tracing::debug!(%error, lookups = group.len(), "token lookup group failed; each alone")
            }
        }
    }
    for pending in group {
        let answer = tokens::lookup(&client, &pending.item).await;
        let _ = pending.answer.send(answer.map_err(ServiceError::from));
    }
}
