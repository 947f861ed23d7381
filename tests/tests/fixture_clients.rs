//! A round trip for every operation of every golden fixture whose own test file has none
//! (issue 51): the fixture's client writes the request, its server reads it into the same input
//! type, a handler answers from what it read, and the client parses the answer back into the
//! same response enum. One module per fixture (`codegen/tests/fixtures/<name>.yaml`); handlers
//! echo their input or build their answer from it, so a value changed on the way shows.
//! (parameters, media_types, security_schemes, openapi32 and callbacks have theirs in their
//! own files.)

use std::sync::Arc;

#[path = "support/on_a_port.rs"]
mod on_a_port;

/// A client of fixture crate `$krate`'s app over `$server`, served on a port of its own.
macro_rules! client {
    ($krate:ident, $server:expr) => {
        $krate::client::Client::new($krate::runtime::client::Config::new(
            on_a_port::serve($krate::app(Arc::new($server))).await,
        ))
    };
}

/// The JSON body of an answer that must be `$variant`, or a panic showing what came instead.
macro_rules! body {
    ($answer:expr, $variant:path) => {
        match $answer.expect("an answer") {
            $variant(Json(body)) => body,
            other => panic!("not {}: {other:?}", stringify!($variant)),
        }
    };
}

/// Asserts that an answer is the bodiless `$variant`.
macro_rules! bodiless {
    ($answer:expr, $variant:path) => {
        match $answer.expect("an answer") {
            $variant => {}
            other => panic!("not {}: {other:?}", stringify!($variant)),
        }
    };
}

/// A refusal the runtime answers before any handler (bad credentials, an invalid request), in
/// the `{code, message}` error schema the fixtures declare: the status's reason as the code,
/// the fields at fault (else the message) as the message. (`RequestError` is the runtime's,
/// one type for every fixture.)
fn error_schema(error: &fixture_security::RequestError) -> poem::Response {
    let fields: Vec<&str> = error.details.keys().map(String::as_str).collect();
    let message = if fields.is_empty() {
        error.message.clone()
    } else {
        fields.join(", ")
    };
    let code = error.status.canonical_reason().unwrap_or("error");
    poem::Response::builder()
        .status(error.status)
        .content_type("application/json")
        .body(serde_json::json!({ "code": code, "message": message }).to_string())
}

mod all_of {
    use super::*;
    use fixture_all_of::dogs::*;
    use fixture_all_of::models::{Dog, Error, Owner};
    use fixture_all_of::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn dog(id: i64) -> Dog {
        Dog {
            id,
            name: format!("dog {id}"),
            tag: None,
            breed: "collie".into(),
            good_boy: Some(true),
            owner: Some(Owner { name: "Ann".into() }),
        }
    }

    impl DogsApi for Server {
        /// Dog `dog_id`; an id below 1 is a 400.
        async fn get_dog(&self, input: GetDogInput) -> GetDogResponse {
            if input.dog_id < 1 {
                return GetDogResponse::BadRequest(Json(Error {
                    code: "bad_id".into(),
                    message: input.dog_id.to_string(),
                }));
            }
            GetDogResponse::Ok(Json(dog(input.dog_id)))
        }
        async fn create_dog(&self, input: CreateDogInput) -> CreateDogResponse {
            CreateDogResponse::Ok(Json(input.body))
        }
    }

    /// The fields of both allOf members travel in one object and come back into the merged
    /// struct, optional ones set and left out; an error status is its variant.
    #[tokio::test]
    async fn a_merged_dog_goes_and_comes_back() {
        let client = client!(fixture_all_of, Server);
        let rex = Dog {
            tag: Some("good".into()),
            good_boy: Some(false),
            ..dog(7)
        };
        let bare = Dog {
            tag: None,
            good_boy: None,
            owner: None,
            ..dog(8)
        };
        for sent in [rex, bare] {
            let input = CreateDogInput { body: sent.clone() };
            let back = body!(client.create_dog(input).await, CreateDogResponse::Ok);
            assert_eq!(back, sent);
        }
        let input = GetDogInput { dog_id: i64::MAX };
        assert_eq!(
            body!(client.get_dog(input).await, GetDogResponse::Ok),
            dog(i64::MAX)
        );
        let input = GetDogInput { dog_id: -1 };
        let error = body!(client.get_dog(input).await, GetDogResponse::BadRequest);
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("bad_id", "-1")
        );
    }
}

mod arrays {
    use super::*;
    use fixture_arrays::collections::*;
    use fixture_arrays::models::{
        Collection, CollectionList, CreateCollectionRequest, Error, NameList,
        PageCollectionsOkBody, Tag, TagList,
    };
    use fixture_arrays::{Hooks, Json};
    use serde_json::json;

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// A collection with every kind of array: untyped items of each JSON kind, 64-bit scores.
    fn shelf() -> Collection {
        Collection {
            id: "shelf".into(),
            anything: Some(vec![
                json!(1),
                json!("two"),
                json!({"3": [3.5]}),
                json!(null),
            ]),
            labels: vec!["a".into(), "b c".into()],
            scores: Some(vec![i64::MIN, 0, i64::MAX]),
            flags: Some(vec![true, false]),
            tags: vec![Tag {
                name: "t".into(),
                weight: None,
            }],
        }
    }

    fn tag(name: &str, weight: Option<i32>) -> Tag {
        Tag {
            name: name.into(),
            weight,
        }
    }

    impl CollectionsApi for Server {
        async fn list_collections(&self, _input: ListCollectionsInput) -> ListCollectionsResponse {
            ListCollectionsResponse::Ok(Json(CollectionList(vec![shelf()])))
        }
        /// The collection asked for, its id its labels joined; the label `shelf` is taken (400).
        async fn create_collection(
            &self,
            input: CreateCollectionInput,
        ) -> CreateCollectionResponse {
            let asked = input.body;
            if asked.labels.iter().any(|l| l == "shelf") {
                return CreateCollectionResponse::BadRequest(Json(Error {
                    code: "taken".into(),
                    message: "shelf".into(),
                }));
            }
            CreateCollectionResponse::Ok(Json(Collection {
                id: asked.labels.join("+"),
                anything: asked.anything,
                labels: asked.labels,
                scores: asked.scores.map(|s| s.into_iter().map(i64::from).collect()),
                flags: None,
                tags: asked.tags.unwrap_or_default(),
            }))
        }
        /// Each tag as `name` or `name:weight`.
        async fn replace_tags(&self, input: ReplaceTagsInput) -> ReplaceTagsResponse {
            let names = input.body.0.into_iter().map(|t| match t.weight {
                Some(w) => format!("{}:{w}", t.name),
                None => t.name,
            });
            ReplaceTagsResponse::Ok(Json(NameList(names.collect())))
        }
        /// Five collections `c1` to `c5`, two a page, after the `starting_after` id.
        async fn page_collections(&self, input: PageCollectionsInput) -> PageCollectionsResponse {
            let all: Vec<Collection> = (1..=5)
                .map(|i| Collection {
                    id: format!("c{i}"),
                    ..shelf()
                })
                .collect();
            let start = match input.starting_after {
                Some(after) => all
                    .iter()
                    .position(|c| c.id == after)
                    .map_or(all.len(), |i| i + 1),
                None => 0,
            };
            let data: Vec<Collection> = all[start..].iter().take(2).cloned().collect();
            let has_more = start + data.len() < all.len();
            PageCollectionsResponse::Ok(Json(PageCollectionsOkBody { data, has_more }))
        }
    }

    /// A list whose page is its only declared answer streams every item once, in order, page
    /// after page, fed by the last item's id while `has_more` says so.
    #[tokio::test]
    async fn a_page_that_is_the_only_answer_streams_every_item() {
        use futures_util::StreamExt;
        let client = client!(fixture_arrays, Server);
        let ids: Vec<String> = client
            .page_collections_stream(PageCollectionsInput {
                starting_after: None,
            })
            .map(|c| c.expect("every page answers").id)
            .collect()
            .await;
        assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
    }

    /// Arrays of every item type (untyped values of each JSON kind, nested; 32- and 64-bit
    /// integers at their bounds; objects with and without optional fields; empty) arrive and
    /// come back as sent; an error status is its variant.
    #[tokio::test]
    async fn arrays_of_every_item_type_go_and_come_back() {
        let client = client!(fixture_arrays, Server);
        let list = client.list_collections(ListCollectionsInput {}).await;
        assert_eq!(
            body!(list, ListCollectionsResponse::Ok),
            CollectionList(vec![shelf()])
        );

        let full = CreateCollectionRequest {
            anything: Some(vec![
                json!([[]]),
                json!({"a": null}),
                json!(-0.5),
                json!(false),
            ]),
            labels: vec!["x".into(), "y/z ü".into()],
            scores: Some(vec![i32::MIN, i32::MAX]),
            tags: Some(vec![tag("heavy", Some(-1)), tag("light", None)]),
        };
        let created = body!(
            client
                .create_collection(CreateCollectionInput { body: full.clone() })
                .await,
            CreateCollectionResponse::Ok
        );
        let want = Collection {
            id: "x+y/z ü".into(),
            anything: full.anything,
            labels: full.labels,
            scores: Some(vec![i64::from(i32::MIN), i64::from(i32::MAX)]),
            flags: None,
            tags: full.tags.expect("set"),
        };
        assert_eq!(created, want);

        let bare = CreateCollectionRequest {
            anything: Some(vec![]),
            labels: vec!["only".into()],
            scores: None,
            tags: Some(vec![]),
        };
        let created = body!(
            client
                .create_collection(CreateCollectionInput { body: bare })
                .await,
            CreateCollectionResponse::Ok
        );
        assert_eq!((created.anything, created.tags), (Some(vec![]), vec![]));

        let taken = CreateCollectionRequest {
            anything: None,
            labels: vec!["shelf".into()],
            scores: None,
            tags: None,
        };
        let error = body!(
            client
                .create_collection(CreateCollectionInput { body: taken })
                .await,
            CreateCollectionResponse::BadRequest
        );
        assert_eq!(error.code, "taken");

        let tags = TagList(vec![tag("a", Some(0)), tag("b&c", None), tag("a", Some(2))]);
        let names = body!(
            client.replace_tags(ReplaceTagsInput { body: tags }).await,
            ReplaceTagsResponse::Ok
        );
        assert_eq!(
            names,
            NameList(vec!["a:0".into(), "b&c".into(), "a:2".into()])
        );
    }
}

mod enums {
    use super::*;
    use fixture_enums::models::{Error, Task, TaskKind, TaskList, TaskStatus};
    use fixture_enums::tasks::*;
    use fixture_enums::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// The one task a query finds: its id says what was asked, its statuses are the filter.
    fn found(status: Option<TaskStatus>, kind: TaskKind) -> Task {
        Task {
            id: format!("{} {}", status.map_or("any", |s| s.as_str()), kind.as_str()),
            status: status.unwrap_or(TaskStatus::Pending),
            previous_status: status,
            kinds: vec![kind],
        }
    }

    impl TasksApi for Server {
        async fn list_tasks(&self, input: ListTasksInput) -> ListTasksResponse {
            ListTasksResponse::Ok(Json(TaskList(vec![found(input.status, input.kind)])))
        }
        /// The task as sent; one whose status did not change is a 400.
        async fn create_task(&self, input: CreateTaskInput) -> CreateTaskResponse {
            let task = input.body;
            if task.previous_status == Some(task.status) {
                return CreateTaskResponse::BadRequest(Json(Error {
                    code: "unchanged".into(),
                    message: task.status.as_str().into(),
                }));
            }
            CreateTaskResponse::Ok(Json(task))
        }
    }

    /// Every value of both enums (`in-progress`, `self`, `v1.2`, ...) goes as a query parameter,
    /// present or absent, and in a body, and comes back as the same variant.
    #[tokio::test]
    async fn every_enum_value_goes_and_comes_back() {
        let client = client!(fixture_enums, Server);
        let statuses = std::iter::once(None).chain(TaskStatus::ALL.iter().copied().map(Some));
        for status in statuses {
            for &kind in TaskKind::ALL {
                let input = ListTasksInput { status, kind };
                let tasks = body!(client.list_tasks(input).await, ListTasksResponse::Ok);
                assert_eq!(tasks, TaskList(vec![found(status, kind)]));
            }
        }
        let task = Task {
            id: "t1".into(),
            status: TaskStatus::Done,
            previous_status: Some(TaskStatus::InProgress),
            kinds: TaskKind::ALL.to_vec(),
        };
        let input = CreateTaskInput { body: task.clone() };
        assert_eq!(
            body!(client.create_task(input).await, CreateTaskResponse::Ok),
            task
        );
        let unchanged = Task {
            previous_status: Some(TaskStatus::Done),
            ..task
        };
        let input = CreateTaskInput { body: unchanged };
        let error = body!(
            client.create_task(input).await,
            CreateTaskResponse::BadRequest
        );
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("unchanged", "done")
        );
    }
}

mod formats {
    use super::*;
    use chrono::{DateTime, NaiveDate, Utc};
    use fixture_formats::events::*;
    use fixture_formats::models::{Error, Event};
    use fixture_formats::{Binary, Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn event(id: i64, as_of: Option<DateTime<Utc>>, day: Option<NaiveDate>) -> Event {
        let created_at = as_of.unwrap_or(DateTime::UNIX_EPOCH);
        Event {
            id,
            sequence: i32::MIN,
            occurred_on: day.unwrap_or(created_at.date_naive()),
            created_at,
            updated_at: as_of,
            contact: Some("ops@example.com".into()),
            homepage: Some(format!("https://example.com/events/{id}")),
        }
    }

    /// Every byte value, then the id's eight bytes.
    fn attachment(id: i64) -> Vec<u8> {
        (0..=u8::MAX).chain(id.to_be_bytes()).collect()
    }

    fn negative(id: i64) -> Json<Error> {
        Json(Error {
            code: "negative".into(),
            message: id.to_string(),
        })
    }

    impl EventsApi for Server {
        /// The event as of `as_of` on `day` (the epoch when not given); a negative id is a 400.
        async fn get_event(&self, input: GetEventInput) -> GetEventResponse {
            if input.event_id < 0 {
                return GetEventResponse::BadRequest(negative(input.event_id));
            }
            GetEventResponse::Ok(Json(event(input.event_id, input.as_of, input.day)))
        }
        async fn download_attachment(
            &self,
            input: DownloadAttachmentInput,
        ) -> DownloadAttachmentResponse {
            if input.event_id < 0 {
                return DownloadAttachmentResponse::BadRequest(negative(input.event_id));
            }
            DownloadAttachmentResponse::Ok(Binary(attachment(input.event_id)))
        }
    }

    /// A date-time to the nanosecond and a leap day go as query parameters and come back in a
    /// body with `email` and `uri` strings; absent ones stay absent; bytes come back as bytes.
    #[tokio::test]
    async fn dates_times_and_bytes_go_and_come_back() {
        let client = client!(fixture_formats, Server);
        let as_of: DateTime<Utc> = "2024-02-29T23:59:59.123456789Z".parse().expect("a time");
        let day = NaiveDate::from_ymd_opt(2024, 2, 29);
        for (as_of, day) in [(Some(as_of), day), (None, None)] {
            let input = GetEventInput {
                event_id: i64::MAX,
                as_of,
                day,
            };
            let back = body!(client.get_event(input).await, GetEventResponse::Ok);
            assert_eq!(back, event(i64::MAX, as_of, day));
        }
        let input = GetEventInput {
            event_id: -2,
            as_of: None,
            day: None,
        };
        let error = body!(client.get_event(input).await, GetEventResponse::BadRequest);
        assert_eq!(error.message, "-2");

        let input = DownloadAttachmentInput { event_id: 258 };
        match client.download_attachment(input).await.expect("an answer") {
            DownloadAttachmentResponse::Ok(Binary(bytes)) => assert_eq!(bytes, attachment(258)),
            other => panic!("{other:?}"),
        }
        let input = DownloadAttachmentInput { event_id: -1 };
        let answer = client.download_attachment(input).await;
        let error = body!(answer, DownloadAttachmentResponse::BadRequest);
        assert_eq!(error.code, "negative");
    }
}

mod keywords {
    use super::*;
    use fixture_keywords::models::{Error, Record, Type};
    use fixture_keywords::records::*;
    use fixture_keywords::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// A record with every field named by a Rust keyword or renamed set, from its id.
    fn record(id: &str) -> Record {
        Record {
            r#type: Type {
                name: id.into(),
                self_: Some(true),
            },
            r#ref: format!("ref {id}"),
            r#async: Some(false),
            self_: id.into(),
            crate_: Some("crate".into()),
            r#gen: Some(-1),
            r#match: Some("match".into()),
            camel_case_name: "camelCase".into(),
            kebab_name: "kebab-name".into(),
        }
    }

    impl RecordsApi for Server {
        /// Record `record_id`; `missing` is a 400.
        async fn get_record(&self, input: GetRecordInput) -> GetRecordResponse {
            if input.record_id == "missing" {
                return GetRecordResponse::BadRequest(Json(Error {
                    code: "not_found".into(),
                    message: input.record_id,
                }));
            }
            GetRecordResponse::Ok(Json(record(&input.record_id)))
        }
        async fn create_type(&self, input: CreateTypeInput) -> CreateTypeResponse {
            CreateTypeResponse::Ok(Json(input.body))
        }
    }

    /// Properties named `type`, `self`, `crate`, `gen`, `match`, `camelCaseName` and
    /// `kebab-name` go and come back under their JSON names.
    #[tokio::test]
    async fn keyword_named_fields_go_and_come_back() {
        let client = client!(fixture_keywords, Server);
        let input = GetRecordInput {
            record_id: "self".into(),
        };
        assert_eq!(
            body!(client.get_record(input).await, GetRecordResponse::Ok),
            record("self")
        );
        let input = GetRecordInput {
            record_id: "missing".into(),
        };
        let error = body!(
            client.get_record(input).await,
            GetRecordResponse::BadRequest
        );
        assert_eq!(error.code, "not_found");
        for self_ in [Some(false), None] {
            let sent = Type {
                name: "fn".into(),
                self_,
            };
            let input = CreateTypeInput { body: sent.clone() };
            assert_eq!(
                body!(client.create_type(input).await, CreateTypeResponse::Ok),
                sent
            );
        }
    }
}

mod maps {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use fixture_maps::inventory::*;
    use fixture_maps::models::{Error, Inventory, Item, Metadata, MetadataSummary};
    use fixture_maps::{Hooks, Json};

    /// Keeps the metadata last put.
    #[derive(Default)]
    struct Server(Mutex<Option<Metadata>>);
    impl Hooks for Server {
        type Principal = ();
    }

    fn map<V: Clone>(entries: &[(&str, V)]) -> BTreeMap<String, V> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    /// Maps of integers at their bounds, of text and of objects, keyed by any text.
    fn inventory(metadata: Option<Metadata>) -> Inventory {
        let item = |sku: &str, quantity| Item {
            sku: sku.into(),
            quantity,
        };
        Inventory {
            counts: map(&[
                ("apples", 3),
                ("pears 🍐", 0),
                ("max", i64::MAX),
                ("min", i64::MIN),
            ]),
            labels: Some(map(&[
                ("colour", "red".to_string()),
                ("", "empty key".into()),
            ])),
            items: map(&[("sku-1", item("a", Some(2))), ("sku 2/ü", item("b", None))]),
            metadata,
        }
    }

    impl InventoryApi for Server {
        async fn get_inventory(&self, _input: GetInventoryInput) -> GetInventoryResponse {
            let metadata = self.0.lock().expect("not poisoned").clone();
            GetInventoryResponse::Ok(Json(inventory(metadata)))
        }
        /// Keeps the metadata and counts its keys; an empty key is a 400.
        async fn put_metadata(&self, input: PutMetadataInput) -> PutMetadataResponse {
            if input.body.0.contains_key("") {
                return PutMetadataResponse::BadRequest(Json(Error {
                    code: "empty_key".into(),
                    message: String::new(),
                }));
            }
            let key_count = i32::try_from(input.body.0.len()).expect("a few keys");
            *self.0.lock().expect("not poisoned") = Some(input.body);
            PutMetadataResponse::Ok(Json(MetadataSummary {
                key_count,
                truncated: None,
            }))
        }
    }

    /// Maps of integers, text and objects come back with all their keys (any text, empty
    /// included); a map put (several keys, then none) is the map read back.
    #[tokio::test]
    async fn maps_with_any_keys_go_and_come_back() {
        let client = client!(fixture_maps, Server::default());
        let read = || client.get_inventory(GetInventoryInput {});
        assert_eq!(
            body!(read().await, GetInventoryResponse::Ok),
            inventory(None)
        );

        let several = Metadata(map(&[
            ("a", "1".to_string()),
            ("b.c", "two words".into()),
            ("ü&=", "".into()),
        ]));
        for metadata in [several, Metadata(BTreeMap::new())] {
            let input = PutMetadataInput {
                body: metadata.clone(),
            };
            let summary = body!(client.put_metadata(input).await, PutMetadataResponse::Ok);
            let key_count = i32::try_from(metadata.0.len()).expect("a few keys");
            assert_eq!(
                summary,
                MetadataSummary {
                    key_count,
                    truncated: None
                }
            );
            let back = body!(read().await, GetInventoryResponse::Ok);
            assert_eq!(back, inventory(Some(metadata)));
        }

        let input = PutMetadataInput {
            body: Metadata(map(&[("", "x".to_string())])),
        };
        let error = body!(
            client.put_metadata(input).await,
            PutMetadataResponse::BadRequest
        );
        assert_eq!(error.code, "empty_key");
    }
}

mod multi_file {
    use super::*;
    use fixture_multi_file::models::{Animal, Cat, Dog, Error, Error2, Node, Owner, Pet, Tag};
    use fixture_multi_file::pets::*;
    use fixture_multi_file::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// `n` pets, each the child of the one before, every other one tagged.
    fn lineage(n: i32) -> Vec<Pet> {
        let mut pets: Vec<Pet> = Vec::new();
        for id in 1..=i64::from(n) {
            pets.push(Pet {
                id,
                name: format!("pet {id}"),
                tag: (id % 2 == 1).then(|| Tag(format!("t{id}"))),
                parent: pets.last().cloned().map(Box::new),
            });
        }
        pets
    }

    fn animals() -> Vec<Animal> {
        let dog = |good| {
            Animal::Dog(Dog {
                kind: "dog".into(),
                good,
            })
        };
        let cat = Animal::Cat(Cat {
            kind: "cat".into(),
            lives: 9,
        });
        vec![cat, dog(Some(true)), dog(None)]
    }

    fn tree() -> Node {
        let node = |name: &str, children| Node {
            name: name.into(),
            children,
        };
        let grandchild = node("grandchild", None);
        node(
            "root",
            Some(vec![
                node("child", Some(vec![grandchild])),
                node("leaf", Some(vec![])),
            ]),
        )
    }

    impl PetsApi for Server {
        /// `limit` pets (2 when not given).
        async fn list_pets(&self, input: ListPetsInput) -> ListPetsResponse {
            ListPetsResponse::Ok(Json(lineage(input.limit.unwrap_or(2))))
        }
        /// The pet a cat or a dog becomes, named after what was read; a cat with no lives left
        /// is a 400.
        async fn add_pet(&self, input: AddPetInput) -> AddPetResponse {
            let name = match input.body {
                Animal::Cat(Cat { lives: 0, .. }) => {
                    return AddPetResponse::BadRequest(Json(Error2 {
                        code: "no_lives".into(),
                        message: "cat".into(),
                    }));
                }
                Animal::Cat(cat) => format!("{} with {} lives", cat.kind, cat.lives),
                Animal::Dog(dog) => format!("{}, good: {:?}", dog.kind, dog.good),
            };
            AddPetResponse::Created(Json(Pet {
                id: 1,
                name,
                tag: None,
                parent: None,
            }))
        }
        async fn get_animals(&self, _input: GetAnimalsInput) -> GetAnimalsResponse {
            GetAnimalsResponse::Ok(Json(animals()))
        }
        /// Owner `owner_id` with `limit` pets (1 when not given) and a family tree; `nobody` is
        /// a 404 (this file's own `Error`, an integer code).
        async fn get_owner(&self, input: GetOwnerInput) -> GetOwnerResponse {
            if input.owner_id == "nobody" {
                return GetOwnerResponse::NotFound(Json(Error {
                    code: 404,
                    message: input.owner_id,
                }));
            }
            GetOwnerResponse::Ok(Json(Owner {
                name: input.owner_id,
                pets: lineage(input.limit.unwrap_or(1)),
                tree: Some(tree()),
            }))
        }
    }

    /// Types written in other files (a self-referencing pet, a tree, a cat-or-dog told apart
    /// by `kind`, two errors of the same name) go and come back; each error is its variant.
    #[tokio::test]
    async fn types_from_other_files_go_and_come_back() {
        let client = client!(fixture_multi_file, Server);
        for limit in [None, Some(4)] {
            let pets = body!(
                client.list_pets(ListPetsInput { limit }).await,
                ListPetsResponse::Ok
            );
            assert_eq!(pets, lineage(limit.unwrap_or(2)));
        }
        let names = [
            "cat with 9 lives",
            "dog, good: Some(true)",
            "dog, good: None",
        ];
        for (animal, name) in animals().into_iter().zip(names) {
            let pet = body!(
                client.add_pet(AddPetInput { body: animal }).await,
                AddPetResponse::Created
            );
            assert_eq!(pet.name, name);
        }
        let dead = Animal::Cat(Cat {
            kind: "cat".into(),
            lives: 0,
        });
        let error = body!(
            client.add_pet(AddPetInput { body: dead }).await,
            AddPetResponse::BadRequest
        );
        assert_eq!(error.code, "no_lives");
        assert_eq!(
            body!(
                client.get_animals(GetAnimalsInput {}).await,
                GetAnimalsResponse::Ok
            ),
            animals()
        );

        let input = GetOwnerInput {
            owner_id: "Ann Lee".into(),
            limit: Some(3),
        };
        let owner = body!(client.get_owner(input).await, GetOwnerResponse::Ok);
        let want = Owner {
            name: "Ann Lee".into(),
            pets: lineage(3),
            tree: Some(tree()),
        };
        assert_eq!(owner, want);
        let input = GetOwnerInput {
            owner_id: "nobody".into(),
            limit: None,
        };
        let error = body!(client.get_owner(input).await, GetOwnerResponse::NotFound);
        assert_eq!((error.code, error.message.as_str()), (404, "nobody"));
    }
}

mod multipart {
    use super::*;
    use fixture_multipart::files::*;
    use fixture_multipart::models::{
        Error, File, LabelFilesForm, UploadFileForm, UploadFileFormPurpose,
    };
    use fixture_multipart::{FilePart, Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    impl FilesApi for Server {
        /// The file as read: its name (`-` when it has none), purpose and size, and in `title`
        /// its media type, title, note and bytes; an avatar that is not an image is a 400.
        async fn upload_file(&self, input: UploadFileInput) -> UploadFileResponse {
            let UploadFileForm {
                file,
                purpose,
                title,
                note,
            } = input.body;
            let media = file.content_type;
            let image = media.as_deref().is_some_and(|m| m.starts_with("image/"));
            if purpose == UploadFileFormPurpose::Avatar && !image {
                return UploadFileResponse::BadRequest(Json(Error {
                    code: "not_an_image".into(),
                    message: format!("{media:?}"),
                }));
            }
            UploadFileResponse::Ok(Json(File {
                id: file.file_name.unwrap_or_else(|| "-".into()),
                purpose: purpose.as_str().into(),
                size: i64::try_from(file.bytes.len()).expect("a small file"),
                title: Some(format!("{media:?} {title:?} {note:?} {:?}", file.bytes)),
            }))
        }
        /// 204, but the label `taken` is a 400 that says the label as it arrived.
        async fn label_files(&self, input: LabelFilesInput) -> LabelFilesResponse {
            let label = input.body.label;
            if label.starts_with("taken") {
                return LabelFilesResponse::BadRequest(Json(Error {
                    code: "taken".into(),
                    message: label,
                }));
            }
            LabelFilesResponse::NoContent
        }
    }

    /// A form of text parts only goes as multipart and arrives as sent.
    #[tokio::test]
    async fn a_form_without_files_goes_as_multipart() {
        let client = client!(fixture_multipart, Server);
        let input = |label: &str| LabelFilesInput {
            body: LabelFilesForm {
                label: label.into(),
            },
        };
        let answer = client.label_files(input("urgent")).await;
        assert!(
            matches!(answer, Ok(LabelFilesResponse::NoContent)),
            "{answer:?}"
        );
        let error = body!(
            client.label_files(input("taken, é\r\n")).await,
            LabelFilesResponse::BadRequest
        );
        assert_eq!(error.message, "taken, é\r\n");
    }

    fn form(
        name: Option<&str>,
        media: Option<&str>,
        bytes: &[u8],
        purpose: UploadFileFormPurpose,
    ) -> UploadFileInput {
        let file = FilePart {
            file_name: name.map(Into::into),
            content_type: media.map(Into::into),
            bytes: bytes.to_vec(),
        };
        UploadFileInput {
            body: UploadFileForm {
                file,
                purpose,
                title: None,
                note: None,
            },
        }
    }

    /// A file part (a name that is not ASCII, a media type, bytes that look like a boundary;
    /// or neither name nor media type) and the text parts beside it, set, empty and left out,
    /// arrive as sent, for every purpose; an error status is its variant.
    #[tokio::test]
    async fn file_and_text_parts_arrive_as_sent() {
        use UploadFileFormPurpose::{Avatar, DisputeEvidence, Document};
        let client = client!(fixture_multipart, Server);
        let bytes = b"%PDF\r\n--boundary\r\n\x00\xff";
        let mut input = form(
            Some("résumé 1.pdf"),
            Some("application/pdf"),
            bytes,
            Document,
        );
        input.body.title = Some("Q1 report, é".into());
        input.body.note = Some("line one\r\nline two".into());
        let file = body!(client.upload_file(input).await, UploadFileResponse::Ok);
        let want = File {
            id: "résumé 1.pdf".into(),
            purpose: "document".into(),
            size: 20,
            title: Some(format!(
                r#"Some("application/pdf") Some("Q1 report, é") Some("line one\r\nline two") {:?}"#,
                bytes.to_vec()
            )),
        };
        assert_eq!(file, want);

        let mut input = form(None, None, b"", DisputeEvidence);
        input.body.title = Some(String::new());
        let file = body!(client.upload_file(input).await, UploadFileResponse::Ok);
        let want = File {
            id: "-".into(),
            purpose: "dispute_evidence".into(),
            size: 0,
            title: Some(r#"None Some("") None []"#.into()),
        };
        assert_eq!(file, want);

        let input = form(Some("me.png"), Some("image/png"), b"\x89PNG", Avatar);
        let file = body!(client.upload_file(input).await, UploadFileResponse::Ok);
        assert_eq!((file.purpose.as_str(), file.size), ("avatar", 4));
        let input = form(Some("me.txt"), Some("text/plain"), b"me", Avatar);
        let error = body!(
            client.upload_file(input).await,
            UploadFileResponse::BadRequest
        );
        assert_eq!(error.message, r#"Some("text/plain")"#);
    }
}

mod names {
    use super::*;
    use fixture_names::caf_u00e92::{CafU00e92Api, PostPetsInput, PostPetsResponse};
    use fixture_names::default::{DefaultApi, GetPetsPetIdInput, GetPetsPetIdResponse};
    use fixture_names::models::{Error, Pet, V2Pet};
    use fixture_names::models2::{GetPetsInput, GetPetsResponse, ModelsApi};
    use fixture_names::v2fa::{
        DocumentInput, DocumentResponse, GetPets2Input, GetPets2Response, RoutesInput,
        RoutesResponse, V2faApi,
    };
    use fixture_names::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn every_field() -> V2Pet {
        V2Pet {
            name: "a".into(),
            name2: Some("A".into()),
            _1st: Some(false),
            gr_u00f6_u00df_e: Some(i32::MAX),
            self_: Some("me".into()),
        }
    }

    impl DefaultApi for Server {
        /// The pet named by the path, `Type` as its `Name`, `type` as its `self`, `größe` as
        /// its `größe`, and whether `type` was given as `1st`.
        async fn get_pets_pet_id(&self, input: GetPetsPetIdInput) -> GetPetsPetIdResponse {
            GetPetsPetIdResponse::Ok(Json(V2Pet {
                name: input.pet_id,
                name2: input.type2,
                _1st: Some(input.r#type.is_some()),
                gr_u00f6_u00df_e: input.gr_u00f6_u00df_e,
                self_: input.r#type,
            }))
        }
    }
    impl ModelsApi for Server {
        async fn get_pets(&self, _input: GetPetsInput) -> GetPetsResponse {
            GetPetsResponse::Ok(Json(vec![every_field()]))
        }
    }
    impl CafU00e92Api for Server {
        /// 200 for a pet of `Größe` `groß`; any other, or none, is a 400 saying what was read.
        async fn post_pets(&self, input: PostPetsInput) -> PostPetsResponse {
            match input.body.gr_u00f6_u00df_e.as_deref() {
                Some("groß") => PostPetsResponse::Ok,
                other => PostPetsResponse::BadRequest(Json(Error {
                    code: "size".into(),
                    message: format!("{other:?}"),
                })),
            }
        }
    }
    impl V2faApi for Server {
        async fn get_pets2(&self, _input: GetPets2Input) -> GetPets2Response {
            GetPets2Response::Ok
        }
        async fn document(&self, _input: DocumentInput) -> DocumentResponse {
            DocumentResponse::Ok
        }
        async fn routes(&self, _input: RoutesInput) -> RoutesResponse {
            RoutesResponse::Ok
        }
    }

    /// Operations named like the glue's own functions (`document`, `routes`) are routed beside
    /// them, and the served document is still the glue's.
    #[tokio::test]
    async fn operations_named_like_the_glues_functions_are_routed() {
        let client = client!(fixture_names, Server);
        assert!(matches!(
            client.document(DocumentInput {}).await,
            Ok(DocumentResponse::Ok)
        ));
        assert!(matches!(
            client.routes(RoutesInput {}).await,
            Ok(RoutesResponse::Ok)
        ));
        let document = fixture_names::document();
        assert_eq!(
            document["paths"]["/document"]["get"]["operationId"],
            "document"
        );
    }

    /// Parameters and properties whose names are not ASCII, start with a digit, are keywords or
    /// differ only in case go and come back under their own names, through every tag's trait.
    #[tokio::test]
    async fn unusual_names_go_and_come_back() {
        let client = client!(fixture_names, Server);
        let input = GetPetsPetIdInput {
            pet_id: "rex/ü 1?#50%".into(),
            r#type: Some("a+b&c=d".into()),
            type2: Some("Τ".into()),
            gr_u00f6_u00df_e: Some(-3),
        };
        let pet = body!(
            client.get_pets_pet_id(input).await,
            GetPetsPetIdResponse::Ok
        );
        let want = V2Pet {
            name: "rex/ü 1?#50%".into(),
            name2: Some("Τ".into()),
            _1st: Some(true),
            gr_u00f6_u00df_e: Some(-3),
            self_: Some("a+b&c=d".into()),
        };
        assert_eq!(pet, want);
        let input = GetPetsPetIdInput {
            pet_id: " ".into(),
            r#type: Some(String::new()),
            type2: None,
            gr_u00f6_u00df_e: None,
        };
        let pet = body!(
            client.get_pets_pet_id(input).await,
            GetPetsPetIdResponse::Ok
        );
        let want = V2Pet {
            name: " ".into(),
            name2: None,
            _1st: Some(true),
            gr_u00f6_u00df_e: None,
            self_: Some(String::new()),
        };
        assert_eq!(pet, want, "an empty value is not an absent one");

        let pets = body!(client.get_pets(GetPetsInput {}).await, GetPetsResponse::Ok);
        assert_eq!(pets, vec![every_field()]);
        bodiless!(
            client.get_pets2(GetPets2Input {}).await,
            GetPets2Response::Ok
        );

        let pet = |size: Option<&str>| PostPetsInput {
            body: Pet {
                gr_u00f6_u00df_e: size.map(Into::into),
            },
        };
        bodiless!(
            client.post_pets(pet(Some("groß"))).await,
            PostPetsResponse::Ok
        );
        for (size, read) in [(None, "None"), (Some("klein"), "Some(\"klein\")")] {
            let error = body!(
                client.post_pets(pet(size)).await,
                PostPetsResponse::BadRequest
            );
            assert_eq!(error.message, read);
        }
    }
}

mod nested_objects {
    use super::*;
    use fixture_nested_objects::models::{Address, Customer, Error, Order};
    use fixture_nested_objects::orders::*;
    use fixture_nested_objects::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// Order `id` to a customer at a full address, billed to nobody else.
    fn order(id: &str) -> Order {
        Order {
            id: id.into(),
            customer: Customer {
                name: "Ann".into(),
                address: Address {
                    line1: "1 Main St".into(),
                    line2: Some("Flat 2".into()),
                    city: "Springfield".into(),
                    postal_code: Some("12345".into()),
                },
            },
            billing_customer: None,
        }
    }

    impl OrdersApi for Server {
        async fn get_order(&self, input: GetOrderInput) -> GetOrderResponse {
            GetOrderResponse::Ok(Json(order(&input.order_id)))
        }
        /// The order as sent; one without an id is a 400.
        async fn create_order(&self, input: CreateOrderInput) -> CreateOrderResponse {
            if input.body.id.is_empty() {
                return CreateOrderResponse::BadRequest(Json(Error {
                    code: "no_id".into(),
                    message: input.body.customer.name,
                }));
            }
            CreateOrderResponse::Ok(Json(input.body))
        }
    }

    /// Objects three levels deep, optional ones and optional fields set and left out, go and
    /// come back; an error status is its variant.
    #[tokio::test]
    async fn nested_objects_go_and_come_back() {
        let client = client!(fixture_nested_objects, Server);
        let input = GetOrderInput {
            order_id: "o/1".into(),
        };
        assert_eq!(
            body!(client.get_order(input).await, GetOrderResponse::Ok),
            order("o/1")
        );
        let billed = Order {
            billing_customer: Some(Customer {
                name: "Bob".into(),
                address: Address {
                    line1: "PO Box 7".into(),
                    line2: None,
                    city: "Shelbyville".into(),
                    postal_code: None,
                },
            }),
            ..order("o2")
        };
        for sent in [billed, order("o3")] {
            let input = CreateOrderInput { body: sent.clone() };
            assert_eq!(
                body!(client.create_order(input).await, CreateOrderResponse::Ok),
                sent
            );
        }
        let input = CreateOrderInput { body: order("") };
        let error = body!(
            client.create_order(input).await,
            CreateOrderResponse::BadRequest
        );
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("no_id", "Ann")
        );
    }
}

mod nullable {
    use super::*;
    use fixture_nullable::models::{Error, Person, Profile};
    use fixture_nullable::profiles::*;
    use fixture_nullable::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// Profile `id` with every nullable field null and every optional one absent.
    fn nulls(id: &str) -> Profile {
        Profile {
            id: id.into(),
            display_name: None,
            age: None,
            nickname: None,
            score: None,
            verified: None,
            manager: None,
            mentor: None,
            owner: None,
        }
    }

    impl ProfilesApi for Server {
        async fn get_profile(&self, input: GetProfileInput) -> GetProfileResponse {
            GetProfileResponse::Ok(Json(nulls(&input.profile_id)))
        }
        /// The profile as sent; one whose id is not the path's is a 400.
        async fn update_profile(&self, input: UpdateProfileInput) -> UpdateProfileResponse {
            if input.body.id != input.profile_id {
                return UpdateProfileResponse::BadRequest(Json(Error {
                    code: "id_mismatch".into(),
                    message: input.profile_id,
                }));
            }
            UpdateProfileResponse::Ok(Json(input.body))
        }
    }

    /// Nullable fields (text, integers, a boolean, objects) go and come back null and set;
    /// optional ones absent and set; an error status is its variant.
    #[tokio::test]
    async fn nulls_and_values_go_and_come_back() {
        let client = client!(fixture_nullable, Server);
        let input = GetProfileInput {
            profile_id: "p0".into(),
        };
        assert_eq!(
            body!(client.get_profile(input).await, GetProfileResponse::Ok),
            nulls("p0")
        );
        let person = |name: &str| Some(Person { name: name.into() });
        let full = Profile {
            display_name: Some("Ann".into()),
            age: Some(0),
            nickname: Some(String::new()),
            score: Some(i64::MIN),
            verified: Some(false),
            manager: person("Bob"),
            mentor: person("Cy"),
            owner: person("Di"),
            ..nulls("p1")
        };
        let half = Profile {
            age: Some(41),
            mentor: person("Cy"),
            ..nulls("p1")
        };
        for sent in [full, half, nulls("p1")] {
            let input = UpdateProfileInput {
                profile_id: "p1".into(),
                body: sent.clone(),
            };
            let back = body!(
                client.update_profile(input).await,
                UpdateProfileResponse::Ok
            );
            assert_eq!(back, sent);
        }
        let input = UpdateProfileInput {
            profile_id: "p2".into(),
            body: nulls("p1"),
        };
        let error = body!(
            client.update_profile(input).await,
            UpdateProfileResponse::BadRequest
        );
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("id_mismatch", "p2")
        );
    }
}

mod objects {
    use super::*;
    use fixture_objects::accounts::*;
    use fixture_objects::models::{Account, CreateAccountRequest, Error};
    use fixture_objects::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    /// Account `id` with every optional field set, integers at their bounds.
    fn account(id: &str) -> Account {
        Account {
            id: id.into(),
            name: "Ann".into(),
            age: 41,
            balance: i64::MIN,
            active: false,
            nickname: Some("annie".into()),
            login_count: Some(i32::MAX),
            credit_limit: Some(i64::MAX),
            verified: Some(true),
        }
    }

    impl AccountsApi for Server {
        async fn get_account(&self, input: GetAccountInput) -> GetAccountResponse {
            GetAccountResponse::Ok(Json(account(&input.account_id)))
        }
        /// The account the request opens, defaults for what it leaves out; under 18 is a 400.
        async fn create_account(&self, input: CreateAccountInput) -> CreateAccountResponse {
            let asked = input.body;
            if asked.age < 18 {
                return CreateAccountResponse::BadRequest(Json(Error {
                    code: "too_young".into(),
                    message: asked.age.to_string(),
                }));
            }
            CreateAccountResponse::Ok(Json(Account {
                id: format!("acc_{}", asked.name),
                name: asked.name,
                age: asked.age,
                balance: asked.initial_balance.unwrap_or(0),
                active: asked.active.unwrap_or(true),
                nickname: None,
                login_count: None,
                credit_limit: None,
                verified: None,
            }))
        }
    }

    /// Flat objects of every scalar type, optional fields given and left out, go and come
    /// back; an error status is its variant.
    #[tokio::test]
    async fn flat_objects_go_and_come_back() {
        let client = client!(fixture_objects, Server);
        let input = GetAccountInput {
            account_id: "acc 1".into(),
        };
        let back = body!(client.get_account(input).await, GetAccountResponse::Ok);
        assert_eq!(back, account("acc 1"));
        let asked = |age, initial_balance, active| CreateAccountRequest {
            name: "Bo".into(),
            age,
            initial_balance,
            active,
        };
        let opened = |age, balance, active| Account {
            id: "acc_Bo".into(),
            name: "Bo".into(),
            age,
            balance,
            active,
            nickname: None,
            login_count: None,
            credit_limit: None,
            verified: None,
        };
        let cases = [
            (
                asked(i32::MAX, Some(i64::MAX), Some(false)),
                opened(i32::MAX, i64::MAX, false),
            ),
            (asked(18, None, None), opened(18, 0, true)),
        ];
        for (sent, want) in cases {
            let input = CreateAccountInput { body: sent };
            assert_eq!(
                body!(
                    client.create_account(input).await,
                    CreateAccountResponse::Ok
                ),
                want
            );
        }
        let input = CreateAccountInput {
            body: asked(17, None, None),
        };
        let error = body!(
            client.create_account(input).await,
            CreateAccountResponse::BadRequest
        );
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("too_young", "17")
        );
    }
}

mod one_of {
    use super::*;
    use fixture_one_of::models::{
        BankAccount, Card, Circle, CircleShapeType, Error, ExternalReference, Payment,
        PaymentMethod, Shape, Square, SquareShapeType,
    };
    use fixture_one_of::payments::*;
    use fixture_one_of::shapes::*;
    use fixture_one_of::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn circle(radius: i32) -> Shape {
        Shape::Circle(Circle {
            shape_type: CircleShapeType::Circle,
            radius,
        })
    }

    fn square(side: i32) -> Shape {
        Shape::Square(Square {
            shape_type: SquareShapeType::Square,
            side,
        })
    }

    fn error(code: &str) -> Error {
        Error {
            code: code.into(),
            message: String::new(),
        }
    }

    impl ShapesApi for Server {
        /// The other shape of the same width: a circle's bounding square, a square's inscribed
        /// circle; a shape of no size is a 400.
        async fn create_shape(&self, input: CreateShapeInput) -> CreateShapeResponse {
            CreateShapeResponse::Ok(Json(match input.body {
                Shape::Circle(c) if c.radius > 0 => square(2 * c.radius),
                Shape::Square(s) if s.side > 0 => circle(s.side / 2),
                _ => return CreateShapeResponse::BadRequest(Json(error("no_size"))),
            }))
        }
    }
    impl PaymentsApi for Server {
        /// The payment as sent; an amount below 1 is a 400.
        async fn create_payment(&self, input: CreatePaymentInput) -> CreatePaymentResponse {
            if input.body.amount < 1 {
                return CreatePaymentResponse::BadRequest(Json(error("no_amount")));
            }
            CreatePaymentResponse::Ok(Json(input.body))
        }
    }

    /// Each member of each oneOf (a discriminated shape, a method told apart by its fields, a
    /// reference that is text or a number, even text of digits) arrives as that member and
    /// comes back as it; an error status is its variant.
    #[tokio::test]
    async fn each_one_of_member_goes_and_comes_back() {
        let client = client!(fixture_one_of, Server);
        for (sent, want) in [(circle(3), square(6)), (square(8), circle(4))] {
            let input = CreateShapeInput { body: sent };
            assert_eq!(
                body!(client.create_shape(input).await, CreateShapeResponse::Ok),
                want
            );
        }
        let input = CreateShapeInput { body: circle(0) };
        let error = body!(
            client.create_shape(input).await,
            CreateShapeResponse::BadRequest
        );
        assert_eq!(error.code, "no_size");

        let card = PaymentMethod::Card(Card {
            card_number: "4242424242424242".into(),
            expiry: "12/30".into(),
        });
        let bank = |bic: Option<&str>| {
            PaymentMethod::BankAccount(BankAccount {
                iban: "DE89370400440532013000".into(),
                bic: bic.map(Into::into),
            })
        };
        let payment = |amount, method, reference| Payment {
            amount,
            method,
            reference,
        };
        let payments = [
            payment(1, card, Some(ExternalReference::String("42".into()))),
            payment(i64::MAX, bank(None), Some(ExternalReference::Integer(42))),
            payment(5, bank(Some("COBADEFFXXX")), None),
        ];
        for sent in payments {
            let input = CreatePaymentInput { body: sent.clone() };
            assert_eq!(
                body!(
                    client.create_payment(input).await,
                    CreatePaymentResponse::Ok
                ),
                sent
            );
        }
        let input = CreatePaymentInput {
            body: payment(0, bank(None), None),
        };
        let error = body!(
            client.create_payment(input).await,
            CreatePaymentResponse::BadRequest
        );
        assert_eq!(error.code, "no_amount");
    }
}

mod openapi31 {
    use super::*;
    use fixture_openapi31::callbacks::Webhooks;
    use fixture_openapi31::models::{
        CreatePayment, CurrencyCode, Error, Money, Payment, PaymentEvent, PaymentKind,
        PaymentStatus,
    };
    use fixture_openapi31::payments::*;
    use fixture_openapi31::{Hooks, Json};
    use serde_json::json;

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }
    /// Webhooks are no operation of the client (`openapi31.rs` builds them): none is due.
    impl Webhooks for Server {
        type Event = ();
        fn payment_settled(&self, _event: &()) -> Option<PaymentEvent> {
            None
        }
    }

    fn payment(id: &str, amount: i64, memo: Option<String>) -> Payment {
        Payment {
            id: id.into(),
            kind: PaymentKind::Book,
            amount: Money {
                amount,
                currency: CurrencyCode("EUR".into()),
            },
            status: PaymentStatus::Settled,
            memo,
            parent: None,
        }
    }

    /// Payment `id`, reversing another (`min_amount` plus one, 1 when not given).
    fn reversal(id: &str, min_amount: Option<i64>) -> Payment {
        let parent = payment("pay_parent", 7, Some("reversed".into()));
        Payment {
            parent: Some(Box::new(parent)),
            ..payment(id, min_amount.map_or(1, |m| m + 1), None)
        }
    }

    impl PaymentsApi for Server {
        /// The payment made, its memo what was read (the whole request, `{:?}`); pending when
        /// it settles on a date, settled otherwise.
        async fn create_payment(&self, input: CreatePaymentInput) -> CreatePaymentResponse {
            let status = match input.body.settle_on {
                Some(_) => PaymentStatus::Pending,
                None => PaymentStatus::Settled,
            };
            CreatePaymentResponse::Created(Json(Payment {
                id: "pay_1".into(),
                kind: PaymentKind::Book,
                amount: input.body.amount.clone(),
                status,
                memo: Some(format!("{:?}", input.body)),
                parent: None,
            }))
        }
        /// `pay_missing` is a 400.
        async fn get_payment(&self, input: GetPaymentInput) -> GetPaymentResponse {
            if input.payment_id == "pay_missing" {
                return GetPaymentResponse::BadRequest(Json(Error {
                    code: "not_found".into(),
                    message: input.payment_id,
                }));
            }
            GetPaymentResponse::Ok(Json(reversal(&input.payment_id, input.min_amount)))
        }
    }

    fn create(body: serde_json::Value) -> CreatePayment {
        serde_json::from_value(body).expect("a valid payment")
    }

    /// A payment using every 2020-12 keyword of the document (type unions, `const`, a `$defs`
    /// anchor, `prefixItems`, `contains`, `if`/`then`, `dependentRequired`, `propertyNames`,
    /// `patternProperties`), and one using none, are read as sent; a `[T, null]` field and a
    /// `oneOf [T, null]` parent come back null and set; an error status is its variant.
    #[tokio::test]
    async fn a_2020_12_payment_goes_and_comes_back() {
        let client = client!(fixture_openapi31, Server);
        let full = create(json!({
            "kind": "book",
            "amount": {"amount": 1250, "currency": "EUR"},
            "memo": "rent",
            "reference": 42,
            "attachment": "aGVsbG8=",
            "settle_on": "2026-12-01",
            "scheme": "USD",
            "location": [48.85, -2.35],
            "tags": ["ops", "rent"],
            "channel": {"kind": "card", "device": "pos-1"},
            "metadata": {"note": "x", "n_days": 3}
        }));
        let bare = create(json!({
            "kind": "book",
            "amount": {"amount": 1, "currency": "GBP"},
            "reference": "inv-7"
        }));
        for (sent, status) in [
            (full, PaymentStatus::Pending),
            (bare, PaymentStatus::Settled),
        ] {
            let input = CreatePaymentInput { body: sent.clone() };
            let made = body!(
                client.create_payment(input).await,
                CreatePaymentResponse::Created
            );
            let want = Payment {
                id: "pay_1".into(),
                kind: PaymentKind::Book,
                amount: sent.amount.clone(),
                status,
                memo: Some(format!("{sent:?}")),
                parent: None,
            };
            assert_eq!(made, want);
        }

        let input = GetPaymentInput {
            payment_id: "pay_2".into(),
            min_amount: Some(10),
        };
        let back = body!(client.get_payment(input).await, GetPaymentResponse::Ok);
        assert_eq!(back, reversal("pay_2", Some(10)));
        let input = GetPaymentInput {
            payment_id: "pay_missing".into(),
            min_amount: None,
        };
        let error = body!(
            client.get_payment(input).await,
            GetPaymentResponse::BadRequest
        );
        assert_eq!(error.code, "not_found");
    }
}

mod petstore {
    use super::*;
    use fixture_petstore::models::{Error, Pet, Pets};
    use fixture_petstore::pets::*;
    use fixture_petstore::{Hooks, Json};
    use poem::http::StatusCode;

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn pet(id: i64) -> Pet {
        Pet {
            id,
            name: format!("pet {id}"),
            tag: (id % 2 == 0).then(|| "even".into()),
        }
    }

    fn pets(n: i32) -> Pets {
        Pets((1..=i64::from(n)).map(pet).collect())
    }

    fn error(status: StatusCode, message: impl Into<String>) -> Json<Error> {
        Json(Error {
            code: i32::from(status.as_u16()),
            message: message.into(),
        })
    }

    impl PetsApi for Server {
        /// `limit` pets (3 when not given), `x-next` set when a limit was given; a limit of 0
        /// is a 422 (`default`).
        async fn list_pets(&self, input: ListPetsInput) -> ListPetsResponse {
            match input.limit {
                Some(0) => {
                    let status = StatusCode::UNPROCESSABLE_ENTITY;
                    ListPetsResponse::Default(status, error(status, "limit"))
                }
                limit => {
                    let next = limit.map(|n| format!("/pets?after={n}"));
                    ListPetsResponse::Ok(Json(pets(limit.unwrap_or(3))), next)
                }
            }
        }
        /// 201 for a named pet; a pet without a name is a 400.
        async fn create_pets(&self, input: CreatePetsInput) -> CreatePetsResponse {
            if input.body.name.is_empty() {
                return CreatePetsResponse::BadRequest(error(StatusCode::BAD_REQUEST, "name"));
            }
            CreatePetsResponse::Created
        }
        /// Pet `petId` when it is a number, else a 404 (`default`).
        async fn show_pet_by_id(&self, input: ShowPetByIdInput) -> ShowPetByIdResponse {
            match input.pet_id.parse() {
                Ok(id) => ShowPetByIdResponse::Ok(Json(pet(id))),
                Err(_) => {
                    let status = StatusCode::NOT_FOUND;
                    ShowPetByIdResponse::Default(status, error(status, input.pet_id))
                }
            }
        }
    }

    /// A list with its `x-next` header, present and absent; a bodiless 201; a declared 400; and
    /// `default` answers keeping their status.
    #[tokio::test]
    async fn every_petstore_answer_comes_back() {
        let client = client!(fixture_petstore, Server);
        for (limit, n, next) in [(None, 3, None), (Some(100), 100, Some("/pets?after=100"))] {
            match client
                .list_pets(ListPetsInput { limit })
                .await
                .expect("an answer")
            {
                ListPetsResponse::Ok(Json(list), x_next) => {
                    assert_eq!((list, x_next.as_deref()), (pets(n), next));
                }
                other => panic!("{other:?}"),
            }
        }
        let input = ListPetsInput { limit: Some(0) };
        match client.list_pets(input).await.expect("an answer") {
            ListPetsResponse::Default(status, Json(e)) => {
                assert_eq!(
                    (status.as_u16(), e.code, e.message.as_str()),
                    (422, 422, "limit")
                );
            }
            other => panic!("{other:?}"),
        }

        let named = |name: &str| CreatePetsInput {
            body: Pet {
                name: name.into(),
                ..pet(1)
            },
        };
        bodiless!(
            client.create_pets(named("Rex")).await,
            CreatePetsResponse::Created
        );
        let error = body!(
            client.create_pets(named("")).await,
            CreatePetsResponse::BadRequest
        );
        assert_eq!((error.code, error.message.as_str()), (400, "name"));

        let show = |id: &str| ShowPetByIdInput { pet_id: id.into() };
        let shown = body!(
            client.show_pet_by_id(show("-2")).await,
            ShowPetByIdResponse::Ok
        );
        assert_eq!(shown, pet(-2));
        match client.show_pet_by_id(show("two")).await.expect("an answer") {
            ShowPetByIdResponse::Default(status, Json(e)) => {
                assert_eq!(
                    (status.as_u16(), e.code, e.message.as_str()),
                    (404, 404, "two")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

mod responses {
    use super::*;
    use fixture_responses::items::*;
    use fixture_responses::models::{Error, Item};
    use fixture_responses::responses::{TooManyRequests, UnexpectedError};
    use fixture_responses::runtime::{ErrorVariants, NoBody};
    use fixture_responses::{Hooks, Json};
    use poem::http::StatusCode;

    /// Answers `ping` and `ping_unanswered` with this status.
    struct Server {
        ping: StatusCode,
    }
    impl Hooks for Server {
        type Principal = ();
    }

    fn item(name: &str, quantity: Option<i32>) -> Item {
        Item {
            name: name.into(),
            quantity,
        }
    }

    fn error(code: &str) -> Json<Error> {
        Json(Error {
            code: code.into(),
            message: String::new(),
        })
    }

    impl ItemsApi for Server {
        /// The item as sent, marked replayed when named `again`; a negative quantity is a 400.
        async fn create_item(&self, input: CreateItemInput) -> CreateItemResponse {
            if input.body.quantity.is_some_and(|q| q < 0) {
                return CreateItemResponse::BadRequest(error("negative"));
            }
            let replayed = (input.body.name == "again").then(|| "true".to_string());
            CreateItemResponse::Ok(Json(input.body), replayed)
        }
        /// A body in the 2XX range only.
        async fn ping(&self, _input: PingInput) -> PingResponse {
            match self.ping.as_u16() / 100 {
                2 => PingResponse::Status2xx(self.ping, Json(item("pong", None))),
                5 => PingResponse::Status5xx(self.ping),
                _ => PingResponse::Default(self.ping, NoBody),
            }
        }
        async fn ping_unanswered(&self, _input: PingUnansweredInput) -> PingUnansweredResponse {
            PingUnansweredResponse::Default(self.ping, NoBody)
        }
        /// By item id: `queued` is a 202, `missing` a 404, `busy` a 409, `gone` a 410
        /// (`default`); any other is replaced (200) unless its quantity is negative (400).
        async fn put_item(&self, input: PutItemInput) -> PutItemResponse {
            match input.item_id.as_str() {
                "queued" => PutItemResponse::Accepted,
                "missing" => PutItemResponse::NotFound(error("missing")),
                "busy" => PutItemResponse::Conflict(error("busy")),
                "gone" => PutItemResponse::Default(
                    StatusCode::GONE,
                    UnexpectedError {
                        body: error("gone"),
                        x_request_id: Some("req-1".into()),
                    },
                ),
                _ if input.body.quantity.is_some_and(|q| q < 0) => {
                    PutItemResponse::BadRequest(error("negative"))
                }
                _ => PutItemResponse::Ok(Json(input.body)),
            }
        }
        /// `missing` is a 404, `busy` a 429; any other item is deleted.
        async fn delete_item(&self, input: DeleteItemInput) -> DeleteItemResponse {
            match input.item_id.as_str() {
                "missing" => DeleteItemResponse::NotFound(error("missing")),
                "busy" => DeleteItemResponse::TooManyRequests(TooManyRequests {
                    body: error("slow"),
                    retry_after: Some(7),
                }),
                _ => DeleteItemResponse::Ok,
            }
        }
    }

    /// Every declared status of each item operation, with and without a body, comes back as its
    /// variant; the optional response header comes back present and absent.
    #[tokio::test]
    async fn every_declared_status_comes_back_as_its_variant() {
        let client = client!(
            fixture_responses,
            Server {
                ping: StatusCode::OK
            }
        );
        for (name, replayed) in [("again", Some("true")), ("new", None)] {
            let sent = item(name, Some(3));
            let input = CreateItemInput { body: sent.clone() };
            match client.create_item(input).await.expect("an answer") {
                CreateItemResponse::Ok(Json(back), header) => {
                    assert_eq!((back, header.as_deref()), (sent, replayed));
                }
                other => panic!("{other:?}"),
            }
        }
        let input = CreateItemInput {
            body: item("n", Some(-1)),
        };
        let error = body!(
            client.create_item(input).await,
            CreateItemResponse::BadRequest
        );
        assert_eq!(error.code, "negative");

        let put = |id: &str, quantity| PutItemInput {
            item_id: id.into(),
            body: item("i", quantity),
        };
        let back = body!(client.put_item(put("i1", None)).await, PutItemResponse::Ok);
        assert_eq!(back, item("i", None));
        bodiless!(
            client.put_item(put("queued", None)).await,
            PutItemResponse::Accepted
        );
        let answer = client.put_item(put("i1", Some(-1))).await;
        assert_eq!(body!(answer, PutItemResponse::BadRequest).code, "negative");
        let answer = client.put_item(put("missing", None)).await;
        assert_eq!(body!(answer, PutItemResponse::NotFound).code, "missing");
        let answer = client.put_item(put("busy", None)).await;
        assert_eq!(body!(answer, PutItemResponse::Conflict).code, "busy");
        // A component response with a header is a type of its own: the header a named field.
        match client.put_item(put("gone", None)).await.expect("an answer") {
            PutItemResponse::Default(status, UnexpectedError { body, x_request_id }) => {
                assert_eq!((status, body.code.as_str()), (StatusCode::GONE, "gone"));
                assert_eq!(x_request_id.as_deref(), Some("req-1"));
            }
            other => panic!("{other:?}"),
        }

        let delete = |id: &str| DeleteItemInput { item_id: id.into() };
        bodiless!(
            client.delete_item(delete("i1")).await,
            DeleteItemResponse::Ok
        );
        let answer = client.delete_item(delete("missing")).await;
        assert_eq!(body!(answer, DeleteItemResponse::NotFound).code, "missing");
        match client.delete_item(delete("busy")).await.expect("an answer") {
            DeleteItemResponse::TooManyRequests(r) => {
                assert_eq!((r.body.code.as_str(), r.retry_after), ("slow", Some(7)));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A server's error mapping builds a typed response from its body alone, without headers,
    /// under its status or, for `default`, the status it was given.
    #[test]
    fn an_error_body_becomes_the_typed_response_without_headers() {
        let body = || Error {
            code: "c".into(),
            message: String::new(),
        };
        match DeleteItemResponse::from_error(429, body()) {
            Some(DeleteItemResponse::TooManyRequests(r)) => {
                assert_eq!((r.body.code.as_str(), r.retry_after), ("c", None));
            }
            _ => panic!("429 is TooManyRequests"),
        }
        match PutItemResponse::from_error(418, body()) {
            Some(PutItemResponse::Default(status, r)) => {
                assert_eq!(status, StatusCode::IM_A_TEAPOT);
                assert!(r.x_request_id.is_none());
            }
            _ => panic!("418 is default"),
        }
        assert!(matches!(
            PutItemResponse::server_failure(body()),
            PutItemResponse::Default(StatusCode::INTERNAL_SERVER_ERROR, _)
        ));
        assert!(DeleteItemResponse::from_error(409, body()).is_none());
    }

    /// Status ranges and `default` keep the status that came: a 2XX with its body, a 5XX and
    /// any other status without one, and an operation declaring no response at all.
    #[tokio::test]
    async fn ranges_and_default_keep_their_status() {
        for code in [203, 502, 418] {
            let ping = StatusCode::from_u16(code).expect("a status");
            let client = client!(fixture_responses, Server { ping });
            match (code, client.ping(PingInput {}).await.expect("an answer")) {
                (203, PingResponse::Status2xx(status, Json(body))) => {
                    assert_eq!((status, body), (ping, item("pong", None)));
                }
                (502, PingResponse::Status5xx(status))
                | (418, PingResponse::Default(status, _)) => {
                    assert_eq!(status, ping);
                }
                (_, other) => panic!("{code}: {other:?}"),
            }
            let answer = client.ping_unanswered(PingUnansweredInput {}).await;
            let PingUnansweredResponse::Default(status, NoBody) = answer.expect("an answer");
            assert_eq!(status, ping);
        }
    }
}

mod schemas {
    use super::*;
    use std::collections::BTreeMap;

    use fixture_schemas::models::{Circle, Error, Shape, Square, Thing};
    use fixture_schemas::things::*;
    use fixture_schemas::{Hooks, Json};
    use serde_json::json;

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    const ID: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    impl ThingsApi for Server {
        /// The thing as stored: given its (read-only) id, its (write-only) secret never
        /// returned; an empty name is a 400 naming the field.
        async fn create_thing(&self, input: CreateThingInput) -> CreateThingResponse {
            if input.body.name.is_empty() {
                let details = BTreeMap::from([("name".to_string(), "empty".to_string())]);
                return CreateThingResponse::BadRequest(Json(Error {
                    code: "invalid".into(),
                    details: Some(details),
                }));
            }
            CreateThingResponse::Ok(Json(Thing {
                id: Some(ID.into()),
                secret: None,
                ..input.body
            }))
        }
    }

    /// A thing with `shape` set to `shape` (every other field set, from JSON).
    fn thing(shape: Shape) -> Thing {
        let mut thing: Thing = serde_json::from_value(json!({
            "name": "widget",
            "secret": "hunter2",
            "level": 3,
            "ratio": 1.5,
            "flag": true,
            "tiny": i8::MIN,
            "small": i16::MAX,
            "byte_value": u8::MAX,
            "count": u32::MAX,
            "big": u64::MAX,
            "weight": 2.5,
            "step": -15,
            "home": "https://example.com/a?b=c",
            "mail": "ann@example.com",
            "blob": "aGVsbG8=",
            "code": "x-1",
            "labels": ["a", "b"],
            "attributes": {"a": 1, "b": [true], "c": null},
            "free": {"any": {"thing": [1, "two"]}},
            "strict": {},
            "tree": {"value": 1, "next": {"value": 2}, "children": [{"value": 3, "children": []}]},
            "owner": {"name": "Ann", "pet": {"name": "Rex", "owner": {"name": "Bob"}}},
            "error_details": {"field": "why"},
            "parent": {"value": -1},
            "legacy": "old"
        }))
        .expect("a valid thing");
        thing.shape = Some(shape);
        thing
    }

    fn stored(sent: Thing) -> Thing {
        Thing {
            id: Some(ID.into()),
            secret: None,
            ..sent
        }
    }

    async fn create(client: &fixture_schemas::client::Client, sent: Thing) -> Thing {
        let input = CreateThingInput { body: sent };
        body!(client.create_thing(input).await, CreateThingResponse::Ok)
    }

    /// A refused thing is the declared 400, its details map read back.
    #[tokio::test]
    async fn a_refused_thing_is_the_declared_400_with_its_details() {
        let client = client!(fixture_schemas, Server);
        let nameless = json!({"name": "", "secret": "s", "level": 2});
        let input = CreateThingInput {
            body: serde_json::from_value(nameless).expect("a valid thing"),
        };
        let error = body!(
            client.create_thing(input).await,
            CreateThingResponse::BadRequest
        );
        let details = BTreeMap::from([("name".to_string(), "empty".to_string())]);
        assert_eq!(
            (error.code.as_str(), error.details),
            ("invalid", Some(details))
        );
    }

    /// Every keyword of the document's `Thing` (sized and unsigned integers at their bounds,
    /// enums of numbers and booleans, formats, free-form and closed objects, recursive and
    /// mutually recursive schemas, a deprecated field) goes and comes back, every field set
    /// and only the required ones; the required `readOnly` id is not sent, the required
    /// `writeOnly` secret not returned.
    #[tokio::test]
    async fn every_schema_keyword_goes_and_comes_back() {
        let client = client!(fixture_schemas, Server);
        let minimal: Thing =
            serde_json::from_value(json!({"name": "n", "secret": "s", "level": 1}))
                .expect("a valid thing");
        let circle = Shape::Circle(Circle { radius: 0.5 });
        for sent in [thing(circle), thing(Shape::Number(-2.25)), minimal] {
            assert_eq!(create(&client, sent.clone()).await, stored(sent));
        }
    }

    /// The anyOf member `Square` (a circle's `radius` plus a `side`) arrives as the square
    /// sent, by the server and back by the client: its JSON is a valid `Circle` too, so the
    /// larger object is tried first.
    #[tokio::test]
    async fn a_square_arrives_as_a_square() {
        let client = client!(fixture_schemas, Server);
        let sent = thing(Shape::Square(Square {
            radius: 1.0,
            side: 2.0,
        }));
        assert_eq!(create(&client, sent.clone()).await, stored(sent));
    }
}

mod security {
    use super::*;
    use fixture_security::account::*;
    use fixture_security::client::Client;
    use fixture_security::health::*;
    use fixture_security::models::{Health, User};
    use fixture_security::runtime::client::Config;
    use fixture_security::runtime::{Credential, Credentials, RequestError};
    use fixture_security::{Hooks, Json, app};

    struct Server;

    impl Hooks for Server {
        type Principal = String;
        /// Any user whose password is `s3cret`.
        async fn authenticate(&self, credentials: Credentials) -> Result<String, RequestError> {
            match credentials.get("BasicAuth") {
                Some(Credential::Basic { username, password }) if password == "s3cret" => {
                    Ok(username.clone())
                }
                _ => Err(RequestError::unauthorized()),
            }
        }
        fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
            error_schema(&error)
        }
    }

    impl AccountApi for Server {
        async fn get_me(&self, principal: String, _input: GetMeInput) -> GetMeResponse {
            GetMeResponse::Ok(Json(User {
                email: Some(format!("{principal}@example.com")),
                id: principal,
            }))
        }
    }
    impl HealthApi for Server {
        async fn get_health(&self, _input: GetHealthInput) -> GetHealthResponse {
            GetHealthResponse::Ok(Json(Health { ok: true }))
        }
    }

    /// Basic credentials given to the client reach the server as the caller; wrong or missing
    /// ones are the declared 401 in the document's error schema; an operation with
    /// `security: []` needs none.
    #[tokio::test]
    async fn basic_credentials_reach_the_server() {
        let base = on_a_port::serve(app(Arc::new(Server))).await;
        let with = |password: Option<&str>| {
            let config = Config::new(&base);
            Client::new(match password {
                Some(p) => config.basic_auth("ann lee", p),
                None => config,
            })
        };
        let me = body!(
            with(Some("s3cret")).get_me(GetMeInput {}).await,
            GetMeResponse::Ok
        );
        let want = User {
            id: "ann lee".into(),
            email: Some("ann lee@example.com".into()),
        };
        assert_eq!(me, want);
        for password in [Some("wrong"), None] {
            let answer = with(password).get_me(GetMeInput {}).await;
            let error = body!(answer, GetMeResponse::Unauthorized);
            assert_eq!(error.code, "Unauthorized");
        }
        let health = with(None).get_health(GetHealthInput {}).await;
        assert_eq!(body!(health, GetHealthResponse::Ok), Health { ok: true });
        // A user-id with a colon cannot be sent as given (RFC 7617 ends it at the first one):
        // the call is refused before anything is sent.
        let colon = Client::new(Config::new(&base).basic_auth("ann:lee", "s3cret"));
        match colon.get_me(GetMeInput {}).await {
            Err(fixture_security::runtime::client::Error::Request { message, .. }) => {
                assert!(message.contains("RFC 7617"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The security fixture's document generated with the glue as a crate of its own
/// (`--routes-apart`): the routes crate serves the contract crate's traits as the module did.
mod routes_apart {
    use super::*;
    use fixture_routes_apart::account::*;
    use fixture_routes_apart::client::Client;
    use fixture_routes_apart::health::*;
    use fixture_routes_apart::models::{Health, User};
    use fixture_routes_apart::runtime::client::Config;
    use fixture_routes_apart::runtime::{Credential, Credentials, RequestError};
    use fixture_routes_apart::{Hooks, Json};
    use fixture_routes_apart_routes::app;

    struct Server;

    impl Hooks for Server {
        type Principal = String;
        async fn authenticate(&self, credentials: Credentials) -> Result<String, RequestError> {
            match credentials.get("BasicAuth") {
                Some(Credential::Basic { username, password }) if password == "s3cret" => {
                    Ok(username.clone())
                }
                _ => Err(RequestError::unauthorized()),
            }
        }
        fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
            error_schema(&error)
        }
    }
    impl AccountApi for Server {
        async fn get_me(&self, principal: String, _input: GetMeInput) -> GetMeResponse {
            GetMeResponse::Ok(Json(User {
                email: None,
                id: principal,
            }))
        }
    }
    impl HealthApi for Server {
        async fn get_health(&self, _input: GetHealthInput) -> GetHealthResponse {
            GetHealthResponse::Ok(Json(Health { ok: true }))
        }
    }

    /// Every route answers through the routes crate: the authenticated one as its caller, and
    /// 401 without credentials; the one with `security: []` without any.
    #[tokio::test]
    async fn the_routes_crate_serves_the_contract_crates_traits() {
        let base = on_a_port::serve(app(Arc::new(Server))).await;
        let signed = Client::new(Config::new(&base).basic_auth("ann", "s3cret"));
        let me = body!(signed.get_me(GetMeInput {}).await, GetMeResponse::Ok);
        assert_eq!(me.id, "ann");
        let anonymous = Client::new(Config::new(&base));
        let error = body!(
            anonymous.get_me(GetMeInput {}).await,
            GetMeResponse::Unauthorized
        );
        assert_eq!(error.code, "Unauthorized");
        let health = anonymous.get_health(GetHealthInput {}).await;
        assert_eq!(body!(health, GetHealthResponse::Ok), Health { ok: true });
    }
}

mod split_types {
    use super::*;
    use fixture_split_types::models::{
        Address, CountShipmentsOkBody, CountStopsOkBody, Error, Leg, Mode, NewShipment, Parcel,
        Route, Shipment, ShipmentTracking, Stop, Weight,
    };
    use fixture_split_types::shipments::*;
    use fixture_split_types::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
    }

    fn address(line1: &str, country: &str) -> Address {
        Address {
            line1: line1.into(),
            country: country.into(),
        }
    }

    /// The route of shipment `id`: two stops, the leg between them travelled by `mode` (road
    /// when not given).
    fn route(id: &str, mode: Option<Mode>) -> Route {
        let stop = |line1: &str, legs| Stop {
            address: address(line1, "DE"),
            legs,
        };
        let leg = Leg {
            mode: mode.unwrap_or(Mode::Road),
            to: stop("Hafen 1", None),
        };
        Route {
            first: stop(id, Some(vec![leg])),
            weight: Some(Weight { grams: i64::MAX }),
        }
    }

    fn error(code: &str) -> Json<Error> {
        Json(Error {
            code: code.into(),
            message: String::new(),
        })
    }

    impl ShipmentsApi for Server {
        /// The shipment as asked, tracked at its origin; one to where it is from is a 400.
        async fn create_shipment(&self, input: CreateShipmentInput) -> CreateShipmentResponse {
            let asked = input.body;
            if asked.from == asked.to {
                return CreateShipmentResponse::BadRequest(error("nowhere"));
            }
            CreateShipmentResponse::Created(Json(Shipment {
                id: "shp_1".into(),
                tracking: Some(ShipmentTracking {
                    at: Some(asked.from.clone()),
                    mode: asked.mode,
                }),
                shipment: asked,
            }))
        }
        /// `shp_0` is a 400.
        async fn get_route(&self, input: GetRouteInput) -> GetRouteResponse {
            if input.shipment_id == "shp_0" {
                return GetRouteResponse::BadRequest(error("unknown"));
            }
            GetRouteResponse::Ok(Json(route(&input.shipment_id, input.mode)))
        }
        async fn count_shipments(&self, _input: CountShipmentsInput) -> CountShipmentsResponse {
            CountShipmentsResponse::Ok(Json(CountShipmentsOkBody { count: 1 }))
        }
        async fn count_routes(&self, _input: CountRoutesInput) -> CountRoutesResponse {
            CountRoutesResponse::Ok(Json(CountShipmentsOkBody { count: 2 }))
        }
        async fn count_stops(&self, _input: CountStopsInput) -> CountStopsResponse {
            CountStopsResponse::Ok(Json(CountStopsOkBody { count: i32::MAX }))
        }
    }

    /// Types from four crates, nested across them (a shipment of parcels, a route of stops and
    /// legs that refer to each other), go and come back; every mode goes as a query parameter;
    /// the counts share one type or have their own.
    #[tokio::test]
    async fn types_split_over_crates_go_and_come_back() {
        let client = client!(fixture_split_types, Server);
        let parcel = |grams, label: Option<&str>| Parcel {
            weight: Weight { grams },
            label: label.map(Into::into),
        };
        let asked = NewShipment {
            from: address("Hauptstr. 1", "DE"),
            to: address("1 Rue de Rivoli", "FR"),
            parcels: vec![parcel(1, Some("fragile")), parcel(i64::MAX, None)],
            mode: Some(Mode::Rail),
        };
        let input = CreateShipmentInput {
            body: asked.clone(),
        };
        let made = body!(
            client.create_shipment(input).await,
            CreateShipmentResponse::Created
        );
        let tracking = ShipmentTracking {
            at: Some(asked.from.clone()),
            mode: Some(Mode::Rail),
        };
        let want = Shipment {
            id: "shp_1".into(),
            shipment: asked.clone(),
            tracking: Some(tracking),
        };
        assert_eq!(made, want);
        let nowhere = NewShipment {
            to: asked.from.clone(),
            mode: None,
            ..asked
        };
        let input = CreateShipmentInput { body: nowhere };
        let error = body!(
            client.create_shipment(input).await,
            CreateShipmentResponse::BadRequest
        );
        assert_eq!(error.code, "nowhere");

        let modes = std::iter::once(None).chain(Mode::ALL.iter().copied().map(Some));
        for mode in modes {
            let input = GetRouteInput {
                shipment_id: "shp 1/ü".into(),
                mode,
            };
            let back = body!(client.get_route(input).await, GetRouteResponse::Ok);
            assert_eq!(back, route("shp 1/ü", mode));
        }
        let input = GetRouteInput {
            shipment_id: "shp_0".into(),
            mode: None,
        };
        let error = body!(client.get_route(input).await, GetRouteResponse::BadRequest);
        assert_eq!(error.code, "unknown");

        let CountShipmentsResponse::Ok(Json(shipments)) = client
            .count_shipments(CountShipmentsInput {})
            .await
            .expect("an answer");
        let CountRoutesResponse::Ok(Json(routes)) = client
            .count_routes(CountRoutesInput {})
            .await
            .expect("an answer");
        let CountStopsResponse::Ok(Json(stops)) = client
            .count_stops(CountStopsInput {})
            .await
            .expect("an answer");
        assert_eq!(
            (shipments.count, routes.count, stops.count),
            (1, 2, i32::MAX)
        );
    }
}

mod validation {
    use super::*;
    use fixture_validation::models::{
        CreateWidgetRequest, CreateWidgetRequestColor, Dimensions, ListWidgetsColor, Widget,
        WidgetList,
    };
    use fixture_validation::runtime::RequestError;
    use fixture_validation::widgets::*;
    use fixture_validation::{Hooks, Json};

    struct Server;
    impl Hooks for Server {
        type Principal = ();
        fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
            error_schema(&error)
        }
    }

    /// `limit` widgets named with `prefix` (`w` when not given), their label the colour.
    fn widgets(limit: i32, prefix: Option<&str>, color: Option<ListWidgetsColor>) -> WidgetList {
        let widget = |i: i32| Widget {
            id: i.to_string(),
            name: format!("{}{i}", prefix.unwrap_or("w")),
            dimensions: Some(Dimensions {
                width: i,
                height: limit,
                label: color.map(|c| c.as_str().to_uppercase()),
            }),
        };
        WidgetList((1..=limit).map(widget).collect())
    }

    impl WidgetsApi for Server {
        async fn list_widgets(&self, input: ListWidgetsInput) -> ListWidgetsResponse {
            let prefix = input.prefix.as_deref();
            ListWidgetsResponse::Ok(Json(widgets(input.limit, prefix, input.color)))
        }
        /// The widget made, its id what was read (the whole request, `{:?}`).
        async fn create_widget(&self, input: CreateWidgetInput) -> CreateWidgetResponse {
            CreateWidgetResponse::Ok(Json(Widget {
                id: format!("{:?}", input.body),
                name: input.body.name,
                dimensions: Some(input.body.dimensions),
            }))
        }
    }

    fn dimensions(width: i32, height: i32, label: Option<&str>) -> Dimensions {
        Dimensions {
            width,
            height,
            label: label.map(Into::into),
        }
    }

    /// Values at the edges of every constraint (lengths, patterns, inclusive and exclusive
    /// bounds, item counts, enums) go and come back; values past them are refused by the
    /// server with the declared 400, each field named.
    #[tokio::test]
    async fn values_at_their_bounds_go_and_past_them_are_refused() {
        let client = client!(fixture_validation, Server);
        let list = |limit, prefix: Option<&str>, color| ListWidgetsInput {
            limit,
            prefix: prefix.map(Into::into),
            color,
        };
        let cases = [
            (1, None, None),
            (100, Some("a_9"), Some(ListWidgetsColor::Green)),
            (3, Some(&*"z".repeat(32)), Some(ListWidgetsColor::Blue)),
        ];
        for (limit, prefix, color) in cases {
            let answer = client.list_widgets(list(limit, prefix, color)).await;
            let back = body!(answer, ListWidgetsResponse::Ok);
            assert_eq!(back, widgets(limit, prefix, color));
        }
        let answer = client.list_widgets(list(101, Some("A"), None)).await;
        let error = body!(answer, ListWidgetsResponse::BadRequest);
        assert_eq!(error.message, "limit, prefix");

        let edge = CreateWidgetRequest {
            name: "a".repeat(64),
            quantity: 1000,
            price: Some(1),
            discount_percent: Some(99),
            color: Some(CreateWidgetRequestColor::Red),
            tags: vec!["t".repeat(20); 5],
            dimensions: dimensions(10000, 9999, Some(&"L".repeat(32))),
            extra_dimensions: Some(vec![dimensions(1, 1, None); 3]),
        };
        let bare = CreateWidgetRequest {
            name: "w".into(),
            quantity: 1,
            price: None,
            discount_percent: Some(0),
            color: None,
            tags: vec!["t".into()],
            dimensions: dimensions(1, 1, None),
            extra_dimensions: Some(vec![]),
        };
        for sent in [edge.clone(), bare] {
            let input = CreateWidgetInput { body: sent.clone() };
            let made = body!(client.create_widget(input).await, CreateWidgetResponse::Ok);
            let want = Widget {
                id: format!("{sent:?}"),
                name: sent.name,
                dimensions: Some(sent.dimensions),
            };
            assert_eq!(made, want);
        }
        let past = CreateWidgetRequest {
            name: "A".into(),
            quantity: 1001,
            price: Some(0),
            discount_percent: Some(100),
            tags: vec![],
            dimensions: dimensions(1, 10000, Some("lower")),
            ..edge
        };
        let input = CreateWidgetInput { body: past };
        let error = body!(
            client.create_widget(input).await,
            CreateWidgetResponse::BadRequest
        );
        assert_eq!(error.code, "Bad Request");
        assert_eq!(
            error.message,
            "dimensions.height, dimensions.label, discount_percent, name, price, quantity, tags"
        );
    }
}
