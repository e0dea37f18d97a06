//! Admission (docs/contract.md §2.1–§2.4): who gets in, as whom, under which key.

use super::*;

fn tokens() -> TokenMap {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    TokenMap::parse(&format!(r#"{{"{acme}":"acme"}}"#)).unwrap()
}

fn unauthorized(header_value: Option<&str>) -> AppResponse {
    let problem = authenticate(header_value, &tokens()).expect_err("must be refused");
    let answer = AppResponse::from(&problem);
    expect_problem(&answer, 401, "unauthorized");
    assert_eq!(header(&answer, "www-authenticate"), Some("Bearer"));
    answer
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_the_token_trimmed() {
    for value in [
        "Bearer dev-token-acme",
        "bearer dev-token-acme",
        "BEARER dev-token-acme",
        "Bearer   dev-token-acme  ",
        " Bearer dev-token-acme",
    ] {
        assert_eq!(
            authenticate(Some(value), &tokens()).as_deref(),
            Ok("acme"),
            "{value:?}"
        );
    }
}

#[test]
fn missing_empty_foreign_or_unknown_credentials_are_401() {
    for value in [
        None,
        Some(""),
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearer \t "),
        Some("Basic ZGV2LXRva2VuLWFjbWU="),
        Some("Token dev-token-acme"),
        Some("Bearerdev-token-acme"),
        Some("Bearer dev-token-acmE"),
        Some("Bearer dev-token-globex"),
        Some("dev-token-acme"),
    ] {
        unauthorized(value);
    }
}

#[test]
fn only_get_and_head_health_skip_authentication() {
    for (method, path, expected) in [
        ("GET", "/health", GatewayRoute::Health),
        ("HEAD", "/health", GatewayRoute::Health),
        ("POST", "/health", GatewayRoute::Application),
        ("GET", "/health/", GatewayRoute::Application),
        (
            "GET",
            "/v1/idempotency-keys/a%20b",
            GatewayRoute::KeyIntrospection("a%20b"),
        ),
        ("GET", "/v1/idempotency/stats", GatewayRoute::Stats),
        ("POST", "/v1/idempotency/stats", GatewayRoute::Application),
        ("GET", "/v1/idempotency-keys", GatewayRoute::KeyList),
        ("POST", "/v1/idempotency-keys", GatewayRoute::Application),
        ("HEAD", "/v1/idempotency-keys", GatewayRoute::Application),
        ("GET", "/openapi.json", GatewayRoute::OpenApi),
        ("POST", "/openapi.json", GatewayRoute::Application),
        (
            "DELETE",
            "/v1/idempotency-keys/a%20b",
            GatewayRoute::KeyEviction("a%20b"),
        ),
        ("DELETE", "/v1/idempotency-keys", GatewayRoute::Application),
        ("DELETE", "/v1/orders/1", GatewayRoute::Application),
    ] {
        assert_eq!(admission::route(method, path), expected, "{method} {path}");
    }
}

#[test]
fn the_openapi_document_covers_every_gateway_route_status_and_slug() {
    let doc: Value = serde_json::from_str(admission::OPENAPI_DOCUMENT).expect("valid JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/v1/orders",
        "/v1/orders/{id}",
        "/v1/idempotency-keys",
        "/v1/idempotency-keys/{key}",
        "/v1/idempotency/stats",
        "/health",
        "/openapi.json",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
    let create = &paths["/v1/orders"]["post"]["responses"];
    for status in [
        "201", "400", "401", "403", "409", "413", "422", "429", "500", "503",
    ] {
        assert!(
            create.get(status).is_some(),
            "POST /v1/orders documents {status}"
        );
    }
    // Every slug the gateway can answer in embedded mode is named.
    let text = admission::OPENAPI_DOCUMENT;
    for slug in [
        "unauthorized",
        "misconfigured",
        "idempotency-key-missing",
        "idempotency-key-invalid",
        "request-too-large",
        "request-body-unreadable",
        "idempotency-key-in-use",
        "idempotency-key-reused",
        "idempotency-response-not-retained",
        "idempotency-store-unavailable",
        "idempotency-ledger-full",
        "invalid-order",
        "invalid-query",
        "not-found",
        "forbidden",
    ] {
        assert!(text.contains(&format!("`{slug}`")), "{slug} is documented");
    }
    // Evicting a key: every status it answers is documented.
    let evict = &paths["/v1/idempotency-keys/{key}"]["delete"]["responses"];
    for status in ["200", "400", "401", "404", "409", "500", "503"] {
        assert!(
            evict.get(status).is_some(),
            "DELETE /v1/idempotency-keys/{{key}} documents {status}"
        );
    }
    let served = admission::openapi();
    assert_eq!(served.status, 200);
    assert_eq!(served.body, text.as_bytes());
}

fn head<'a>(method: &'a str, length: Option<&'a str>, key: Option<&'a str>) -> RequestHead<'a> {
    RequestHead {
        method,
        content_length: length,
        idempotency_key: key,
    }
}

#[test]
fn a_declared_body_over_the_limit_is_413_before_the_key_is_read() {
    let c = config(&[("MAX_REQUEST_BODY_BYTES", "10")]);
    let r = admission::admit(&head("POST", Some("11"), Some("\"bad")), &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::TooLarge);
    let answer = AppResponse::from(&r.problem);
    assert_eq!(
        (answer.status, slug(&answer)),
        (413, "request-too-large".to_string())
    );
    // Unprotected methods are bounded too.
    assert!(admission::admit(&head("PUT", Some("11"), None), &c).is_err());
}

#[test]
fn a_missing_or_unparsable_content_length_defers_to_the_real_length() {
    let c = config(&[("MAX_REQUEST_BODY_BYTES", "10")]);
    for length in [
        None,
        Some(""),
        Some("abc"),
        Some("-1"),
        Some("10, 10"),
        Some(" 10 "),
    ] {
        assert_eq!(
            admission::admit(&head("POST", length, Some("k")), &c),
            Ok(Protection::Keyed("k".into())),
            "{length:?}"
        );
    }
    assert!(check_body_length(10, &c).is_ok());
    let r = check_body_length(11, &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::TooLarge);
}

#[test]
fn protected_methods_need_a_valid_key() {
    let c = config(&[]);
    let r = admission::admit(&head("POST", None, None), &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::KeyMissing);
    assert_eq!(
        slug(&AppResponse::from(&r.problem)),
        "idempotency-key-missing"
    );
    for bad in ["", "\"open", "a, b", "\"a\\x\"", "\u{7f}"] {
        let r = admission::admit(&head("PATCH", None, Some(bad)), &c).unwrap_err();
        assert_eq!(r.outcome, Disposition::KeyInvalid, "{bad:?}");
        assert_eq!(
            slug(&AppResponse::from(&r.problem)),
            "idempotency-key-invalid"
        );
    }
    assert_eq!(
        admission::admit(&head("POST", None, Some("\"a,b\";x=1")), &c),
        Ok(Protection::Keyed("a,b".into()))
    );
}

#[test]
fn unprotected_methods_and_optional_keys_run_without_the_ledger() {
    let c = config(&[]);
    // An unprotected method ignores even a malformed key.
    let p = admission::admit(&head("GET", None, Some("\"bad")), &c).unwrap();
    assert_eq!(p, Protection::Unprotected);
    assert!(!p.is_logged());
    let optional = config(&[("IDEMPOTENCY_REQUIRED", "false")]);
    let p = admission::admit(&head("POST", None, None), &optional).unwrap();
    assert_eq!(p, Protection::UnprotectedNoKey);
    assert!(p.is_logged());
    // The raw method is compared: a lowercase method is not protected.
    assert_eq!(
        admission::admit(&head("post", None, None), &c),
        Ok(Protection::Unprotected)
    );
}

#[test]
fn introspection_keys_are_percent_decoded_and_validated() {
    assert_eq!(
        introspection_key("order%2F7%20a").as_deref(),
        Ok("order/7 a")
    );
    for bad in ["", "%FF", "%00", &"k".repeat(256)] {
        let problem = introspection_key(bad).unwrap_err();
        assert_eq!(
            slug(&AppResponse::from(&problem)),
            "idempotency-key-invalid",
            "{bad:?}"
        );
    }
}

#[test]
fn misconfiguration_is_500_and_never_names_a_secret_value() {
    let answer = AppResponse::from(&Problem::misconfigured("API_TOKENS"));
    assert_eq!(
        (answer.status, slug(&answer)),
        (500, "misconfigured".to_string())
    );
    assert!(problem(&answer)["detail"]
        .as_str()
        .unwrap()
        .contains("API_TOKENS"));
}

#[test]
fn the_target_is_the_url_after_its_authority_verbatim() {
    use idempotency_ledger::protocol::{path_of, target_of};
    assert_eq!(
        target_of("https://gw.test/v1/orders?b=2&a=1"),
        "/v1/orders?b=2&a=1"
    );
    assert_eq!(
        target_of("https://gw.test/a%2Fb/../c?x#frag"),
        "/a%2Fb/../c?x"
    );
    assert_eq!(target_of("https://gw.test"), "/");
    assert_eq!(
        target_of("https://tenant-ledger/rpc/v1/claim"),
        "/rpc/v1/claim"
    );
    assert_eq!(path_of("/rpc/v1/claim?x=1"), "/rpc/v1/claim");
    assert_eq!(path_of("/"), "/");
}

fn both_kinds() -> Tokens {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let operator = hex::encode(Sha256::digest(b"operator-token-acme"));
    Tokens::parse(
        &format!(r#"{{"{acme}":"acme"}}"#),
        Some(&format!(r#"{{"{operator}":"acme"}}"#)),
    )
    .unwrap()
}

#[test]
fn a_token_names_its_tenant_and_its_kind() {
    let tokens = both_kinds();
    let who = |v: &str| identify(Some(v), &tokens);
    assert_eq!(
        who("Bearer dev-token-acme"),
        Ok(Caller {
            tenant: "acme".into(),
            kind: TokenKind::Tenant
        })
    );
    assert_eq!(
        who("bearer  operator-token-acme "),
        Ok(Caller {
            tenant: "acme".into(),
            kind: TokenKind::Operator
        })
    );
    let unknown = identify(Some("Bearer nobody"), &tokens).unwrap_err();
    expect_problem(&AppResponse::from(&unknown), 401, "unauthorized");
    // Without OPERATOR_TOKENS an operator's token is simply unknown.
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let tenants_only = Tokens::parse(&format!(r#"{{"{acme}":"acme"}}"#), None).unwrap();
    assert!(identify(Some("Bearer operator-token-acme"), &tenants_only).is_err());
}

#[test]
fn an_operator_token_reaches_the_reads_and_an_eviction_only_never_the_application() {
    use admission::Access;
    let config = Config::from_lookup(&|_| None).unwrap();
    let reads = [
        ("GET", "/v1/idempotency/stats"),
        ("GET", "/v1/idempotency-keys"),
        ("GET", "/v1/idempotency-keys/k-1"),
    ];
    for (method, path) in reads {
        let access = admission::route(method, path).access();
        assert_eq!(access, Access::TenantOrOperator, "{method} {path}");
        assert!(access.admits(TokenKind::Operator, &config));
        assert!(access.admits(TokenKind::Tenant, &config));
    }
    let evict = admission::route("DELETE", "/v1/idempotency-keys/k-1").access();
    assert_eq!(evict, Access::Evict);
    assert!(evict.admits(TokenKind::Operator, &config));
    // Every protected request, every replay (a stored body), everything
    // forwarded to the origin: the application, whatever the method or path.
    for (method, path) in [
        ("POST", "/v1/orders"),
        ("PATCH", "/v1/orders/1"),
        ("GET", "/v1/orders"),
        ("GET", "/v1/orders/1"),
        ("POST", "/v1/idempotency/stats"),
        ("HEAD", "/v1/idempotency-keys"),
        ("DELETE", "/v1/orders/1"),
        ("DELETE", "/v1/idempotency-keys"),
        ("PROPFIND", "/charges"),
        ("GET", "/console"),
    ] {
        let access = admission::route(method, path).access();
        assert_eq!(access, Access::TenantOnly, "{method} {path}");
        assert!(
            !access.admits(TokenKind::Operator, &config),
            "{method} {path}"
        );
        assert!(access.admits(TokenKind::Tenant, &config), "{method} {path}");
    }
    for (method, path) in [("GET", "/health"), ("GET", "/openapi.json")] {
        assert_eq!(admission::route(method, path).access(), Access::Anyone);
    }
}

#[test]
fn evicting_a_key_needs_an_operator_token_unless_api_tokens_are_opted_in() {
    use admission::Access;
    let evict = admission::route("DELETE", "/v1/idempotency-keys/paid-1").access();
    let default = Config::from_lookup(&|_| None).unwrap();
    assert!(!default.evict_with_api_tokens, "off by default");
    assert!(!evict.admits(TokenKind::Tenant, &default));
    assert!(evict.admits(TokenKind::Operator, &default));
    let opted =
        Config::from_lookup(&|n| (n == "EVICT_WITH_API_TOKENS").then(|| "true".into())).unwrap();
    assert!(evict.admits(TokenKind::Tenant, &opted));
    assert!(evict.admits(TokenKind::Operator, &opted));
    let off =
        Config::from_lookup(&|n| (n == "EVICT_WITH_API_TOKENS").then(|| "false".into())).unwrap();
    assert!(!evict.admits(TokenKind::Tenant, &off));
    // The refusal says which token evicting needs, and how to opt in.
    let answer = AppResponse::from(&Access::Evict.refusal());
    let doc = expect_problem(&answer, 403, "forbidden");
    let detail = doc["detail"].as_str().unwrap();
    assert!(
        detail.contains("OPERATOR_TOKENS") && detail.contains("EVICT_WITH_API_TOKENS"),
        "{detail}"
    );
    assert_eq!(header(&answer, "x-should-retry"), Some("false"));
}

#[test]
fn a_refused_operator_token_is_a_final_403_forbidden() {
    let answer = AppResponse::from(&admission::Access::TenantOnly.refusal());
    let doc = expect_problem(&answer, 403, "forbidden");
    assert!(doc["detail"].as_str().unwrap().contains("operator token"));
    assert_eq!(header(&answer, "x-should-retry"), Some("false"));
    assert_eq!(
        header(&answer, "www-authenticate"),
        Some(r#"Bearer error="insufficient_scope""#)
    );
}
