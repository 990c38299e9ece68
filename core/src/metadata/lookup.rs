//! Reading a lookup template's output as the CSV list of allowed values (spec 2.7, 8 item 3).
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

/// Splits rendered lookup output into choices: commas separate items, double quotes allow commas
/// inside an item (`""` is a literal quote), surrounding spaces are trimmed, empty items dropped.
pub fn split_choices(csv: &str) -> Vec<String> {
    let mut choices = Vec::new();
    let mut item = String::new();
    let mut quoted = false;
    let mut chars = csv.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                item.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' | '\n' | '\r' if !quoted => push_item(&mut choices, &mut item),
            c => item.push(c),
        }
    }
    push_item(&mut choices, &mut item);
    choices
}

fn push_item(choices: &mut Vec<String>, item: &mut String) {
    let trimmed = item.trim();
    if !trimmed.is_empty() {
        choices.push(trimmed.to_owned());
    }
    item.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rules() {
        assert_eq!(split_choices(" a, b ,,c,"), ["a", "b", "c"]);
        assert_eq!(
            split_choices(r#""x, y", "say ""hi""" ,z"#),
            ["x, y", r#"say "hi""#, "z"]
        );
        assert!(split_choices(" , ,").is_empty());
        assert_eq!(split_choices("a\nb"), ["a", "b"]);
    }
}
