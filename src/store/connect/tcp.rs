//! The TCP settings of a database URL, with libpq's names and units: `connect_timeout`
//! (seconds), `keepalives` (0 or 1), `keepalives_idle`, `keepalives_interval` (seconds),
//! `keepalives_count` and `tcp_user_timeout` (milliseconds). tokio-postgres reads some
//! of these with other names or units (`keepalives_retries`, `tcp_user_timeout` in
//! seconds), so they are taken out of the URL here and applied by [`super::socket`].
//!
//! A URL that names none of them gets defaults that find a dead connection in seconds,
//! where the operating system's defaults take minutes to hours: a managed PostgreSQL's
//! failover, a NAT or a load balancer dropping a connection without a reset leave
//! sockets that otherwise hang until TCP gives up. Pure: nothing is connected here.

use std::time::Duration;

/// The keys read here (and `keepalives_retries`, tokio-postgres's name for
/// `keepalives_count`).
pub const KEYS: [&str; 7] = [
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "keepalives_retries",
    "tcp_user_timeout",
];

/// How connections to one database are made and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSettings {
    /// The most one host's connection may take, TCP, TLS and authentication together
    /// (`None`: no bound). Default 5 s.
    pub connect_timeout: Option<Duration>,
    /// TCP keepalive probes on an idle connection (`None`: off). Default: the first
    /// after 5 s idle, then every 2 s, the connection dropped after 3 unanswered: a
    /// silent peer is found within 11 s.
    pub keepalive: Option<Keepalive>,
    /// How long written data may stay unacknowledged before the kernel drops the
    /// connection (`None`: the system's default, many minutes). Default 10 s.
    pub tcp_user_timeout: Option<Duration>,
}

/// TCP keepalive timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub idle: Duration,
    pub interval: Duration,
    pub count: u32,
}

impl Default for TcpSettings {
    fn default() -> Self {
        TcpSettings {
            connect_timeout: Some(Duration::from_secs(5)),
            keepalive: Some(Keepalive {
                idle: Duration::from_secs(5),
                interval: Duration::from_secs(2),
                count: 3,
            }),
            tcp_user_timeout: Some(Duration::from_secs(10)),
        }
    }
}

impl TcpSettings {
    /// The settings `pairs` name, each one left unnamed keeping its default. Zero means
    /// "no bound" for `connect_timeout` and "the system's default" for
    /// `tcp_user_timeout`, as in libpq; `keepalives=0` turns probes off.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<TcpSettings, String> {
        let mut settings = TcpSettings::default();
        let mut keepalives = true;
        let mut keepalive = settings.keepalive.expect("the default has keepalives");
        for (key, value) in pairs {
            match key {
                "connect_timeout" => {
                    settings.connect_timeout = nonzero(seconds(key, value)?);
                }
                "keepalives" => {
                    keepalives = match value {
                        "0" => false,
                        "1" => true,
                        _ => return Err(bad(key, value, "0 or 1")),
                    }
                }
                "keepalives_idle" => keepalive.idle = positive(key, seconds(key, value)?)?,
                "keepalives_interval" => keepalive.interval = positive(key, seconds(key, value)?)?,
                "keepalives_count" | "keepalives_retries" => {
                    keepalive.count = value
                        .parse::<u32>()
                        .ok()
                        .filter(|count| *count > 0)
                        .ok_or_else(|| bad(key, value, "a whole number above 0"))?
                }
                "tcp_user_timeout" => {
                    let millis = value
                        .parse::<u64>()
                        .map_err(|_| bad(key, value, "milliseconds, a whole number"))?;
                    settings.tcp_user_timeout = nonzero(Duration::from_millis(millis));
                }
                other => unreachable!("{other} is not a TCP setting"),
            }
        }
        settings.keepalive = keepalives.then_some(keepalive);
        Ok(settings)
    }
}

fn seconds(key: &str, value: &str) -> Result<Duration, String> {
    value
        .parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|_| bad(key, value, "seconds, a whole number"))
}

fn nonzero(duration: Duration) -> Option<Duration> {
    (!duration.is_zero()).then_some(duration)
}

fn positive(key: &str, duration: Duration) -> Result<Duration, String> {
    nonzero(duration).ok_or_else(|| bad(key, "0", "above 0"))
}

fn bad(key: &str, value: &str, want: &str) -> String {
    format!("{key}={value} in the database URL: expected {want}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_settings_keep_defaults_that_find_a_dead_peer_in_seconds() {
        let settings = TcpSettings::from_pairs([]).unwrap();
        assert_eq!(settings, TcpSettings::default());
        let keepalive = settings.keepalive.unwrap();
        let silent_for = keepalive.idle + keepalive.interval * keepalive.count;
        assert!(silent_for <= Duration::from_secs(15), "{silent_for:?}");
    }

    #[test]
    fn named_settings_are_read_in_libpq_units() {
        let settings = TcpSettings::from_pairs([
            ("connect_timeout", "7"),
            ("keepalives_idle", "30"),
            ("keepalives_interval", "4"),
            ("keepalives_count", "5"),
            ("tcp_user_timeout", "2500"),
        ])
        .unwrap();
        assert_eq!(settings.connect_timeout, Some(Duration::from_secs(7)));
        assert_eq!(
            settings.keepalive,
            Some(Keepalive {
                idle: Duration::from_secs(30),
                interval: Duration::from_secs(4),
                count: 5
            })
        );
        assert_eq!(settings.tcp_user_timeout, Some(Duration::from_millis(2500)));
        let off = TcpSettings::from_pairs([
            ("keepalives", "0"),
            ("connect_timeout", "0"),
            ("tcp_user_timeout", "0"),
        ])
        .unwrap();
        assert_eq!((off.keepalive, off.connect_timeout), (None, None));
        assert_eq!(off.tcp_user_timeout, None);
        let retries = TcpSettings::from_pairs([("keepalives_retries", "9")]).unwrap();
        assert_eq!(retries.keepalive.unwrap().count, 9);
    }

    #[test]
    fn bad_values_are_refused_naming_the_setting() {
        for (key, value) in [
            ("connect_timeout", "soon"),
            ("keepalives", "yes"),
            ("keepalives_idle", "0"),
            ("keepalives_count", "0"),
            ("tcp_user_timeout", "1.5"),
        ] {
            let error = TcpSettings::from_pairs([(key, value)]).unwrap_err();
            assert!(error.contains(key) && error.contains(value), "{error}");
        }
    }
}
