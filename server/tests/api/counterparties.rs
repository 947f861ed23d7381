//! Counterparties: create with bank-detail checks, get, delete, and the filtered, sorted,
//! deduplicated list.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{TestApp, api_tests};

api_tests!(
    a_domestic_counterparty_needs_only_routing_and_account_numbers,
    every_optional_field_is_stored_and_answered,
    aba_bic_and_iban_bank_details_are_checked_field_by_field,
    a_deleted_counterparty_answers_an_empty_object_and_is_gone_afterwards,
    the_list_filters_by_bank_details_text_and_creation_time,
    deduplicate_keeps_the_newest_of_each_pair_and_still_paginates,
    the_list_sorts_by_creation_or_description_both_ways_and_paginates_both_ways,
    other_platforms_never_see_a_counterparty_nor_use_it_as_a_cursor,
    walks_under_every_sort_see_each_counterparty_once_while_others_are_created,
);

const ABA: &str = "121000248";
const ABA_2: &str = "021000021";
const IBAN: &str = "DE89370400440532013000";

fn domestic(routing: &str, account: &str) -> Value {
    json!({"routing_number": routing, "account_number": account})
}

async fn create(app: &TestApp, key: &str, body: &Value) -> Value {
    app.post("/counterparties", key, body).await.expect(200)
}

fn id_of(c: &Value) -> String {
    c["id"].as_str().expect("an id").to_owned()
}

fn ids(list: &Value) -> Vec<String> {
    list["counterparties"]
        .as_array()
        .expect("a list")
        .iter()
        .map(id_of)
        .collect()
}

async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    app.get(&format!("/counterparties?{query}"), key)
        .await
        .expect(200)
}

/// Walks a list forward from the first page with `starting_after`, asserting page sizes.
async fn walk_forward(app: &TestApp, key: &str, query: &str, limit: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut q = format!("{query}&limit={limit}");
        if let Some(c) = &cursor {
            q.push_str(&format!("&starting_after={c}"));
        }
        let page = list(app, key, &q).await;
        let page_ids = ids(&page);
        assert!(page_ids.len() <= limit, "{page}");
        seen.extend(page_ids.iter().cloned());
        if page["has_more"] == false {
            return seen;
        }
        assert_eq!(
            page_ids.len(),
            limit,
            "a page with has_more is full: {page}"
        );
        cursor = page_ids.last().cloned();
    }
    panic!("the walk does not end");
}

/// Walks a list backward from `from` with `ending_before`; answers the ids in list order.
async fn walk_backward(
    app: &TestApp,
    key: &str,
    query: &str,
    limit: usize,
    from: &str,
) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut cursor = from.to_owned();
    for _ in 0..100 {
        let page = list(
            app,
            key,
            &format!("{query}&limit={limit}&ending_before={cursor}"),
        )
        .await;
        let page_ids = ids(&page);
        let mut merged = page_ids.clone();
        merged.extend(seen);
        seen = merged;
        if page["has_more"] == false {
            return seen;
        }
        cursor = page_ids
            .first()
            .cloned()
            .expect("a page with has_more is not empty");
    }
    panic!("the walk does not end");
}

async fn a_domestic_counterparty_needs_only_routing_and_account_numbers(app: TestApp) {
    let c = create(&app, &app.a.key, &domestic(ABA, "123456789012")).await;
    let id = id_of(&c);
    assert!(id.starts_with("cpty_") && id.len() == 32, "{id}");
    assert_eq!(c["routing_number"], ABA);
    assert_eq!(c["routing_number_type"], "aba");
    assert_eq!(c["account_number"], "123456789012");
    for field in [
        "name",
        "description",
        "email",
        "phone",
        "legal_id",
        "local_bank_code",
        "local_account_number",
    ] {
        assert_eq!(
            c.get(field),
            Some(&Value::Null),
            "{field} is present and null: {c}"
        );
    }
    assert!(
        c["created_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{c}"
    );
    assert_eq!(c["created_at"], c["updated_at"]);
    let got = app
        .get(&format!("/counterparties/{id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, c);
    // 17 digits is the longest ABA account number.
    create(&app, &app.a.key, &domestic(ABA_2, "12345678901234567")).await;
}

async fn every_optional_field_is_stored_and_answered(app: TestApp) {
    let body = json!({
        "routing_number": "DEUTDEFF500",
        "routing_number_type": "bic",
        "account_number": IBAN,
        "account_type": "savings",
        "name": "Jane Doe",
        "description": "Landlord",
        "email": "jane@example.com",
        "phone": "+4930123456",
        "address": {"line_1": "Unter den Linden 1", "city": "Berlin", "postal_code": "10117", "country_code": "DE"},
        "legal_id": "DE123456789",
        "legal_type": "individual",
        "local_bank_code": "37040044",
        "local_account_number": "0532013000"
    });
    let c = create(&app, &app.a.key, &body).await;
    for (field, value) in body.as_object().expect("an object") {
        assert_eq!(&c[field], value, "{field}");
    }
    let got = app
        .get(&format!("/counterparties/{}", id_of(&c)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, c);
}

async fn aba_bic_and_iban_bank_details_are_checked_field_by_field(app: TestApp) {
    let cases = [
        // Bad ABA checksum and an account number too long for ABA: both fields named.
        (
            json!({"routing_number": "121000249", "account_number": "123456789012345678"}),
            vec!["routing_number", "account_number"],
        ),
        (
            json!({"routing_number": "12100024", "account_number": "1"}),
            vec!["routing_number"],
        ),
        // An IBAN is not an ABA account number.
        (
            json!({"routing_number": ABA, "account_number": IBAN}),
            vec!["account_number"],
        ),
        // A BIC is not an ABA routing number.
        (
            json!({"routing_number": "DEUTDEFF", "account_number": "1"}),
            vec!["routing_number"],
        ),
        // A 9-digit routing number is not a BIC.
        (
            json!({"routing_number": ABA, "routing_number_type": "bic", "account_number": IBAN}),
            vec!["routing_number"],
        ),
        // An IBAN with a wrong check.
        (
            json!({"routing_number": "DEUTDEFF", "routing_number_type": "bic", "account_number": "DE89370400440532013001"}),
            vec!["account_number"],
        ),
        (
            json!({"routing_number": "DEUTDEFF", "routing_number_type": "bic", "account_number": "GB29NWBK60161331926818"}),
            vec!["account_number"],
        ),
        (
            json!({"routing_number": "DEUTDEF", "routing_number_type": "bic", "account_number": IBAN}),
            vec!["routing_number"],
        ),
        // Optional fields.
        // The schema's checks (patterns, lengths, enums) answer before the bank-detail rules, so
        // a body failing both kinds names the schema's fields.
        (
            json!({"routing_number": ABA, "account_number": "1", "phone": "4155550123"}),
            vec!["phone"],
        ),
        (
            json!({"routing_number": "121000249", "account_number": "1", "email": "a@b"}),
            vec!["routing_number", "email"],
        ),
        (
            json!({"routing_number": ABA, "account_number": "1", "email": "two@@example.com"}),
            vec!["email"],
        ),
        (
            json!({"routing_number": ABA, "account_number": "1", "name": "", "description": "x".repeat(256)}),
            vec!["name", "description"],
        ),
        (
            json!({"routing_number": ABA, "account_number": "1", "account_type": "brokerage", "legal_type": "robot"}),
            vec!["account_type", "legal_type"],
        ),
        // Required fields and unknown fields.
        (json!({}), vec!["routing_number", "account_number"]),
        (
            json!({"routing_number": ABA, "account_number": "1", "id": "cpty_mine"}),
            vec!["id"],
        ),
    ];
    for (body, fields) in cases {
        let e = app
            .post("/counterparties", &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
        assert_eq!(e["type"], "request_validation_error");
        for field in fields {
            assert!(
                e["details"][field].is_string(),
                "{body}: {field} not in {e}"
            );
        }
    }
    // Nothing was created by the refused requests.
    assert_eq!(
        list(&app, &app.a.key, "").await["counterparties"],
        json!([])
    );

    // Valid international details: 8- and 11-character BICs, IBANs and domestic numbers.
    for (bic, account) in [
        ("DEUTDEFF", IBAN),
        ("NWBKGB2L", "GB29NWBK60161331926819"),
        ("BNPAFRPPXXX", "FR1420041010050500013M02606"),
        ("DEUTDEFF", "0532013000"),
    ] {
        let body =
            json!({"routing_number": bic, "routing_number_type": "bic", "account_number": account});
        let c = create(&app, &app.a.key, &body).await;
        assert_eq!(c["routing_number_type"], "bic");
        assert_eq!(c["account_number"], account);
    }
}

async fn a_deleted_counterparty_answers_an_empty_object_and_is_gone_afterwards(app: TestApp) {
    let kept = create(&app, &app.a.key, &domestic(ABA, "1")).await;
    let gone = create(&app, &app.a.key, &domestic(ABA, "2")).await;
    let path = format!("/counterparties/{}", id_of(&gone));
    assert_eq!(app.delete(&path, &app.a.key).await.expect(200), json!({}));
    let e = app
        .get(&path, &app.a.key)
        .await
        .expect_error(404, "counterparty_not_found");
    assert_eq!(e["type"], "counterparty_error");
    app.delete(&path, &app.a.key)
        .await
        .expect_error(404, "counterparty_not_found");
    for bad in [
        "cpty_x",
        "cpty_0000000000000000000000000000",
        "appr_0000000000000000000000000000",
    ] {
        app.get(&format!("/counterparties/{bad}"), &app.a.key)
            .await
            .expect_error(404, "counterparty_not_found");
        app.delete(&format!("/counterparties/{bad}"), &app.a.key)
            .await
            .expect_error(404, "counterparty_not_found");
    }
    // Not listed, not searchable, not a cursor.
    assert_eq!(ids(&list(&app, &app.a.key, "").await), [id_of(&kept)]);
    assert_eq!(
        ids(&list(&app, &app.a.key, &format!("query={}", id_of(&gone))).await),
        Vec::<String>::new()
    );
    app.get(
        &format!("/counterparties?starting_after={}", id_of(&gone)),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
}

async fn the_list_filters_by_bank_details_text_and_creation_time(app: TestApp) {
    let landlord = create(
        &app,
        &app.a.key,
        &json!({"routing_number": ABA, "account_number": "111", "name": "Jane Doe", "description": "Monthly LANDLORD rent"}),
    )
    .await;
    let plumber = create(
        &app,
        &app.a.key,
        &json!({"routing_number": ABA_2, "account_number": "222", "name": "Joe's 100% Plumbing", "description": "plumber"}),
    )
    .await;
    let bare = create(&app, &app.a.key, &domestic(ABA_2, "111")).await;
    let (landlord, plumber, bare) = (id_of(&landlord), id_of(&plumber), id_of(&bare));

    let q = |query: &str| {
        let app = &app;
        let query = query.to_owned();
        async move { ids(&list(app, &app.a.key, &query).await) }
    };
    assert_eq!(
        q("").await,
        [bare.as_str(), plumber.as_str(), landlord.as_str()]
    );
    assert_eq!(
        q("account_number=111").await,
        [bare.as_str(), landlord.as_str()]
    );
    assert_eq!(q("account_number=11").await, Vec::<String>::new());
    assert_eq!(
        q(&format!("routing_number={ABA_2}")).await,
        [bare.as_str(), plumber.as_str()]
    );
    assert_eq!(
        q(&format!("routing_number={ABA_2}&account_number=111")).await,
        [bare.as_str()]
    );
    assert_eq!(q("description=landlord").await, [landlord.as_str()]);
    assert_eq!(q("description=RENT").await, [landlord.as_str()]);
    assert_eq!(q("description=jane").await, Vec::<String>::new());
    // Free-form query: names and descriptions case-insensitively, ids and numbers exactly.
    assert_eq!(q("query=jane").await, [landlord.as_str()]);
    assert_eq!(q("query=PLUMB").await, [plumber.as_str()]);
    assert_eq!(q("query=100%25").await, [plumber.as_str()]);
    assert_eq!(q("query=_").await, Vec::<String>::new());
    assert_eq!(q(&format!("query={bare}")).await, [bare.as_str()]);
    assert_eq!(q("query=222").await, [plumber.as_str()]);
    assert_eq!(q(&format!("query={ABA}")).await, [landlord.as_str()]);

    // Creation time bounds, from the records' own timestamps.
    let all = list(&app, &app.a.key, "").await;
    let times: Vec<String> = all["counterparties"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|c| c["created_at"].as_str().expect("a time").to_owned())
        .collect();
    let (newest, middle, oldest) = (&times[0], &times[1], &times[2]);
    let enc = |t: &str| t.replace(':', "%3A").replace('+', "%2B");
    assert_eq!(
        q(&format!("created.gte={}", enc(middle))).await,
        [bare.as_str(), plumber.as_str()]
    );
    assert_eq!(
        q(&format!("created.gt={}", enc(middle))).await,
        [bare.as_str()]
    );
    assert_eq!(
        q(&format!("created.lte={}", enc(middle))).await,
        [plumber.as_str(), landlord.as_str()]
    );
    assert_eq!(
        q(&format!("created.lt={}", enc(middle))).await,
        [landlord.as_str()]
    );
    assert_eq!(
        q(&format!(
            "created.gt={}&created.lt={}",
            enc(oldest),
            enc(newest)
        ))
        .await,
        [plumber.as_str()]
    );
    // A malformed filter value is a 400 naming the parameter.
    let e = app
        .get("/counterparties?created.gt=yesterday", &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["created.gt"].is_string(), "{e}");
    // Filters apply before paging: a cursor filtered out is not in the list.
    app.get(
        &format!("/counterparties?account_number=111&starting_after={plumber}"),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
}

async fn deduplicate_keeps_the_newest_of_each_pair_and_still_paginates(app: TestApp) {
    // Three pairs, created interleaved: (ABA, 1) x3, (ABA_2, 1) x2, (ABA, 2) x1.
    let mut created = Vec::new();
    for (routing, account) in [
        (ABA, "1"),
        (ABA_2, "1"),
        (ABA, "1"),
        (ABA, "2"),
        (ABA_2, "1"),
        (ABA, "1"),
    ] {
        created.push(id_of(
            &create(&app, &app.a.key, &domestic(routing, account)).await,
        ));
    }
    let newest: Vec<String> = vec![created[5].clone(), created[4].clone(), created[3].clone()];
    assert_eq!(
        ids(&list(&app, &app.a.key, "deduplicate=true").await),
        newest
    );
    assert_eq!(
        ids(&list(&app, &app.a.key, "deduplicate=false").await).len(),
        6
    );
    // Page by page, forward and backward, the same three.
    assert_eq!(
        walk_forward(&app, &app.a.key, "deduplicate=true", 1).await,
        newest
    );
    assert_eq!(
        walk_forward(&app, &app.a.key, "deduplicate=true&sort_order=asc", 2).await,
        {
            let mut asc = newest.clone();
            asc.reverse();
            asc
        }
    );
    assert_eq!(
        walk_backward(&app, &app.a.key, "deduplicate=true", 1, &newest[2]).await,
        newest[..2]
    );
    // A collapsed duplicate is not in the deduplicated list, so it is not a cursor of it.
    app.get(
        &format!(
            "/counterparties?deduplicate=true&starting_after={}",
            created[2]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    // With other filters.
    assert_eq!(
        ids(&list(&app, &app.a.key, "deduplicate=true&account_number=1").await),
        newest[..2]
    );
    // Deleting the newest of a pair brings the next newest back.
    app.delete(&format!("/counterparties/{}", created[5]), &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        ids(&list(&app, &app.a.key, "deduplicate=true").await),
        [created[4].clone(), created[3].clone(), created[2].clone()]
    );
    // Duplicates are per platform: B's identical pair does not hide A's.
    create(&app, &app.b.key, &domestic(ABA, "2")).await;
    assert_eq!(
        ids(&list(&app, &app.a.key, "deduplicate=true").await).len(),
        3
    );
}

async fn the_list_sorts_by_creation_or_description_both_ways_and_paginates_both_ways(app: TestApp) {
    let mut by_creation = Vec::new();
    for description in ["delta", "alpha", "echo", "charlie", "bravo"] {
        let body =
            json!({"routing_number": ABA, "account_number": "1", "description": description});
        by_creation.push((description, id_of(&create(&app, &app.a.key, &body).await)));
    }
    let undescribed = id_of(&create(&app, &app.a.key, &domestic(ABA, "1")).await);

    let mut asc: Vec<String> = by_creation.iter().map(|(_, id)| id.clone()).collect();
    asc.push(undescribed.clone());
    let desc: Vec<String> = asc.iter().rev().cloned().collect();
    assert_eq!(
        ids(&list(&app, &app.a.key, "limit=100").await),
        desc,
        "created_at desc by default"
    );
    assert_eq!(
        ids(&list(&app, &app.a.key, "sort=created_at&sort_order=asc").await),
        asc
    );
    assert_eq!(
        walk_forward(&app, &app.a.key, "sort=created_at", 2).await,
        desc
    );
    assert_eq!(
        walk_forward(&app, &app.a.key, "sort_order=asc", 4).await,
        asc
    );
    assert_eq!(
        walk_backward(&app, &app.a.key, "sort_order=desc", 2, &desc[5]).await,
        desc[..5]
    );

    // By description: a missing description sorts as empty text.
    let mut by_text = by_creation.clone();
    by_text.sort();
    let mut text_asc = vec![undescribed.clone()];
    text_asc.extend(by_text.iter().map(|(_, id)| id.clone()));
    let text_desc: Vec<String> = text_asc.iter().rev().cloned().collect();
    assert_eq!(
        ids(&list(
            &app,
            &app.a.key,
            "sort=description&sort_order=asc&limit=100"
        )
        .await),
        text_asc
    );
    assert_eq!(
        ids(&list(&app, &app.a.key, "sort=description").await),
        text_desc,
        "desc by default"
    );
    for limit in [1, 2, 4] {
        assert_eq!(
            walk_forward(&app, &app.a.key, "sort=description&sort_order=asc", limit).await,
            text_asc
        );
        assert_eq!(
            walk_forward(&app, &app.a.key, "sort=description", limit).await,
            text_desc
        );
        assert_eq!(
            walk_backward(
                &app,
                &app.a.key,
                "sort=description&sort_order=asc",
                limit,
                &text_asc[5]
            )
            .await,
            text_asc[..5]
        );
    }
    // Equal descriptions are ordered by id, and paging through them loses nothing.
    let twin = id_of(
        &create(
            &app,
            &app.a.key,
            &json!({"routing_number": ABA, "account_number": "1", "description": "alpha"}),
        )
        .await,
    );
    let walked = walk_forward(&app, &app.a.key, "sort=description&sort_order=asc", 1).await;
    assert_eq!(walked.len(), 7);
    assert!(walked.contains(&twin));

    // Unknown sort values and paging parameters.
    app.get("/counterparties?sort=name", &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    app.get("/counterparties?sort_order=up", &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    for limit in ["0", "101"] {
        app.get(&format!("/counterparties?limit={limit}"), &app.a.key)
            .await
            .expect_error(400, "invalid_limit");
    }
    app.get(
        &format!(
            "/counterparties?starting_after={}&ending_before={}",
            asc[0], asc[1]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "conflicting_pagination_cursors");
}

async fn other_platforms_never_see_a_counterparty_nor_use_it_as_a_cursor(app: TestApp) {
    let a = create(
        &app,
        &app.a.key,
        &json!({"routing_number": ABA, "account_number": "1", "name": "Shared Name"}),
    )
    .await;
    let a_id = id_of(&a);
    let b = create(
        &app,
        &app.b.key,
        &json!({"routing_number": ABA, "account_number": "1", "name": "Shared Name"}),
    )
    .await;
    let path = format!("/counterparties/{a_id}");
    app.get(&path, &app.b.key)
        .await
        .expect_error(404, "counterparty_not_found");
    app.delete(&path, &app.b.key)
        .await
        .expect_error(404, "counterparty_not_found");
    // B's lists hold only B's counterparty, whatever the filter.
    for query in [
        "",
        "query=shared",
        &format!("query={a_id}"),
        "account_number=1",
        "deduplicate=true",
    ] {
        let found = ids(&list(&app, &app.b.key, query).await);
        assert!(!found.contains(&a_id), "{query}: {found:?}");
    }
    assert_eq!(ids(&list(&app, &app.b.key, "").await), [id_of(&b)]);
    for param in ["starting_after", "ending_before"] {
        app.get(&format!("/counterparties?{param}={a_id}"), &app.b.key)
            .await
            .expect_error(400, "invalid_pagination_cursor");
    }
    // A's counterparty survived B's delete.
    assert_eq!(app.get(&path, &app.a.key).await.expect(200), a);
}

async fn walks_under_every_sort_see_each_counterparty_once_while_others_are_created(app: TestApp) {
    // Ties on purpose: descriptions equal but for case, and some without one.
    for (i, description) in [
        "same", "Same", "other", "SAME", "", "zulu", "same", "", "alpha",
    ]
    .iter()
    .enumerate()
    {
        let mut body = domestic(ABA, &format!("{}", 100 + i));
        if !description.is_empty() {
            body["description"] = json!(description);
        }
        create(&app, &app.a.key, &body).await;
    }
    for query in [
        "sort=created_at&sort_order=desc",
        "sort=created_at&sort_order=asc",
        "sort=description&sort_order=desc",
        "sort=description&sort_order=asc",
    ] {
        let expected = ids(&list(&app, &app.a.key, &format!("{query}&limit=100")).await);
        let writer = {
            let (base, key, client) = (app.base.clone(), app.a.key.clone(), app.client.clone());
            tokio::spawn(async move {
                for n in 0..4 {
                    let description = ["same", "a", "SAME", "zz"][n];
                    let body = json!({
                        "routing_number": ABA,
                        "account_number": format!("9{n}"),
                        "description": description,
                    });
                    let _ = client
                        .post(format!("{base}/counterparties"))
                        .basic_auth("", Some(&key))
                        .json(&body)
                        .send()
                        .await;
                }
            })
        };
        let forward = walk_forward(&app, &app.a.key, query, 2).await;
        let last = forward.last().cloned().expect("a non-empty list");
        let mut backward = walk_backward(&app, &app.a.key, query, 2, &last).await;
        backward.push(last);
        let _ = writer.await;
        for (direction, walked) in [("forward", &forward), ("backward", &backward)] {
            let unique: HashSet<&String> = walked.iter().collect();
            assert_eq!(unique.len(), walked.len(), "{direction} {query}: twice");
            let seen: Vec<&String> = walked.iter().filter(|id| expected.contains(id)).collect();
            assert_eq!(
                seen,
                expected.iter().collect::<Vec<_>>(),
                "{direction} {query}: every counterparty that existed throughout, once, in order"
            );
        }
    }
}
