//! The key usernames are compared by, so that two users cannot have names that look alike.
//!
//! `аdmin` (with a Cyrillic `а`), `ADMIN` and `admın` (a dotless `ı`) are different strings that
//! a person reads as `admin`. A new username is refused when its key equals an existing user's;
//! logging in still compares the exact username.

use unicode_normalization::UnicodeNormalization;

/// The comparison key of a username: the confusable skeleton of Unicode Technical Standard #39
/// (section 4, "Confusable Detection") of its case-folded NFKC form, that is
/// `skeleton(NFKC(casefold(NFKC(name))))`. Compatibility normalisation maps width and font
/// variants (`ａｄｍｉｎ`, `𝐚𝐝𝐦𝐢𝐧`) to plain letters, full case folding removes case (`ADMIN`,
/// `Straße`/`STRASSE`), and the skeleton maps characters of other scripts that look alike to
/// one prototype (`аdmin`, `admın`, `adm1n`/`admln`, `rn`/`m`). Two names with equal keys are
/// confusable; the converse does not hold (the skeleton is not a complete list of everything
/// that looks alike, and it is computed after case folding, so an upper-case letter that only
/// resembles another script's upper-case letter is not caught: see docs/access-control.md).
pub(crate) fn username_key(username: &str) -> String {
    let folded = caseless::default_case_fold_str(&username.nfkc().collect::<String>());
    let normal: String = folded.nfkc().collect();
    unicode_security::skeleton(&normal).collect()
}

#[cfg(test)]
mod tests {
    use super::username_key;

    #[test]
    fn names_that_look_alike_share_a_key() {
        let admin = username_key("admin");
        for alike in [
            "ADMIN",
            "Admin",
            "\u{0430}dmin",                                  // Cyrillic а
            "adm\u{0131}n",                                  // dotless ı
            "\u{FF41}\u{FF44}\u{FF4D}\u{FF49}\u{FF4E}",      // full-width
            "\u{1D41A}\u{1D41D}\u{1D426}\u{1D422}\u{1D427}", // mathematical bold
            "adm\u{0456}n",                                  // Cyrillic і
            "admi\u{200B}n",                                 // a zero-width space inside
        ] {
            assert_eq!(username_key(alike), admin, "{alike:?}");
        }
        assert_eq!(username_key("Straße"), username_key("STRASSE"));
        assert_eq!(username_key("paypal"), username_key("\u{0440}aypal"));
        assert_eq!(username_key("paypal"), username_key("раураl")); // Cyrillic р, а, у
        assert_eq!(username_key("adm1n"), username_key("admln"));
    }

    #[test]
    fn different_names_keep_different_keys() {
        assert_ne!(username_key("admin"), username_key("admins"));
        assert_ne!(username_key("ann"), username_key("anna"));
        assert_ne!(username_key("bob"), username_key("rob"));
        assert_ne!(username_key("user1"), username_key("user2"));
    }
}
