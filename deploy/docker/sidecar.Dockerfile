# syntax=docker/dockerfile:1
# bluegreen-sidecar image: multi-stage, glibc binary (rustls, no OpenSSL) on distroless, runs as non-root.
# Build from the repository root (the workspace needs every member's manifest):
#   docker build -f deploy/docker/sidecar.Dockerfile -t bluegreen/sidecar:0.1.0 .
# Not built in this repository's CI (no container registry there); see docs/operations.md.

FROM rust:1.95.0-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p bluegreen-sidecar --bin bluegreen-sidecar \
 && install -D target/release/bluegreen-sidecar /out/bluegreen-sidecar

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/bluegreen-sidecar /usr/local/bin/bluegreen-sidecar
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/bluegreen-sidecar"]
