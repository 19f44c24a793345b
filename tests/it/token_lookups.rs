//! Gathered token lookups (`Tasklane::with_token_gathering`, as `tasklane serve` runs
//! them) answer each request exactly as its own lookup would: the holder of a live
//! token, nothing for an unknown or revoked one, whatever group a lookup lands in, and
//! a revocation is seen by the next lookup; and lookups that queue together are read by
//! one statement.

use crate::common;

use tasklane::service::tokens::{self, TokenSpec};

async fn token(url: &str, app: &str, scope: Option<&str>, perms: &[&str]) -> tokens::CreatedToken {
    let spec = TokenSpec {
        app: app.into(),
        scope_id: scope.map(Into::into),
        permissions: perms.iter().map(|p| p.to_string()).collect(),
        name: None,
    };
    tokens::create(url, &spec).await.expect("create token")
}

/// What a lookup answered, to compare: the token, app, scope and permissions.
fn seen(
    holder: &Option<tokens::TokenHolder>,
) -> Option<(uuid::Uuid, String, Option<String>, Vec<String>)> {
    holder.as_ref().map(|h| {
        (
            h.token_id,
            h.owner.app.clone(),
            h.owner.scope_id.clone(),
            h.permissions.clone(),
        )
    })
}

#[tokio::test]
async fn gathered_lookups_answer_each_request_as_its_own_lookup() {
    let db = common::test_db().await;
    let a = token(&db.url, "app-a", None, &["submit", "read"]).await;
    let b = token(&db.url, "app-b", Some("scope-b"), &["read"]).await;
    let revoked = token(&db.url, "app-c", None, &["submit"]).await;
    tokens::revoke(&db.url, revoked.id).await.unwrap();
    let unknown = tokens::generate_secret();
    // One reader: while it reads, the other lookups queue and go together.
    let gathered = common::service::tasklane(db.pool.clone(), []).with_token_gathering(1);
    let alone = common::service::tasklane(db.pool.clone(), []);

    let secrets: Vec<&str> = [&a.secret, &b.secret, &revoked.secret, &unknown]
        .into_iter()
        .cycle()
        .take(4 * 40)
        .map(String::as_str)
        .collect();
    let answers =
        futures_util::future::join_all(secrets.iter().map(|s| gathered.authenticate(s))).await;
    for (secret, answer) in secrets.iter().zip(answers) {
        let expected = alone.authenticate(secret).await.unwrap();
        assert_eq!(seen(&answer.unwrap()), seen(&expected), "{secret}");
    }
    let holder = |secret: &str| {
        let gathered = gathered.clone();
        let secret = secret.to_owned();
        async move { seen(&gathered.authenticate(&secret).await.unwrap()) }
    };
    assert_eq!(
        holder(&a.secret).await,
        Some((
            a.id,
            "app-a".to_owned(),
            None,
            vec!["submit".to_owned(), "read".to_owned()]
        ))
    );
    assert_eq!(
        holder(&b.secret).await.map(|h| (h.1, h.2)),
        Some(("app-b".to_owned(), Some("scope-b".to_owned())))
    );
    assert_eq!(holder(&revoked.secret).await, None);
    assert_eq!(holder(&unknown).await, None);

    // Revoked now: the next lookup, alone or in a group, refuses it.
    tokens::revoke(&db.url, a.id).await.unwrap();
    let again = futures_util::future::join_all(
        [&a.secret, &b.secret, &a.secret]
            .into_iter()
            .map(|s| gathered.authenticate(s)),
    )
    .await;
    let again: Vec<_> = again
        .into_iter()
        .map(|h| seen(&h.unwrap()).map(|h| h.0))
        .collect();
    assert_eq!(again, vec![None, Some(b.id), None]);
}

/// Lookups that queue while a reader is busy are read by one statement: with the tokens
/// table locked, the first group's statement waits on the lock, and it is the gathered
/// statement holding the lookups that were queued together, not a lookup of its own.
#[tokio::test]
async fn lookups_that_queue_together_are_read_by_one_statement() {
    let db = common::test_db().await;
    let a = token(&db.url, "app-a", None, &["read"]).await;
    let gathered = common::service::tasklane(db.pool.clone(), []).with_token_gathering(1);
    let mut locker = db.client().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE tasklane.api_tokens IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    let asking = {
        let (gathered, secret) = (gathered.clone(), a.secret.clone());
        tokio::spawn(async move {
            futures_util::future::join_all((0..100).map(|_| gathered.authenticate(&secret))).await
        })
    };
    let watcher = db.client().await;
    let waiting: String = common::wait::eventually(
        std::time::Duration::from_secs(30),
        "a lookup waiting on the locked tokens table",
        || async {
            watcher
                .query_opt(
                    "SELECT query FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .await
                .unwrap()
                .map(|row| row.get::<_, String>(0))
        },
    )
    .await;
    assert!(
        waiting.contains("token_hash = ANY($1::bytea[])"),
        "the first group is read by the gathered statement: {waiting}"
    );
    lock.commit().await.unwrap();
    let answers = asking.await.unwrap();
    assert!(answers
        .iter()
        .all(|answer| seen(answer.as_ref().unwrap()).map(|h| h.0) == Some(a.id)));
}
