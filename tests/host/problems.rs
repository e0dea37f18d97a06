//! The problem catalog (docs/problems.json) and the documents rendered from
//! it: the Rust side of the fixture the JS package is held to as well
//! (tests/fixtures/problem-documents.json).

use idempotency_ledger::contract::answer::refusal_answer;
use idempotency_ledger::ledger::Refusal;
use idempotency_ledger::protocol::{AppResponse, Problem, ProblemKind, PROBLEM_CONTENT_TYPE};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/problem-documents.json")).expect("fixture")
}

fn lower_headers(r: &AppResponse) -> Vec<(String, String)> {
    r.headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect()
}

fn expected_headers(case: &Value) -> Vec<(String, String)> {
    case["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_string(),
                pair[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_problem_kind_has_exactly_one_catalog_entry() {
    let mut slugs: Vec<&str> = ProblemKind::ALL.iter().map(|k| k.slug()).collect();
    slugs.sort_unstable();
    assert_eq!(
        slugs,
        idempotency_ledger::protocol::problem::catalog_slugs(),
        "ProblemKind and docs/problems.json must name the same slugs"
    );
    for kind in ProblemKind::ALL {
        assert!((400..=599).contains(&kind.status()), "{kind:?}");
        assert!(!kind.title().is_empty(), "{kind:?}");
        assert_eq!(ProblemKind::from_slug(kind.slug()), Some(kind));
    }
}

#[test]
fn refusals_render_the_fixture_documents_byte_for_byte() {
    let cases = fixture()["refusals"].as_array().unwrap().clone();
    assert!(cases.len() >= 6);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let refusal: Refusal = serde_json::from_value(case["refusal"].clone()).expect(name);
        let (answer, _) = refusal_answer(refusal);
        assert_eq!(
            answer.status,
            case["status"].as_u64().unwrap() as u16,
            "{name}"
        );
        assert_eq!(lower_headers(&answer), expected_headers(&case), "{name}");
        assert_eq!(
            String::from_utf8(answer.body).unwrap(),
            case["body"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn catalog_problems_render_the_fixture_documents_byte_for_byte() {
    for case in fixture()["problems"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let kind = ProblemKind::from_slug(case["slug"].as_str().unwrap()).expect(name);
        let mut problem = match case["detail"].as_str() {
            Some(detail) => Problem::new(kind, detail),
            None => Problem::of(kind),
        };
        if let Some(args) = case["args"].as_object() {
            for (arg, value) in args {
                problem = problem.arg(arg, value.as_str().unwrap());
            }
        }
        let answer = AppResponse::from(&problem);
        assert_eq!(
            answer.status,
            case["status"].as_u64().unwrap() as u16,
            "{name}"
        );
        assert_eq!(lower_headers(&answer), expected_headers(case), "{name}");
        assert_eq!(
            String::from_utf8(answer.body).unwrap(),
            case["body"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn final_problems_and_replays_say_x_should_retry_false_and_nothing_else_does() {
    use idempotency_ledger::contract::answer::replay;
    use idempotency_ledger::protocol::{StoredResponse, SHOULD_RETRY_HEADER};
    let finals: Vec<&str> = ProblemKind::ALL
        .into_iter()
        .filter(|k| k.is_final())
        .map(|k| k.slug())
        .collect();
    assert_eq!(
        finals,
        [
            "forbidden",
            "idempotency-key-missing",
            "idempotency-key-invalid",
            "request-too-large",
            "idempotency-key-reused",
            "method-not-supported",
            "idempotency-response-not-retained",
            "invalid-query",
        ],
        "the catalog's final refusals (docs/contract.md §2.5)"
    );
    let says = |r: &AppResponse| {
        r.headers
            .iter()
            .find(|(n, _)| n == SHOULD_RETRY_HEADER)
            .map(|(_, v)| v.clone())
    };
    for kind in ProblemKind::ALL {
        let answer = AppResponse::from(&Problem::new(kind, "d"));
        let want = kind.is_final().then(|| "false".to_string());
        assert_eq!(says(&answer), want, "{kind:?}");
    }
    let stored = StoredResponse {
        status: 500,
        headers: vec![("content-type".into(), "text/plain".into())],
        body: Some(b"boom".to_vec()),
    };
    assert_eq!(
        says(&replay(stored)).as_deref(),
        Some("false"),
        "a replayed 500"
    );
}

#[test]
fn renders_rfc9457_members_and_extensions() {
    let p = Problem::new(ProblemKind::KeyReused, "the body differs").with("differs", vec!["body"]);
    let doc = p.to_json();
    assert_eq!(
        doc["type"],
        "https://idempotency-ledger.dev/problems/idempotency-key-reused"
    );
    assert_eq!(doc["status"], 422);
    assert_eq!(doc["title"], ProblemKind::KeyReused.title());
    assert_eq!(doc["detail"], "the body differs");
    assert_eq!(doc["differs"][0], "body");
}

#[test]
fn a_problem_answers_with_its_status_media_type_and_headers() {
    let p = Problem::new(ProblemKind::Unauthorized, "no token")
        .with_header("WWW-Authenticate", "Bearer");
    let r = AppResponse::from(&p);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.headers,
        vec![
            ("content-type".to_string(), PROBLEM_CONTENT_TYPE.to_string()),
            ("www-authenticate".to_string(), "Bearer".to_string()),
        ]
    );
    let doc: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(doc["detail"], "no token");
}
