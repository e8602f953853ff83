//! What the node benchmarks share: a keep-alive HTTP/1.1 connection to a replica and latency percentiles. (The
//! cluster itself is `tests/common`'s.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One keep-alive connection.
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    /// Connects to `addr` (HOST:PORT), without Nagle and with a 10 s read timeout.
    pub fn open(addr: &str) -> Connection {
        let stream = TcpStream::connect(addr).expect("connect to the primary");
        stream.set_nodelay(true).expect("nodelay");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    /// Sends one request and reads its whole answer; the answer's status, `None` when the connection failed.
    pub fn request(&mut self, method: &str, path: &str, body: &str) -> Option<u16> {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(request.as_bytes()).ok()?;
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).ok()?;
        let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).ok()?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().ok()?;
                }
            }
        }
        let mut body = vec![0u8; content_length];
        self.reader.read_exact(&mut body).ok()?;
        Some(status)
    }
}

/// The `fraction` percentile of sorted latencies.
pub fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}
