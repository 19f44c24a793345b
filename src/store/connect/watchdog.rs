//! A connection's answer deadline: a stream that fails once the server has sent
//! nothing for a set time while a statement waits for its answer.
//!
//! TCP keepalives and `tcp_user_timeout` find a peer that stopped acknowledging, but
//! not one that acknowledges and never answers: a proxy or load balancer that keeps
//! the client's socket open after losing the server's, or a server that hangs. A
//! statement sent there waits forever, and so does whatever holds its connection. The
//! watchdog reads the protocol's own framing on the plaintext side of the stream (above
//! TLS): each `Sync` or simple `Query` the client sends is answered by one
//! `ReadyForQuery`, so it knows when answers are owed. While one is, every byte from
//! the server restarts the deadline (a long result streams on); when the deadline
//! passes with nothing read, reads fail with `TimedOut`, tokio-postgres closes the
//! connection and fails its statements, and the pool replaces it. An idle connection
//! (a LISTEN waiting for notifications) owes nothing and has no deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};

/// Turns a connection's watch on once its start-up is over: the start-up messages are
/// not framed like the rest, and the connect timeout bounds them anyway.
#[derive(Clone, Default)]
pub struct Switch(Arc<AtomicBool>);

impl Switch {
    pub fn turn_on(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn is_on(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A stream and, on its plaintext layer, the watch over it.
pub struct Watched<S> {
    inner: S,
    watch: Option<Watch>,
}

impl<S> Watched<S> {
    /// `inner` watched with `deadline` (none: passed through), from when `switch` turns
    /// on.
    pub fn new(inner: S, deadline: Option<Duration>, switch: &Switch) -> Self {
        Watched {
            inner,
            watch: deadline.map(|deadline| Watch::new(deadline, switch.clone())),
        }
    }
}

struct Watch {
    deadline: Duration,
    switch: Switch,
    sent: Frames,
    received: Frames,
    /// Requests sent whose `ReadyForQuery` has not come.
    owed: u64,
    timer: Pin<Box<Sleep>>,
}

impl Watch {
    fn new(deadline: Duration, switch: Switch) -> Self {
        Watch {
            deadline,
            switch,
            sent: Frames::default(),
            received: Frames::default(),
            owed: 0,
            timer: Box::pin(tokio::time::sleep(deadline)),
        }
    }

    fn wrote(&mut self, bytes: &[u8], cx: &mut Context<'_>) {
        if !self.switch.is_on() {
            return;
        }
        let owed_before = self.owed;
        let owed = &mut self.owed;
        self.sent.feed(bytes, |kind| {
            if kind == b'S' || kind == b'Q' {
                *owed += 1;
            }
        });
        if owed_before == 0 && self.owed > 0 {
            self.restart(cx);
        }
    }

    fn read(&mut self, bytes: &[u8], cx: &mut Context<'_>) {
        if !self.switch.is_on() || bytes.is_empty() {
            return;
        }
        let owed = &mut self.owed;
        self.received.feed(bytes, |kind| {
            if kind == b'Z' {
                *owed = owed.saturating_sub(1);
            }
        });
        if self.owed > 0 {
            self.restart(cx);
        }
    }

    /// The deadline from now, registered with the connection's task: its driver may
    /// not poll the read side again until something wakes it.
    fn restart(&mut self, cx: &mut Context<'_>) {
        self.timer.as_mut().reset(Instant::now() + self.deadline);
        let _ = self.timer.as_mut().poll(cx);
    }

    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.owed > 0 && self.timer.as_mut().poll(cx).is_ready()
    }

    fn error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "PostgreSQL sent nothing for {} s while a statement waited for its answer: the connection is taken as gone",
                self.deadline.as_secs_f64()
            ),
        )
    }
}

/// The framing of one direction: a type byte and a 4-byte length that counts itself.
#[derive(Default)]
struct Frames {
    header: [u8; 5],
    have: usize,
    body_left: usize,
}

impl Frames {
    /// Reads `bytes` on from where the last call stopped; `on_message` gets each
    /// message's type byte once its header is complete.
    fn feed(&mut self, mut bytes: &[u8], mut on_message: impl FnMut(u8)) {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let skip = self.body_left.min(bytes.len());
                self.body_left -= skip;
                bytes = &bytes[skip..];
                continue;
            }
            let take = (5 - self.have).min(bytes.len());
            self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
            self.have += take;
            bytes = &bytes[take..];
            if self.have == 5 {
                let length = u32::from_be_bytes(self.header[1..5].try_into().expect("4 bytes"));
                self.body_left = (length as usize).saturating_sub(4);
                self.have = 0;
                on_message(self.header[0]);
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if let Some(watch) = &mut this.watch {
                    watch.read(&buf.filled()[before..], cx);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => match &mut this.watch {
                Some(watch) => match watch.expired(cx) {
                    true => Poll::Ready(Err(watch.error())),
                    false => Poll::Pending,
                },
                None => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, bytes);
        if let (Poll::Ready(Ok(n)), Some(watch)) = (&written, &mut this.watch) {
            watch.wrote(&bytes[..*n], cx);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: TlsStream + Unpin> TlsStream for Watched<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

/// A TLS connector that moves the watch from the socket to the TLS stream, where the
/// protocol's messages are plaintext.
pub struct WatchedTls<T>(pub T);

impl<S, T> TlsConnect<Watched<S>> for WatchedTls<T>
where
    T: TlsConnect<Watched<S>> + Send + 'static,
    T::Future: Send + 'static,
    T::Stream: Unpin,
    S: Send + 'static,
{
    type Stream = Watched<T::Stream>;
    type Error = T::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Stream, T::Error>> + Send>>;

    fn connect(self, mut socket: Watched<S>) -> Self::Future {
        let watch = socket.watch.take();
        let handshake = self.0.connect(socket);
        Box::pin(async move {
            Ok(Watched {
                inner: handshake.await?,
                watch,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    #[test]
    fn frames_are_read_across_any_split() {
        let mut stream = Vec::new();
        stream.extend(message(b'P', b"SELECT 1\0\0\0"));
        stream.extend(message(b'S', b""));
        stream.extend(message(b'Q', &[7; 300]));
        for chunk in [1, 2, 3, 5, 7, 64, 1000] {
            let mut frames = Frames::default();
            let mut kinds = Vec::new();
            for part in stream.chunks(chunk) {
                frames.feed(part, |kind| kinds.push(kind));
            }
            assert_eq!(kinds, b"PSQ", "chunks of {chunk}");
        }
    }
}
