"""Sends one message through a2a-mailbox's A2A facade with the reference client, a2a-sdk,
under a W3C trace context, as a traced agent would.

    python trace_e2e.py BASE_URL BINDING SENDER_TOKEN RECIPIENT TRACEPARENT

BINDING is JSONRPC or HTTP+JSON. Every request of the client carries TRACEPARENT. Prints the
task's id; exits non-zero if no task came back.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest


async def main(base, binding, token, recipient, traceparent):
    headers = {"Authorization": f"Bearer {token}", "traceparent": traceparent}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, f"{base}/a2a/agents/{recipient}").get_agent_card()
        config = ClientConfig(
            httpx_client=http, supported_protocol_bindings=[binding], use_client_preference=True
        )
        client = ClientFactory(config).create(card)
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="traced refund")]
        )
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=True)
        )
        stream = client.send_message(request)
        try:
            async for event in stream:
                print(event.task.id)
                return
        finally:
            await stream.aclose()
    raise SystemExit("SendMessage answered nothing")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    asyncio.run(main(*sys.argv[1:]))
