//! Tenancy matrix and concurrent idempotency, driven by the served document so that no endpoint
//! is forgotten: another platform's key gets 404 on every operation that addresses one of
//! platform A's objects by id (in the path or the body), so does A's own key with a malformed,
//! overlong or unknown id, A's ids are invalid cursors in B's lists, and B's lists never show
//! A's objects.

use bankd::model::ids;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, TestApp, api_tests};

api_tests!(
    another_platforms_key_gets_404_on_every_operation_that_names_an_object,
    a_malformed_overlong_or_unknown_id_is_404_on_every_operation_that_names_an_object,
    foreign_ids_are_invalid_cursors_and_never_listed,
    foreign_ids_are_invalid_cursors_in_the_lists_of_an_object,
    both_cursors_conflict_whatever_their_values,
    fifty_concurrent_requests_with_one_idempotency_key_have_exactly_one_effect,
);

/// One object of every kind on platform A, by path parameter name.
struct Objects(Vec<(&'static str, String)>);

impl Objects {
    fn id(&self, param: &str) -> &str {
        self.0
            .iter()
            .find(|(p, _)| *p == param)
            .map(|(_, id)| id.as_str())
            .unwrap_or_else(|| panic!("no object for {param}"))
    }
}

async fn seed_a(app: &TestApp) -> Objects {
    let k = &app.a.key;
    // First, so that every later change has a delivery attempt to this endpoint. An address
    // literal: the name of a public host would need a resolver, and this process sends nothing.
    let endpoint = app
        .post(
            "/webhook-endpoints",
            k,
            &json!({"url": "https://93.184.215.14/hooks"}),
        )
        .await
        .expect(200);
    let wend = endpoint["id"].as_str().expect("id").to_owned();
    let person = app
        .post(
            "/entities/person",
            k,
            &json!({"first_name": "Ada", "last_name": "Lovelace"}),
        )
        .await
        .expect(200);
    let person = person["id"].as_str().expect("id").to_owned();
    let account = app
        .post(
            "/bank-accounts",
            k,
            &json!({"entity_id": person, "description": "Main account"}),
        )
        .await
        .expect(200);
    let bacc = account["id"].as_str().expect("id").to_owned();
    let acno = account["default_account_number_id"]
        .as_str()
        .expect("acno")
        .to_owned();
    let other = app
        .post(
            "/bank-accounts",
            k,
            &json!({"entity_id": person, "description": "Other account"}),
        )
        .await
        .expect(200);
    let other = other["id"].as_str().expect("id").to_owned();
    let credit = app
        .post("/simulate/receive-ach-credit", k, &json!({"destination_account_number_id": acno, "amount": 10_000, "company_id": "EMPLOYER01", "company_name": "Employer"}))
        .await
        .expect(200);
    let acht = credit["id"].as_str().expect("id").to_owned();
    let book = app
        .post("/transfers/book", k, &json!({"amount": 100, "sender_bank_account_id": bacc, "receiver_bank_account_id": other, "hold": true}))
        .await
        .expect(200);
    let book = book["id"].as_str().expect("id").to_owned();
    let rule = app
        .post("/ach-positive-pay-rules", k, &json!({"bank_account_id": bacc, "ach_company_id": "ACME000001", "amount_condition": "any_amount", "description": "Any"}))
        .await
        .expect(200);
    let rule = rule["id"].as_str().expect("id").to_owned();
    let cp = app
        .post(
            "/counterparties",
            k,
            &json!({"routing_number": "021000021", "account_number": "123456789"}),
        )
        .await
        .expect(200);
    let cp = cp["id"].as_str().expect("id").to_owned();
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"hello".to_vec()).file_name("a.txt"),
        )
        .text("type", "other")
        .text("entity_id", person.clone());
    let resp = app
        .client
        .post(format!("{}/documents", app.base))
        .basic_auth("", Some(k))
        .multipart(form)
        .send()
        .await
        .expect("sent");
    let doc = crate::helpers::answer(resp).await.expect(200);
    let doc = doc["id"].as_str().expect("id").to_owned();
    let events = app.get("/events?limit=1", k).await.expect(200);
    let evnt = events["events"][0]["id"]
        .as_str()
        .expect("an event")
        .to_owned();
    let deliveries = app
        .get(&format!("/webhook-endpoints/{wend}/deliveries?limit=1"), k)
        .await
        .expect(200);
    let wdlv = deliveries["deliveries"][0]["id"]
        .as_str()
        .expect("a delivery")
        .to_owned();
    Objects(vec![
        ("event_id", evnt),
        ("webhook_endpoint_id", wend),
        ("webhook_delivery_id", wdlv),
        ("entity_id", person),
        ("bank_account_id", bacc),
        ("account_number_id", acno),
        ("ach_positive_pay_rule_id", rule),
        ("counterparty_id", cp),
        ("document_id", doc),
        ("book_transfer_id", book),
        ("ach_transfer_id", acht),
    ])
}

/// A body that passes shape validation, so that the answer is about the object, not the body.
/// Where the body names an entity it is `entity`, one of the caller's own platform, so that only
/// the path id can be the one not found.
fn valid_body(operation_id: &str, entity: &str) -> Option<Value> {
    Some(match operation_id {
        "update_person_entity" => json!({"middle_name": "X"}),
        "update_business_entity" => json!({"description": "X"}),
        "create_associated_person" => {
            json!({"person_entity_id": entity, "roles": ["control_person"]})
        }
        "submit_additional_requirements" => json!({}),
        "update_bank_account" => json!({"display_name": "X"}),
        "add_bank_account_owner" => json!({"entity_id": entity}),
        "create_account_number" | "update_account_number" => json!({"description": "X"}),
        "clear_book_transfer" => json!({}),
        "update_webhook_endpoint" => json!({"description": "X"}),
        _ => return None,
    })
}

/// An operation of the document that names an object by a path id.
struct IdOperation {
    method: Method,
    template: String,
    operation_id: String,
    /// The path parameter, e.g. `bank_account_id`.
    param: String,
    /// Whether `param` is the path's first id (the one a foreign key is refused on).
    first: bool,
}

impl IdOperation {
    /// The path with `id` for the parameter and the caller's own objects for any other.
    fn path(&self, id: &str, own: &Objects) -> String {
        let mut path = self.template.replace(&format!("{{{}}}", self.param), id);
        for (param, object) in &own.0 {
            path = path.replace(&format!("{{{param}}}"), object);
        }
        path
    }

    /// `<resource>_not_found` for the parameter's resource.
    fn not_found(&self) -> String {
        let resource = self.param.strip_suffix("_id").unwrap_or(&self.param);
        format!("{resource}_not_found")
    }

    async fn call(
        &self,
        app: &TestApp,
        id: &str,
        key: &str,
        own: &Objects,
        entity: &str,
    ) -> Answer {
        let body = valid_body(&self.operation_id, entity);
        app.call(
            self.method.clone(),
            &self.path(id, own),
            Some(key),
            body.as_ref(),
            &[],
        )
        .await
    }

    #[track_caller]
    fn assert_not_found(&self, r: &Answer, case: &str, id: &str) {
        let what = format!(
            "{} ({} {}) with {case} {id:?}",
            self.operation_id, self.method, self.template
        );
        assert_error(r, 404, &self.not_found(), &what);
    }
}

/// Asserts the status and exact error `code` of `r`, naming `what` was sent.
#[track_caller]
fn assert_error(r: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(
        (r.status.as_u16(), r.json["code"].as_str()),
        (status, Some(code)),
        "{what}: {}",
        r.json
    );
}

/// Every operation of the served document with one id in its path, but the signed download
/// (authorised by a signed link, not by a key: tested in documents).
fn id_operations() -> Vec<IdOperation> {
    let doc = bank_api_routes::document();
    let mut ops = Vec::new();
    for (template, item) in doc["paths"].as_object().expect("paths") {
        let params: Vec<&str> = template
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for (method, op) in item.as_object().expect("operations") {
            let operation_id = op["operationId"].as_str().expect("operationId");
            if operation_id == "get_document_content" {
                continue;
            }
            // A path with two ids (an endpoint's delivery) is tried on each of them.
            for (i, param) in params.iter().enumerate() {
                ops.push(IdOperation {
                    method: Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                        .expect("method"),
                    template: template.clone(),
                    operation_id: operation_id.to_owned(),
                    param: (*param).to_owned(),
                    first: i == 0,
                });
            }
        }
    }
    // 35 operations address an object by a path id (one of them, an endpoint's delivery, by
    // two); the signed download is the one skipped.
    assert_eq!(ops.len(), 35, "operations with a path id, per id");
    ops
}

async fn another_platforms_key_gets_404_on_every_operation_that_names_an_object(app: TestApp) {
    let objects = seed_a(&app).await;
    for op in id_operations().into_iter().filter(|op| op.first) {
        let id = objects.id(&op.param);
        let r = op
            .call(&app, id, &app.b.key, &objects, &app.b.root_entity_id)
            .await;
        op.assert_not_found(&r, "another platform's key and A's", id);
    }
    // Ids of A in the body of B's requests are not found either.
    let b = &app.b.key;
    let body_refs: [(&str, Value); 5] = [
        (
            "/bank-accounts",
            json!({"entity_id": objects.id("entity_id"), "description": "Stolen"}),
        ),
        (
            "/ach-positive-pay-rules",
            json!({"bank_account_id": objects.id("bank_account_id"), "ach_company_id": "ACME000002", "amount_condition": "any_amount", "description": "x"}),
        ),
        (
            "/transfers/book",
            json!({"amount": 1, "sender_bank_account_id": objects.id("bank_account_id"), "receiver_bank_account_id": app.b.root_accounts[0]}),
        ),
        (
            "/transfers/book",
            json!({"amount": 1, "sender_bank_account_id": app.b.root_accounts[0], "receiver_bank_account_id": objects.id("bank_account_id")}),
        ),
        (
            "/simulate/receive-ach-credit",
            json!({"destination_account_number_id": objects.id("account_number_id"), "amount": 1, "company_id": "EMPLOYER01", "company_name": "x"}),
        ),
    ];
    for (path, body) in body_refs {
        let r = app.post(path, b, &body).await;
        assert_eq!(
            r.status.as_u16(),
            404,
            "{path} with A's id in B's body: {}",
            r.json
        );
    }
    // And nothing of A changed.
    let acct = app
        .get(
            &format!("/bank-accounts/{}", objects.id("bank_account_id")),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(acct["owners"].as_array().map(Vec::len), Some(1), "{acct}");
    assert_eq!(acct["display_name"], Value::Null);
}

async fn a_malformed_overlong_or_unknown_id_is_404_on_every_operation_that_names_an_object(
    app: TestApp,
) {
    let objects = seed_a(&app).await;
    let (a, person) = (&app.a.key, objects.id("entity_id"));
    for op in id_operations() {
        let own = objects.id(&op.param);
        let (prefix, _) = own.split_once('_').expect("a prefixed id");
        let unknown = format!(
            "{prefix}_{}",
            ids::generate_suffix(chrono::Utc::now(), &mut rand::thread_rng())
        );
        assert!(ids::is_valid(prefix, &unknown), "{unknown} is well formed");
        // An object of another kind: well formed, but not this resource.
        let other_kind = match op.param.as_str() {
            "entity_id" => objects.id("bank_account_id"),
            _ => person,
        };
        let cases = [
            ("a short malformed id", "nope".to_owned()),
            (
                "an id over 64 characters",
                format!("{prefix}_{}", "A".repeat(100)),
            ),
            ("an id of 300 characters", "9".repeat(300)),
            ("a well-formed unknown id", unknown),
            ("another kind's id", other_kind.to_owned()),
        ];
        for (case, id) in &cases {
            let r = op.call(&app, id, a, &objects, person).await;
            op.assert_not_found(&r, &format!("A's own key and {case}"), id);
        }
    }
}

async fn foreign_ids_are_invalid_cursors_and_never_listed(app: TestApp) {
    let objects = seed_a(&app).await;
    let lists = [
        ("/entities", "entities", "entity_id"),
        ("/bank-accounts", "bank_accounts", "bank_account_id"),
        ("/counterparties", "counterparties", "counterparty_id"),
        ("/documents", "documents", "document_id"),
        ("/transfers/book", "transfers", "book_transfer_id"),
        ("/transfers/ach", "transfers", "ach_transfer_id"),
    ];
    let a_ids: Vec<&str> = objects.0.iter().map(|(_, id)| id.as_str()).collect();
    for (path, key, param) in lists {
        for cursor in ["starting_after", "ending_before"] {
            let r = app
                .get(
                    &format!("{path}?{cursor}={}", objects.id(param)),
                    &app.b.key,
                )
                .await;
            r.expect_error(400, "invalid_pagination_cursor");
        }
        let page = app
            .get(&format!("{path}?limit=100"), &app.b.key)
            .await
            .expect(200);
        for item in page[key].as_array().expect("list") {
            let id = item["id"].as_str().expect("id");
            assert!(!a_ids.contains(&id), "{path} shows A's {id} to B");
        }
        // A sees its own object in the same list.
        let own = app
            .get(&format!("{path}?limit=100"), &app.a.key)
            .await
            .expect(200);
        assert!(
            own[key]
                .as_array()
                .expect("list")
                .iter()
                .any(|i| i["id"] == objects.id(param)),
            "{path}: A does not see its own object"
        );
    }
}

/// The objects behind the lists that belong to an object: a business with a person linked to
/// it, and that person's bank account with its default account number.
struct Nested {
    business: String,
    person: String,
    account: String,
    account_number: String,
}

async fn seed_nested(app: &TestApp, key: &str) -> Nested {
    let id = |v: Value| v["id"].as_str().expect("id").to_owned();
    let person = id(app
        .post(
            "/entities/person",
            key,
            &json!({"first_name": "Grace", "last_name": "Hopper"}),
        )
        .await
        .expect(200));
    let business = id(app
        .post(
            "/entities/business",
            key,
            &json!({"business_name": "Compilers Inc"}),
        )
        .await
        .expect(200));
    app.post(
        &format!("/entities/{business}/associated-persons"),
        key,
        &json!({"person_entity_id": person, "roles": ["beneficial_owner"]}),
    )
    .await
    .expect(200);
    let account = app
        .post(
            "/bank-accounts",
            key,
            &json!({"entity_id": person, "description": "Nested lists"}),
        )
        .await
        .expect(200);
    let account_number = account["default_account_number_id"]
        .as_str()
        .expect("default account number")
        .to_owned();
    Nested {
        business,
        person,
        account: id(account),
        account_number,
    }
}

async fn foreign_ids_are_invalid_cursors_in_the_lists_of_an_object(app: TestApp) {
    let (a, b) = (
        seed_nested(&app, &app.a.key).await,
        seed_nested(&app, &app.b.key).await,
    );
    let persons = |n: &Nested| format!("/entities/{}/associated-persons", n.business);
    let numbers = |n: &Nested| format!("/bank-accounts/{}/account-numbers", n.account);
    // (list of A, the same list of B, list key, item id field, A's item, B's item)
    let lists = [
        (
            persons(&a),
            persons(&b),
            "associated_persons",
            "person_entity_id",
            &a.person,
            &b.person,
        ),
        (
            numbers(&a),
            numbers(&b),
            "account_numbers",
            "id",
            &a.account_number,
            &b.account_number,
        ),
    ];
    for (a_list, b_list, key, field, own, foreign) in lists {
        let page = app
            .get(&format!("{a_list}?limit=100"), &app.a.key)
            .await
            .expect(200);
        let ids: Vec<&str> = page[key]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|i| i[field].as_str())
            .collect();
        assert_eq!(ids, [own.as_str()], "{a_list}: {page}");
        for cursor in ["starting_after", "ending_before"] {
            // Each id is a cursor of its own platform's list, so the platform is what refuses.
            app.get(&format!("{a_list}?{cursor}={own}"), &app.a.key)
                .await
                .expect(200);
            app.get(&format!("{b_list}?{cursor}={foreign}"), &app.b.key)
                .await
                .expect(200);
            let sent = format!("{a_list}?{cursor}={foreign}");
            let r = app.get(&sent, &app.a.key).await;
            assert_error(&r, 400, "invalid_pagination_cursor", &sent);
        }
    }
}

async fn both_cursors_conflict_whatever_their_values(app: TestApp) {
    let objects = seed_a(&app).await;
    let nested = seed_nested(&app, &app.a.key).await;
    let foreign = app.b.root_entity_id.as_str();
    let lists = [
        ("/documents".to_owned(), objects.id("document_id")),
        ("/transfers/ach".to_owned(), objects.id("ach_transfer_id")),
        (
            format!("/entities/{}/associated-persons", nested.business),
            nested.person.as_str(),
        ),
    ];
    for (path, own) in &lists {
        for (after, before) in [
            (*own, *own),
            (*own, "nope"),
            ("nope", *own),
            (foreign, foreign),
        ] {
            let sent = format!("{path}?starting_after={after}&ending_before={before}");
            let r = app.get(&sent, &app.a.key).await;
            assert_error(&r, 400, "conflicting_pagination_cursors", &sent);
        }
    }
}

async fn fifty_concurrent_requests_with_one_idempotency_key_have_exactly_one_effect(app: TestApp) {
    let body = json!({"first_name": "Once", "last_name": "Only"});
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let client = app.client.clone();
        let url = format!("{}/entities/person", app.base);
        let key = app.a.key.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let resp = client
                .post(url)
                .basic_auth("", Some(key))
                .header("Idempotency-Key", "same-key")
                .json(&body)
                .send()
                .await
                .expect("sent");
            let status = resp.status().as_u16();
            let json: Value = resp.json().await.unwrap_or(Value::Null);
            (status, json)
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    let mut in_use = 0;
    for t in tasks {
        let (status, json) = t.await.expect("task");
        match status {
            200 => {
                ids.insert(json["id"].as_str().expect("id").to_owned());
            }
            409 => {
                assert_eq!(json["code"], "idempotency_key_in_use");
                in_use += 1;
            }
            other => panic!("unexpected {other}: {json}"),
        }
    }
    assert_eq!(ids.len(), 1, "every 200 names the same entity: {ids:?}");
    // Exactly one entity was made.
    let list = app
        .get("/entities?name=Once%20Only&limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(list["entities"].as_array().map(Vec::len), Some(1), "{list}");
    // After the dust settles, a retry replays.
    let r = app
        .post_idempotent("/entities/person", &app.a.key, &body, "same-key")
        .await;
    assert_eq!(
        r.headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert!(ids.contains(r.expect(200)["id"].as_str().expect("id")));
    eprintln!(
        "50 concurrent duplicates: {} answered 200, {in_use} answered 409",
        50 - in_use
    );
}
