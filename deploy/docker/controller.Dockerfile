# syntax=docker/dockerfile:1
# bluegreen-controller image: multi-stage, glibc binary (rustls, no OpenSSL) on distroless, runs as non-root.
# Build from the repository root (the workspace needs every member's manifest):
#   docker build -f deploy/docker/controller.Dockerfile -t bluegreen/controller:0.1.0 .
# Not built in this repository's CI (no container registry there); see docs/operations.md.

FROM rust:1.95.0-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p bluegreen-controller --bin bluegreen-controller \
 && install -D target/release/bluegreen-controller /out/bluegreen-controller

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/bluegreen-controller /usr/local/bin/bluegreen-controller
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/bluegreen-controller"]
