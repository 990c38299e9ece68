//! Spec 2.6-2.10 and section 7, row by row, through the public API.

use docmeta_core::{DateAndTimeParser, DateParser, Parser, RegularExpressionParser, TimeParser};
use docmeta_core::{
    DateAndTimeValidator, DateValidator, RegularExpressionValidator, TimeValidator, Validator,
};
use docmeta_core::{Docmeta, DocumentId, Error, MetadataTypeInput, PageRequest, Result, Session};

const V: &str = "svc.apps.metadata.metadata_validators.";
const P: &str = "svc.apps.metadata.metadata_parsers.";

/// A document of a fresh type with one metadata type built from `input`.
fn fixture(
    input: MetadataTypeInput,
    required: bool,
) -> Result<(Session, DocumentId, docmeta_core::MetadataTypeId)> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let mt = s.create_metadata_type(input)?;
    // The document exists before the association: a required type without a default is then
    // added to it empty (spec 2.4 rule 1), where a new document would be refused (spec 2.2).
    let doc = s.create_document(dt.id, "doc", &[])?;
    s.associate(dt.id, mt.id, required)?;
    db.run_pending_tasks()?;
    Ok((s, doc.document.id, mt.id))
}

fn add(input: MetadataTypeInput, value: &str) -> Result<String> {
    let (s, doc, mt) = fixture(input, false)?;
    s.add_document_metadata(doc, mt, value)
        .map(|m| m.value.value)
}

fn validation_field(r: Result<String>) -> Option<String> {
    match r {
        Err(Error::Validation { field, .. }) => Some(field),
        _ => None,
    }
}

#[test]
fn validators_spec_2_8() {
    let cases: &[(&dyn Validator, &str, bool)] = &[
        (&DateValidator, "31/12/2024", true),
        (&DateValidator, "2024-12-31", true),
        (&DateValidator, "31-12-2024", false),
        (&DateValidator, "30/02/2024", false),
        (&DateValidator, "2024-13-01", false),
        (&DateValidator, "tomorrow", false),
        (&DateAndTimeValidator, "2024-12-31 23:59", true),
        (&DateAndTimeValidator, "2024-12-31T23:59:58", true),
        (&DateAndTimeValidator, "2024-12-31 24:00", false),
        (&DateAndTimeValidator, "31/12/2024 10:00", true),
        (&DateAndTimeValidator, "31-12-2024 10:00:30", true),
        (&DateAndTimeValidator, "31/12/2024T10:00", false),
        (&DateAndTimeValidator, "30/02/2024 10:00", false),
        (&TimeValidator, "09:30", true),
        (&TimeValidator, "23:59:59", true),
        (&TimeValidator, "9h30", false),
        (&TimeValidator, "25:00", false),
    ];
    for (validator, input, ok) in cases {
        assert_eq!(validator.validate(input).is_ok(), *ok, "{input}");
    }
    let re = RegularExpressionValidator::new("INV-[0-9]{4}").expect("pattern");
    assert!(re.validate("INV-2024").is_ok());
    assert!(
        re.validate("INV-2024 extra").is_err(),
        "the whole value must match"
    );
    assert!(re.validate("XINV-2024").is_err());
}

#[test]
fn parsers_spec_2_9() {
    let cases: &[(&dyn Parser, &str, Option<&str>)] = &[
        (&DateParser, "31/12/2024", Some("2024-12-31")),
        (&DateParser, "31-12-2024", Some("2024-12-31")),
        (&DateParser, "2024-12-31", Some("2024-12-31")),
        (&DateParser, "12/31/2024", None),
        (
            &DateAndTimeParser,
            "31/12/2024 08:05",
            Some("2024-12-31T08:05:00"),
        ),
        (
            &DateAndTimeParser,
            "2024-12-31T08:05:07",
            Some("2024-12-31T08:05:07"),
        ),
        (&DateAndTimeParser, "31/12/2024", None),
        (&TimeParser, "08:05", Some("08:05:00")),
        (&TimeParser, "8h05", Some("08:05:00")),
        (&TimeParser, "08:05:09", Some("08:05:09")),
        (&TimeParser, "8.05", None),
    ];
    for (parser, input, out) in cases {
        assert_eq!(parser.parse(input).ok().as_deref(), *out, "{input}");
    }
    let strip = RegularExpressionParser::new("[ -]", "").expect("pattern");
    assert_eq!(strip.parse("12 34-56").as_deref(), Ok("123456"));
    let swap = RegularExpressionParser::new(r"(\w+)@(\w+)", r"\2 at \1").expect("pattern");
    assert_eq!(swap.parse("ann@home").as_deref(), Ok("home at ann"));
}

#[test]
fn step_1_empty_value_takes_the_rendered_default() -> Result<()> {
    let literal = MetadataTypeInput::new("status", "Status").default_value("draft");
    assert_eq!(add(literal, "")?, "draft");
    let year = chrono::Utc::now().format("%Y").to_string();
    let template = MetadataTypeInput::new("year", "Year").default_value(r#"{{ now|date:"Y" }}"#);
    assert_eq!(add(template, "")?, year);
    let jinja = MetadataTypeInput::new("year", "Year").default_value(r#"{{ now|date("Y") }}"#);
    assert_eq!(add(jinja, "")?, year);
    let doc = MetadataTypeInput::new("title", "Title").default_value("{{ document.label|upper }}");
    assert_eq!(add(doc, "")?, "DOC");
    let given = MetadataTypeInput::new("status", "Status").default_value("draft");
    assert_eq!(
        add(given, "final")?,
        "final",
        "a given value wins over the default"
    );
    Ok(())
}

#[test]
fn step_2_required_and_still_empty_is_a_validation_error() -> Result<()> {
    let (s, doc, mt) = fixture(MetadataTypeInput::new("number", "Number"), true)?;
    // The required type was added to the new document empty (spec 2.4 rule 1 semantics).
    let existing = s
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    assert_eq!(existing.len(), 1);
    let err = s
        .edit_document_metadata(doc, existing[0].id, "", None)
        .expect_err("required");
    assert!(
        matches!(err, Error::Validation { ref field, .. } if field == "value"),
        "{err}"
    );
    let err = s
        .edit_document_metadata(doc, existing[0].id, "   ", None)
        .expect_err("blank is empty");
    assert!(matches!(err, Error::Validation { .. }));
    assert_eq!(
        s.edit_document_metadata(doc, existing[0].id, "42", None)?
            .value
            .value,
        "42"
    );
    let _ = mt;
    Ok(())
}

#[test]
fn empty_optional_value_skips_lookup_validator_and_parser() -> Result<()> {
    let input = MetadataTypeInput::new("due", "Due")
        .lookup("a,b")
        .validation(format!("{V}DateValidator"), "")
        .parser(format!("{P}DateParser"), "");
    assert_eq!(add(input, "")?, "");
    Ok(())
}

#[test]
fn date_and_time_validator_and_parser_combine_on_one_type() -> Result<()> {
    let input = || {
        MetadataTypeInput::new("at", "At")
            .validation(format!("{V}DateAndTimeValidator"), "")
            .parser(format!("{P}DateAndTimeParser"), "")
    };
    for (submitted, stored) in [
        ("31/12/2024 08:05", "2024-12-31T08:05:00"),
        ("31-12-2024 08:05:09", "2024-12-31T08:05:09"),
        ("2024-12-31 08:05", "2024-12-31T08:05:00"),
        ("2024-12-31T08:05:09", "2024-12-31T08:05:09"),
    ] {
        assert_eq!(add(input(), submitted)?, stored, "{submitted}");
    }
    assert_eq!(
        validation_field(add(input(), "12/31/2024 08:05")),
        Some("value".into())
    );
    Ok(())
}

#[test]
fn step_3_lookup() -> Result<()> {
    let input =
        || MetadataTypeInput::new("status", "Status").lookup(r#" draft, "in review", final,, "#);
    assert_eq!(add(input(), "in review")?, "in review");
    assert_eq!(
        validation_field(add(input(), "deleted")),
        Some("value".into())
    );
    let users = MetadataTypeInput::new("owner", "Owner")
        .lookup("{% for u in users %}{{ u.username }},{% endfor %}");
    let (s, doc, mt) = fixture(users, false)?;
    s.create_user("ann", "long enough pw", false)?;
    assert_eq!(s.lookup_choices(mt, None)?, Some(vec!["ann".to_string()]));
    assert_eq!(s.add_document_metadata(doc, mt, "ann")?.value.value, "ann");
    let groups = MetadataTypeInput::new("team", "Team").lookup("{{ groups|join(',') }}");
    let (s, doc, mt) = fixture(groups, false)?;
    s.create_group("Sales")?;
    s.create_group("Legal")?;
    assert!(s.add_document_metadata(doc, mt, "Legal").is_ok());
    Ok(())
}

#[test]
fn step_3_lookup_runs_before_the_validator() -> Result<()> {
    // "32/01/2024" is not in the list: the lookup error comes first.
    let input = MetadataTypeInput::new("d", "D")
        .lookup("01/01/2024")
        .validation(format!("{V}DateValidator"), "");
    let err = add(input, "32/01/2024").expect_err("refused");
    assert!(
        err.to_string().contains("not one of the available choices"),
        "{err}"
    );
    Ok(())
}

#[test]
fn step_4_and_5_validator_then_parser() -> Result<()> {
    let date = || {
        MetadataTypeInput::new("due", "Due")
            .validation(format!("{V}DateValidator"), "")
            .parser(format!("{P}DateParser"), "")
    };
    assert_eq!(
        add(date(), "31/12/2024")?,
        "2024-12-31",
        "stored value is the parsed value"
    );
    assert_eq!(
        validation_field(add(date(), "31-12-2024")),
        Some("value".into()),
        "validator refuses before the parser"
    );
    let code = MetadataTypeInput::new("code", "Code")
        .validation(
            format!("{V}RegularExpressionValidator"),
            "pattern: '[A-Z]{3}[- ][0-9]+'",
        )
        .parser(
            format!("{P}RegularExpressionParser"),
            "pattern: '[- ]'\nreplacement: ''",
        );
    assert_eq!(add(code, "ABC-123")?, "ABC123");
    let time = MetadataTypeInput::new("at", "At").parser(format!("{P}TimeParser"), "");
    assert_eq!(add(time, "9h30")?, "09:30:00");
    let dt = MetadataTypeInput::new("when", "When").parser(format!("{P}DateAndTimeParser"), "");
    assert_eq!(add(dt, "01/02/2024 10:11")?, "2024-02-01T10:11:00");
    let legacy = MetadataTypeInput::new("due", "Due")
        .parser("mayan.apps.metadata.metadata_parsers.DateParser", "");
    assert_eq!(add(legacy, "01-02-2024")?, "2024-02-01");
    Ok(())
}

#[test]
fn definitions_are_checked_when_saved() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let field = |input: MetadataTypeInput| match s.create_metadata_type(input) {
        Err(Error::Validation { field, .. }) => field,
        other => format!("{other:?}"),
    };
    assert_eq!(field(MetadataTypeInput::new("bad name", "x")), "name");
    assert_eq!(field(MetadataTypeInput::new("for", "x")), "name");
    assert_eq!(field(MetadataTypeInput::new("n".repeat(49), "x")), "name");
    assert_eq!(field(MetadataTypeInput::new("ok", "")), "label");
    assert_eq!(field(MetadataTypeInput::new("ok", "l".repeat(49))), "label");
    assert_eq!(
        field(
            MetadataTypeInput::new("ok", "x")
                .validation("svc.apps.metadata.metadata_validators.Nope", "")
        ),
        "validation"
    );
    assert_eq!(
        field(
            MetadataTypeInput::new("ok", "x")
                .validation(format!("{V}RegularExpressionValidator"), "")
        ),
        "validation_arguments"
    );
    assert_eq!(
        field(
            MetadataTypeInput::new("ok", "x")
                .validation(format!("{V}RegularExpressionValidator"), "pattern: '('")
        ),
        "validation_arguments"
    );
    assert_eq!(
        field(
            MetadataTypeInput::new("ok", "x")
                .parser(format!("{P}RegularExpressionParser"), "replacement: x")
        ),
        "parser_arguments"
    );
    assert_eq!(
        field(MetadataTypeInput::new("ok", "x").parser(format!("{P}DateParser"), "[unclosed")),
        "parser_arguments"
    );
    assert_eq!(
        field(MetadataTypeInput::new("ok", "x").parser("", "pattern: a")),
        "parser_arguments"
    );
    assert_eq!(
        field(MetadataTypeInput::new("ok", "x").default_value("{% if %}")),
        "default"
    );
    assert_eq!(
        field(MetadataTypeInput::new("ok", "x").lookup("{{ a b }}")),
        "lookup"
    );
    s.create_metadata_type(MetadataTypeInput::new("ok", "x"))?;
    assert!(
        matches!(s.create_metadata_type(MetadataTypeInput::new("ok", "y")), Err(Error::Conflict { ref field, .. }) if field == "name")
    );
    Ok(())
}

#[test]
fn hostile_templates_fail_in_bounded_time() -> Result<()> {
    let start = std::time::Instant::now();
    let cases = [
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        // Memory, not time: one string repetition or a doubling per recursion level would
        // allocate gigabytes within the fuel.
        "{{ 'abcdefgh' * 100000000 }}",
        "{% macro d(s, n) %}{% if n > 0 %}{{ d(s ~ s, n - 1) }}{% else %}{{ s|length }}{% endif %}{% endmacro %}{{ d('ab', 40) }}",
        "{{ ((range(100000)|join(',')) * 1000)|length }}",
        // `{% set b = a ~ a ~ ... %}` took a server to 13.5 GB.
        &format!(
            "{{% set a = 'xxxxxxxxxxxxxxxx' %}}{}{{{{ a|length }}}}",
            "{% set a = a ~ a ~ a ~ a %}".repeat(15)
        ),
        &format!(
            "{{% set a = [1] %}}{}{{{{ a|length }}}}",
            "{% set a = a + a %}".repeat(40)
        ),
    ];
    for template in cases {
        let err =
            add(MetadataTypeInput::new("t", "T").default_value(template), "").expect_err("bounded");
        // Refused when rendered (`value`), or when saved for constructs the sandbox does not
        // allow (macros: `default`).
        assert!(
            matches!(err, Error::Validation { ref field, .. } if field == "value" || field == "default"),
            "{err}"
        );
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    Ok(())
}

#[test]
fn section_7_errors() -> Result<()> {
    // Second value of the same type on the same document: refused by the uniqueness rule.
    let (s, doc, mt) = fixture(MetadataTypeInput::new("n", "N"), false)?;
    s.add_document_metadata(doc, mt, "1")?;
    let err = s.add_document_metadata(doc, mt, "2").expect_err("unique");
    assert!(
        matches!(err, Error::Conflict { ref field, .. } if field == "metadata_type_id"),
        "{err}"
    );
    // A type not associated with the document's type.
    let other = s.create_metadata_type(MetadataTypeInput::new("other", "Other"))?;
    let err = s
        .add_document_metadata(doc, other.id, "x")
        .expect_err("not associated");
    assert!(
        matches!(err, Error::Validation { ref field, .. } if field == "metadata_type_id"),
        "{err}"
    );
    // Values over the limit.
    assert!(
        s.add_document_metadata(doc, other.id, &"x".repeat(10_001))
            .is_err()
    );
    Ok(())
}

#[test]
fn document_accessors_in_templates() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Contract")?;
    let party = s.create_metadata_type(MetadataTypeInput::new("party", "Party"))?;
    let summary = s.create_metadata_type(MetadataTypeInput::new("summary", "Summary").default_value(
        "{{ document.metadata_value_of.party }}/{{ document.metadata_value_of.missing is none }}/{% for m in document.metadata.all %}{{ m.metadata_type.name }}{% endfor %}/{{ document.document_type.label }}",
    ))?;
    s.associate(dt.id, party.id, false)?;
    s.associate(dt.id, summary.id, false)?;
    let doc = s
        .create_document(dt.id, "c", &[(party.id, "ACME")])?
        .document;
    assert_eq!(
        s.add_document_metadata(doc.id, summary.id, "")?.value.value,
        "ACME/True/party/Contract"
    );
    assert_eq!(
        s.metadata_value_of(doc.id, "party")?.as_deref(),
        Some("ACME")
    );
    assert_eq!(s.metadata_value_of(doc.id, "nothing")?, None);
    Ok(())
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // Integration tests have no lib.rs above them for proptest's default location: name the
        // committed file (relative to this crate) so a failing case is replayed on every run.
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "proptest-regressions/pipeline.txt",
                ),
            )),
            ..ProptestConfig::default()
        })]

        #[test]
        fn classes_never_panic(s in "\\PC{0,40}") {
            let _ = DateValidator.validate(&s);
            let _ = DateAndTimeValidator.validate(&s);
            let _ = TimeValidator.validate(&s);
            let _ = DateParser.parse(&s);
            let _ = DateAndTimeParser.parse(&s);
            let _ = TimeParser.parse(&s);
        }

        #[test]
        fn date_parser_output_is_a_fixed_point(y in 1i32..9999, m in 1u32..=12, d in 1u32..=28, form in 0usize..3) {
            let input = match form {
                0 => format!("{d:02}/{m:02}/{y:04}"),
                1 => format!("{d:02}-{m:02}-{y:04}"),
                _ => format!("{y:04}-{m:02}-{d:02}"),
            };
            let once = DateParser.parse(&input).expect("valid date");
            prop_assert_eq!(DateParser.parse(&once), Ok(once.clone()));
            prop_assert_eq!(once, format!("{y:04}-{m:02}-{d:02}"));
        }

        #[test]
        fn time_and_date_time_parsers_are_fixed_points(h in 0u32..24, mi in 0u32..60, d in 1u32..=28) {
            let t = TimeParser.parse(&format!("{h}h{mi:02}")).expect("valid time");
            prop_assert_eq!(TimeParser.parse(&t), Ok(t.clone()));
            let dt = DateAndTimeParser.parse(&format!("{d:02}/03/2020 {h:02}:{mi:02}")).expect("valid");
            prop_assert_eq!(DateAndTimeParser.parse(&dt), Ok(dt.clone()));
        }

        #[test]
        fn date_and_time_validator_accepts_what_the_parser_reads(s in "([0-3][0-9][-/][01][0-9][-/][12][0-9]{3}|[12][0-9]{3}-[01][0-9]-[0-3][0-9])[ T][0-2]?[0-9]:[0-5][0-9](:[0-5][0-9])?") {
            prop_assert_eq!(DateAndTimeValidator.validate(&s).is_ok(), DateAndTimeParser.parse(&s).is_ok(), "{}", s);
        }

        #[test]
        fn regex_parser_equals_reference_substitution(s in "[a-c -]{0,30}", pattern in prop::sample::select(vec!["a", "[ -]", "b+"]), replacement in "[xy]{0,2}") {
            let parser = RegularExpressionParser::new(pattern, &replacement).expect("pattern");
            let reference = regex_reference(&s, pattern, &replacement);
            prop_assert_eq!(parser.parse(&s).expect("infallible"), reference);
        }

        #[test]
        fn templates_never_panic(t in "\\PC{0,60}") {
            let engine = docmeta_core::TemplateEngine::new();
            let _ = engine.render(&t, docmeta_core::TemplateValue::from(()), 1000);
        }
    }

    /// An independent reference for the three patterns used above: every match (a maximal run
    /// for `b+`) becomes `replacement`.
    fn regex_reference(s: &str, pattern: &str, replacement: &str) -> String {
        let matches = |c: char| match pattern {
            "a" => c == 'a',
            "[ -]" => c == ' ' || c == '-',
            _ => c == 'b',
        };
        let mut out = String::new();
        let mut in_run = false;
        for c in s.chars() {
            if matches(c) {
                if pattern != "b+" || !in_run {
                    out.push_str(replacement);
                }
                in_run = true;
            } else {
                out.push(c);
                in_run = false;
            }
        }
        out
    }
}

#[test]
fn a_new_document_without_a_value_for_a_required_type_without_default_is_refused() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let number = s.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    s.associate(dt.id, number.id, true)?;
    let err = s.create_document(dt.id, "doc", &[]).expect_err("refused");
    assert!(
        matches!(&err, Error::Validation { field, message } if field == "metadata" && message.contains("'number'")),
        "{err}"
    );
    assert!(s.document_ids(None)?.is_empty(), "nothing was created");
    assert_eq!(
        s.create_document(dt.id, "doc", &[(number.id, "42")])?
            .document
            .label,
        "doc"
    );
    Ok(())
}

#[test]
fn a_new_document_takes_the_default_of_a_required_type_not_given() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let status =
        s.create_metadata_type(MetadataTypeInput::new("status", "Status").default_value("draft"))?;
    s.associate(dt.id, status.id, true)?;
    let doc = s.create_document(dt.id, "doc", &[])?.document;
    assert_eq!(
        s.metadata_value_of(doc.id, "status")?.as_deref(),
        Some("draft")
    );
    Ok(())
}

#[test]
fn a_refused_initial_value_creates_no_document() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let due = s.create_metadata_type(
        MetadataTypeInput::new("due", "Due").validation(format!("{V}DateValidator"), ""),
    )?;
    s.associate(dt.id, due.id, false)?;
    assert_eq!(
        validation_field(
            s.create_document(dt.id, "doc", &[(due.id, "soon")])
                .map(|d| d.document.label)
        ),
        Some("metadata[0].value".into())
    );
    assert!(s.document_ids(None)?.is_empty());
    Ok(())
}

#[test]
fn a_refused_initial_value_names_its_entry() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let number = s.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    let due = s.create_metadata_type(
        MetadataTypeInput::new("due", "Due").validation(format!("{V}DateValidator"), ""),
    )?;
    s.associate(dt.id, number.id, false)?;
    s.associate(dt.id, due.id, false)?;
    let err = s
        .create_document(dt.id, "doc", &[(number.id, "7"), (due.id, "soon")])
        .expect_err("the second value is refused");
    assert_eq!(
        err.field_path(),
        Some(vec![
            docmeta_core::FieldStep::Field("metadata"),
            docmeta_core::FieldStep::Entry(1),
            docmeta_core::FieldStep::Field("value"),
        ]),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_document_created_with_a_file_and_values_has_both() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let number = s.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    s.associate(dt.id, number.id, true)?;
    let (doc, file) = s.create_document_with_file(
        dt.id,
        "doc",
        &[(number.id, "42")],
        "scan.pdf",
        &mut &b"%PDF"[..],
    )?;
    assert_eq!(file.document_id, doc.document.id);
    assert_eq!(s.read_file(file.id)?, b"%PDF");
    assert_eq!(
        s.metadata_value_of(doc.document.id, "number")?.as_deref(),
        Some("42")
    );
    Ok(())
}

#[test]
fn a_document_with_a_file_refused_for_its_values_leaves_nothing() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let number = s.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    s.associate(dt.id, number.id, true)?;
    let refused = s.create_document_with_file(dt.id, "doc", &[], "scan.pdf", &mut &b"%PDF"[..]);
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "metadata"));
    assert!(s.document_ids(None)?.is_empty());
    Ok(())
}

#[test]
fn a_documents_lookup_choices_are_rendered_for_that_document() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?;
    let other = s.create_document_type("Other")?;
    let mt = s.create_metadata_type(
        MetadataTypeInput::new("copy", "Copy").lookup("{{ document.label }},none"),
    )?;
    s.associate(dt.id, mt.id, false)?;
    let doc = s.create_document(dt.id, "INV-1", &[])?.document;
    assert_eq!(
        s.document_lookup_choices(doc.id, mt.id)?,
        Some(vec!["INV-1".to_string(), "none".to_string()])
    );
    let stray = s.create_document(other.id, "x", &[])?.document;
    assert!(
        matches!(
            s.document_lookup_choices(stray.id, mt.id),
            Err(Error::NotFound(_))
        ),
        "the type is not associated with that document's type"
    );
    Ok(())
}
