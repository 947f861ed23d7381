//! Many files → one document: what the parser reads.
//!
//! A description split over several files (`$ref: schemas/Pet.yaml`,
//! `$ref: ../common.yaml#/schemas/Error`) and a path item written as a `$ref` are common in
//! documents maintained by hand. The parser reads one document whose references all point
//! into its own `components` (and, for schemas, anywhere in it), so this pass rewrites the
//! others first, the way `redocly bundle` and `swagger-cli bundle` do:
//!
//! - A part of another file is copied into the root's `components` under the section its use
//!   calls for (`schemas`, `parameters`, `responses`, ...), and the `$ref` points there. Its
//!   name is the component's own (`…#/components/schemas/Pet` → `Pet`), else the last segment
//!   of the pointer (`common.yaml#/schemas/Error` → `Error`), else the file's stem
//!   (`schemas/Pets.yaml` → `Pets`); a name the root (or an earlier copy) holds already gets
//!   the next free counter suffix. The same part referenced twice is copied once, and a part
//!   that refers to itself (through any number of files) ends, because it is named before its
//!   content is read.
//! - A root component that is itself a `$ref` into another file takes that part's content
//!   under its own name (`components: {schemas: {Pet: {$ref: Pet.yaml}}}` → `Pet`).
//! - Inside a copied part, `#…` references point into its own file and are resolved the same
//!   way, as are discriminator `mapping` values (a bare name is that file's component schema).
//! - A path item `$ref` (OpenAPI 3.0 has no `components/pathItems`) is replaced by the path
//!   item it names, in this file or another; so is a callback `$ref` (the parser reads
//!   callbacks only in place). One served at two paths keeps its
//!   `operationId`s at the first (an `operationId` names one operation).
//! - A non-schema `$ref` into the root outside its section of `components` (a parameter at
//!   `#/paths/~1pets/get/parameters/0`) is copied into the section too; schema pointers into
//!   the root stay as written (the parser names them).
//!
//! Remote references (`https://…`) are refused: the generator reads files, not the network.
//! The bundled document is what the generated crate serves. A document whose references all
//! point into its own `components` is returned untouched, without a copy.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::names;
use crate::names::escape;
use crate::parse::{Error, err};

/// What a place in the document holds, which decides the section of `components` a
/// reference from there is copied into and how the place's children are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PathItem,
    Operation,
    Parameter,
    Header,
    MediaType,
    Encoding,
    RequestBody,
    Response,
    Schema,
    Example,
    Link,
    Callback,
    SecurityScheme,
}

impl Kind {
    /// The section of `components` that holds parts of this kind (none for path items and
    /// the objects that can only be written in place).
    fn section(self) -> Option<&'static str> {
        Some(match self {
            Kind::Schema => "schemas",
            Kind::Parameter => "parameters",
            Kind::Response => "responses",
            Kind::RequestBody => "requestBodies",
            Kind::Header => "headers",
            Kind::Example => "examples",
            Kind::Link => "links",
            Kind::Callback => "callbacks",
            Kind::SecurityScheme => "securitySchemes",
            Kind::PathItem | Kind::Operation | Kind::MediaType | Kind::Encoding => return None,
        })
    }

    fn of_section(section: &str) -> Option<Kind> {
        [
            Kind::Schema,
            Kind::Parameter,
            Kind::Response,
            Kind::RequestBody,
            Kind::Header,
            Kind::Example,
            Kind::Link,
            Kind::Callback,
            Kind::SecurityScheme,
        ]
        .into_iter()
        .find(|k| k.section() == Some(section))
    }
}

/// How the children of a place of each kind are read: `(key, kind, shape)`.
#[derive(Clone, Copy)]
enum Shape {
    One,
    List,
    Map,
}

fn children(kind: Kind) -> &'static [(&'static str, Kind, Shape)] {
    use Kind::*;
    use Shape::*;
    match kind {
        PathItem => &[
            ("parameters", Parameter, List),
            ("get", Operation, One),
            ("put", Operation, One),
            ("post", Operation, One),
            ("delete", Operation, One),
            ("options", Operation, One),
            ("head", Operation, One),
            ("patch", Operation, One),
            ("trace", Operation, One),
        ],
        Operation => &[
            ("parameters", Parameter, List),
            ("requestBody", RequestBody, One),
            ("responses", Response, Map),
            ("callbacks", Callback, Map),
        ],
        Parameter | Header => &[
            ("schema", Schema, One),
            ("content", MediaType, Map),
            ("examples", Example, Map),
        ],
        MediaType => &[
            ("schema", Schema, One),
            ("examples", Example, Map),
            ("encoding", Encoding, Map),
        ],
        Encoding => &[("headers", Header, Map)],
        RequestBody => &[("content", MediaType, Map)],
        Response => &[
            ("headers", Header, Map),
            ("content", MediaType, Map),
            ("links", Link, Map),
        ],
        Schema => &[
            ("properties", Schema, Map),
            ("items", Schema, One),
            ("not", Schema, One),
            ("additionalProperties", Schema, One),
            ("allOf", Schema, List),
            ("anyOf", Schema, List),
            ("oneOf", Schema, List),
        ],
        Callback | Example | Link | SecurityScheme => &[],
    }
}

/// A file of the description: the root (`None`) or another, by canonical path.
type File = Option<PathBuf>;

/// Reads `path` and every file it refers to into one document.
pub fn bundle_file(path: &Path) -> Result<Value, Error> {
    bundle_file_and_sources(path).map(|(doc, _)| doc)
}

/// [`bundle_file`], and every file it read (canonical paths, `path` first): what a build script
/// names in `cargo:rerun-if-changed`.
pub fn bundle_file_and_sources(path: &Path) -> Result<(Value, Vec<PathBuf>), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error {
        pointer: "#".into(),
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    let root = read_document(&text, "#")?;
    let canonical = path.canonicalize().map_err(|e| Error {
        pointer: "#".into(),
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    let (doc, mut read) = bundle_and_sources(root, Some(canonical.clone()))?;
    read.sort();
    read.retain(|p| *p != canonical);
    read.insert(0, canonical);
    Ok((doc, read))
}

/// Parses YAML or JSON text. JSON is read by the JSON parser (several times faster on large
/// documents); anything else, or JSON it refuses, by the YAML one.
pub fn read_document(text: &str, pointer: &str) -> Result<Value, Error> {
    let json = text
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(text).ok())
        .flatten();
    match json {
        Some(v) => Ok(v),
        None => serde_yaml::from_str(text).map_err(|e| Error {
            pointer: pointer.into(),
            message: format!("not YAML or JSON: {e}"),
        }),
    }
}

/// Bundles `root`, read from `path` (`None`: from text, so a reference to another file is
/// refused).
pub fn bundle(root: Value, path: Option<PathBuf>) -> Result<Value, Error> {
    bundle_and_sources(root, path).map(|(doc, _)| doc)
}

/// [`bundle`], and the other files it read.
fn bundle_and_sources(
    mut root: Value,
    path: Option<PathBuf>,
) -> Result<(Value, Vec<PathBuf>), Error> {
    if !needs_bundling(&root) {
        return Ok((root, Vec::new()));
    }
    let mut b = Bundler {
        root_path: path,
        original: root.clone(),
        files: HashMap::new(),
        copied: HashMap::new(),
        taken: BTreeMap::new(),
        added: Vec::new(),
        inlining: Vec::new(),
        inlined: HashSet::new(),
        schema_names: crate::parse::oas31::schema_names(&root),
    };
    b.reserve_root_names(&root);
    // Components first, so a root component adopts the part it refers to under its own name
    // before a use elsewhere could copy it under another.
    if let Some(components) = root.get_mut("components").and_then(Value::as_object_mut) {
        for (section, entries) in components.iter_mut() {
            let (Some(kind), Some(entries)) = (Kind::of_section(section), entries.as_object_mut())
            else {
                continue;
            };
            for (name, entry) in entries.iter_mut() {
                let at = format!("#/components/{section}/{}", escape(name));
                b.adopt(entry, kind, name, &at)?;
            }
        }
    }
    if let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let at = format!("#/paths/{}", escape(path));
            b.walk(item, Kind::PathItem, &None, &at)?;
        }
    }
    let read: Vec<PathBuf> = b.files.keys().cloned().collect();
    b.insert_copies(&mut root);
    Ok((root, read))
}

/// Whether any `$ref` is other than `#/components/<section>/<name>`, or a discriminator
/// `mapping` names another file (the common case is answered without copying the document).
pub(crate) fn needs_bundling(v: &Value) -> bool {
    match v {
        Value::Object(map) => map.iter().any(|(k, child)| {
            let here = match (k.as_str(), child) {
                ("$ref", Value::String(r)) => !names_a_component(r),
                ("mapping", Value::Object(m)) => m.values().any(|v| {
                    v.as_str()
                        .is_some_and(|v| !v.starts_with('#') && names_a_file(v))
                }),
                _ => false,
            };
            here || needs_bundling(child)
        }),
        Value::Array(items) => items.iter().any(needs_bundling),
        _ => false,
    }
}

/// Whether a `$ref` is `#/components/<section>/<name>` of a section the parser reads there
/// (not `callbacks`), rather than a pointer deeper into one or anywhere else.
fn names_a_component(reference: &str) -> bool {
    reference
        .strip_prefix("#/components/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(section, name)| section != "callbacks" && !name.contains('/'))
}

/// Whether a discriminator `mapping` value names a file (`Cat.yaml`, `./schemas.yml#/Cat`)
/// rather than a schema (`Cat`, `v1.Cat`, `#/components/schemas/Cat`).
fn names_a_file(value: &str) -> bool {
    let path = value.split('#').next().unwrap_or_default();
    path.contains('/')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| path.to_ascii_lowercase().ends_with(ext))
}

struct Bundler {
    root_path: Option<PathBuf>,
    /// The root as read, where the references into it are looked up.
    original: Value,
    files: HashMap<PathBuf, Value>,
    /// Parts copied so far: (file, pointer) → (section, name).
    copied: HashMap<(File, String), (&'static str, String)>,
    /// Names in each section of `components`, the root's and the copies'.
    taken: BTreeMap<&'static str, BTreeSet<String>>,
    /// The copies, in the order they were named.
    added: Vec<(&'static str, String, Value)>,
    /// Path items being inlined, to refuse a cycle.
    inlining: Vec<(File, String)>,
    /// Path items inlined so far.
    inlined: HashSet<(File, String)>,
    /// References that name a schema of the root by `$anchor` or `$id` (JSON Schema 2020-12),
    /// left for the parser to resolve.
    schema_names: BTreeSet<String>,
}

impl Bundler {
    fn reserve_root_names(&mut self, root: &Value) {
        let Some(components) = root.get("components").and_then(Value::as_object) else {
            return;
        };
        for (section, entries) in components {
            let (Some(section), Some(entries)) = (
                Kind::of_section(section).and_then(Kind::section),
                entries.as_object(),
            ) else {
                continue;
            };
            self.taken
                .entry(section)
                .or_default()
                .extend(entries.keys().cloned());
        }
    }

    /// A root component: one that is a `$ref` into another file becomes that part, under the
    /// component's name; any other is walked like every place.
    fn adopt(&mut self, entry: &mut Value, kind: Kind, name: &str, at: &str) -> Result<(), Error> {
        if let (Some(reference), Some(section)) =
            (entry.get("$ref").and_then(Value::as_str), kind.section())
        {
            let (file, fragment) = self.locate(reference, &None, at)?;
            if file.is_some() && !self.copied.contains_key(&(file.clone(), fragment.clone())) {
                self.copied.insert(
                    (file.clone(), fragment.clone()),
                    (section, name.to_string()),
                );
                let mut content = self.fetch(&file, &fragment, at)?;
                if kind == Kind::Schema {
                    keep_schema_keywords(&mut content);
                }
                self.walk(&mut content, kind, &file, at)?;
                *entry = content;
                return Ok(());
            }
        }
        self.walk(entry, kind, &None, at)
    }

    /// Rewrites the references in `v`, a place of `kind` in `file`; `at` names it in errors.
    fn walk(&mut self, v: &mut Value, kind: Kind, file: &File, at: &str) -> Result<(), Error> {
        if let Some(reference) = v.get("$ref").and_then(Value::as_str) {
            let reference = reference.to_string();
            return self.reference(v, &reference, kind, file, at);
        }
        if kind == Kind::Schema {
            self.mapping(v, file, at)?;
        }
        let Some(map) = v.as_object_mut() else {
            return Ok(());
        };
        if kind == Kind::Callback {
            for (expression, item) in map.iter_mut() {
                let p = format!("{at}/{}", escape(expression));
                self.walk(item, Kind::PathItem, file, &p)?;
            }
            return Ok(());
        }
        for &(key, child_kind, shape) in children(kind) {
            let Some(child) = map.get_mut(key) else {
                continue;
            };
            let p = format!("{at}/{key}");
            match (shape, child) {
                (Shape::One, child) if child.is_object() => {
                    self.walk(child, child_kind, file, &p)?
                }
                (Shape::List, Value::Array(items)) => {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.walk(item, child_kind, file, &format!("{p}/{i}"))?;
                    }
                }
                (Shape::Map, Value::Object(entries)) => {
                    for (name, item) in entries.iter_mut() {
                        self.walk(item, child_kind, file, &format!("{p}/{}", escape(name)))?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// One `$ref` at a place of `kind` in `file`.
    fn reference(
        &mut self,
        v: &mut Value,
        reference: &str,
        kind: Kind,
        file: &File,
        at: &str,
    ) -> Result<(), Error> {
        // `$id#/pointer` and `$self#/pointer` name the same resource as `$id` and `$self`.
        let resource = reference.split_once('#').map_or(reference, |(r, _)| r);
        if file.is_none()
            && (self.schema_names.contains(reference)
                || (!resource.is_empty() && self.schema_names.contains(resource)))
        {
            return Ok(());
        }
        let (target, fragment) = self.locate(reference, file, at)?;
        if matches!(kind, Kind::PathItem | Kind::Callback) {
            return self.inline(v, reference, kind, target, fragment, at);
        }
        let Some(section) = kind.section() else {
            // Operations, media types and encodings cannot be references; the parser says so.
            return Ok(());
        };
        let in_place = target.is_none()
            && (kind == Kind::Schema
                || fragment
                    .strip_prefix(&format!("/components/{section}/"))
                    .is_some_and(|name| !name.contains('/')));
        if in_place && reference.starts_with('#') {
            return Ok(());
        }
        let rewritten = if in_place {
            // From another file back into the root: the pointer, re-escaped for the parser.
            format!("#{}", fragment.replace('%', "%25"))
        } else {
            let name = self.copy(kind, section, &target, &fragment, at)?;
            format!("#/components/{section}/{}", escape(&name))
        };
        if let Some(map) = v.as_object_mut() {
            map.insert("$ref".into(), Value::String(rewritten));
        }
        Ok(())
    }

    /// A path item or callback `$ref`, replaced by what it names: OpenAPI 3.0 has no
    /// `components/pathItems`, and the parser reads a callback only as written in place.
    fn inline(
        &mut self,
        v: &mut Value,
        reference: &str,
        kind: Kind,
        target: File,
        fragment: String,
        at: &str,
    ) -> Result<(), Error> {
        let key = (target.clone(), fragment.clone());
        if self.inlining.contains(&key) {
            return err(at, format!("`$ref` `{reference}` refers to itself"));
        }
        let mut item = self.fetch(&target, &fragment, at)?;
        // A path item served at two paths (this file's own `/paths/…`, or one referenced
        // twice) would name its operations twice: the copy's operations are named from their
        // method and path instead.
        let served_elsewhere = (target.is_none() && fragment.starts_with("/paths/"))
            || !self.inlined.insert(key.clone());
        if kind == Kind::PathItem && served_elsewhere {
            drop_operation_ids(&mut item, at);
        }
        self.inlining.push(key);
        let walked = self.walk(&mut item, kind, &target, at);
        self.inlining.pop();
        walked?;
        // The `$ref`'s siblings (a summary, a description) are kept where the item has none.
        if let (Some(item_map), Some(own)) = (item.as_object_mut(), v.as_object()) {
            for (k, value) in own {
                if k != "$ref" && !item_map.contains_key(k) {
                    item_map.insert(k.clone(), value.clone());
                }
            }
        }
        *v = item;
        Ok(())
    }

    /// A schema's discriminator `mapping` in another file: each value is a reference (or that
    /// file's component name), rewritten to the copy's name.
    fn mapping(&mut self, v: &mut Value, file: &File, at: &str) -> Result<(), Error> {
        let Some(mapping) = v
            .get_mut("discriminator")
            .and_then(|d| d.get_mut("mapping"))
            .and_then(Value::as_object_mut)
        else {
            return Ok(());
        };
        let entries: Vec<(String, String)> = mapping
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        for (key, value) in entries {
            let bare = !value.contains('#') && !names_a_file(&value);
            if file.is_none() && (bare || value.starts_with('#')) {
                continue;
            }
            let reference = if bare {
                format!("#/components/schemas/{value}")
            } else {
                value
            };
            let p = format!("{at}/discriminator/mapping/{}", escape(&key));
            let (target, fragment) = self.locate(&reference, file, &p)?;
            let name = match &target {
                None if !fragment.starts_with("/components/schemas/") => continue,
                _ => self.copy(Kind::Schema, "schemas", &target, &fragment, &p)?,
            };
            mapping.insert(
                key,
                Value::String(format!("#/components/schemas/{}", escape(&name))),
            );
        }
        Ok(())
    }

    /// The name of the copy of `fragment` in `target` in `section`, made the first time.
    fn copy(
        &mut self,
        kind: Kind,
        section: &'static str,
        target: &File,
        fragment: &str,
        at: &str,
    ) -> Result<String, Error> {
        let key = (target.clone(), fragment.to_string());
        if let Some((s, name)) = self.copied.get(&key)
            && *s == section
        {
            return Ok(name.clone());
        }
        if target.is_none()
            && let Some(name) = fragment.strip_prefix(&format!("/components/{section}/"))
            && !name.contains('/')
        {
            return Ok(name.replace("~1", "/").replace("~0", "~"));
        }
        let mut content = self.fetch(target, fragment, at)?;
        let hint = Self::name_hint(target, fragment, &content);
        let name = names::unique(hint, self.taken.entry(section).or_default());
        self.copied.insert(key, (section, name.clone()));
        // The slot is taken before the content is walked, so the copies keep the order in
        // which they were named.
        let slot = self.added.len();
        self.added.push((section, name.clone(), Value::Null));
        if kind == Kind::Schema {
            keep_schema_keywords(&mut content);
        }
        self.walk(&mut content, kind, target, at)?;
        self.added[slot].2 = content;
        Ok(name)
    }

    /// A component name for a part: the last segment of its pointer; when that is an index, a
    /// parameter's `name`, else the last three segments (`…/get/responses/200` →
    /// `get_responses_200`); for a whole file, its stem.
    fn name_hint(target: &File, fragment: &str, content: &Value) -> String {
        let segments: Vec<String> = fragment
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        let parameter = content
            .get("name")
            .and_then(Value::as_str)
            .filter(|_| content.get("in").is_some());
        let raw = match (segments.last(), parameter) {
            (Some(last), _) if !last.chars().all(|c| c.is_ascii_digit()) => last.clone(),
            (Some(_), Some(name)) => name.to_string(),
            (Some(_), None) => segments[segments.len().saturating_sub(3)..].join("_"),
            (None, _) => target
                .as_ref()
                .and_then(|p| p.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "Part".to_string()),
        };
        // Component names are `[A-Za-z0-9._-]+`.
        raw.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    /// Which file and JSON pointer `reference` names, seen from `file`.
    fn locate(&self, reference: &str, file: &File, at: &str) -> Result<(File, String), Error> {
        let (path, fragment) = match reference.split_once('#') {
            Some((path, fragment)) => (path, crate::parse::percent_decode(fragment)),
            None => (reference, String::new()),
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return err(
                at,
                format!("`$ref` `{reference}`: only JSON pointer fragments are supported"),
            );
        }
        if path.is_empty() {
            return Ok((file.clone(), fragment));
        }
        if path.contains("://") {
            return err(
                at,
                format!(
                    "`$ref` `{reference}` is remote; the generator reads files, not the network \
                     (bundle the document first)"
                ),
            );
        }
        let Some(from) = file.as_ref().or(self.root_path.as_ref()) else {
            return err(
                at,
                format!(
                    "`$ref` `{reference}` points into another file, which needs the document's \
                     path (`codegen generate --spec FILE`)"
                ),
            );
        };
        let joined = from
            .parent()
            .unwrap_or(Path::new("."))
            .join(crate::parse::percent_decode(path));
        let canonical = joined.canonicalize().map_err(|e| Error {
            pointer: at.to_string(),
            message: format!(
                "`$ref` `{reference}`: cannot read {}: {e}",
                joined.display()
            ),
        })?;
        if self.root_path.as_ref() == Some(&canonical) {
            return Ok((None, fragment));
        }
        Ok((Some(canonical), fragment))
    }

    /// A copy of the part at `fragment` in `file`.
    fn fetch(&mut self, file: &File, fragment: &str, at: &str) -> Result<Value, Error> {
        let document = match file {
            None => &self.original,
            Some(path) => {
                if !self.files.contains_key(path) {
                    let text = std::fs::read_to_string(path).map_err(|e| Error {
                        pointer: at.to_string(),
                        message: format!("cannot read {}: {e}", path.display()),
                    })?;
                    let value = read_document(&text, at).map_err(|e| Error {
                        message: format!("{}: {}", path.display(), e.message),
                        ..e
                    })?;
                    self.files.insert(path.clone(), value);
                }
                &self.files[path]
            }
        };
        match document.pointer(fragment) {
            Some(v) => Ok(v.clone()),
            None => err(
                at,
                format!(
                    "`$ref` target `{}#{fragment}` does not exist",
                    file.as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ),
            ),
        }
    }

    /// Puts the copies into the root's `components`, after its own entries.
    fn insert_copies(self, root: &mut Value) {
        if self.added.is_empty() {
            return;
        }
        let Some(doc) = root.as_object_mut() else {
            return;
        };
        let components = doc
            .entry("components")
            .or_insert_with(|| Value::Object(Map::new()));
        if !components.is_object() {
            *components = Value::Object(Map::new());
        }
        let Some(components) = components.as_object_mut() else {
            return;
        };
        for (section, name, content) in self.added {
            let entries = components
                .entry(section)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(entries) = entries.as_object_mut() {
                entries.insert(name, content);
            }
        }
    }
}

/// A schema copied from a file that holds other things beside it (`definitions`, `components`
/// of that file) keeps only the Schema Object's own keywords and extensions: the rest was
/// there for the references, which now point at their own copies.
fn keep_schema_keywords(schema: &mut Value) {
    const KEYWORDS: &[&str] = &[
        "$ref",
        "title",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "enum",
        "type",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "items",
        "properties",
        "additionalProperties",
        "description",
        "format",
        "default",
        "nullable",
        "discriminator",
        "readOnly",
        "writeOnly",
        "xml",
        "externalDocs",
        "example",
        "deprecated",
    ];
    if let Some(map) = schema.as_object_mut() {
        map.retain(|k, _| k.starts_with("x-") || KEYWORDS.contains(&k.as_str()));
    }
}

/// Removes the `operationId`s of a path item's operations, with a warning for each.
fn drop_operation_ids(item: &mut Value, at: &str) {
    let Some(map) = item.as_object_mut() else {
        return;
    };
    for (method, op) in map.iter_mut() {
        if let Some(id) = op.as_object_mut().and_then(|op| op.remove("operationId")) {
            crate::parse::warn(
                &format!("{at}/{method}"),
                format_args!(
                    "this path item is served at another path too; operationId {id} stays \
                     there and this operation is named from its method and path"
                ),
            );
        }
    }
}
