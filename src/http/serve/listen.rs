//! Binds every entry of `A2A_MAILBOX_BIND` (docs/contract.md#transports) and serves the app on each, with the
//! settings actix-web's `HttpServer` would use, through [`ContractErrors`] so that even the
//! answers actix-http writes by itself carry the contract's error body.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use actix_http::error::DispatchError;
use actix_http::{HttpService, KeepAlive, Protocol};
use actix_server::{GracefulShutdownSignal, Server, ServerBuilder};
use actix_service::{
    fn_service, map_config, IntoServiceFactory, ServiceFactory, ServiceFactoryExt,
};
use actix_web::dev::AppConfig;
use actix_web::middleware::{from_fn, Condition};
use actix_web::rt::net::{TcpStream, UnixStream};
use actix_web::{web, App};
use anyhow::Context;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing_actix_web::TracingLogger;

use super::root_span::Root;

use super::compact_head::CompactHead;
use super::conn::ContractErrors;
use super::nul_guard::refuse_nul;
use super::panics::{catch_panics, inject_panic};
use crate::http::extract::{form_config, json_config, path_config, query_config};
use crate::http::respond::{not_found_route, observe_latency};
use crate::http::state::State;
use crate::transport::{self, Bind};

/// Pending connections a listening socket holds (as actix-web's own default).
const BACKLOG: i32 = 1024;
/// How long a request's head may take to arrive.
const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a closing connection may take to shut down.
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a stopping server lets its requests finish.
const SHUTDOWN_SECS: u64 = 5;

/// A bound, not yet running server.
pub struct Listening {
    pub server: Server,
    /// What it listens on, as `/version` names it: `tcp:ADDR`, `unix:PATH`.
    pub transports: Vec<String>,
    /// The socket files it made, to remove when it stops.
    pub sockets: Vec<transport::SocketFile>,
}

/// Adds the service's routes to an app.
pub type Configure = fn(&mut web::ServiceConfig);

/// The service's app: every route (`configure`'s), the extractors' error answers and the
/// middleware.
fn app(
    state: State,
    max_body: usize,
    configure: Configure,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let injects_panics = state.panic_path.is_some();
    // A JSON body is read up to the largest limit of any route (the batch routes'), and held to
    // its own route's as it is read (`extract.rs`).
    let read_limit = max_body.max(state.batch_body_bytes);
    App::new()
        .app_data(state)
        .app_data(json_config(max_body))
        .app_data(form_config(max_body))
        .app_data(web::PayloadConfig::new(read_limit))
        .app_data(query_config())
        .app_data(path_config())
        .wrap(Condition::new(injects_panics, from_fn(inject_panic)))
        .wrap(from_fn(refuse_nul))
        // Around every route and every layer but those that time and name the request: a
        // panic is answered 500 `internal` and logged under the request's id.
        .wrap(from_fn(catch_panics))
        .wrap(from_fn(observe_latency))
        .wrap(TracingLogger::<Root>::new())
        .wrap(CompactHead)
        .configure(configure)
        .default_service(web::to(not_found_route))
}

/// The HTTP service of one worker and socket, over a stream of type `T`.
fn http_service<T>(
    (state, stopping): (State, GracefulShutdownSignal),
    max_body: usize,
    configure: Configure,
) -> impl ServiceFactory<
    (T, Protocol, Option<SocketAddr>),
    Config = (),
    Response = (),
    Error = DispatchError,
    InitError = (),
>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    HttpService::build()
        .keep_alive(KeepAlive::Timeout(a2a_mailbox_types::IDLE_CONNECTION_CLOSE))
        .client_request_timeout(REQUEST_HEAD_TIMEOUT)
        .client_disconnect_timeout(DISCONNECT_TIMEOUT)
        // A client that closes its side of the connection is gone: its request ends at once
        // (a parked long-poll or an open stream frees its place) instead of running on until
        // a write fails. No HTTP/1.1 client half-closes and waits for the answer.
        .h1_allow_half_closed(false)
        .graceful_shutdown_signal(move || {
            let stopping = stopping.clone();
            async move { stopping.notified().await }
        })
        .finish(map_config(
            app(state, max_body, configure)
                .into_factory()
                .map_err(|e: actix_web::Error| e.error_response()),
            |_| AppConfig::default(),
        ))
}

/// Binds every entry of `binds` (a Unix socket file gets `unix_mode`) for `workers` threads, each
/// serving `configure`'s routes.
pub fn listen(
    state: State,
    max_body: usize,
    binds: &[Bind],
    unix_mode: u32,
    workers: usize,
    configure: Configure,
) -> anyhow::Result<Listening> {
    let mut builder = ServerBuilder::default()
        .workers(workers)
        .shutdown_timeout(SHUTDOWN_SECS);
    let stopping = builder.graceful_shutdown_signal();
    let http = move || (state.clone(), stopping.clone());
    let (mut transports, mut sockets) = (Vec::new(), Vec::new());
    for bind in binds {
        match bind {
            Bind::Tcp(addr) => {
                let listeners =
                    tcp_listeners(addr).with_context(|| format!("cannot listen on {addr}"))?;
                for listener in listeners {
                    let at = listener.local_addr()?;
                    let http = http.clone();
                    builder = builder.listen(format!("tcp:{at}"), listener, move || {
                        fn_service(|io: TcpStream| async move {
                            let peer = io.peer_addr().ok();
                            Ok((ContractErrors::new(io), Protocol::Http1, peer))
                        })
                        .and_then(http_service(
                            http(),
                            max_body,
                            configure,
                        ))
                    })?;
                    transports.push(format!("tcp:{at}"));
                }
            }
            Bind::Unix(path) => {
                let (listener, file) = transport::bind_socket(path, unix_mode)?;
                let http = http.clone();
                builder = builder.listen_uds(format!("unix:{}", path.display()), listener, {
                    move || {
                        fn_service(|io: UnixStream| async move {
                            Ok((ContractErrors::new(io), Protocol::Http1, None))
                        })
                        .and_then(http_service(
                            http(),
                            max_body,
                            configure,
                        ))
                    }
                })?;
                transports.push(format!("unix:{}", path.display()));
                sockets.push(file);
            }
        }
    }
    Ok(Listening {
        server: builder.run(),
        transports,
        sockets,
    })
}

/// Listening TCP sockets for the addresses `addr` (`host:port`) resolves to: every one that
/// can be bound, and an error only when none can.
fn tcp_listeners(addr: &str) -> anyhow::Result<Vec<std::net::TcpListener>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let bind = |at: std::net::SocketAddr| -> std::io::Result<std::net::TcpListener> {
        let socket = Socket::new(Domain::for_address(at), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.bind(&at.into())?;
        socket.listen(BACKLOG)?;
        Ok(socket.into())
    };
    let (mut out, mut failure) = (Vec::new(), None);
    for at in addr.to_socket_addrs()? {
        match bind(at) {
            Ok(listener) => out.push(listener),
            Err(e) => failure = Some(e),
        }
    }
    match (out.is_empty(), failure) {
        (true, Some(e)) => Err(e.into()),
        (true, None) => anyhow::bail!("{addr} names no address"),
        _ => Ok(out),
    }
}
