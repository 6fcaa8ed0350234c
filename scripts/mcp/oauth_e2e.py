"""The reference MCP client, `mcp` 1.30.0, discovers where to get a token for a live a2a-mailbox
that serves /mcp as an OAuth protected resource (RFC 9728).

    python oauth_e2e.py BASE_URL AS_PORT SCOPES

It runs a tiny authorization server on 127.0.0.1:AS_PORT (RFC 8414 metadata and dynamic client
registration, RFC 7591), connects the client to BASE_URL/mcp without a token, and stops the flow
where a user would be sent to the authorization endpoint. Every request the client made is
recorded; exits non-zero on the first broken expectation, printing what was expected and what
came back.
"""

import asyncio
import json
import logging
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

CLIENT_ID = "oauth-e2e-client"
REDIRECT_URI = "http://127.0.0.1:9/callback"

# The client logs the flow's end at the authorization redirect as an error; here it is the
# expected end.
logging.getLogger("mcp.client.auth.oauth2").setLevel(logging.CRITICAL)


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    print(f"ok: {what}")


class AuthorizationServer(BaseHTTPRequestHandler):
    """RFC 8414 metadata at the well-known path and `/register`; records what it was asked."""

    issuer = ""
    seen = []

    def do_GET(self):
        self.seen.append(("GET", self.path))
        if self.path != "/.well-known/oauth-authorization-server":
            return self.reply(404, {"error": "not_found"})
        self.reply(200, {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
        })

    def do_POST(self):
        self.seen.append(("POST", self.path))
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/register":
            return self.reply(404, {"error": "not_found"})
        self.reply(201, {**body, "client_id": CLIENT_ID, "client_id_issued_at": int(time.time())})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Memory:
    """The client's token storage: nothing stored yet."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client):
        self.client = client


class Redirected(Exception):
    """Where a browser would open the authorization URL, the flow ends."""


async def discover(url):
    """Connects without a token until the client hands out an authorization URL: the client's
    OAuth provider, what it sent (method, URL, whether it had a token), what came back, and that
    URL."""
    sent, answered, authorization = [], [], []
    redirected = asyncio.Event()

    async def on_request(request):
        sent.append((request.method, str(request.url), "authorization" in request.headers))

    async def on_response(response):
        answered.append(response)

    async def redirect_handler(authorization_url):
        authorization.append(authorization_url)
        redirected.set()
        raise Redirected(authorization_url)

    async def callback_handler():
        raise AssertionError("the flow went past the authorization redirect")

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT_URI], client_name="oauth-e2e", token_endpoint_auth_method="none"
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    hooks = {"request": [on_request], "response": [on_response]}

    async def connect():
        async with httpx.AsyncClient(auth=provider, timeout=30, event_hooks=hooks) as http:
            async with streamable_http_client(url, http_client=http) as (read, write, _):
                async with ClientSession(read, write) as mcp:
                    await mcp.initialize()

    attempt = asyncio.create_task(connect())
    waiting = asyncio.create_task(redirected.wait())
    await asyncio.wait({attempt, waiting}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    outcome = None
    if attempt.done() and not attempt.cancelled():
        outcome = attempt.exception()
    attempt.cancel()
    waiting.cancel()
    await asyncio.gather(attempt, waiting, return_exceptions=True)
    check(authorization, f"the client reached an authorization URL (sent {sent}, ended {outcome!r})")
    return provider, sent, answered, authorization[0]


async def main(base, as_port, scopes):
    issuer = f"http://127.0.0.1:{as_port}"
    AuthorizationServer.issuer = issuer
    server = ThreadingHTTPServer(("127.0.0.1", int(as_port)), AuthorizationServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"{base}/mcp"
    metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
    try:
        provider, sent, answered, authorization = await discover(url)
    finally:
        server.shutdown()

    # 1. The MCP request without a token: 401, and the header names the metadata document.
    check(sent[0] == ("POST", url, False), f"first an MCP request without a token: {sent[0]}")
    first = answered[0]
    check(first.status_code == 401, f"answered 401 ({first.status_code})")
    found = extract_resource_metadata_from_www_auth(first)
    check(found == metadata_url, f"WWW-Authenticate names {metadata_url} ({found})")
    # 2. That document, then 3. our authorization server's metadata, then 4. registration.
    check(sent[1] == ("GET", metadata_url, False), f"then the resource metadata: {sent[1]}")
    check(answered[1].status_code == 200, f"which is there ({answered[1].status_code})")
    prm = provider.context.protected_resource_metadata
    check(str(prm.resource) == url, f"the document names the resource {url} ({prm.resource})")
    asm = f"{issuer}/.well-known/oauth-authorization-server"
    check(sent[2] == ("GET", asm, False), f"then our authorization server's metadata: {sent[2]}")
    check(sent[3] == ("POST", f"{issuer}/register", False), f"then registration: {sent[3]}")
    check(len(sent) == 4, f"nothing else was sent: {sent}")
    check(
        AuthorizationServer.seen == [("GET", "/.well-known/oauth-authorization-server"),
                                     ("POST", "/register")],
        f"the authorization server saw discovery and registration: {AuthorizationServer.seen}",
    )

    # 5. The authorization URL: our endpoint, PKCE S256, the MCP resource (RFC 8707).
    parts = urlsplit(authorization)
    endpoint = f"{parts.scheme}://{parts.netloc}{parts.path}"
    check(endpoint == f"{issuer}/authorize", f"it points at our authorization endpoint ({endpoint})")
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    expected = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT_URI,
        "resource": url,
        "code_challenge_method": "S256",
        "scope": scopes,
    }
    for key, value in expected.items():
        check(query.get(key) == value, f"{key}={value} ({query.get(key)})")
    check(len(query.get("code_challenge", "")) == 43, "a S256 code challenge")
    check(query.get("state"), "a state")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
