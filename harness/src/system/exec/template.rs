//! Command templates: `{variable}` is replaced by its value, `{{` and `}}` are literal braces.
//!
//! Written by hand because the language is four rules long and its errors must name the plan's variables; a
//! template engine (handlebars, tera) would bring syntax a command line does not need and errors that do not.

use std::collections::BTreeMap;

/// Template checks and substitution.
pub struct Template;

/// Variable values for expanding templates (and the lists of which variables a template may use).
#[derive(Default)]
pub struct Vars {
    values: BTreeMap<&'static str, String>,
}

/// (name, meaning) of every variable, for error messages and the docs.
const VARIABLES: &[(&str, &str)] = &[
    ("id", "the node's 0-based id"),
    ("name", "the node's name, n1.."),
    ("data_dir", "the node's data dir"),
    ("client_addr", "HOST:PORT the node serves clients on"),
    ("peer_addr", "HOST:PORT the node listens on for its peers"),
    (
        "peers",
        "ID=HOST:PORT,... where the node dials every other node (the proxies, when proxied)",
    ),
    ("client_addrs", "ID=HOST:PORT,... of every node's client address"),
    ("node_count", "the cluster size"),
    (
        "faultline",
        "the running faultline executable (`{faultline} node ...` runs the reference node)",
    ),
    ("plan_dir", "the plan's folder"),
];

impl Vars {
    /// Variables of a node's commands (start, prepare, verify, wipe, ready, env, status URL).
    pub const NODE: &'static [&'static str] = &[
        "id",
        "name",
        "data_dir",
        "client_addr",
        "peer_addr",
        "peers",
        "client_addrs",
        "node_count",
        "faultline",
        "plan_dir",
    ];
    /// Variables of the client command, which serves every node.
    pub const CLIENT: &'static [&'static str] = &["client_addrs", "node_count", "faultline", "plan_dir"];

    /// Sets a variable.
    pub fn set(&mut self, name: &'static str, value: String) {
        debug_assert!(
            VARIABLES.iter().any(|(n, _)| *n == name),
            "undocumented variable {name}"
        );
        self.values.insert(name, value);
    }

    /// Expands a template that [`Template::parse`] accepted (a variable without a value expands to nothing).
    pub fn expand(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len());
        for piece in pieces(template).unwrap_or_else(|_| vec![Piece::Text(template.to_string())]) {
            match piece {
                Piece::Text(text) => out.push_str(&text),
                Piece::Var(name) => out.push_str(self.values.get(name.as_str()).map_or("", String::as_str)),
            }
        }
        out
    }
}

enum Piece {
    Text(String),
    Var(String),
}

/// Splits a template into text and variables; an error for an unclosed or stray brace.
fn pieces(template: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '{' => {
                let mut name = String::new();
                let closed = loop {
                    match chars.next() {
                        Some('}') => break true,
                        Some('{') | None => break false,
                        Some(c) => name.push(c),
                    }
                };
                if !closed {
                    return Err(format!(
                        "`{template}` opens a `{{` it does not close (write `{{{{` for a literal brace)"
                    ));
                }
                pieces.push(Piece::Text(std::mem::take(&mut text)));
                pieces.push(Piece::Var(name));
            }
            '}' => {
                return Err(format!(
                    "`{template}` has a `}}` without its `{{` (write `}}}}` for a literal brace)"
                ))
            }
            c => text.push(c),
        }
    }
    pieces.push(Piece::Text(text));
    Ok(pieces)
}

impl Template {
    /// Checks that `template` is well formed and uses only the variables in `allowed`.
    pub fn parse(template: &str, allowed: &[&str]) -> Result<(), String> {
        for piece in pieces(template)? {
            let Piece::Var(name) = piece else { continue };
            if allowed.contains(&name.as_str()) {
                continue;
            }
            let known = VARIABLES.iter().any(|(n, _)| *n == name);
            let list: Vec<String> = VARIABLES
                .iter()
                .filter(|(n, _)| allowed.contains(n))
                .map(|(n, meaning)| format!("{{{n}}} ({meaning})"))
                .collect();
            return Err(if known {
                format!(
                    "`{{{name}}}` is not available here (it is per node); here you can use {}",
                    list.join(", ")
                )
            } else {
                format!(
                    "unknown template variable `{{{name}}}`; the variables are {}",
                    list.join(", ")
                )
            });
        }
        Ok(())
    }

    /// Replaces one variable, leaving the rest of the template as it is (load-time variables such as `plan_dir`).
    pub fn replace_var(template: &str, name: &str, value: &str) -> String {
        template.replace(&format!("{{{name}}}"), &value.replace('{', "{{").replace('}', "}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_variables_and_escaped_braces_when_expanded_should_substitute_only_variables() {
        let mut vars = Vars::default();
        vars.set("id", "2".into());
        vars.set("name", "n3".into());
        assert_eq!(vars.expand("--id={id} {{\"n\": \"{name}\"}}"), "--id=2 {\"n\": \"n3\"}");
    }

    #[test]
    fn given_unknown_or_misplaced_variables_when_parsed_should_name_them() {
        assert!(Template::parse("{id}-{name}", Vars::NODE).is_ok());
        let err = Template::parse("{idd}", Vars::NODE).unwrap_err();
        assert!(
            err.contains("unknown template variable `{idd}`") && err.contains("{id}"),
            "{err}"
        );
        let err = Template::parse("{data_dir}", Vars::CLIENT).unwrap_err();
        assert!(err.contains("not available here"), "{err}");
        assert!(Template::parse("{id", Vars::NODE)
            .unwrap_err()
            .contains("does not close"));
        assert!(Template::parse("id}", Vars::NODE).unwrap_err().contains("without its"));
    }

    #[test]
    fn given_a_load_time_variable_when_replaced_should_keep_other_variables_and_escape_braces() {
        let replaced = Template::replace_var("{plan_dir}/c.py {id}", "plan_dir", "/p/{x}");
        let mut vars = Vars::default();
        vars.set("id", "0".into());
        assert_eq!(vars.expand(&replaced), "/p/{x}/c.py 0");
    }
}
