# Builds the a2a-mailbox binary and runs it. Used by docker-compose.yml.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
COPY migrations ./migrations
COPY build.rs ./
RUN cargo build --release --locked --bin a2a-mailbox

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/a2a-mailbox /usr/local/bin/a2a-mailbox
ENV A2A_MAILBOX_BIND=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["a2a-mailbox"]
CMD ["serve"]
