//! The hosts a run's nodes live on: `--hosts FILE` (one per line, for CI that receives machines at run time).
//!
//! A line is `DESTINATION [key=value ...]`: DESTINATION is an address or an ssh_config alias, as `ssh` takes it
//! (`[user@]host[:port]`), and the keys are `user`, `port`, `identity` (a private key file), `workdir` (where
//! the agent lives on that host; default `/var/lib/faultline`) and `address` (the IP its nodes listen on and the
//! clients reach, when it is not the one the SSH connection arrives at, e.g. behind a ProxyJump). `#` starts a comment. No password is ever read
//! from here: authentication is the user's ssh setup (keys, agent, ssh_config, ProxyJump).

use std::fmt;
use std::path::{Path, PathBuf};

/// Where the agent lives on a host unless its line says `workdir=`.
pub const DEFAULT_WORKDIR: &str = "/var/lib/faultline";

/// One host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// An address or an ssh_config alias.
    pub host: String,
    /// The login (default: ssh's, from ssh_config or the local user).
    pub user: Option<String>,
    /// The port (default: ssh's).
    pub port: Option<u16>,
    /// A private key file (default: ssh's).
    pub identity: Option<PathBuf>,
    /// The agent's folder on the host.
    pub workdir: PathBuf,
    /// The address its nodes listen on (default: the one the control's SSH connection arrives at).
    pub address: Option<std::net::IpAddr>,
}

impl fmt::Display for HostSpec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        write!(f, "{}", self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// A hosts file that could not be read: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// 1-based column (0: the line as a whole).
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for HostsError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}: {}", self.file.display(), self.message),
            (line, 0) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            (line, column) => write!(f, "{}:{line}:{column}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for HostsError {}

/// Reads a hosts file.
pub fn read_hosts_file(path: &Path) -> Result<Vec<HostSpec>, HostsError> {
    let text = std::fs::read_to_string(path).map_err(|e| HostsError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("cannot read the hosts file: {e}"),
    })?;
    parse_hosts(&text, path)
}

/// Parses a hosts file's text (`file` names it in errors).
pub fn parse_hosts(text: &str, file: &Path) -> Result<Vec<HostSpec>, HostsError> {
    let mut hosts = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        let mut words = words_with_columns(line);
        let Some((column, destination)) = words.next() else {
            continue;
        };
        let error = |column: usize, message: String| HostsError {
            file: file.to_path_buf(),
            line: index + 1,
            column,
            message,
        };
        let mut host = parse_destination(destination).map_err(|m| error(column, m))?;
        for (column, word) in words {
            let Some((key, value)) = word.split_once('=') else {
                return Err(error(
                    column,
                    format!("`{word}` is not KEY=VALUE (the keys are user, port, identity, workdir, address)"),
                ));
            };
            match key {
                "user" => host.user = Some(value.to_string()),
                "port" => host.port = Some(parse_port(value).map_err(|m| error(column, m))?),
                "identity" => host.identity = Some(PathBuf::from(value)),
                "address" => {
                    host.address = Some(value.parse().map_err(|_| {
                        error(
                            column,
                            format!("address `{value}` is not an IP address (the nodes listen on it)"),
                        )
                    })?)
                }
                "workdir" if value.starts_with('/') => host.workdir = PathBuf::from(value),
                "workdir" => return Err(error(column, format!("workdir `{value}` must be an absolute path"))),
                "password" => {
                    return Err(error(
                        column,
                        "a hosts file holds no passwords: authenticate with a key (`identity=`), the ssh agent or \
                         ssh_config"
                            .into(),
                    ))
                }
                other => {
                    return Err(error(
                        column,
                        format!("unknown key `{other}` (the keys are user, port, identity, workdir, address)"),
                    ))
                }
            }
        }
        if hosts
            .iter()
            .any(|h: &HostSpec| h.host == host.host && h.port == host.port && h.workdir == host.workdir)
        {
            return Err(error(
                column,
                format!(
                    "{host} is listed twice with one workdir: nodes sharing a host need a workdir each (workdir=...)"
                ),
            ));
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return Err(HostsError {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            message: "no host in the file (one per line: `[user@]host[:port] [workdir=/path]`)".into(),
        });
    }
    Ok(hosts)
}

fn words_with_columns(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    line.split_whitespace().map(move |word| {
        let start = at + line[at..].find(word).expect("a word of the line");
        at = start + word.len();
        (start + 1, word)
    })
}

fn parse_port(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("port `{text}` is not a port number (1..65535)"))
}

fn parse_destination(text: &str) -> Result<HostSpec, String> {
    let (user, rest) = match text.rsplit_once('@') {
        Some((user, rest)) if !user.is_empty() => (Some(user.to_string()), rest),
        Some(_) => return Err(format!("`{text}` has an empty user before `@`")),
        None => (None, text),
    };
    // `[v6]:port`, `host:port` or `host` (a bare IPv6 address has several colons and no port).
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (address, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("`{text}` opens a `[` it does not close"))?;
        let port = after.strip_prefix(':').map(parse_port).transpose()?;
        (address.to_string(), port)
    } else if rest.matches(':').count() == 1 {
        let (host, port) = rest.split_once(':').expect("one colon");
        (host.to_string(), Some(parse_port(port)?))
    } else {
        (rest.to_string(), None)
    };
    let shell_meta = |c: char| !(c.is_ascii_alphanumeric() || "-._:".contains(c));
    if host.is_empty() || host.starts_with('-') || host.chars().any(shell_meta) {
        return Err(format!(
            "`{host}` is not a host name, address or ssh_config alias (letters, digits, `-`, `.`, `_`, `:`; not \
             starting with `-`)"
        ));
    }
    Ok(HostSpec {
        host,
        user,
        port,
        identity: None,
        workdir: PathBuf::from(DEFAULT_WORKDIR),
        address: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_hosts_file_when_parsed_should_read_destinations_and_keys_and_skip_comments() {
        let text = "# the lab\nfl-h1 address=10.1.0.7\nroot@10.0.0.2:2222 workdir=/srv/fl identity=/k/id\n[fe80::1]:22 user=ops\n\n";
        let hosts = parse_hosts(text, Path::new("hosts")).unwrap();
        assert_eq!(hosts.len(), 3);
        assert_eq!(
            (hosts[0].host.as_str(), hosts[0].workdir.to_str()),
            ("fl-h1", Some(DEFAULT_WORKDIR))
        );
        assert_eq!(hosts[0].address, Some("10.1.0.7".parse().unwrap()));
        assert_eq!(hosts[1].to_string(), "root@10.0.0.2:2222");
        assert_eq!(hosts[1].workdir, PathBuf::from("/srv/fl"));
        assert_eq!(hosts[1].identity, Some(PathBuf::from("/k/id")));
        assert_eq!(
            (hosts[2].host.as_str(), hosts[2].port, hosts[2].user.as_deref()),
            ("fe80::1", Some(22), Some("ops"))
        );
    }

    #[test]
    fn given_bad_lines_when_parsed_should_name_line_column_and_what_to_do() {
        let err = |text: &str| parse_hosts(text, Path::new("h")).unwrap_err();
        let e = err("a\nb port=99999\n");
        assert_eq!((e.line, e.column), (2, 3), "{e}");
        assert!(e.message.contains("not a port number"), "{e}");
        let e = err("a password=x\n");
        assert!(e.message.contains("no passwords"), "{e}");
        let e = err("a address=db1\n");
        assert!(e.message.contains("not an IP address"), "{e}");
        let e = err("a;rm\n");
        assert!(e.message.contains("not a host name"), "{e}");
        let e = err("-oProxyCommand=x\n");
        assert!(e.message.contains("not starting with `-`"), "{e}");
        let e = err("a\na\n");
        assert!(e.message.contains("listed twice"), "{e}");
        assert!(parse_hosts("a\na workdir=/srv/two\n", Path::new("h")).is_ok());
        let e = err("# nothing\n");
        assert!(e.message.contains("no host"), "{e}");
        assert_eq!(
            e.to_string(),
            "h: no host in the file (one per line: `[user@]host[:port] [workdir=/path]`)"
        );
    }
}
