"""The pages: the overview, the lists, a chain's page; each also as its live fragment.

A page's live part is a template of its own (``_overview_live.html``, ...), rendered
into the page and, with ``?partial=1``, alone: what the page's script fetches when the
server-sent events say it changed.  Every parameter is checked here and refused with a
400 page; nothing reaches DynamoDB unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from xor_ack_dynamodb import ChainState
from xor_ack_dynamodb.errors import GetManyFailed
from xor_ack_dynamodb.fleet import root_id, stamp_of

from . import charts
from .inventory import STATUSES, Entry, Status
from .security import CSRF_FIELD, Refused

if TYPE_CHECKING:
    from .history import Story
    from .service import Dashboard

#: DynamoDB's limit on a partition key value (bytes of UTF-8).
MAX_TAG_BYTES = 2048
MAX_FILTER = 1024
#: A list's cursor (a tag per shard), at most: uvicorn's h11 reads a request's head (its
#: URL and headers) up to 16 KiB.
MAX_CURSOR = 12_000


def dashboard_of(request: Request) -> Dashboard:
    found: Dashboard = request.app.state.dashboard
    return found


def context(request: Request, page: str, **values: Any) -> dict[str, Any]:
    """What every template gets: the page's name, the session's CSRF token, the mode."""
    dashboard = dashboard_of(request)
    session = dashboard.guard.session_of(request)
    return {
        "page": page,
        "csrf": dashboard.guard.csrf_for(session) if session else "",
        "csrf_field": CSRF_FIELD,
        "read_only": dashboard.config.read_only,
        "table": dashboard.config.table,
        "now": dashboard.clock(),
        **values,
    }


def _partial(request: Request) -> bool:
    return request.query_params.get("partial") == "1"


def text_param(request: Request, name: str, *, required: bool = False, most: int = 0) -> str:
    value = request.query_params.get(name, "")
    if required and not value:
        raise Refused(400, f"No {name}", f"this page needs ?{name}=...")
    if most and len(value.encode("utf-8", "surrogatepass")) > most:
        raise Refused(400, f"{name} too long", f"{name} is at most {most} bytes")
    return value


def tag_param(request: Request, form: dict[str, str] | None = None) -> str:
    """The chain's tag: from the URL, else from the ``form`` posted.

    The action forms put it in their URL: a browser sends a form field's line breaks as
    CR LF, so a tag holding a lone line feed would name another chain."""
    return checked_tag(request.query_params.get("tag") or (form or {}).get("tag", ""))


def checked_tag(tag: str) -> str:
    """``tag`` if it can name a chain; else the 400 that says why."""
    if not tag:
        raise Refused(400, "No tag", "say which chain: ?tag=...")
    if len(tag.encode("utf-8", "surrogatepass")) > MAX_TAG_BYTES:
        raise Refused(400, "Tag too long", f"a tag is at most {MAX_TAG_BYTES} bytes")
    return tag


def status_word(state: ChainState | None, now: float) -> str:
    """absent, acked, timed out, failed, overdue or open."""
    if state is None:
        return "absent"
    if state.acked:
        return "acked"
    if state.failed:
        return "timed out" if state.reason == "timeout" else "failed"
    return "overdue" if state.overdue(now) else "open"


async def overview(request: Request) -> Response:
    dashboard = dashboard_of(request)
    view = dashboard.windows_view()
    bars, height = charts.histogram(view.histogram)
    values = context(
        request,
        "overview",
        counts=dashboard.counts(),
        counts_error=dashboard.counts_error,
        view=view,
        chart=charts.per_minute(view.per_minute),
        histogram=bars,
        histogram_height=height,
        stream=dashboard.stream,
    )
    name = "_overview_live.html" if _partial(request) else "overview.html"
    return dashboard.renderer.render(request, name, values)


@dataclass
class Row:
    state: ChainState
    status: str
    entry: Entry | None = None  #: where the list found it (None: asked for by tag)


async def read_states(dashboard: Dashboard, tags: list[str]) -> dict[str, ChainState | None]:
    if not tags:
        return {}
    try:
        return await dashboard.ack.get_many(tags)
    except GetManyFailed as exc:  # damaged items are left out of a list
        return dict(exc.results)


async def chains(request: Request) -> Response:
    dashboard = dashboard_of(request)
    status = request.query_params.get("status", "open")
    if status not in STATUSES:
        raise Refused(400, "Unknown list", f"status is one of {', '.join(STATUSES)}")
    prefix = text_param(request, "prefix", most=MAX_FILTER)
    reason = text_param(request, "reason", most=MAX_FILTER) if status == "failed" else ""
    cursor = text_param(request, "cursor", most=MAX_CURSOR)
    size_text = request.query_params.get("size", str(dashboard.config.page_size))
    # ASCII digits only, and few: str.isdigit() takes "²" and 5,000 digits, int() neither
    if not (size_text.isascii() and size_text.isdigit() and len(size_text) <= 3) or not (
        1 <= int(size_text) <= 500
    ):
        raise Refused(400, "Bad page size", "size is a whole number from 1 to 500")
    size = int(size_text)
    rows, after, queries, skipped = await list_rows(dashboard, status, prefix, reason, cursor, size)
    values = context(
        request,
        "chains",
        status=status,
        prefix=prefix,
        reason=reason,
        size=size if size != dashboard.config.page_size else "",
        rows=rows,
        cursor=cursor,
        after=after,
        queries=queries,
        skipped=skipped,
        counts={c.status: c for c in dashboard.counts()},
    )
    name = "_chains_live.html" if _partial(request) else "chains.html"
    return dashboard.renderer.render(request, name, values)


async def list_rows(
    dashboard: Dashboard, status: Status, prefix: str, reason: str, cursor: str, size: int
) -> tuple[list[Row], str | None, int, int]:
    """Up to ``size`` chains of the list after ``cursor``, each read as it is now.

    Returns the rows, the next cursor as the page's link carries it (``KeptCursors``;
    None: the end), the queries sent and the entries left out (closed since the index
    saw them, or of another reason).
    """
    budget = dashboard.config.query_budget
    rows: list[Row] = []
    queries = skipped = 0
    after: str | None = dashboard.cursors.cursor(cursor) if cursor else None
    while len(rows) < size:
        page = await dashboard.inventory.page(
            status, size=size - len(rows), cursor=after, prefix=prefix, budget=budget - queries
        )
        queries += page.queries
        states = await read_states(dashboard, [entry.tag for entry in page.entries])
        now = dashboard.clock()
        for entry in page.entries:
            state = states.get(entry.tag)
            word = status_word(state, now)
            listed = {"open": ("open", "overdue"), "overdue": ("overdue",)}.get(
                status, ("failed", "timed out")
            )
            if state is None or word not in listed or (reason and state.reason != reason):
                skipped += 1
                continue
            rows.append(Row(state, word, entry))
        after = page.cursor
        if after is None or page.queries == 0:
            break
    return rows, dashboard.cursors.named(after), queries, skipped


#: Rows one request may ask for by tag.
MAX_ROWS = 100


async def rows(request: Request) -> Response:
    """Some rows of a list, by tag, as they are now: what a list page swaps in when the
    stream wrote one of the chains it shows (no index query: one BatchGetItem).  A tag
    without a chain now (deleted, expired) gets a row that says so; a damaged item none."""
    dashboard = dashboard_of(request)
    status = request.query_params.get("status", "open")
    if status not in STATUSES:
        raise Refused(400, "Unknown list", f"status is one of {', '.join(STATUSES)}")
    tags = list(dict.fromkeys(request.query_params.getlist("tag")))
    if not tags or len(tags) > MAX_ROWS:
        raise Refused(400, "Which rows?", f"ask for 1 to {MAX_ROWS} rows: ?tag=...&tag=...")
    for tag in tags:
        checked_tag(tag)
    states = await read_states(dashboard, tags)
    now = dashboard.clock()
    found = [Row(state, status_word(state, now)) for tag in tags if (state := states.get(tag))]
    gone = [tag for tag in tags if tag in states and states[tag] is None]
    values = context(request, "chains", status=status, rows=found, gone=gone)
    return dashboard.renderer.render(request, "_rows.html", values)


def fleet_job(tag: str, state: ChainState | None, story: Story | None) -> bool:
    """Was this chain made by ``Fleet.submit``? Its first stamp is its root message's.

    Told by the stream's record of its creation (of this generation: a fleet job's tag
    another writer made again is not one; with no chain now, of the latest), else by
    the chain as it is now.
    """
    root = root_id(tag)
    first = stamp_of(root)
    created = [e for e in (story.entries if story is not None else ()) if e.what == "created"]
    if state is not None:
        created = [e for e in created if e.chain_id == state.chain_id]
    if created and created[-1].stamp == first:
        return True
    if state is None:
        return False
    # its state is still the root's stamp (the root never landed), or the root's write is
    # among its last tokens
    return state.stamp == first or state.holds(root)


def finished_job(state: ChainState | None, story: Story | None) -> bool:
    """With no chain under the tag now: did the last generation the stream told of end
    acked (its tombstone removed since, by its TTL or by hand)?  A finished job is not
    run again: ``Fleet.replay`` refuses an acked one, and so does the dashboard."""
    if state is not None or story is None or not story.entries:
        return False
    last = story.entries[-1].chain_id
    return any(
        entry.chain_id == last and (entry.what == "acked" or entry.detail == "was acked")
        for entry in story.entries
    )


async def chain(request: Request) -> Response:
    dashboard = dashboard_of(request)
    tag = tag_param(request)
    state = await dashboard.ack.get(tag)
    story = dashboard.story(tag)
    now = dashboard.clock()
    values = context(
        request,
        "chain",
        tag=tag,
        state=state,
        word=status_word(state, now),
        story=story,
        stream=dashboard.stream,
        fleet=fleet_job(tag, state, story) and not finished_job(state, story),
        replays=dashboard.config.replays,
        done=request.query_params.get("done", ""),
    )
    name = "_chain_live.html" if _partial(request) else "chain.html"
    code = 404 if state is None and story is None else 200
    return dashboard.renderer.render(request, name, values, status=code)
