"""Sends one task through a2a-mailbox's MCP server with the reference client, `mcp`, under a
W3C trace context carried in the request's `_meta` (as MCP hosts propagate it).

    python trace_e2e.py BASE_URL SENDER_TOKEN RECIPIENT TRACEPARENT

Prints the task's id; exits non-zero if the send failed.
"""

import asyncio
import sys
import warnings

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

warnings.filterwarnings("ignore", category=DeprecationWarning)


async def main(base, token, recipient, traceparent):
    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(f"{base}/mcp", headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            sent = await session.call_tool(
                "send_task",
                {"recipient": recipient, "intent_text": "traced refund"},
                meta={"traceparent": traceparent},
            )
            if sent.isError:
                raise SystemExit(f"send_task failed: {sent.structuredContent}")
            print(sent.structuredContent["task_id"])


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    asyncio.run(main(*sys.argv[1:]))
