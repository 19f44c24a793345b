//! The web console's server side: `/ui` and its assets served without a token under a
//! strict CSP, and the read routes the console relies on (`/v1/whoami`,
//! `/v1/admin/activity`, the listing's `source_id` filter). The console in a browser is
//! tested by `scripts/check-console.sh`.

use crate::common;

use common::api::{self, Answer, Api, ALL};
use common::in_process::InProcess;
use common::serve::Options;
use serde_json::{json, Value};

async fn fetch(api: &Api, path: &str, etag: Option<&str>) -> (Answer, String) {
    let mut request = api.http.get(format!("{}{path}", api.base));
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    let response = api.with_token("").execute(request).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("read body");
    let answer = Answer {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    };
    (answer, text)
}

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn the_console_is_served_without_a_token_under_a_strict_csp() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let anonymous = serve.api("");

    for path in ["/ui", "/ui/"] {
        let (page, html) = fetch(&anonymous, path, None).await;
        assert_eq!(page.status, 200, "{path}");
        assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
        let csp = header(&page, "content-security-policy");
        assert!(csp.starts_with("default-src 'self';"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(header(&page, "x-content-type-options"), "nosniff");
        assert_eq!(header(&page, "referrer-policy"), "no-referrer");
        assert!(html.contains(r#"<script type="module" src="/ui/assets/app.js">"#));
        // Nothing from another origin: every src and href is a path on this server.
        for attr in ["src=\"", "href=\""] {
            for value in html.split(attr).skip(1) {
                assert!(value.starts_with("/ui/"), "{attr}{value}");
            }
        }
    }

    let (script, text) = fetch(&anonymous, "/ui/assets/app.js", None).await;
    assert_eq!(script.status, 200);
    assert_eq!(
        header(&script, "content-type"),
        "text/javascript; charset=utf-8"
    );
    assert!(header(&script, "content-security-policy").starts_with("default-src 'self'"));
    assert!(text.contains("sessionStorage") || text.contains("./api.js"));
    let (library, _) = fetch(
        &anonymous,
        "/ui/assets/vendor/htm-preact-standalone.mjs",
        None,
    )
    .await;
    assert_eq!(library.status, 200);

    // Revalidation: the same ETag answers 304 without a body.
    let etag = header(&script, "etag").to_owned();
    let (again, body) = fetch(&anonymous, "/ui/assets/app.js", Some(&etag)).await;
    assert_eq!((again.status, body.as_str()), (304, ""));

    // Only the embedded files: anything else is the API's 404.
    for missing in ["/ui/assets/nope.js", "/ui/assets/../Cargo.toml", "/ui/x"] {
        let (answer, _) = fetch(&anonymous, missing, None).await;
        assert_eq!(
            (answer.status, answer.code()),
            (404, "no_route"),
            "{missing}"
        );
    }
}

#[tokio::test]
async fn whoami_tells_a_token_what_it_may_do() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;

    let app = serve.api(&api::token(&db.url, "mail", None, &["read", "submit"]).await);
    let me = app.get("/v1/whoami").await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(
        me.body,
        json!({"app": "mail", "scope_id": null, "permissions": ["read", "submit"],
            "task_types": ["extract", "noop", "openai", "remote", "sleep"]})
    );

    let scoped = serve.api(&api::token(&db.url, "mail", Some("box-1"), &["read"]).await);
    let me = scoped.get("/v1/whoami").await;
    assert_eq!(me.body["scope_id"], "box-1");
    assert_eq!(me.body["permissions"], json!(["read"]));

    // Any valid token may ask, and only a valid one.
    let worker = serve.api(&api::token(&db.url, "mail", None, &["work"]).await);
    assert_eq!(worker.get("/v1/whoami").await.status, 200);
    assert_eq!(app.with_token("").get("/v1/whoami").await.status, 401);
    let unknown = app.with_token("tl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(unknown.get("/v1/whoami").await.status, 401);
    let answer = app.get("/v1/whoami?x=1").await;
    assert_eq!((answer.status, answer.code()), (422, "unknown_field"));
}

#[tokio::test]
async fn activity_counts_the_last_hour_per_minute() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let admin = serve.api(&api::token(&db.url, "ops", None, &["admin"]).await);
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);

    assert_eq!(mail.get("/v1/admin/activity").await.status, 403);
    let empty = admin.get("/v1/admin/activity").await;
    assert_eq!(empty.status, 200, "{:?}", empty.body);
    let minutes = empty.body["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    assert!(minutes
        .iter()
        .all(|m| m["submitted"] == 0 && m["succeeded"] == 0));

    let done = mail.submit("noop", "s", "a", json!({})).await;
    let done = done.body["id"].as_str().unwrap().to_owned();
    let queued = mail.submit("remote", "s", "b", json!({})).await;
    let cancelled = mail.submit("remote", "s", "c", json!({})).await;
    let cancelled = cancelled.body["id"].as_str().unwrap();
    assert_eq!(queued.status, 202);
    mail.post(&format!("/v1/tasks/{cancelled}/cancel"), &json!({}))
        .await;
    mail.wait_for(&done, |t| t["state"] == "succeeded").await;

    let activity = admin.get("/v1/admin/activity").await;
    let minutes = activity.body["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    let sum = |field: &str| {
        minutes
            .iter()
            .map(|m| m[field].as_i64().unwrap())
            .sum::<i64>()
    };
    assert_eq!(
        (
            sum("submitted"),
            sum("succeeded"),
            sum("failed"),
            sum("cancelled")
        ),
        (3, 1, 0, 1)
    );
    // Oldest first, a minute apart, the last one the current minute.
    let times: Vec<chrono::DateTime<chrono::Utc>> = minutes
        .iter()
        .map(|m| m["minute"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| (w[1] - w[0]).num_seconds() == 60));
}

#[tokio::test]
async fn the_listing_filters_by_exact_source() {
    let db = common::test_db().await;
    let serve = InProcess::start(&db.url, Options::default()).await;
    let mail = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    for (key, source) in [
        ("a", "conv-1"),
        ("b", "conv-1"),
        ("c", "conv-%"),
        ("d", "conv-12"),
    ] {
        let answer = mail
            .submit("remote", "s", key, json!({"source_id": source}))
            .await;
        assert_eq!(answer.status, 202);
    }
    let sources = |answer: &Answer| -> Vec<String> {
        answer.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["source_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let page = mail.get("/v1/tasks?source_id=conv-1").await;
    assert_eq!(sources(&page), ["conv-1", "conv-1"]);
    // `%` is an ordinary character, never a pattern.
    let page = mail.get("/v1/tasks?source_id=conv-%25").await;
    assert_eq!(sources(&page), ["conv-%"]);
    let page = mail.get("/v1/tasks?source_id=conv-1&limit=1").await;
    assert_eq!(sources(&page), ["conv-1"]);
    let next = page.body["next_cursor"].as_str().unwrap();
    let rest = mail
        .get(&format!("/v1/tasks?source_id=conv-1&cursor={next}"))
        .await;
    assert_eq!(sources(&rest), ["conv-1"]);
    assert!(rest.body["next_cursor"].is_null());
}
