//! The example every face shows (docs/metadata.md, "Validators and parsers"): an application's
//! own validator, checked offline first, then a value through the pipeline of spec 2.10, a grant
//! and its `explain`.
//!
//! ```text
//! cargo run -p docmeta-core --example own_validator
//! ```

use docmeta_core::Validator;
use docmeta_core::{
    ClassRegistry, Docmeta, Error, MetadataProcessor, MetadataTypeInput, ObjectKind, ObjectRef,
    Permission,
};

/// Accepts even numbers only.
struct Even;

impl Validator for Even {
    fn validate(&self, value: &str) -> Result<(), String> {
        match value.trim().parse::<i64>() {
            Ok(n) if n % 2 == 0 => Ok(()),
            _ => Err(format!("'{value}' is not an even number")),
        }
    }
}

fn main() -> Result<(), Error> {
    let mut classes = ClassRegistry::default();
    classes.register_validator("myapp.validators.Even", "Even number", |_yaml| {
        Ok(Box::new(Even))
    });
    let pairs = MetadataTypeInput::new("pairs", "Pairs").validation("myapp.validators.Even", "");

    // Offline: no database, the same errors as the pipeline.
    let form = classes.processor(&pairs)?;
    assert_eq!(form.process("42", true)?, "42");
    let refused = form.process("7", true).err();
    println!(
        "offline: {}",
        refused.map(|e| e.to_string()).unwrap_or_default()
    );
    assert!(
        MetadataProcessor::new(&pairs).is_err(),
        "unknown without the app's classes"
    );

    // The same type in a store.
    let db = Docmeta::builder().classes(classes).open()?; // in memory; .data_dir(..) for files
    let admin = db.system();
    let box_type = admin.create_document_type("Box")?;
    let pairs = admin.create_metadata_type(pairs)?;
    admin.associate(box_type.id, pairs.id, true)?;
    let doc = admin
        .create_document(box_type.id, "Box 1", &[(pairs.id, "12")])?
        .document;
    println!(
        "stored: {:?}",
        admin
            .metadata_value_of(doc.id, "pairs")?
            .unwrap_or_default()
    );
    let odd = admin.create_document(box_type.id, "Box 2", &[(pairs.id, "13")]);
    println!(
        "pipeline: {}",
        odd.err().map(|e| e.to_string()).unwrap_or_default()
    );

    // A grant, and why it applies.
    let clerk = admin.create_user("clerk", "correct horse battery", false)?;
    let role = admin.create_role("Box readers")?.id;
    let group = admin.create_group("Warehouse")?.id;
    admin.set_group_member(group, clerk.id, true)?;
    admin.set_role_group(role, group, true)?;
    let box_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, box_type.id.0);
    admin.grant(Permission::DocumentView, role, box_ref)?;
    let why = db.explain(
        clerk.id,
        Permission::DocumentView,
        ObjectRef::new(ObjectKind::DOCUMENT, doc.id.0),
    );
    assert!(why.grant.is_some());
    println!("explain: {}", why.describe(&db.kinds()));
    Ok(())
}
