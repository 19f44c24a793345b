//! Opening a connection ourselves, host by host, where tokio-postgres would open it:
//! its `connect` gives no way to watch the socket, so the socket is made here (TCP
//! settings with libpq's meaning, [`super::tcp`]), wrapped in the answer watchdog
//! ([`super::watchdog`]) and handed to `connect_raw`. What `connect` does besides is
//! done here too: every host of a multi-host URL in order (each of its addresses,
//! `hostaddr` when given, shuffled with `load_balance_hosts=random`), and
//! `target_session_attrs` checked on the new session.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use rand::seq::SliceRandom as _;
use socket2::{SockRef, TcpKeepalive};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_postgres::config::{Host, LoadBalanceHosts, TargetSessionAttrs};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, Connection};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::tcp::TcpSettings;
use super::watchdog::{Switch, Watched, WatchedTls};

/// A TCP or Unix-domain socket.
pub enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// The socket as tokio-postgres drives it.
pub type Stream = Watched<Socket>;
/// The TLS stream over it.
pub type TlsStream = Watched<<MakeRustlsConnect as MakeTlsConnect<Stream>>::Stream>;

/// One place to connect to: a host's address and the name its certificate must carry.
struct Target {
    address: Host,
    /// For TLS (SNI and verify-full); none for a Unix socket.
    hostname: Option<String>,
    port: u16,
}

/// Connects to the first host of `config` that takes a session `config` accepts; the
/// error of the last host tried otherwise (each error names its host).
pub async fn connect(
    config: &Config,
    tcp: &TcpSettings,
    tls: &MakeRustlsConnect,
    deadline: Option<Duration>,
) -> anyhow::Result<(Client, Connection<Stream, TlsStream>)> {
    let mut targets = targets(config)?;
    if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
        targets.shuffle(&mut rand::rng());
    }
    let mut last = None;
    for target in &targets {
        let attempt = connect_target(config, tcp, tls.clone(), deadline, target);
        let result = match tcp.connect_timeout {
            Some(bound) => tokio::time::timeout(bound, attempt)
                .await
                .unwrap_or_else(|_| {
                    Err(anyhow::Error::new(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no session within connect_timeout ({} s)", bound.as_secs()),
                    )))
                }),
            None => attempt.await,
        };
        match result {
            Ok(connected) => return Ok(connected),
            Err(error) => last = Some(error.context(target.describe())),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("the database URL names no host")))
}

fn targets(config: &Config) -> anyhow::Result<Vec<Target>> {
    let hosts = config.get_hosts();
    let addresses = config.get_hostaddrs();
    let count = hosts.len().max(addresses.len());
    anyhow::ensure!(
        hosts.is_empty() || addresses.is_empty() || hosts.len() == addresses.len(),
        "the database URL names {} hosts and {} hostaddrs",
        hosts.len(),
        addresses.len()
    );
    let ports = config.get_ports();
    anyhow::ensure!(
        ports.len() <= 1 || ports.len() == count,
        "the database URL names {} hosts and {} ports",
        count,
        ports.len()
    );
    Ok((0..count)
        .map(|i| {
            let host = hosts.get(i);
            Target {
                address: match addresses.get(i) {
                    Some(ip) => Host::Tcp(ip.to_string()),
                    None => host.cloned().expect("a host where there is no hostaddr"),
                },
                hostname: match host {
                    Some(Host::Tcp(name)) => Some(name.clone()),
                    _ => None,
                },
                port: ports.get(i).or(ports.first()).copied().unwrap_or(5432),
            }
        })
        .collect())
}

impl Target {
    fn describe(&self) -> String {
        match &self.address {
            Host::Tcp(name) => format!("{name}:{}", self.port),
            #[cfg(unix)]
            Host::Unix(path) => format!("{}", path.display()),
        }
    }
}

async fn connect_target(
    config: &Config,
    tcp: &TcpSettings,
    mut tls: MakeRustlsConnect,
    deadline: Option<Duration>,
    target: &Target,
) -> anyhow::Result<(Client, Connection<Stream, TlsStream>)> {
    let socket = open(target, tcp).await?;
    let switch = Switch::default();
    let stream = Watched::new(socket, deadline, &switch);
    let connector = MakeTlsConnect::<Stream>::make_tls_connect(
        &mut tls,
        target.hostname.as_deref().unwrap_or(""),
    )
    .unwrap_or_else(|never| match never {});
    let (client, mut connection) = config.connect_raw(stream, WatchedTls(connector)).await?;
    switch.turn_on();
    let wanted = config.get_target_session_attrs();
    if wanted != TargetSessionAttrs::Any {
        // The driver runs beside the query until it answers.
        let read_only = tokio::select! {
            rows = client.simple_query("SHOW transaction_read_only") => rows?,
            ended = &mut connection => {
                ended?;
                anyhow::bail!("the server closed the connection");
            }
        };
        let read_only = read_only.iter().find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(|v| v == "on"),
            _ => None,
        });
        match (wanted, read_only) {
            (TargetSessionAttrs::ReadWrite, Some(true)) => {
                return Err(super::lost::ReadOnlyServer.into())
            }
            (TargetSessionAttrs::ReadOnly, Some(false)) => {
                anyhow::bail!("the server takes writes (target_session_attrs=read-only)")
            }
            _ => {}
        }
    }
    Ok((client, connection))
}

async fn open(target: &Target, tcp: &TcpSettings) -> anyhow::Result<Socket> {
    match &target.address {
        Host::Tcp(name) => {
            let mut last = None;
            let addresses = tokio::net::lookup_host((name.as_str(), target.port))
                .await
                .context("resolve the host")?;
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => {
                        configure(&stream, tcp)?;
                        return Ok(Socket::Tcp(stream));
                    }
                    Err(error) => last = Some(error),
                }
            }
            Err(last
                .map(anyhow::Error::new)
                .unwrap_or_else(|| anyhow::anyhow!("the host resolves to no address")))
        }
        #[cfg(unix)]
        Host::Unix(directory) => {
            let path = directory.join(format!(".s.PGSQL.{}", target.port));
            Ok(Socket::Unix(
                tokio::net::UnixStream::connect(&path)
                    .await
                    .with_context(|| format!("connect to {}", path.display()))?,
            ))
        }
    }
}

fn configure(stream: &TcpStream, tcp: &TcpSettings) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let socket = SockRef::from(stream);
    if let Some(keepalive) = tcp.keepalive {
        socket.set_tcp_keepalive(
            &TcpKeepalive::new()
                .with_time(keepalive.idle)
                .with_interval(keepalive.interval)
                .with_retries(keepalive.count),
        )?;
    }
    #[cfg(target_os = "linux")]
    socket.set_tcp_user_timeout(tcp.tcp_user_timeout)?;
    Ok(())
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            #[cfg(unix)]
            Socket::Unix(stream) => Pin::new(stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(stream) => Pin::new(stream).poll_write(cx, bytes),
            #[cfg(unix)]
            Socket::Unix(stream) => Pin::new(stream).poll_write(cx, bytes),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(stream) => Pin::new(stream).poll_flush(cx),
            #[cfg(unix)]
            Socket::Unix(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(stream) => Pin::new(stream).poll_shutdown(cx),
            #[cfg(unix)]
            Socket::Unix(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}
