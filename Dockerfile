# syntax=docker/dockerfile:1
# The image the Helm chart (helm/tasklane) runs: the `tasklane` binary on PATH, run as
# the non-root user 65532 (the chart's runAsUser), `tasklane serve` by default.
# From the repository root, tagged as the chart expects by default (image.repository
# `tasklane`, image.tag = the chart's appVersion, which is the crate's version):
#
#   docker build -t tasklane:0.1.0 .
#
# Needs BuildKit (the default builder since Docker 23) for the cache mounts.

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
WORKDIR /src
# .dockerignore lets in only what the build reads (manifest, lock file, sources, SQL,
# migrations, the demo task types, the console's files).
COPY . .
# The registry and target dir are cache mounts (kept between builds, not in the layer),
# so the binary is copied out in the same step. The release profile strips the binary
# (no debug info, no symbol table).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -m 0755 target/release/tasklane /usr/local/bin/tasklane

FROM debian:${DEBIAN_RELEASE}-slim
# Nothing beyond glibc is needed at run time: TLS to PostgreSQL is rustls with Mozilla's
# roots compiled in (no ca-certificates package; a private CA comes as `sslrootcert`).
RUN groupadd --system --gid 65532 tasklane \
    && useradd --system --uid 65532 --gid 65532 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin tasklane
COPY --from=builder /usr/local/bin/tasklane /usr/local/bin/tasklane
# Numeric, so a runAsNonRoot pod can verify it without reading /etc/passwd.
USER 65532:65532
# In a container the API must be reachable from outside it (the binary's own default is
# the loopback); the chart sets TASKLANE_LISTEN explicitly too.
ENV TASKLANE_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["tasklane"]
CMD ["serve"]
