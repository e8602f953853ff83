//! What maud's escaping does not cover. The page is written with maud, so every interpolated value is HTML-escaped by
//! construction; run data (node log lines, error texts, keys, values) can contain anything, including `</script>`, so
//! two cases need more: run text is wrapped in [`Shown`] so control characters stay visible, and the JSON the charts
//! read sits in a `<script>`, where HTML escaping does not apply and [`json_for_script`] keeps it from closing it.

/// Run text (a log line, an error, a key) for maud to escape: control characters (a torn log line, a binary value)
/// would make the page invalid, so they are shown as `\xNN` instead; everything else goes through maud's escaper.
pub struct Shown<'a>(pub &'a str);

impl maud::Render for Shown<'_> {
    fn render_to(&self, buffer: &mut String) {
        use std::fmt::Write;
        let mut escaper = maud::Escaper::new(buffer);
        for c in self.0.chars() {
            // Writing to a String cannot fail.
            let _ = match c {
                c if (c as u32) < 0x20 && c != '\n' && c != '\t' => write!(escaper, "\\x{:02x}", c as u32),
                c => escaper.write_char(c),
            };
        }
    }
}

/// Makes JSON safe inside `<script type="application/json">`: `<`, `>` and `&` become `\u003c`-style escapes (they
/// can only occur inside JSON strings, where the escape means the same), so `</script>` and `<!--` can never appear;
/// U+2028 and U+2029 are escaped too so the text stays valid JavaScript if someone pastes it into a script.
pub fn json_for_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_markup_and_control_characters_when_shown_should_escape_the_markup_and_show_the_characters() {
        let shown = maud::html! { (Shown("</script><img src=x onerror=\"alert(1)\">&\u{1}\n")) }.into_string();
        assert!(!shown.contains('<') && !shown.contains('>') && !shown.contains('"'));
        assert!(
            shown.contains("&lt;/script&gt;") && shown.ends_with("&amp;\\x01\n"),
            "{shown}"
        );
    }

    #[test]
    fn given_json_with_script_end_when_escaped_should_parse_back_to_the_same_value() {
        let value = serde_json::json!({"line": "</script><!-- \u{2028}\u{2029} & >"});
        let escaped = json_for_script(&value.to_string());
        assert!(!escaped.contains("</") && !escaped.contains("<!--") && !escaped.contains('\u{2028}'));
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }
}
