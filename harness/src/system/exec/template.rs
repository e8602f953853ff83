//! Command templates: `{variable}` is replaced by its value, `{{` and `}}` are literal braces, and a shell's own
//! `${...}` (`${NATS_SERVER:-nats-server}`, `${1}`) is left as it is, braces and all, for the shell to expand.
//!
//! Written by hand because the language is four rules long and its errors must name the plan's variables; a
//! template engine (handlebars, tera) would bring syntax a command line does not need and errors that do not.

use std::collections::BTreeMap;

/// Template checks and substitution.
pub struct Template;

/// Variable values for expanding templates (and the lists of which variables a template may use).
#[derive(Default)]
pub struct Vars {
    values: BTreeMap<String, String>,
}

/// (name, meaning) of every variable, for error messages and the docs. `NAME` stands for a port's name (`client`,
/// `peer` or one of `ports.named`) and `K` for a node's 0-based id.
const VARIABLES: &[(&str, &str)] = &[
    ("id", "the node's 0-based id"),
    ("name", "the node's name, n1.."),
    ("data_dir", "the node's data dir"),
    (
        "node_dir",
        "the node's folder (the data dir's parent; node.log is there)",
    ),
    ("host", "the node's IP address"),
    ("client_addr", "HOST:PORT the node serves clients on"),
    ("peer_addr", "HOST:PORT the node listens on for its peers"),
    ("port.NAME", "the node's port NAME"),
    ("addr.NAME", "HOST:PORT of the node's port NAME"),
    (
        "peers",
        "ID=HOST:PORT,... where the node dials every other node (the proxies, when proxied)",
    ),
    ("client_addrs", "ID=HOST:PORT,... of every node's client address"),
    ("addrs.NAME", "ID=HOST:PORT,... of every node's port NAME"),
    ("node.K.host", "node K's IP address"),
    ("node.K.port.NAME", "node K's port NAME"),
    ("node.K.addr.NAME", "HOST:PORT of node K's port NAME"),
    ("node_count", "the cluster size"),
    (
        "members",
        "the 0-based ids of the current members, comma-separated (with spares, `members:` below `nodes:`)",
    ),
    (
        "member_addrs.NAME",
        "ID=HOST:PORT,... of the current members' port NAME",
    ),
    (
        "faultline",
        "the running faultline executable (`{faultline} node ...` runs the reference node)",
    ),
    ("plan_dir", "the plan's folder"),
    ("list.NAME", "the plan's list NAME (system.lists), per node"),
    (
        "start",
        "what kind of start this is: first, restart, restart-all or restart-all-first (system.start only)",
    ),
    (
        "pid",
        "the pid faultline started the node as (system.stop only; the node's own when its start command execs)",
    ),
];

/// Where a template is used, which decides the variables it may name.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Per node (start, prepare, status, config files ...): every variable; else the client's, which serves every
    /// node (no `{id}`, `{host}`, `{port.NAME}` ...).
    pub per_node: bool,
    /// Every port name: `client`, `peer` and the plan's `ports.named`.
    pub ports: &'a [String],
    /// The cluster size (`{node.K....}` needs K below it).
    pub node_count: usize,
    /// The node's pid is known (`system.stop`, run on a live node).
    pub pid: bool,
    /// The kind of start is known (`system.start`).
    pub start: bool,
    /// The names of the plan's `system.lists` (`{list.NAME}`, per node).
    pub lists: &'a [String],
}

/// Variables of a node's commands that are not patterns.
const NODE_VARS: &[&str] = &[
    "id",
    "name",
    "data_dir",
    "node_dir",
    "host",
    "client_addr",
    "peer_addr",
    "peers",
    "client_addrs",
    "node_count",
    "faultline",
    "plan_dir",
    "members",
];
/// Variables of the client command, which serves every node, that are not patterns.
const CLIENT_VARS: &[&str] = &["client_addrs", "node_count", "faultline", "plan_dir"];

impl Scope<'_> {
    /// Whether the scope offers `name`; else why not.
    fn check(&self, name: &str) -> Result<(), String> {
        let fixed = if self.per_node { NODE_VARS } else { CLIENT_VARS };
        if fixed.contains(&name) || (name == "pid" && self.pid) || (name == "start" && self.start) {
            return Ok(());
        }
        if name == "start" {
            return Err("`{start}` is the kind of start (first, restart, restart-all, restart-all-first), known only                         to `system.start`"
                .into());
        }
        if name == "pid" {
            return Err(
                "`{pid}` is the node's process id, known only to `system.stop` (which runs on a live node)".into(),
            );
        }
        let port = |port: &str| -> Result<(), String> {
            if self.ports.iter().any(|p| p == port) {
                Ok(())
            } else {
                Err(format!(
                    "`{{{name}}}` names no port: the ports are {} (`ports.named` adds more, e.g. `named: {{admin: 28001}}`)",
                    self.ports.join(", ")
                ))
            }
        };
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            ["port" | "addr" | "member_addrs", port_name] if self.per_node => port(port_name),
            ["addrs", port_name] => port(port_name),
            ["list", list] if self.per_node => {
                if self.lists.iter().any(|l| l == list) {
                    Ok(())
                } else if self.lists.is_empty() {
                    Err(format!(
                        "`{{{name}}}` names no list: the plan has no `system.lists` (e.g. `lists: {{cluster: {{of: \
                         peers, item: \"{{{{host}}}}:{{{{port.peer}}}}\"}}}}`)"
                    ))
                } else {
                    Err(format!(
                        "`{{{name}}}` names no list: the lists are {}",
                        self.lists.join(", ")
                    ))
                }
            }
            ["node", k, rest @ ..] if !rest.is_empty() => {
                let k: usize = k
                    .parse()
                    .map_err(|_| format!("`{{{name}}}`: `{k}` is not a node id (0-based, e.g. `{{node.0.host}}`)"))?;
                if k >= self.node_count {
                    return Err(format!(
                        "`{{{name}}}`: the cluster has {} nodes, ids 0..{}",
                        self.node_count,
                        self.node_count.saturating_sub(1)
                    ));
                }
                match rest {
                    ["host"] => Ok(()),
                    ["port" | "addr", port_name] => port(port_name),
                    _ => Err(format!(
                        "unknown template variable `{{{name}}}`: node K's variables are {{node.K.host}}, \
                         {{node.K.port.NAME}} and {{node.K.addr.NAME}}"
                    )),
                }
            }
            _ => {
                let generic = match parts.as_slice() {
                    ["port" | "addr" | "member_addrs", _] => Some(format!("{}.NAME", parts[0])),
                    _ => None,
                };
                let known = VARIABLES
                    .iter()
                    .any(|(n, _)| *n == name || Some(n.to_string()) == generic);
                let list: Vec<String> = VARIABLES
                    .iter()
                    .filter(|(n, _)| self.offers(n))
                    .map(|(n, meaning)| format!("{{{n}}} ({meaning})"))
                    .collect();
                Err(if known {
                    format!(
                        "`{{{name}}}` is not available here (it is per node); here you can use {}",
                        list.join(", ")
                    )
                } else {
                    format!(
                        "unknown template variable `{{{name}}}`; the variables are {}",
                        list.join(", ")
                    )
                })
            }
        }
    }

    /// Whether a documented variable (or pattern) is offered here.
    fn offers(&self, documented: &str) -> bool {
        let fixed = if self.per_node { NODE_VARS } else { CLIENT_VARS };
        fixed.contains(&documented)
            || (documented == "pid" && self.pid)
            || (documented == "start" && self.start)
            || (self.per_node && documented == "list.NAME" && !self.lists.is_empty())
            || documented.starts_with("addrs.")
            || documented.starts_with("node.K.")
            || (self.per_node
                && (documented.starts_with("port.")
                    || documented.starts_with("addr.")
                    || documented.starts_with("member_addrs.")))
    }
}

/// Checks a list's item template: well formed, naming only the listed node's `{id}`, `{name}`, `{host}`,
/// `{port.NAME}` and `{addr.NAME}`.
pub fn check_list_item(template: &str, ports: &[String]) -> Result<(), String> {
    for piece in pieces(template)? {
        let Piece::Var(name) = piece else { continue };
        let ok = match name.split_once('.') {
            None => matches!(name.as_str(), "id" | "name" | "host"),
            Some(("port" | "addr", port)) => ports.iter().any(|p| p == port),
            Some(_) => false,
        };
        if !ok {
            return Err(format!(
                "`{{{name}}}` is not a variable of a listed node: an item names the node's {{id}}, {{name}}, \
                 {{host}}, {{port.NAME}} or {{addr.NAME}} (ports: {})",
                ports.join(", ")
            ));
        }
    }
    Ok(())
}

impl Vars {
    /// Sets a variable.
    pub fn set(&mut self, name: impl Into<String>, value: String) {
        let name = name.into();
        debug_assert!(
            VARIABLES.iter().any(|(n, _)| *n == name) || name.contains('.'),
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
            // A shell's `${...}` is the shell's: copied as it is, nested braces and all. `${{` is still the older
            // spelling, a `$` then a literal brace.
            '$' if chars.peek() == Some(&'{') => {
                text.push('$');
                chars.next();
                if chars.peek() == Some(&'{') {
                    chars.next();
                    text.push('{');
                    continue;
                }
                text.push('{');
                let mut depth = 1;
                while depth > 0 {
                    let Some(c) = chars.next() else {
                        return Err(format!(
                            "`{template}` opens a shell `${{` it does not close (write `${{NAME}}` for the shell's \
                             variable NAME)"
                        ));
                    };
                    depth += usize::from(c == '{');
                    depth -= usize::from(c == '}');
                    text.push(c);
                }
            }
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
    /// Checks that `template` is well formed and uses only the variables `scope` offers.
    pub fn parse(template: &str, scope: &Scope) -> Result<(), String> {
        for piece in pieces(template)? {
            if let Piece::Var(name) = piece {
                scope.check(&name)?;
            }
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

    fn ports() -> Vec<String> {
        vec!["client".into(), "peer".into(), "election".into()]
    }

    fn node_scope(ports: &[String]) -> Scope<'_> {
        Scope {
            per_node: true,
            ports,
            node_count: 3,
            pid: false,
            start: false,
            lists: &[],
        }
    }

    #[test]
    fn given_a_shells_own_expansion_when_parsed_and_expanded_should_leave_it_to_the_shell() {
        let ports = ports();
        let node = node_scope(&ports);
        let command = "exec ${NATS_SERVER:-nats-server} -p {port.client} ${1} ${A:-${B}}";
        assert!(
            Template::parse(command, &node).is_ok(),
            "{:?}",
            Template::parse(command, &node)
        );
        let mut vars = Vars::default();
        vars.set("port.client", "4222".into());
        assert_eq!(
            vars.expand(command),
            "exec ${NATS_SERVER:-nats-server} -p 4222 ${1} ${A:-${B}}"
        );
        // The older spelling still means the same.
        assert_eq!(vars.expand("${{HOME}}"), "${HOME}");
        let err = Template::parse("${UNCLOSED", &node).unwrap_err();
        assert!(err.contains("does not close"), "{err}");
    }

    #[test]
    fn given_the_pid_variable_when_parsed_should_be_offered_to_the_stop_command_only() {
        let ports = ports();
        let node = node_scope(&ports);
        let err = Template::parse("kill -TERM {pid}", &node).unwrap_err();
        assert!(err.contains("only to `system.stop`"), "{err}");
        let stop = Scope { pid: true, ..node };
        assert!(Template::parse("kill -TERM {pid}", &stop).is_ok());
        let mut vars = Vars::default();
        vars.set("pid", "4242".into());
        assert_eq!(vars.expand("kill -TERM {pid}"), "kill -TERM 4242");
    }

    #[test]
    fn given_unknown_or_misplaced_variables_when_parsed_should_name_them() {
        let ports = ports();
        let node = node_scope(&ports);
        let client = Scope {
            per_node: false,
            ..node
        };
        assert!(Template::parse("{id}-{name}", &node).is_ok());
        let err = Template::parse("{idd}", &node).unwrap_err();
        assert!(
            err.contains("unknown template variable `{idd}`") && err.contains("{id}"),
            "{err}"
        );
        let err = Template::parse("{data_dir}", &client).unwrap_err();
        assert!(err.contains("not available here"), "{err}");
        assert!(Template::parse("{id", &node).unwrap_err().contains("does not close"));
        assert!(Template::parse("id}", &node).unwrap_err().contains("without its"));
    }

    #[test]
    fn given_named_ports_when_parsed_should_accept_them_per_node_and_cluster_wide_and_name_mistakes() {
        let ports = ports();
        let node = node_scope(&ports);
        let client = Scope {
            per_node: false,
            ..node
        };
        for ok in [
            "{host}:{port.election}",
            "{addr.client}",
            "{addrs.election}",
            "server.1={node.0.host}:{node.0.port.peer}:{node.2.port.election}",
            "{node.1.addr.client} {node_dir}/x.conf",
        ] {
            assert!(Template::parse(ok, &node).is_ok(), "{ok}");
        }
        assert!(Template::parse("{addrs.election} {node.2.addr.client}", &client).is_ok());
        let err = Template::parse("{port.admin}", &node).unwrap_err();
        assert!(
            err.contains("names no port") && err.contains("client, peer, election"),
            "{err}"
        );
        let err = Template::parse("{node.3.host}", &node).unwrap_err();
        assert!(err.contains("3 nodes, ids 0..2"), "{err}");
        let err = Template::parse("{node.x.host}", &node).unwrap_err();
        assert!(err.contains("not a node id"), "{err}");
        let err = Template::parse("{node.0.name}", &node).unwrap_err();
        assert!(err.contains("node K's variables"), "{err}");
        let err = Template::parse("{port.election}", &client).unwrap_err();
        assert!(err.contains("not available here"), "{err}");
        let err = Template::parse("{host}", &client).unwrap_err();
        assert!(
            err.contains("not available here") && err.contains("{addrs.NAME}"),
            "{err}"
        );
    }

    #[test]
    fn given_a_load_time_variable_when_replaced_should_keep_other_variables_and_escape_braces() {
        let replaced = Template::replace_var("{plan_dir}/c.py {id}", "plan_dir", "/p/{x}");
        let mut vars = Vars::default();
        vars.set("id", "0".into());
        assert_eq!(vars.expand(&replaced), "/p/{x}/c.py 0");
    }
}
