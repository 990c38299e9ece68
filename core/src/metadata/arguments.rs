//! The YAML arguments of validator and parser classes, and the bounded regular expressions
//! they compile. Imports nothing of the metadata module: the classes and the registry use it.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The arguments of a class that takes none: empty, `{}` or `null`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Largest YAML argument text accepted.
const MAX_ARGUMENTS_LEN: usize = 10_000;

/// Reads YAML `arguments` into the typed argument struct `T`. Blank text means "no arguments".
pub fn yaml_arguments<T: DeserializeOwned>(arguments: &str) -> Result<T, String> {
    if arguments.len() > MAX_ARGUMENTS_LEN {
        return Err(format!(
            "arguments are longer than {MAX_ARGUMENTS_LEN} bytes"
        ));
    }
    let text = arguments.trim();
    let text = if text.is_empty() || text == "null" || text == "~" {
        "{}"
    } else {
        text
    };
    serde_saphyr::from_str::<T>(text).map_err(|e| format!("invalid YAML arguments: {e}"))
}

/// Compiles a user-supplied regular expression with size limits, so a hostile pattern cannot
/// exhaust memory (the regex crate already matches in linear time).
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_ARGUMENTS_LEN {
        return Err(format!("pattern is longer than {MAX_ARGUMENTS_LEN} bytes"));
    }
    RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .nest_limit(64)
        .build()
        .map_err(|e| format!("invalid regular expression: {e}"))
}
