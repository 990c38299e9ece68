//! The bodies of docmeta's fuzz targets.
//!
//! Each target takes the fuzzer's bytes and drives one parser or reader of `docmeta-core` that
//! meets untrusted input. A target fails by panicking, which is what the fuzzer reports: either
//! the code under test panicked (it must return an error instead), or a property checked here
//! does not hold (a decrypted stream that differs from what was encrypted, a value longer than
//! the pipeline allows, ...).
//!
//! The same functions run in `cargo test` over the inputs kept in `fuzz/regressions/` and the
//! seed corpora, so a crash once found stays fixed. `cargo fuzz` (see `fuzz/README.md` and
//! `scripts/fuzz`) explores from the seeds.

use std::io::{Cursor, Read};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use docmeta_core::DocumentVisibility;
use docmeta_core::MAX_VALUE_LEN;
use docmeta_core::menc::{KdfParams, Keyring, Password};
use docmeta_core::{
    ClassRegistry, CompiledMetadataType, TemplateEngine, TemplateInputs, TemplateValue,
};
use docmeta_core::{
    IndexedDocument, IndexedValue, RecordKind, SearchIndex, SearchScope, TypeVisibility,
};
use docmeta_core::{MetadataType, MetadataTypeId};

/// A fuzz target: its name (the file in `fuzz/fuzz_targets/`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    ("pipeline", pipeline),
    ("yaml_arguments", yaml_arguments),
    ("template", template),
    ("search_query", search_query),
    ("menc_reader", menc_reader),
    ("backup_archive", backup_archive),
];

/// Template output allowed in the `template` target (the pipeline's own limits are larger).
const MAX_TEMPLATE_OUTPUT: usize = 64 << 10;

fn registry() -> &'static ClassRegistry {
    static REGISTRY: OnceLock<ClassRegistry> = OnceLock::new();
    REGISTRY.get_or_init(ClassRegistry::default)
}

fn engine() -> &'static TemplateEngine {
    static ENGINE: OnceLock<TemplateEngine> = OnceLock::new();
    ENGINE.get_or_init(TemplateEngine::new)
}

fn map<const N: usize>(pairs: [(&str, TemplateValue); N]) -> TemplateValue {
    pairs.into_iter().collect()
}

/// A fixed template context: a document with two metadata values, users and groups.
fn context() -> TemplateValue {
    let document = map([
        ("label", "Invoice 7".into()),
        ("id", 7.into()),
        (
            "metadata_value_of",
            map([
                ("invoice_number", "INV-2024-12345".into()),
                ("due_date", "2024-03-31".into()),
            ]),
        ),
    ]);
    map([
        ("document", document),
        ("now", "2026-11-22T10:00:00".into()),
        (
            "users",
            vec![map([("id", 1.into()), ("username", "admin".into())])].into(),
        ),
        (
            "groups",
            vec![map([("id", 1.into()), ("name", "Accounting".into())])].into(),
        ),
    ])
}

struct Inputs;

impl TemplateInputs for Inputs {
    fn default_context(&mut self) -> docmeta_core::Result<TemplateValue> {
        Ok(context())
    }

    fn lookup_context(&mut self) -> docmeta_core::Result<TemplateValue> {
        Ok(context())
    }
}

/// A metadata type as the fuzzer builds it: classes picked from the registry (or an arbitrary
/// path), arbitrary YAML arguments and templates.
#[derive(Debug, Arbitrary)]
struct PipelineInput {
    validator: u8,
    validation_arguments: String,
    parser: u8,
    parser_arguments: String,
    default: String,
    lookup: String,
    value: String,
    required: bool,
    value_type: u8,
}

fn class_path<'a>(index: u8, paths: &'a [String], other: &'a str) -> &'a str {
    match usize::from(index) {
        0 => "",
        i if i <= paths.len() => &paths[i - 1],
        _ => other,
    }
}

/// The value pipeline of spec 2.10 with an arbitrary type and value: an error or a value no
/// longer than the pipeline allows, never a panic.
pub fn pipeline(data: &[u8]) {
    let Ok(input) = PipelineInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let registry = registry();
    let validators: Vec<String> = registry.validators().map(|c| c.path.clone()).collect();
    let parsers: Vec<String> = registry.parsers().map(|c| c.path.clone()).collect();
    let metadata_type = MetadataType {
        id: MetadataTypeId(1),
        name: "fuzzed".to_owned(),
        label: "Fuzzed".to_owned(),
        default: input.default,
        lookup: input.lookup,
        validation: class_path(input.validator, &validators, "no.such.Validator").to_owned(),
        validation_arguments: input.validation_arguments,
        parser: class_path(input.parser, &parsers, "no.such.Parser").to_owned(),
        parser_arguments: input.parser_arguments,
        value_type: docmeta_core::ValueType::ALL
            [usize::from(input.value_type) % docmeta_core::ValueType::ALL.len()],
    };
    let Ok(compiled) = CompiledMetadataType::new(metadata_type, registry) else {
        return;
    };
    if let Ok(value) = compiled.process(&input.value, input.required, engine(), &mut Inputs) {
        assert!(
            value.chars().count() <= MAX_VALUE_LEN,
            "the pipeline returned a value of {} characters",
            value.chars().count()
        );
        assert!(
            !(input.required && value.trim().is_empty()),
            "a required value came out empty"
        );
    }
}

/// Every validator and parser of the registry built from arbitrary YAML arguments, then applied
/// to a value: errors are fine, panics are not.
pub fn yaml_arguments(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (arguments, value) = text.split_once('\u{0}').unwrap_or((&text, "2024-03-31"));
    let registry = registry();
    if let Some(class) = registry.validators().nth(usize::from(selector) % 16)
        && let Ok(validator) = registry.validator(&class.path, arguments)
    {
        let _ = validator.validate(value);
    }
    if let Some(class) = registry.parsers().nth(usize::from(selector) % 16)
        && let Ok(parser) = registry.parser(&class.path, arguments)
        && let Ok(parsed) = parser.parse(value)
    {
        let _ = parser.parse(&parsed);
    }
}

/// Templates in the sandboxed environment: compile, render with the output bounded.
pub fn template(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let engine = engine();
    if engine.check(source).is_ok()
        && let Ok(out) = engine.render(source, context(), MAX_TEMPLATE_OUTPUT)
    {
        assert!(out.len() <= MAX_TEMPLATE_OUTPUT, "output beyond the limit");
    }
}

/// A small index (two documents, three values) to run parsed queries on: a query that parses
/// must also translate and run, or fail with `InvalidInput` (ranges reach tantivy there).
fn search_index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let index = SearchIndex::in_memory().expect("an index in memory");
        let value = |id: i64, metadata_type_id: i64, name: &str, value: &str| IndexedValue {
            id,
            metadata_type_id,
            metadata_type_name: name.to_owned(),
            value: value.to_owned(),
            value_type: typed(name).map_or(docmeta_core::ValueType::Text, |t| t.value_type),
        };
        index
            .update(
                &[
                    IndexedDocument {
                        id: 1,
                        label: "March invoice".to_owned(),
                        document_type_label: "Invoice".to_owned(),
                        document_type_id: 1,
                        metadata: vec![
                            value(1, 1, "number", "INV-2024-12345"),
                            value(2, 2, "due", "2024-03-15"),
                            value(3, 3, "amount", "120.50"),
                        ],
                    },
                    IndexedDocument {
                        id: 2,
                        label: "Supply contract".to_owned(),
                        document_type_label: "Contract".to_owned(),
                        document_type_id: 2,
                        metadata: Vec::new(),
                    },
                ],
                &[],
            )
            .expect("indexing");
        index
    })
}

/// The index's metadata types as a search resolves them: `number` text, `due` a date, `amount`
/// a decimal.
fn typed(name: &str) -> Option<docmeta_core::ResolvedType> {
    use docmeta_core::ValueType as V;
    let (id, value_type) = match name {
        "number" => (1, V::Text),
        "due" => (2, V::Date),
        "amount" => (3, V::Decimal),
        _ => return None,
    };
    Some(docmeta_core::ResolvedType { id, value_type })
}

fn check_query(text: &str) {
    let mut expr = match docmeta_core::parse_query(text) {
        Ok(expr) => expr,
        Err(e) => {
            assert_eq!(
                e.kind(),
                docmeta_core::ErrorKind::InvalidInput,
                "a malformed query must be InvalidInput: {e}"
            );
            return;
        }
    };
    // Everything visible, and a caller who sees one document type and one metadata type.
    let narrow = SearchScope {
        documents: DocumentVisibility {
            types: [1].into_iter().collect(),
            ..Default::default()
        },
        document_metadata: DocumentVisibility {
            documents: [1].into_iter().collect(),
            ..Default::default()
        },
        metadata_types: TypeVisibility {
            ids: [3].into_iter().collect(),
            ..Default::default()
        },
    };
    let lookup = |name: &str| match typed(name) {
        Some(t) => docmeta_core::Lookup::Found(t),
        None if name == "hidden" => docmeta_core::Lookup::Hidden,
        None => docmeta_core::Lookup::Unknown,
    };
    if let Err(e) = docmeta_core::resolve_query(&mut expr, &mut |name| lookup(name)) {
        assert_eq!(
            e.kind(),
            docmeta_core::ErrorKind::InvalidInput,
            "an unknown name must be InvalidInput: {e}"
        );
        return;
    }
    let sorts = [None, typed("amount"), typed("number"), typed("due")].map(|by| {
        Some(docmeta_core::Sort {
            by,
            descending: text.len().is_multiple_of(2),
        })
    });
    for scope in [SearchScope::everything(), narrow] {
        let scope = std::sync::Arc::new(scope);
        for kind in [RecordKind::Document, RecordKind::Metadata] {
            let orders = if kind == RecordKind::Document {
                &sorts[..]
            } else {
                &[None][..]
            };
            for order in std::iter::once(None).chain(orders.iter().copied()) {
                let found = search_index().search_visible(kind, &expr, scope.clone(), order, 0, 10);
                if let Err(e) = found {
                    assert_eq!(
                        e.kind(),
                        docmeta_core::ErrorKind::InvalidInput,
                        "a query that parses must run or be InvalidInput: {e}"
                    );
                }
            }
        }
    }
}

/// The search query of spec 2.5: parsed (a query or an error with a position), then run on a
/// small index. The first byte also wraps the rest in up to 510 levels of `NOT`, `-`,
/// parentheses or a mix, so every input is tried deeply nested too.
pub fn search_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_query(text);
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let depth = usize::from(first) * 2;
    let wrapped = match first % 4 {
        0 => format!("{}{rest}", "NOT ".repeat(depth)),
        1 => format!("{}{rest}{}", "(".repeat(depth), ")".repeat(depth)),
        2 => format!("{}-{rest}{}", "(NOT ".repeat(depth), ")".repeat(depth)),
        _ => format!("{}{rest}{}", "NOT (-x ".repeat(depth), ")".repeat(depth)),
    };
    check_query(&wrapped);
}

fn keyring() -> &'static Keyring {
    static KEYRING: OnceLock<Keyring> = OnceLock::new();
    KEYRING.get_or_init(|| {
        let params = KdfParams {
            memory_kib: 8,
            iterations: 1,
            parallelism: 1,
        };
        Keyring::create(Password::new("fuzzing"), params)
            .expect("a keyring with the smallest parameters")
            .0
    })
}

/// Where a MENC header keeps the KDF parameters (8..20) and the installation salt (24..40): a
/// changed value there costs a key derivation per input (one with hostile parameters is refused
/// before it runs, see `Keyring::master`), so mutations leave these bytes alone and exercise
/// the rest, the chunk size (20..24) included.
fn kdf_field(at: usize) -> bool {
    (8..20).contains(&at) || (24..40).contains(&at)
}

#[derive(Debug, Arbitrary)]
struct MencInput {
    plain: Vec<u8>,
    chunk: u16,
    /// (position, xor) pairs applied to the sealed stream.
    flips: Vec<(u32, u8)>,
    /// Bytes cut from the end, or inserted at a position.
    truncate: u16,
    insert: Option<(u32, Vec<u8>)>,
}

/// The MENC reader: a stream altered anywhere (but the KDF fields) must fail to decrypt with a
/// decryption error, and an unaltered one must give back exactly what was encrypted.
pub fn menc_reader(data: &[u8]) {
    let Ok(input) = MencInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let keyring = keyring();
    let mut sealed = Vec::new();
    keyring
        .encryptor(Cursor::new(&input.plain), u32::from(input.chunk))
        .expect("an encryptor")
        .read_to_end(&mut sealed)
        .expect("encryption of an in-memory buffer");
    let original = sealed.clone();
    for (at, xor) in &input.flips {
        let at = *at as usize % sealed.len();
        if !kdf_field(at) {
            sealed[at] ^= xor;
        }
    }
    let cut = usize::from(input.truncate).min(sealed.len());
    sealed.truncate(sealed.len() - cut);
    if let Some((at, bytes)) = &input.insert {
        let at = (*at as usize % (sealed.len() + 1)).max(40);
        if at <= sealed.len() {
            sealed.splice(at..at, bytes.iter().copied());
        }
    }
    let mut plain = Vec::new();
    let result = keyring.decryptor(Cursor::new(&sealed)).and_then(|mut d| {
        d.read_to_end(&mut plain)
            .map_err(|e| docmeta_core::menc::io_error("decrypting", e))
    });
    if sealed == original {
        result.expect("an unaltered stream decrypts");
        assert_eq!(plain, input.plain, "decryption changed the bytes");
    } else {
        match result {
            Err(docmeta_core::Error::Decryption(_)) => {}
            Err(e) => panic!("an altered stream gave another error than Decryption: {e}"),
            Ok(_) => panic!("an altered stream decrypted ({} bytes)", plain.len()),
        }
    }
}

/// The backup archive reader (`docmeta backup verify`, the first pass of a restore): an arbitrary
/// stream is a verified manifest or an error, never a panic.
pub fn backup_archive(data: &[u8]) {
    let _ = docmeta_core::verify_backup_from(Cursor::new(data.to_vec()));
}
