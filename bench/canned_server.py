"""The load generator's own ceiling: an HTTP/1.1 server answering canned Streamable HTTP, almost no work a request.

    python bench/canned_server.py PORT

On raw asyncio streams (uvloop where installed), one keep-alive connection per client: `initialize` gets a
session id, a notification 202, and every other request (tools/call) the same JSON-RPC result with 1.5 KB of
text, its id echoed. No MCP SDK, no validation: what `load_http.py` reaches against it (pinned, on its own
core) is what the generator itself can send, the line under which a server's figures are the server's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys

TEXT = "y" * 1500


def answer(body: bytes) -> tuple[str, bytes, str]:
    """(status line, body, extra headers) for one request's body."""
    try:
        message = json.loads(body) if body else {}
    except ValueError:
        message = {}
    if not isinstance(message, dict) or "id" not in message:
        return "202 Accepted", b"", ""
    if message.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "canned", "version": "1"}}
        payload = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        return "200 OK", json.dumps(payload).encode(), f"mcp-session-id: {secrets.token_hex(16)}\r\n"
    called: dict[str, object] = {"content": [{"type": "text", "text": TEXT}], "isError": False}
    return "200 OK", json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": called}).encode(), ""


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n"):
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            status, body, extra = answer(await reader.readexactly(length))
            headers = f"content-type: application/json\r\n{extra}content-length: {len(body)}\r\n"
            writer.write(f"HTTP/1.1 {status}\r\n{headers}\r\n".encode() + body)
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(serve_connection, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        asyncio.run(main(int(sys.argv[1])))
    else:
        uvloop.run(main(int(sys.argv[1])))
