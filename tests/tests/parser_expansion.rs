//! Expanding parsers: a regular-expression parser whose replacement repeats the match many
//! times (`$0$0$0…`) on a long value with many matches would build hundreds of MiB before the
//! value limit refused the result. The output is bounded while it is built: the value is
//! refused (a `Validation` on `value`) and the process never grows by more than a few MiB.
//!
//! Its own test binary, one test: the peak resident size of the process (`VmHWM`) is what it
//! measures, and no other test may run beside it.

use docmeta_core::{Docmeta, Error, MetadataTypeInput, Result};
use docmeta_core::{Parser, RegularExpressionParser};

const P: &str = "svc.apps.metadata.metadata_parsers.";

/// The peak resident size of this process so far, in KiB (Linux).
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_replacement_expansion_is_refused_while_it_is_built() -> Result<()> {
    // 4,000 references to the whole match: every one of the value's 10,000 one-character
    // matches would become 4,000 characters (40 MB in all; each `$0` of a longer match more).
    let replacement = "$0".repeat(4_000);
    let value = "x".repeat(10_000);
    let parser = RegularExpressionParser::new(".", &replacement).map_err(Error::InvalidInput)?;
    // The same shape on longer matches: `.{100}` 100 times, 4,000 copies of 100 characters each.
    let wide = RegularExpressionParser::new(".{100}", &replacement).map_err(Error::InvalidInput)?;

    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("code", "Code").parser(
        format!("{P}RegularExpressionParser"),
        format!("pattern: '.'\nreplacement: '{replacement}'"),
    ))?;
    s.associate(dt.id, mt.id, false)?;
    let doc = s.create_document(dt.id, "doc", &[])?.document;

    let before = peak_kib();
    for _ in 0..3 {
        match s.add_document_metadata(doc.id, mt.id, &value) {
            Err(Error::Validation { field, message }) => {
                assert_eq!(field, "value");
                assert!(message.contains("10000"), "{message}");
            }
            other => panic!("expected a validation error on value, got {other:?}"),
        }
    }
    let after = peak_kib();
    if let (Some(before), Some(after)) = (before, after) {
        let grown = after.saturating_sub(before);
        // Unbounded, one expansion is 40 MB (and its doubling growth more): bounded, the
        // output never passes the value limit (10,000 characters) by more than one piece.
        assert!(
            grown < 8 * 1024,
            "the process grew by {grown} KiB while refusing the expansion"
        );
    }
    assert!(parser.parse(&value).is_err(), "the expansion was accepted");
    assert!(
        wide.parse(&value).is_err(),
        "the wide expansion was accepted"
    );

    // What stays within the limit still parses exactly as before.
    let short = RegularExpressionParser::new(r"(\w+)@(\w+)", "${2}$$1 at $1 $missing")
        .map_err(Error::InvalidInput)?;
    assert_eq!(short.parse("ann@home").as_deref(), Ok("home$1 at ann "));
    let named = RegularExpressionParser::new(r"(?<user>\w+)@(?<host>\w+)", r"$host/$user/\1")
        .map_err(Error::InvalidInput)?;
    assert_eq!(
        named.parse("ann@home, bob@work").as_deref(),
        Ok("home/ann/ann, work/bob/bob")
    );
    let fits = RegularExpressionParser::new(".", "$0$0").map_err(Error::InvalidInput)?;
    assert_eq!(fits.parse(&"y".repeat(5_000)).map(|s| s.len()), Ok(10_000));
    assert!(fits.parse(&"y".repeat(5_001)).is_err());
    Ok(())
}
