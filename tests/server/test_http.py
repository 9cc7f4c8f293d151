"""Streamable HTTP: /mcp answers a real client, /health reports, DNS-rebinding protection holds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from skillshelf.server.http import transport_security

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(sample_root: Path, isolated_environment: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "HOME": str(isolated_environment), "SKILLSHELF_CACHE_DIR": str(isolated_environment / "c")}
    command = [sys.executable, "-m", "skillshelf", "serve", "--http", "--port", str(port), "-l", str(sample_root)]
    with (tmp_path / "server.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=10)


async def wait_healthy(base: str) -> dict[str, object]:
    async with httpx2.AsyncClient() as http:
        with anyio.fail_after(20):
            while True:
                try:
                    response = await http.get(f"{base}/health")
                    return dict(response.json())
                except httpx2.TransportError:
                    await anyio.sleep(0.1)


async def test_http_serves_tools_and_health(http_server: str) -> None:
    health = await wait_healthy(http_server)
    assert health["status"] == "healthy"
    async with Client(f"{http_server}/mcp") as client:
        result = await client.call_tool("searchPatterns", {"query": "slugify"})
        assert result.structured_content is not None
        assert result.structured_content["data"]["hits"][0]["id"] == "python/slugify"


async def test_a_foreign_host_or_origin_is_refused(http_server: str) -> None:
    await wait_healthy(http_server)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient() as http:
        rebound = await http.post(f"{http_server}/mcp", json=body, headers={**headers, "Host": "evil.example:80"})
        assert rebound.status_code == 421
        cross_site = await http.post(
            f"{http_server}/mcp", json=body, headers={**headers, "Origin": "http://evil.example"}
        )
        assert cross_site.status_code == 403


def test_a_wider_bind_only_allows_the_hosts_asked_for() -> None:
    settings = transport_security("0.0.0.0", ("skills.example.com",))
    assert settings.enable_dns_rebinding_protection
    assert set(settings.allowed_hosts) == {
        "127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*",
        "skills.example.com", "skills.example.com:*",
    }  # fmt: skip
    assert "http://skills.example.com:*" in settings.allowed_origins
