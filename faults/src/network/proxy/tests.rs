//! Proxy behaviour against local TCP echo servers on 127.0.0.1 (port 0). Every read has a timeout.

use super::*;
use crate::network::shape::isolate;
use crate::units::Millis;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const STEP: Duration = Duration::from_secs(2);

/// An echo server that counts the bytes it received.
struct Echo {
    addr: SocketAddr,
    received: Arc<AtomicU64>,
}

async fn echo_server() -> Echo {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut buffer = vec![0u8; 64 * 1024];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    Echo { addr, received }
}

/// A two-node mesh whose proxy n1->n2 forwards to `upstream`, plus client proxies beside n1 and n2 talking to n2.
async fn mesh_to(upstream: SocketAddr) -> ProxyMesh {
    let any = "127.0.0.1:0".parse().unwrap();
    let specs = vec![
        ProxySpec {
            id: ProxyId::Peer(Link::new(0, 1)),
            listen: any,
            upstream,
        },
        ProxySpec {
            id: ProxyId::Client { beside: 0, to: 1 },
            listen: any,
            upstream,
        },
        ProxySpec {
            id: ProxyId::Client { beside: 1, to: 1 },
            listen: any,
            upstream,
        },
    ];
    ProxyMesh::start(2, specs, ProxyLimits::default(), 42).await.unwrap()
}

const N1_TO_N2: ProxyId = ProxyId::Peer(Link { from: 0, to: 1 });

async fn connect(mesh: &ProxyMesh, id: ProxyId) -> TcpStream {
    let stream = tokio::time::timeout(STEP, TcpStream::connect(mesh.listen_addr(id).unwrap()))
        .await
        .expect("connect timed out")
        .expect("connect failed");
    stream.set_nodelay(true).unwrap();
    stream
}

/// Writes `message` and reads back exactly as many bytes, within `STEP`.
async fn round_trip(stream: &mut TcpStream, message: &[u8]) -> std::io::Result<Vec<u8>> {
    stream.write_all(message).await?;
    let mut back = vec![0u8; message.len()];
    tokio::time::timeout(STEP, stream.read_exact(&mut back))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no echo"))??;
    Ok(back)
}

/// Whether anything arrives on `stream` within `wait`.
async fn receives_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut byte = [0u8; 1];
    tokio::time::timeout(wait, stream.read(&mut byte)).await.is_ok()
}

#[tokio::test]
async fn given_a_partition_when_bytes_are_sent_should_hold_the_connection_and_deliver_nothing() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut before = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut before, b"ping").await.unwrap(), b"ping");

    mesh.apply(&isolate(2, 0)).unwrap();
    let received = echo.received.load(Ordering::Relaxed);
    before.write_all(b"held").await.unwrap();
    let mut during = connect(&mesh, N1_TO_N2).await; // accepted and held, not refused
    during.write_all(b"also held").await.unwrap();
    assert!(
        !receives_within(&mut before, Duration::from_millis(300)).await,
        "a cut link delivered bytes"
    );
    assert!(
        !receives_within(&mut during, Duration::from_millis(10)).await,
        "a held connection closed"
    );
    assert_eq!(
        echo.received.load(Ordering::Relaxed),
        received,
        "the upstream got bytes through a cut"
    );
}

#[tokio::test]
async fn given_a_healed_partition_when_reconnecting_should_pass_new_traffic_and_reset_cut_connections() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut cut = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut cut, b"ping").await.unwrap(), b"ping");
    mesh.apply(&isolate(2, 1)).unwrap();
    cut.write_all(b"held").await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    mesh.heal();
    let mut rest = Vec::new();
    let outcome = tokio::time::timeout(STEP, cut.read_to_end(&mut rest))
        .await
        .expect("cut connection not reset");
    let error = outcome.expect_err("a connection that lived through a cut must be reset, not closed cleanly");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
    assert!(rest.is_empty(), "held bytes leaked after the heal: {rest:?}");

    let mut fresh = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut fresh, b"after heal").await.unwrap(), b"after heal");
    assert!(mesh.stats()[0].aborted >= 1);
}

#[tokio::test]
async fn given_a_brief_cut_that_no_byte_saw_when_healed_should_still_reset_the_connection() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut idle = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut idle, b"x").await.unwrap(), b"x");
    mesh.apply(&isolate(2, 0)).unwrap();
    mesh.heal(); // cut and healed before the connection task could look: the epoch still tells
    let mut rest = Vec::new();
    let outcome = tokio::time::timeout(STEP, idle.read_to_end(&mut rest))
        .await
        .expect("not reset");
    assert!(outcome.is_err(), "expected a reset, got a clean EOF");
}

#[tokio::test]
async fn given_a_one_way_cut_when_traffic_flows_should_stop_exactly_one_direction() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut stream = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut stream, b"x").await.unwrap(), b"x");

    // n1 does not hear n2: requests reach the echo server, the echo never comes back.
    let mut grudge = Grudge::none(2);
    grudge.cut(Link::new(1, 0));
    mesh.apply(&grudge).unwrap();
    let received = echo.received.load(Ordering::Relaxed);
    stream.write_all(b"request").await.unwrap();
    assert!(
        !receives_within(&mut stream, Duration::from_millis(300)).await,
        "the reply crossed a one-way cut"
    );
    assert_eq!(
        echo.received.load(Ordering::Relaxed),
        received + 7,
        "the request must get through"
    );
}

#[tokio::test]
async fn given_a_partition_when_clients_stand_on_either_side_should_cut_only_the_far_client() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    mesh.apply(&isolate(2, 0)).unwrap();
    let mut far = connect(&mesh, ProxyId::Client { beside: 0, to: 1 }).await;
    let mut near = connect(&mesh, ProxyId::Client { beside: 1, to: 1 }).await;
    assert_eq!(round_trip(&mut near, b"near").await.unwrap(), b"near");
    far.write_all(b"far").await.unwrap();
    assert!(!receives_within(&mut far, Duration::from_millis(300)).await);
}

/// Median round trip of a 1-byte ping over `stream`.
async fn median_rtt(stream: &mut TcpStream, samples: usize) -> Duration {
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        round_trip(stream, b"p").await.unwrap();
        times.push(start.elapsed());
    }
    times.sort_unstable();
    times[samples / 2]
}

#[tokio::test]
async fn given_a_delay_when_pinging_should_add_the_configured_latency() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut stream = connect(&mesh, N1_TO_N2).await;
    let baseline = median_rtt(&mut stream, 20).await;
    let delay = LinkFault::Delay {
        latency: Millis(50),
        jitter: Millis(0),
    };
    mesh.set_link_fault(Link::new(0, 1), delay).unwrap();
    let delayed = median_rtt(&mut stream, 10).await;
    let added = delayed.saturating_sub(baseline);
    assert!(
        added >= Duration::from_millis(48) && added <= Duration::from_millis(70),
        "expected ~50 ms added, got {added:?} (baseline {baseline:?})"
    );
    mesh.clear_link_fault(Link::new(0, 1), LinkFaultKind::Delay);
    let cleared = median_rtt(&mut stream, 10).await;
    assert!(
        cleared < Duration::from_millis(20),
        "delay still applied after clearing: {cleared:?}"
    );
}

#[tokio::test]
async fn given_jitter_when_streaming_numbered_messages_should_keep_their_order() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let jitter = LinkFault::Delay {
        latency: Millis(10),
        jitter: Millis(10),
    };
    mesh.set_link_fault(Link::new(0, 1), jitter).unwrap();
    let mut stream = connect(&mesh, N1_TO_N2).await;
    let (mut reader, mut writer) = stream.split();
    let sent: Vec<u8> = (0..200u32).flat_map(|i| i.to_be_bytes()).collect();
    let write = async {
        for chunk in sent.chunks(4) {
            writer.write_all(chunk).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let mut back = vec![0u8; sent.len()];
    let read = tokio::time::timeout(Duration::from_secs(10), reader.read_exact(&mut back));
    let ((), read) = tokio::join!(write, read);
    read.expect("stream stalled").unwrap();
    assert_eq!(back, sent, "jitter reordered the stream");
}

#[tokio::test]
async fn given_corruption_when_streaming_should_flip_bytes_at_about_the_configured_rate() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let probability = 0.01;
    mesh.set_link_fault(Link::new(0, 1), LinkFault::Corrupt { probability })
        .unwrap();
    let mut stream = connect(&mesh, N1_TO_N2).await;
    let sent: Vec<u8> = (0..256 * 1024u32).map(|i| (i % 251) as u8).collect();
    let (mut reader, mut writer) = stream.split();
    let mut back = vec![0u8; sent.len()];
    let (written, read) = tokio::join!(
        writer.write_all(&sent),
        tokio::time::timeout(Duration::from_secs(10), reader.read_exact(&mut back))
    );
    written.unwrap();
    read.expect("stream stalled").unwrap();
    let flipped = sent.iter().zip(&back).filter(|(a, b)| a != b).count() as f64;
    let expected = probability * sent.len() as f64; // ~2621, standard deviation ~51
    assert!(
        (flipped - expected).abs() < 0.1 * expected,
        "flipped {flipped}, expected ~{expected}"
    );
    assert_eq!(mesh.stats()[0].corrupted_bytes, flipped as u64, "every flip is counted");
    // Only the faulted direction: the echo's way back is clean, so every difference came from n1->n2.
}

#[tokio::test]
async fn given_a_rate_limit_when_streaming_should_cap_throughput() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    mesh.set_link_fault(Link::new(0, 1), LinkFault::Rate { bytes_per_s: 50_000 })
        .unwrap();
    let mut stream = connect(&mesh, N1_TO_N2).await;
    let sent = vec![7u8; 50_000];
    let start = Instant::now();
    let (mut reader, mut writer) = stream.split();
    let mut back = vec![0u8; sent.len()];
    let (written, read) = tokio::join!(
        writer.write_all(&sent),
        tokio::time::timeout(Duration::from_secs(10), reader.read_exact(&mut back))
    );
    written.unwrap();
    read.expect("stream stalled").unwrap();
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed <= Duration::from_millis(1500),
        "50 kB at 50 kB/s took {elapsed:?}"
    );
}

#[tokio::test]
async fn given_a_reset_fault_when_connecting_should_reset_open_connections_and_refuse_new_ones() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut open = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut open, b"x").await.unwrap(), b"x");
    mesh.set_link_fault(Link::new(0, 1), LinkFault::Reset).unwrap();
    let mut rest = Vec::new();
    let outcome = tokio::time::timeout(STEP, open.read_to_end(&mut rest))
        .await
        .expect("not reset");
    assert_eq!(outcome.unwrap_err().kind(), std::io::ErrorKind::ConnectionReset);
    let addr = mesh.listen_addr(N1_TO_N2).unwrap();
    // The listener closes asynchronously: wait (bounded) for the refusal.
    let mut refused = false;
    for _ in 0..100 {
        match TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    assert!(refused, "new connections must be refused during a reset fault");

    mesh.clear_link_fault(Link::new(0, 1), LinkFaultKind::Reset);
    let mut works = None;
    for _ in 0..100 {
        if let Ok(mut stream) = TcpStream::connect(addr).await {
            if let Ok(back) = round_trip(&mut stream, b"back").await {
                works = Some(back);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        works.as_deref(),
        Some(&b"back"[..]),
        "the link must work again once the reset heals"
    );
}

#[tokio::test]
async fn given_a_dropped_mesh_when_connecting_should_refuse_and_end_open_connections() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let addr = mesh.listen_addr(N1_TO_N2).unwrap();
    let mut open = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut open, b"x").await.unwrap(), b"x");
    drop(mesh);
    let mut rest = Vec::new();
    let outcome = tokio::time::timeout(STEP, open.read_to_end(&mut rest)).await;
    assert!(outcome.is_ok(), "a connection outlived its mesh");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener outlived its mesh"
    );
}

#[tokio::test]
async fn given_the_connection_limit_when_exceeded_should_reset_the_extra_connection() {
    let echo = echo_server().await;
    let limits = ProxyLimits {
        max_connections: 1,
        ..ProxyLimits::default()
    };
    let spec = ProxySpec {
        id: N1_TO_N2,
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: echo.addr,
    };
    let mesh = ProxyMesh::start(2, vec![spec], limits, 1).await.unwrap();
    let mut first = connect(&mesh, N1_TO_N2).await;
    assert_eq!(round_trip(&mut first, b"1").await.unwrap(), b"1");
    let mut second = connect(&mesh, N1_TO_N2).await;
    assert!(round_trip(&mut second, b"2").await.is_err());
    assert_eq!(mesh.stats()[0].over_limit, 1);
}

#[test]
fn given_a_probability_when_corrupting_should_flip_that_share_of_bytes_and_always_change_them() {
    let mut rng = crate::rng::stream(5, "corrupt-test");
    let original = vec![0u8; 1_000_000];
    let mut bytes = original.clone();
    let flipped = connection::corrupt(&mut bytes, 0.001, &mut rng);
    let changed = bytes.iter().filter(|&&b| b != 0).count() as u64;
    assert_eq!(flipped, changed, "a flip must always change the byte");
    assert!((900..1100).contains(&flipped), "flipped {flipped} of 1e6 at p=0.001");
    let mut all = vec![1u8; 100];
    assert_eq!(connection::corrupt(&mut all, 1.0, &mut rng), 100);
}

/// Not a test of behaviour: prints the proxy's added latency and throughput. Run with
/// `cargo test --release -p faultline-faults proxy_overhead -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_proxy_overhead() {
    let echo = echo_server().await;
    let mesh = mesh_to(echo.addr).await;
    let mut direct = TcpStream::connect(echo.addr).await.unwrap();
    direct.set_nodelay(true).unwrap();
    let mut proxied = connect(&mesh, N1_TO_N2).await;
    let direct_rtt = median_rtt(&mut direct, 2000).await;
    let proxied_rtt = median_rtt(&mut proxied, 2000).await;
    println!("median 1-byte RTT: direct {direct_rtt:?}, proxied {proxied_rtt:?}");
    for (name, stream) in [("direct", &mut direct), ("proxied", &mut proxied)] {
        let size = 256 * 1024 * 1024;
        let block = vec![1u8; 1024 * 1024];
        let start = Instant::now();
        let (mut reader, mut writer) = stream.split();
        let write = async {
            for _ in 0..size / block.len() {
                writer.write_all(&block).await.unwrap();
            }
        };
        let read = async {
            let mut sink = vec![0u8; 1024 * 1024];
            let mut got = 0;
            while got < size {
                got += reader.read(&mut sink).await.unwrap();
            }
        };
        tokio::join!(write, read);
        let mib_per_s = (size as f64 / 1048576.0) / start.elapsed().as_secs_f64();
        println!("{name}: echo throughput {mib_per_s:.0} MiB/s");
    }
}
