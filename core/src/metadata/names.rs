//! Rules on metadata type names and labels (spec 2.1, 8 item 1; limits of api.md).
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use crate::error::{Error, Result};

/// Longest name or label.
pub const MAX_NAME_LEN: usize = 48;

/// Words a name may not be: Python keywords and constants, and Jinja keywords and tests, since
/// names are used as `document.metadata_value_of.<name>` in templates.
const RESERVED: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    "type",
    "print",
    "exec",
    // Jinja
    "true",
    "false",
    "none",
    "block",
    "endblock",
    "extends",
    "include",
    "macro",
    "endmacro",
    "call",
    "endcall",
    "filter",
    "endfilter",
    "set",
    "endset",
    "endfor",
    "endif",
    "endwith",
    "autoescape",
    "endautoescape",
    "raw",
    "endraw",
    "recursive",
    "loop",
    "super",
    "self",
    "varargs",
    "kwargs",
    "caller",
    "do",
    "continue",
    "ignore",
    "missing",
    "context",
    "scoped",
];

/// Checks a metadata type name: 1-48 chars, `^[A-Za-z_][A-Za-z0-9_]*$`, not a reserved word.
pub fn check_name(name: &str) -> Result<()> {
    let field = "name";
    if name.is_empty() {
        return Err(Error::validation(field, "This field may not be blank."));
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(Error::validation(
            field,
            format!("Ensure this field has no more than {MAX_NAME_LEN} characters."),
        ));
    }
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_');
    if !first_ok || !bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err(Error::validation(
            field,
            "Use only letters, digits and underscores, not starting with a digit (no spaces).",
        ));
    }
    if RESERVED.contains(&name) {
        return Err(Error::validation(
            field,
            format!("'{name}' is a reserved word."),
        ));
    }
    Ok(())
}

/// Checks a label: not blank, at most 48 characters.
pub fn check_label(field: &str, label: &str) -> Result<()> {
    crate::model::check_text(field, label, MAX_NAME_LEN).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("invoice_number").is_ok());
        assert!(check_name("_x9").is_ok());
        for bad in [
            "",
            "9a",
            "a b",
            "a-b",
            "class",
            "None",
            "endfor",
            "é",
            &"a".repeat(49),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_label("label", "  ").is_err());
        assert!(check_label("label", &"é".repeat(48)).is_ok());
    }
}
