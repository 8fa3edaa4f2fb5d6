"""PDF export over HTTP: the PDF is read back (text, pages, outline, links, images, fonts) and
its cover rendered to an image; repeated requests reuse the stored file; bad input is a 400
that changes nothing; the view right decides who may export."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pypdf
import sqlalchemy as sa
from PIL import Image
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from docshelf.models import pdf_exports
from docshelf.worker.registry import JobEnv
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, snapshot


def _png(color: tuple[int, int, int]) -> str:
    out = io.BytesIO()
    Image.new("RGB", (120, 60), color).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


GUIDE = """# Install

Run the installer, then check:

1. download
2. run
   - nested item

- [x] checked task

```python
def greet(name):
    return f"hello {name}"
```

| Option | Default |
|--------|---------|
| port   | 8000    |

![Diagram](./diagram)

{% hint style="warning" %}
Back up first.
{% endhint %}

See [the reference](./reference-link) and [GitBook](https://www.gitbook.com).
"""


async def _live(client: httpx.AsyncClient, sid: str, who: Who, *changes: Any) -> dict[str, Any]:
    r = await client.post(
        f"/v1/spaces/{sid}/content", json={"changes": list(changes)}, headers=who.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _space(
    client: httpx.AsyncClient, db: AsyncEngine
) -> tuple[str, Who, Who, dict[str, str]]:
    org_id, (admin, member) = await factories.org_with_members(db, "edit")
    space = await factories.api_space(client, org_id, admin, title="Handbook")
    sid = space["id"]
    r = await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=admin.headers)
    assert r.status_code == 200, r.text
    reference = await _live(
        client,
        sid,
        admin,
        {
            "operation": "insert_page",
            "title": "Reference",
            "ref": "reference",
            "document": {"markdown": "## Options\n\nEvery option."},
        },
    )
    ref_id = reference["changes"][0]["page"]["id"]
    guide = await _live(
        client,
        sid,
        admin,
        {
            "operation": "insert_files",
            "files": [
                {
                    "name": "diagram.png",
                    "base64": _png((200, 30, 30)),
                    "contentType": "image/png",
                    "ref": "diagram",
                }
            ],
        },
        {
            "operation": "insert_page",
            "title": "Guide",
            "at": 0,
            "document": {"markdown": GUIDE.replace("./reference-link", f"/pages/{ref_id}")},
        },
    )
    guide_id = guide["changes"][0]["page"]["id"]
    child = await _live(
        client,
        sid,
        admin,
        {
            "operation": "insert_page",
            "title": "Appendix",
            "into": ref_id,
            "document": {"markdown": "Last words."},
        },
    )
    pages = {"guide": guide_id, "reference": ref_id, "appendix": child["changes"][0]["page"]["id"]}
    return sid, admin, member, pages


async def _export(
    client: httpx.AsyncClient, path: str, who: Who, **params: Any
) -> tuple[str, bytes]:
    r = await client.get(path, params=params, headers=who.headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["url"]
    url = body["url"]
    assert url.startswith(f"{BASE}/v1/downloads/")
    # The link is the credential: no token needed.
    download = await client.get(url[len(BASE) :])
    assert download.status_code == 200, download.text
    assert download.headers["content-type"] == "application/pdf"
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.content.startswith(b"%PDF-")
    return url, download.content


def _blob_of(url: str) -> str:
    claims = jwt.decode(url.rsplit("/", 1)[1], options={"verify_signature": False})
    return str(claims["b"])


def _text(reader: pypdf.PdfReader) -> list[str]:
    return [" ".join(p.extract_text().split()) for p in reader.pages]


def _outline(items: list[Any], depth: int = 0) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for item in items:
        if isinstance(item, list):
            out += _outline(item, depth + 1)
        else:
            out.append((depth, str(item.title)))
    return out


def _first_page_image(pdf: bytes, tmp_path: Path) -> Image.Image:
    exe = shutil.which("pdftoppm")
    assert exe is not None, "pdftoppm (Debian poppler-utils) is needed to render the PDF"
    source = tmp_path / "export.pdf"
    source.write_bytes(pdf)
    subprocess.run(
        [
            exe,
            "-png",
            "-r",
            "40",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            str(source),
            str(tmp_path / "p1"),
        ],
        check=True,
        timeout=60,
    )
    return Image.open(tmp_path / "p1.png").convert("L")


def test_weasyprint_and_its_debian_packages_are_installed() -> None:
    # Fails (never skips) without them: the export would answer 400 on every request.
    try:
        from weasyprint import HTML
    except OSError as exc:  # Pango or HarfBuzz missing: WeasyPrint cannot load them
        raise AssertionError(
            "WeasyPrint needs Debian's libpango-1.0-0, libpangoft2-1.0-0 and "
            f"libharfbuzz-subset0 (.ci/run installs them): {exc}"
        ) from exc
    pdf = HTML(string="<p style='font-family: DejaVu Sans'>x</p>").write_pdf()
    page = pypdf.PdfReader(io.BytesIO(pdf)).pages[0]
    fonts = {str(f.get_object()["/BaseFont"]) for f in page["/Resources"]["/Font"].values()}
    assert any("DejaVu-Sans" in f for f in fonts), f"install fonts-dejavu-core (found {fonts})"
    assert shutil.which("pdftoppm"), "install poppler-utils: the tests render a page with pdftoppm"


async def test_space_pdf_holds_the_pages(
    client: httpx.AsyncClient, db: AsyncEngine, tmp_path: Path
) -> None:
    sid, admin, _, _ = await _space(client, db)
    _, pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    (tmp_path / "export.pdf").write_bytes(pdf)
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    text = _text(reader)
    # Cover, contents, then one sheet per page in reading order.
    assert len(reader.pages) == 5
    assert text[0] == "Handbook 3 pages"
    assert text[1].startswith("Contents Guide")
    for title, sheet in (("Guide", 3), ("Reference", 4), ("Appendix", 5)):
        assert f"{title} " in text[1] and f" {sheet}" in text[1]
    guide = text[2]
    for expected in (
        "Guide Install Run the installer, then check:",
        "download",
        "nested item",
        "☑ checked task",
        'def greet(name): return f"hello {name}"',
        "Option Default port 8000",
        "Back up first.",
        "See the reference and GitBook.",
    ):
        assert expected in guide, (expected, guide)
    assert text[3].startswith("Reference Options Every option.")
    assert text[4].startswith("Appendix Last words.")
    # Bookmarks follow the page tree.
    assert _outline(reader.outline) == [(0, "Guide"), (0, "Reference"), (1, "Appendix")]
    # The link to another page jumps inside the PDF; the web link stays a URI.
    annotations = [a.get_object() for a in reader.pages[2].get("/Annots", [])]
    uris = [a["/A"]["/URI"] for a in annotations if "/A" in a and "/URI" in a["/A"]]
    assert uris == ["https://www.gitbook.com"]
    assert any("/Dest" in a or ("/A" in a and "/D" in a["/A"]) for a in annotations)
    # The space's image is embedded; fonts are the DejaVu family the setup installs.
    resources = reader.pages[2]["/Resources"]
    images = [x for x in resources["/XObject"].values() if x.get_object()["/Subtype"] == "/Image"]
    assert len(images) == 1 and images[0].get_object()["/Width"] == 120
    fonts = {str(f.get_object()["/BaseFont"]) for f in resources["/Font"].values()}
    assert any("DejaVu" in f for f in fonts), fonts
    # The cover renders: an A4 sheet with dark title text on white.
    cover = _first_page_image(pdf, tmp_path)
    width, height = cover.size
    assert abs(height / width - 297 / 210) < 0.01
    assert cover.getextrema()[0] < 100 and cover.getextrema()[1] == 255


async def test_repeated_export_reuses_the_pdf(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Any
) -> None:
    sid, admin, _, pages = await _space(client, db)
    first, pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    blobs_dir = Path(settings.data_dir) / "blobs"
    before = sorted(p.name for p in blobs_dir.rglob("*") if p.is_file())
    state = await snapshot(db)
    again, same = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    assert _blob_of(again) == _blob_of(first) and same == pdf
    assert await snapshot(db) == state  # a hit writes nothing
    assert sorted(p.name for p in blobs_dir.rglob("*") if p.is_file()) == before
    # Another page selection, or changed content, is another PDF.
    part, _ = await _export(client, f"/v1/spaces/{sid}/pdf", admin, page=pages["reference"])
    assert _blob_of(part) != _blob_of(first)
    await _live(
        client,
        sid,
        admin,
        {"operation": "update_page", "page": pages["appendix"], "title": "Annex"},
    )
    edited, new_pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    assert _blob_of(edited) != _blob_of(first)
    assert "Annex" in _text(pypdf.PdfReader(io.BytesIO(new_pdf)))[1]
    async with db.connect() as conn:
        kept = (await conn.execute(sa.select(sa.func.count()).select_from(pdf_exports))).scalar()
    assert kept == 3


async def test_page_and_only_choose_the_pages(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    sid, admin, _, pages = await _space(client, db)
    _, pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin, page=pages["reference"])
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    assert _outline(reader.outline) == [(0, "Reference"), (1, "Appendix")]
    _, pdf = await _export(
        client, f"/v1/spaces/{sid}/pdf", admin, page=pages["reference"], only="true"
    )
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    assert _outline(reader.outline) == [(0, "Reference")]
    assert _text(reader)[0] == "Handbook 1 page"
    # A link to a page left out keeps its text, without a link.
    _, pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin, page=pages["guide"], only="true")
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    assert "See the reference and GitBook." in _text(reader)[2]
    annotations = [a.get_object() for a in reader.pages[2].get("/Annots", [])]
    assert [a["/A"]["/URI"] for a in annotations] == ["https://www.gitbook.com"]


async def test_change_request_pdf(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    sid, admin, _, pages = await _space(client, db)
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests", json={"subject": "Rename"}, headers=admin.headers
    )
    cr = r.json()
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr['id']}/content",
        json={
            "changes": [{"operation": "update_page", "page": pages["guide"], "title": "Tutorial"}]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    for ref in (cr["id"], str(cr["number"])):
        _, pdf = await _export(client, f"/v1/spaces/{sid}/change-requests/{ref}/pdf", admin)
        text = _text(pypdf.PdfReader(io.BytesIO(pdf)))
        assert text[0] == f"Handbook Change request #{cr['number']}: Rename 3 pages"
        assert text[2].startswith("Tutorial Install")
    # Main is unchanged.
    _, pdf = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    assert _text(pypdf.PdfReader(io.BytesIO(pdf)))[2].startswith("Guide Install")
    r = await client.get(f"/v1/spaces/{sid}/change-requests/999/pdf", headers=admin.headers)
    assert r.status_code == 404
    assert r.json() == error(404, "Change request not found")


async def test_bad_input_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin, _, _ = await _space(client, db)
    before = await snapshot(db)
    cases = [
        (
            {"only": "true"},
            "Invalid query 'only': it exports the page named by 'page', give one",
        ),
        ({"page": "nopage"}, "Invalid query 'page': no page 'nopage' in this content"),
        (
            {"page": "nopage", "only": "true"},
            "Invalid query 'page': no page 'nopage' in this content",
        ),
    ]
    for params, message in cases:
        r = await client.get(f"/v1/spaces/{sid}/pdf", params=params, headers=admin.headers)
        assert r.status_code == 400, (params, r.text)
        assert r.json() == error(400, message)
    for params in ({"only": "maybe"}, {"page": "x" * 65}):
        r = await client.get(f"/v1/spaces/{sid}/pdf", params=params, headers=admin.headers)
        assert r.status_code == 400, (params, r.text)
        assert r.json()["error"]["code"] == 400
    assert await snapshot(db) == before


async def test_view_right_decides_who_may_export(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin, member, _ = await _space(client, db)
    r = await client.patch(f"/v1/spaces/{sid}", json={"defaultLevel": None}, headers=admin.headers)
    assert r.status_code == 200, r.text
    before = await snapshot(db)
    # A closed space: an organization member without a grant sees nothing, as if missing.
    r = await client.get(f"/v1/spaces/{sid}/pdf", headers=member.headers)
    missing = await client.get("/v1/spaces/zzRandomId0000000000/pdf", headers=member.headers)
    assert r.status_code == 404 and r.json() == missing.json() == error(404, "Space not found")
    assert await snapshot(db) == before
    r = await client.post(
        f"/v1/spaces/{sid}/permissions",
        json={"role": "read", "users": [member.id]},
        headers=admin.headers,
    )
    assert r.status_code == 204, r.text
    url, _ = await _export(client, f"/v1/spaces/{sid}/pdf", member)
    # Deleting the space stops its export links at once.
    r = await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)
    assert r.status_code == 205, r.text
    r = await client.get(url[len(BASE) :])
    assert r.status_code == 404
    assert r.json() == error(404, "Download link not found")


async def test_old_exports_are_dropped_and_collected(
    client: httpx.AsyncClient, db: AsyncEngine, monkeypatch: Any, job_env: JobEnv
) -> None:
    from docshelf.content import lifecycle
    from docshelf.kit.db import unit_of_work
    from docshelf.models import jobs
    from docshelf.pdf import service

    monkeypatch.setattr(service, "KEEP_PER_SPACE", 2)
    sid, admin, _, pages = await _space(client, db)
    first, _ = await _export(client, f"/v1/spaces/{sid}/pdf", admin)
    second, _ = await _export(client, f"/v1/spaces/{sid}/pdf", admin, page=pages["reference"])
    clock.advance(timedelta(seconds=1))
    third, _ = await _export(client, f"/v1/spaces/{sid}/pdf", admin, page=pages["guide"])
    async with db.connect() as conn:
        kept = set((await conn.execute(sa.select(pdf_exports.c.blob_key))).scalars())
        payloads = (
            (
                await conn.execute(
                    sa.select(jobs.c.payload).where(jobs.c.kind == "content.collect_blobs")
                )
            )
            .scalars()
            .all()
        )
    assert len(kept) == 2 and _blob_of(third) in kept
    dropped = ({_blob_of(first), _blob_of(second)} - kept).pop()
    assert [p["keys"] for p in payloads] == [[dropped]]
    stale = first if _blob_of(first) == dropped else second
    r = await client.get(stale[len(BASE) :])
    assert r.status_code == 404 and r.json() == error(404, "Download link not found")
    # The collector deletes the bytes nothing names any more, and keeps the others.
    async with unit_of_work(db) as conn:
        await lifecycle.collect_blobs(conn, {"keys": [dropped, _blob_of(third)]}, env=job_env)
    store = job_env.blobs
    assert not await store.exists(dropped)
    assert await store.exists(_blob_of(third))
