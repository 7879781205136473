"""``xor-ack dashboard --public-url`` behind a proxy that ends TLS, in a real browser.

The proxy (``tls_proxy.py``) is set up as nginx is by default: https on its own port,
the dashboard under ``/ops`` (stripped), ``Host`` naming the upstream, and
``X-Forwarded-Proto: https``.  The browser reaches it by a public name
(``chains.example.test``, mapped to 127.0.0.1 in Chromium's resolver).  Pages, the
session cookie, the live stream and an action must work there, and only there.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.table import TableSpec

from .conftest import CHROMIUM_ARGS, changed, chromium_path, dashboard_command, missing, snapshot
from .tls_proxy import TlsProxy, self_signed

pytestmark = [pytest.mark.ddblocal, pytest.mark.browser]
TOKEN = "proxy-tests-token-0123456789"
PUBLIC = "chains.example.test"


@dataclass
class Served:
    public: str  #: https://chains.example.test:PORT/ops/
    link: str
    proxy: TlsProxy


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(
    ddb_local_endpoint: str, table_spec: TableSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with SyncXorAckDynamoDB.connect(table=table_spec.name, endpoint_url=ddb_local_endpoint) as ack:
        for i in range(3):
            ack.create(f"behind-proxy/{i}", new_stamp(), timeout=3600)
    proxy = TlsProxy(self_signed(tmp_path_factory.mktemp("tls"), PUBLIC), "/ops")
    with proxy.running():
        public = f"https://{PUBLIC}:{proxy.port}/ops"
        port = _free_port()
        proxy.upstream = ("127.0.0.1", port)
        options = ("--port", str(port), "--public-url", public)
        with dashboard_command(ddb_local_endpoint, table_spec.name, TOKEN, *options) as started:
            yield Served(public + "/", started[0], proxy)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        missing("Playwright for Python is not installed (make test installs it)")
    rules = f"--host-resolver-rules=MAP {PUBLIC} 127.0.0.1"
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path(), args=[*CHROMIUM_ARGS, rules]
        )
        try:
            yield launched
        finally:
            await launched.close()


async def test_the_printed_link_is_the_public_one_and_opens_a_secure_session(
    browser: Any, served: Served
) -> None:
    assert served.link == f"{served.public}?token={TOKEN}"
    context = await browser.new_context(ignore_https_errors=True)
    page = await context.new_page()
    answer = await page.goto(served.link)
    assert answer is not None and answer.ok and page.url == served.public
    (cookie,) = await context.cookies()
    assert cookie["secure"] and cookie["path"] == "/ops/" and cookie["domain"] == PUBLIC
    # the pages' own links go through the proxy's prefix
    await page.click('a[href$="chains?status=open"]')
    await page.wait_for_selector("td.tag a")
    assert page.url == served.public + "chains?status=open"
    assert {"GET /", "GET /chains?status=open"} <= {line.decode() for line in served.proxy.requests}
    await context.close()


async def test_an_action_through_the_proxy_acts(
    browser: Any, served: Served, ddb_local_endpoint: str, table_spec: TableSpec
) -> None:
    """The form's POST carries ``Origin: https://chains.example.test:PORT``, while the
    dashboard sees ``Host: 127.0.0.1:PORT``: the public origin is what makes it pass."""
    tag = "behind-proxy/1"
    before = snapshot(ddb_local_endpoint, table_spec.name)
    context = await browser.new_context(ignore_https_errors=True)
    page = await context.new_page()
    await page.goto(served.link)
    await page.goto(served.public + "chain?tag=" + quote(tag, safe=""))
    await page.click("#action-fail")
    await page.fill("#reason", "failed through the proxy")
    async with page.expect_navigation():
        await page.click("#confirm")
    assert (await page.locator("#chain-state").first.inner_text()).strip() == "failed"
    after = snapshot(ddb_local_endpoint, table_spec.name)
    assert changed(before, after) == {tag}
    assert after[tag]["reason"] == {"S": "failed through the proxy"}
    await context.close()


async def test_another_site_still_cannot_act(browser: Any, served: Served) -> None:
    """A session's cookie and CSRF token, posted with another site's Origin: refused."""
    context = await browser.new_context(ignore_https_errors=True)
    page = await context.new_page()
    await page.goto(served.link)
    await page.goto(served.public + "actions/sweep")
    csrf = await page.locator('input[name="csrf"]').get_attribute("value")
    (cookie,) = await context.cookies()
    await context.close()
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", served.proxy.port, context=tls)
    connection.request(
        "POST",
        "/ops/actions/sweep",
        body=urlencode({"csrf": csrf}),
        headers={
            "Host": f"{PUBLIC}:{served.proxy.port}",
            "Origin": "https://evil.example.test",
            "Cookie": f"{cookie['name']}={cookie['value']}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    answer = connection.getresponse()
    assert answer.status == 403 and b"Cross-site request" in answer.read()
    connection.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://chains.example.test", "must start with https://"),
        ("https://", "must start with https://"),
        ("https://user:secret@chains.example.test", "user name or password"),
        ("https://chains.example.test/?a=1", "query"),
        ("https://chains.example.test/ops#top", "fragment"),
        ("https://chains.example.test:99999", "not a URL"),
        # The server names its prefix in ASCII on every request: it dropped each one.
        ("https://chains.example.test/öps", "plain ASCII"),
        ("https://chains.example.test/%C3%B6ps", "plain ASCII"),
        ("https://bücher..example", "internationalised domain name"),
    ],
)
def test_a_public_url_that_cannot_be_opened_is_a_usage_error(url: str, message: str) -> None:
    from click.testing import CliRunner

    from xor_ack_dynamodb.cli import cli

    result = CliRunner().invoke(cli, ["dashboard", "--public-url", url])
    assert result.exit_code == 2, result.output
    assert "--public-url" in result.output and message in result.output
    assert "Traceback" not in result.output
