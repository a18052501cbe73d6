//! The built-in TCP proxy: the harness puts one between its clients and
//! each database endpoint, so it can break the network without root, a
//! firewall or a container runtime.
//!
//! Each accepted client connection gets its own upstream connection, and
//! bytes are pumped both ways. The faults act on the pumps:
//!
//! * **reset**: every open connection is closed with a TCP RST on both
//!   sides, as when a middlebox or the server's host drops its state;
//! * **partition** (black-hole): nothing is read or forwarded any more, and
//!   new connections are accepted but never connected upstream, so clients
//!   see timeouts, as with packets silently dropped. Bytes already read are
//!   held, not dropped (TCP would have retransmitted them), and flow once
//!   the partition heals: a COMMIT the client gave up on may still commit,
//!   which is why that client records it as `info`;
//! * **latency**: each chunk waits `delay` plus up to `jitter` before it is
//!   forwarded (order is kept);
//! * **refuse**: the listening socket is closed, so new connections get
//!   "connection refused"; open ones are untouched.
//!
//! Faults can overlap: each kind counts how many are active.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::schedule::SplitMix;

/// The shared switches of one proxy.
struct State {
    /// The endpoint the proxy forwards to (`host:port`).
    upstream: String,
    /// Active partitions; traffic flows only while 0.
    partition: watch::Sender<u32>,
    /// Active refusals; the listener is open only while 0.
    refuse: watch::Sender<u32>,
    /// Bumped by every reset; each connection dies when it changes.
    reset: watch::Sender<u64>,
    /// Added delay per chunk, in microseconds.
    delay_us: AtomicU64,
    /// Maximum extra random delay per chunk, in microseconds.
    jitter_us: AtomicU64,
    rng: Mutex<SplitMix>,
}

impl State {
    /// The delay to apply to the next chunk, if any.
    fn chunk_delay(&self) -> Option<Duration> {
        let base = self.delay_us.load(Ordering::Relaxed);
        let jitter = self.jitter_us.load(Ordering::Relaxed);
        if base == 0 && jitter == 0 {
            return None;
        }
        let extra = match self.rng.lock() {
            Ok(mut r) => r.below(jitter.saturating_add(1)),
            Err(_) => 0,
        };
        Some(Duration::from_micros(base + extra))
    }

    async fn flowing(&self) {
        until(&mut self.partition.subscribe(), |n| *n == 0).await;
    }
}

/// Waits until the watched value satisfies `f` (or its sender is gone),
/// holding no borrow of it afterwards.
pub async fn until<T>(rx: &mut watch::Receiver<T>, f: impl FnMut(&T) -> bool) {
    let _ = rx.wait_for(f).await.map(|_| ());
}

/// One proxy in front of one database endpoint.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    acceptor: JoinHandle<()>,
}

impl Proxy {
    /// Listens on an ephemeral port of 127.0.0.1 and forwards to
    /// `upstream` (`host:port`). `seed` drives the jitter.
    pub async fn start(upstream: &str, seed: u64) -> io::Result<Proxy> {
        let listener = bind("127.0.0.1:0".parse().expect("a valid address"))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            upstream: upstream.to_string(),
            partition: watch::channel(0).0,
            refuse: watch::channel(0).0,
            reset: watch::channel(0).0,
            delay_us: AtomicU64::new(0),
            jitter_us: AtomicU64::new(0),
            rng: Mutex::new(SplitMix(seed)),
        });
        let acceptor = tokio::spawn(accept_loop(listener, addr, Arc::clone(&state)));
        Ok(Proxy {
            addr,
            state,
            acceptor,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint behind the proxy.
    pub fn upstream(&self) -> &str {
        &self.state.upstream
    }

    /// Closes every open connection with a reset, on both sides.
    pub fn reset(&self) {
        self.state.reset.send_modify(|g| *g += 1);
    }

    /// Starts a partition (black-hole); undone by [`Proxy::heal`].
    pub fn partition(&self) {
        self.state.partition.send_modify(|n| *n += 1);
    }

    /// Ends one partition.
    pub fn heal(&self) {
        self.state
            .partition
            .send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Starts refusing new connections; undone by [`Proxy::accept`].
    pub fn refuse(&self) {
        self.state.refuse.send_modify(|n| *n += 1);
    }

    /// Ends one refusal.
    pub fn accept(&self) {
        self.state.refuse.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Sets the added delay and jitter of every chunk (zero: none).
    pub fn set_latency(&self, delay: Duration, jitter: Duration) {
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.state.delay_us.store(us(delay), Ordering::Relaxed);
        self.state.jitter_us.store(us(jitter), Ordering::Relaxed);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        // Lift every fault, then close what is left.
        self.state.partition.send_replace(0);
        self.reset();
    }
}

/// A listening socket that can be reopened on the same port.
fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = TcpSocket::new_v4()?;
    s.set_reuseaddr(true)?;
    s.bind(addr)?;
    s.listen(1024)
}

async fn accept_loop(mut listener: TcpListener, addr: SocketAddr, state: Arc<State>) {
    let mut refuse = state.refuse.subscribe();
    loop {
        let refused = tokio::select! {
            r = listener.accept() => {
                if let Ok((client, _)) = r {
                    tokio::spawn(serve(client, Arc::clone(&state)));
                } else {
                    // Out of file descriptors and the like: do not spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                false
            }
            () = until(&mut refuse, |n| *n > 0) => true,
        };
        if refused {
            // A closed listening socket: the kernel answers RST to a SYN.
            drop(listener);
            until(&mut refuse, |n| *n == 0).await;
            listener = loop {
                match bind(addr) {
                    Ok(l) => break l,
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            };
        }
    }
}

/// Closes both sockets with RST rather than FIN.
fn rst(a: &TcpStream, b: Option<&TcpStream>) {
    let _ = a.set_zero_linger();
    if let Some(b) = b {
        let _ = b.set_zero_linger();
    }
}

async fn serve(mut client: TcpStream, state: Arc<State>) {
    let mut reset = state.reset.subscribe();
    reset.borrow_and_update();
    // A partition holds new connections too: the client's connect timeout
    // fires, as if its SYN got no answer.
    tokio::select! {
        _ = state.flowing() => {}
        _ = reset.changed() => return rst(&client, None),
    }
    let connect = TcpStream::connect(state.upstream.as_str());
    let mut server = tokio::select! {
        r = connect => match r {
            Ok(s) => s,
            Err(_) => return rst(&client, None),
        },
        _ = reset.changed() => return rst(&client, None),
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let broke = {
        let (cr, cw) = client.split();
        let (sr, sw) = server.split();
        tokio::select! {
            r = async { tokio::try_join!(pump(cr, sw, &state), pump(sr, cw, &state)) } => r.is_err(),
            _ = reset.changed() => true,
        }
    };
    if broke {
        rst(&client, Some(&server));
    }
}

/// Copies one direction until end of file, honouring partitions and
/// latency. An error on either side ends both directions.
async fn pump(
    mut from: tokio::net::tcp::ReadHalf<'_>,
    mut to: tokio::net::tcp::WriteHalf<'_>,
    state: &State,
) -> io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        state.flowing().await;
        let n = from.read(&mut buf).await?;
        if n == 0 {
            let _ = to.shutdown().await;
            return Ok(());
        }
        state.flowing().await;
        if let Some(d) = state.chunk_delay() {
            tokio::time::sleep(d).await;
        }
        to.write_all(&buf[..n]).await?;
    }
}

/// A URL's `host:port` replaced by `addr`, with the `host:port` it named.
/// Understands `scheme://[user[:pass]@]host[:port][/...]`; the port
/// defaults by scheme (postgres 5432, mysql 3306).
pub fn rewrite_url(url: &str, addr: SocketAddr) -> Result<(String, String), String> {
    let shown = adapters::redact_url(url);
    let Some(i) = url.find("://") else {
        return Err(format!(
            "the proxy needs a URL of the form scheme://user@host:port/db, not {shown:?}"
        ));
    };
    let scheme = &url[..i];
    let rest = &url[i + 3..];
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    let (userinfo, hostport) = match auth.rfind('@') {
        Some(at) => (&auth[..=at], &auth[at + 1..]),
        None => ("", auth),
    };
    if hostport.is_empty() || hostport.contains(',') {
        return Err(format!(
            "the proxy needs exactly one host in the URL {shown} (give several --url instead)"
        ));
    }
    let default_port = match scheme {
        "postgres" | "postgresql" => Some(5432),
        "mysql" | "mariadb" => Some(3306),
        _ => None,
    };
    // `[::1]:5432`, `host:5432`, or a host without a port.
    let has_port = match hostport.rfind(':') {
        Some(c) => !hostport[c..].contains(']'),
        None => false,
    };
    let upstream = if has_port {
        hostport.to_string()
    } else {
        match default_port {
            Some(p) => format!("{hostport}:{p}"),
            None => {
                return Err(format!(
                    "the URL {shown} has no port and {scheme}:// has no default one"
                ))
            }
        }
    };
    let rewritten = format!("{scheme}://{userinfo}{addr}{tail}");
    Ok((rewritten, upstream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn urls_are_rewritten_to_the_proxy() {
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let (u, up) = rewrite_url("postgres://alice:pw@db.example:5433/app?x=1", a).unwrap();
        assert_eq!(u, "postgres://alice:pw@127.0.0.1:40000/app?x=1");
        assert_eq!(up, "db.example:5433");
        let (u, up) = rewrite_url("mysql://root@127.0.0.1/test", a).unwrap();
        assert_eq!(u, "mysql://root@127.0.0.1:40000/test");
        assert_eq!(up, "127.0.0.1:3306");
        let (_, up) = rewrite_url("postgres://[::1]:6000/db", a).unwrap();
        assert_eq!(up, "[::1]:6000");
        assert!(rewrite_url("host=h port=5 password=secret", a)
            .unwrap_err()
            .contains("password=***"));
        assert!(rewrite_url("postgres://u@h1:1,h2:2/db", a).is_err());
        assert!(rewrite_url("foo://u@h/db", a).is_err());
    }

    /// An upstream that echoes every byte back.
    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        a
    }

    async fn roundtrip(s: &mut TcpStream, limit: Duration) -> io::Result<Duration> {
        let t = Instant::now();
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        match tokio::time::timeout(limit, s.read_exact(&mut buf)).await {
            Ok(r) => {
                r?;
                assert_eq!(&buf, b"ping");
                Ok(t.elapsed())
            }
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "timeout")),
        }
    }

    #[tokio::test]
    async fn faults_act_on_the_traffic() {
        let up = echo_server().await;
        let p = Proxy::start(&up.to_string(), 1).await.unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        let limit = Duration::from_millis(300);
        roundtrip(&mut c, limit).await.unwrap();

        // Latency.
        p.set_latency(Duration::from_millis(60), Duration::ZERO);
        let rt = roundtrip(&mut c, Duration::from_secs(2)).await.unwrap();
        assert!(rt >= Duration::from_millis(120), "{rt:?}");
        p.set_latency(Duration::ZERO, Duration::ZERO);

        // Partition: a timeout, then the held bytes flow after healing.
        p.partition();
        let e = roundtrip(&mut c, limit).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        // A new connection is accepted but goes nowhere.
        let mut c2 = TcpStream::connect(p.addr()).await.unwrap();
        assert!(roundtrip(&mut c2, limit).await.is_err());
        p.heal();
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        roundtrip(&mut c, limit).await.unwrap();

        // Reset: the open connection dies with an error.
        p.reset();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut buf = [0u8; 4];
        let r = c.read(&mut buf).await;
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        roundtrip(&mut c, limit).await.unwrap();

        // Refuse: new connections are refused, open ones keep working.
        p.refuse();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = TcpStream::connect(p.addr()).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        roundtrip(&mut c, limit).await.unwrap();
        p.accept();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut c3 = TcpStream::connect(p.addr()).await.unwrap();
        roundtrip(&mut c3, limit).await.unwrap();
    }
}
