//! A TCP proxy between a replica and PostgreSQL that can black-hole its traffic, for the
//! fault tests and the benchmark of how fast a cut connection is found. It cuts the way
//! a proxy or load balancer that lost the server's side of its connections does: the
//! connections open at the cut stop forwarding for good, without a close or a reset
//! (this side's kernel still takes the bytes, so TCP sees nothing wrong: only an answer
//! that never comes tells the client), and connections made while the proxy is cut are
//! taken and never forwarded. Healing forwards new connections again; the old ones stay
//! dead.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A running proxy to one address.
pub struct BlackHoleProxy {
    /// The loopback port it listens on.
    pub port: u16,
    state: Arc<State>,
    stop: CancellationToken,
}

#[derive(Default)]
struct State {
    /// Cancelled at a cut: the connections forwarding under it stop. A new one after a
    /// heal.
    cut: Mutex<CancellationToken>,
    holing: std::sync::atomic::AtomicBool,
    /// Sockets kept open and unread: the dead connections.
    graveyard: Mutex<Vec<TcpStream>>,
    /// When each connection was accepted.
    accepted: Mutex<Vec<Instant>>,
}

impl BlackHoleProxy {
    /// Listens on a free loopback port, forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> BlackHoleProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        let state = Arc::new(State::default());
        let stop = CancellationToken::new();
        tokio::spawn(accept(listener, upstream, state.clone(), stop.clone()));
        BlackHoleProxy { port, state, stop }
    }

    /// A proxy to the server of `database_url` (reached over TCP), and the same URL
    /// through the proxy.
    pub async fn in_front_of(database_url: &str) -> anyhow::Result<(BlackHoleProxy, String)> {
        let config: tokio_postgres::Config = database_url.parse()?;
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            _ => anyhow::bail!("the database URL names no TCP host"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = format!("{host}:{port}");
        let proxy = BlackHoleProxy::start(upstream.clone()).await;
        let through = format!("127.0.0.1:{}", proxy.port);
        let url = database_url.replacen(&upstream, &through, 1);
        anyhow::ensure!(
            url != database_url,
            "the URL does not name {upstream} as written"
        );
        Ok((proxy, url))
    }

    /// From now on nothing passes: open connections go silent, new ones are held.
    pub fn cut(&self) {
        self.state
            .holing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.state.cut.lock().expect("not poisoned").cancel();
    }

    /// The connections open now go silent for good; new ones are forwarded (a load
    /// balancer that forgot its connections but still routes new ones).
    pub fn cut_open_connections(&self) {
        let mut cut = self.state.cut.lock().expect("not poisoned");
        cut.cancel();
        *cut = CancellationToken::new();
    }

    /// New connections are forwarded again; those cut stay dead.
    pub fn heal(&self) {
        *self.state.cut.lock().expect("not poisoned") = CancellationToken::new();
        self.state
            .holing
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// When the connections accepted after `since` were accepted.
    pub fn accepted_since(&self, since: Instant) -> Vec<Instant> {
        let accepted = self.state.accepted.lock().expect("not poisoned");
        accepted.iter().copied().filter(|at| *at > since).collect()
    }
}

impl Drop for BlackHoleProxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.state.cut.lock().expect("not poisoned").cancel();
    }
}

async fn accept(
    listener: TcpListener,
    upstream: String,
    state: Arc<State>,
    stop: CancellationToken,
) {
    loop {
        let (client, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            _ = stop.cancelled() => return,
        };
        state
            .accepted
            .lock()
            .expect("not poisoned")
            .push(Instant::now());
        if state.holing.load(std::sync::atomic::Ordering::SeqCst) {
            state.graveyard.lock().expect("not poisoned").push(client);
            continue;
        }
        let cut = state.cut.lock().expect("not poisoned").clone();
        tokio::spawn(forward(client, upstream.clone(), cut, state.clone()));
    }
}

async fn forward(
    mut client: TcpStream,
    upstream: String,
    cut: CancellationToken,
    state: Arc<State>,
) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = cut.cancelled() => {
            let mut graveyard = state.graveyard.lock().expect("not poisoned");
            graveyard.push(client);
            graveyard.push(server);
        }
    }
}
