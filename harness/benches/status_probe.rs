//! What a status probe costs, by form: `http` (a GET of the node's JSON status), `command` (a Python process per probe
//! that GETs and prints it), `command-sh` (a `sh` per probe that prints a fixed answer: the cost of a process alone)
//! and `command` with `persistent: true` (the Python process once per node, a line per probe). One reference node,
//! probed back to back for a few seconds per form, all in the same run. Prints, per form, probes per second, the mean
//! latency, and the CPU time one probe costs (the harness, the processes it started, and the persistent process),
//! with ratios against `http`.
//!
//! The observer probes every node every 100 ms (every 500 ms with a one-shot command), so 30 probes/s for a 3-node
//! cluster (6/s): the CPU per probe times that rate is the share of a core the status costs a run.
//!
//! `cargo bench -p faultline --bench status_probe` (env: `FAULTLINE_BENCH_SECONDS` per form, default 3).

use faultline::plan::Plan;
use faultline::system::{BuildContext, System};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The status script of the two command forms: one GET of the node's status per line of stdin, or per run.
const SCRIPT: &str = r#"
import json, sys, urllib.request
url = sys.argv[1]
def status():
    try:
        with urllib.request.urlopen(url, timeout=0.5) as r:
            return json.loads(r.read())
    except Exception as e:
        return {"error": repr(e)}
if len(sys.argv) > 2:
    for line in sys.stdin:
        print(json.dumps(status()), flush=True)
else:
    print(json.dumps(status()))
"#;

struct Measured {
    form: &'static str,
    probes: u64,
    seconds: f64,
    cpu_seconds: f64,
}

impl Measured {
    fn per_second(&self) -> f64 {
        self.probes as f64 / self.seconds
    }
    fn cpu_ms_per_probe(&self) -> f64 {
        self.cpu_seconds * 1000.0 / self.probes as f64
    }
}

/// User + system CPU seconds of this process and its reaped children.
fn cpu_self_and_children() -> f64 {
    let usage = |who| {
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes into the struct it is given.
        unsafe { libc::getrusage(who, &mut usage) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        secs(usage.ru_utime) + secs(usage.ru_stime)
    };
    usage(libc::RUSAGE_SELF) + usage(libc::RUSAGE_CHILDREN)
}

/// CPU seconds of a live process (the persistent status process is not reaped while it is measured).
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of /proc/PID/stat, 12 and 13 after the command name.
    (ticks(11) + ticks(12)) / 100.0
}

fn plan(status: &str, script: &Path) -> Plan {
    let text = format!(
        "name: bench\ntime_limit: 1s\nsystem:\n  kind: exec\n  nodes: 1\n  prepare: [\"{{faultline}}\", node, format, --data-dir, \
         \"{{data_dir}}\", --cluster-id, \"7\", --id, \"0\", --replica-count, \"1\"]\n  start: [\"{{faultline}}\", \
         node, run, --id, \"0\", --data-dir, \"{{data_dir}}\", --cluster-id, \"7\", --client-addr, \"{{client_addr}}\", \
         --peer-addr, \"{{peer_addr}}\"]\n  status: {status}\n  client: {{command: [sh]}}\nworkload: \
         {{kind: register, concurrency: 1, rate: 1, keys: 1, ops_per_key: 10, mix: {{read: 1}}, op_timeout: 1s}}\n"
    )
    .replace("SCRIPT", &script.display().to_string())
    // `{faultline}` is the running executable, and that is this benchmark, not faultline.
    .replace("{faultline}", env!("CARGO_BIN_EXE_faultline"));
    Plan::parse(&text, "bench.yaml").unwrap_or_else(|e| panic!("{e}"))
}

async fn measure(form: &'static str, status: &str, dir: &Path, seconds: f64) -> Measured {
    let plan = plan(status, &dir.join("status.py"));
    let nodes_dir = dir.join(form).join("nodes");
    std::fs::create_dir_all(nodes_dir.join("n1")).unwrap();
    let built = plan
        .system
        .adapter()
        .build(BuildContext {
            plan: &plan,
            seed: 1,
            run_id: "bench",
            nodes_dir: nodes_dir.clone(),
            local_nodes_dir: nodes_dir.clone(),
            netns: None,
            hands: Vec::new(),
            remote: None,
        })
        .await
        .unwrap();
    let system: Arc<dyn System> = built.system;
    system.prepare(0).await.unwrap();
    let launch = system.launch(0, faultline::system::StartKind::First);
    let mut node = std::process::Command::new(&launch.program)
        .args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ready = Instant::now();
    while system.probe(0, Duration::from_millis(500)).await.is_err() {
        assert!(
            ready.elapsed() < Duration::from_secs(20),
            "{form}: the node never answered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let persistent_pid = || {
        let log = std::fs::read_to_string(nodes_dir.join("n1/status.log")).unwrap_or_default();
        log.lines()
            .filter_map(|l| l.split("(pid ").nth(1)?.split(')').next()?.parse::<u32>().ok())
            .next_back()
    };
    let cpu_before = cpu_self_and_children() + persistent_pid().map_or(0.0, cpu_of);
    let started = Instant::now();
    let mut probes = 0;
    while started.elapsed().as_secs_f64() < seconds {
        system.probe(0, Duration::from_millis(500)).await.unwrap();
        probes += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = cpu_self_and_children() + persistent_pid().map_or(0.0, cpu_of);
    drop(system);
    let _ = node.kill();
    let _ = node.wait();
    Measured {
        form,
        probes,
        seconds: elapsed,
        cpu_seconds: cpu_after - cpu_before,
    }
}

#[tokio::main]
async fn main() {
    let seconds: f64 = std::env::var("FAULTLINE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("status.py"), SCRIPT).unwrap();
    let pointers = "role: /role, primary_when: [primary], commit_point: [/op, /commit]";
    let forms = [
        ("http", format!("{{http: \"http://{{client_addr}}/status\", {pointers}}}")),
        (
            "command",
            format!("{{command: [python3, SCRIPT, \"http://{{client_addr}}/status\"], {pointers}}}"),
        ),
        (
            "command-sh",
            format!(
                "{{command: [sh, -c, \"echo '{{{{\\\"role\\\": \\\"primary\\\", \\\"op\\\": 1, \\\"commit\\\": 1}}}}'\"], {pointers}}}"
            ),
        ),
        (
            "persistent",
            format!(
                "{{command: [python3, SCRIPT, \"http://{{client_addr}}/status\", lines], persistent: true, {pointers}}}"
            ),
        ),
    ];
    let mut measured = Vec::new();
    for (form, status) in &forms {
        measured.push(measure(form, status, dir.path(), seconds).await);
    }
    let http = measured[0].cpu_ms_per_probe();
    let http_rate = measured[0].per_second();
    println!("status probe cost, one reference node, {seconds} s of back-to-back probes per form");
    println!(
        "{:<11} {:>9} {:>11} {:>13} {:>16} {:>15}",
        "form", "probes/s", "latency ms", "CPU ms/probe", "CPU vs http", "rate vs http"
    );
    for m in &measured {
        println!(
            "{:<11} {:>9.0} {:>11.2} {:>13.3} {:>15.1}x {:>14.2}x",
            m.form,
            m.per_second(),
            1000.0 / m.per_second(),
            m.cpu_ms_per_probe(),
            m.cpu_ms_per_probe() / http,
            m.per_second() / http_rate
        );
    }
    // The observer probes each node every 100 ms, and every 500 ms with a one-shot command.
    println!("a 3-node run (30 probes/s; 6/s for one-shot commands): CPU share of one core per form:");
    for m in &measured {
        let per_s = if m.form.starts_with("command") { 6.0 } else { 30.0 };
        println!("  {:<11} {:>6.1} %", m.form, m.cpu_ms_per_probe() * per_s / 10.0);
    }
}
