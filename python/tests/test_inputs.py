"""Images and documents: `geode.Image` and `geode.Document` read and typed from their bytes, on
the wire of the fake Responses server as `input_image` and `input_file`, recorded in the ledger
by hash, given as `parts=`, as prompt pieces or as OpenAI-style content parts (all three the same
request), and refused with a typed error before any request where the part or the route is
wrong. Nothing shows a part's content."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from enum import Enum
from pathlib import Path

import pytest
from pydantic import BaseModel

import geode
from conftest import children

# A 1x1 PNG, and a one-page PDF that says what the invoice says.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4"
    "890000000d49444154789c63606060f80f0001040100c12d8e50000000004945"
    "4e44ae426082"
)
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 100]/Contents 4 0 R>>endobj\n"
    b"4 0 obj<</Length 58>>stream\nBT /F1 12 Tf 10 50 Td (Invoice A-17 Acme 40.50 EUR) Tj ET\n"
    b"endstream endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)
SECRET = "the secret clause: pay 9,999,999 EUR"


class Currency(str, Enum):
    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"


class Invoice(BaseModel):
    """The fields of examples/invoice.schema.json."""

    vendor: str
    invoice_number: str
    total: float
    currency: Currency


ANSWER = {"json": {"vendor": "Acme", "invoice_number": "A-17", "total": 40.5, "currency": "EUR"}}
EXPECTED = Invoice(vendor="Acme", invoice_number="A-17", total=40.5, currency=Currency.EUR)
PROMPT = "Extract the invoice's fields."


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    png, pdf = tmp_path / "invoice.png", tmp_path / "invoice.pdf"
    png.write_bytes(PNG)
    pdf.write_bytes(PDF)
    return png, pdf


def content_of(request: dict) -> list:
    """The user turn's content as the Responses wire got it."""
    turn = request["body"]["input"][0]
    assert turn["role"] == "user", turn
    return turn["content"]


def test_an_invoice_is_extracted_from_a_png_and_a_pdf(fake, files):
    png, pdf = files
    f, env = fake([ANSWER])
    client = geode.Client("openai-payg", env=env)
    answer = client.extract(Invoice, PROMPT, parts=[geode.Image(png), geode.Document(pdf)])
    assert answer.value == EXPECTED
    content = content_of(f.model_requests()[0])
    assert content[0] == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{b64(PNG)}",
        "detail": "auto",
    }
    assert content[1] == {
        "type": "input_file",
        "filename": "invoice.pdf",
        "file_data": f"data:application/pdf;base64,{b64(PDF)}",
    }
    assert content[2]["type"] == "input_text" and PROMPT in content[2]["text"]
    inputs = answer.ledger.inputs
    assert inputs == [
        {"kind": "image", "source": "inline", "media_type": "image/png", "bytes": len(PNG), "sha256": sha256(PNG)},
        {"kind": "document", "source": "inline", "media_type": "application/pdf", "bytes": len(PDF), "sha256": sha256(PDF)},
    ]
    assert answer.ledger.to_dict()["inputs"][1]["sha256"] == sha256(PDF)
    # The ledger records the parts, never their bytes.
    assert b64(PDF) not in answer.ledger.to_json() and b64(PNG) not in answer.ledger.to_json()


def test_parts_pieces_and_openai_content_parts_make_the_same_request(fake, files):
    png, pdf = files
    png_url, pdf_url = f"data:image/png;base64,{b64(PNG)}", f"data:application/pdf;base64,{b64(PDF)}"
    image, document = geode.Image.from_path(png), geode.Document.from_path(pdf)
    prompts = {
        "parts=": (PROMPT, [image, document]),
        "pieces": ([PROMPT, image, document], None),
        "chat parts": (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": PROMPT},
                        {"type": "image_url", "image_url": {"url": png_url}},
                        {"type": "file", "file": {"file_data": pdf_url, "filename": "invoice.pdf"}},
                    ],
                }
            ],
            None,
        ),
        "responses parts, bare base64": (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "image_url": png_url},
                        {"type": "input_file", "file_data": b64(PDF), "filename": "invoice.pdf"},
                        {"type": "input_text", "text": PROMPT},
                    ],
                }
            ],
            None,
        ),
        "objects in content": (
            [{"role": "user", "content": [{"type": "text", "text": PROMPT}, image, document]}],
            None,
        ),
    }
    f, env = fake({"steps": [], "default": ANSWER})
    client = geode.Client("openai-payg", env=env)
    for name, (prompt, parts) in prompts.items():
        answer = client.extract(Invoice, prompt, parts=parts)
        assert answer.value == EXPECTED, name
        assert [r["sha256"] for r in answer.ledger.inputs] == [sha256(PNG), sha256(PDF)], name
    sent = [json.dumps(r["body"]["input"], sort_keys=True) for r in f.model_requests()]
    assert len(sent) == len(prompts)
    for name, body in zip(prompts, sent):
        assert body == sent[0], f"{name}: {body[:300]}"


def test_every_call_takes_parts_async_and_streamed_too(fake, files):
    png, pdf = files
    f, env = fake([ANSWER, ANSWER, {"text": "EUR"}, {"text": "USD"}])
    client = geode.Client("openai-payg", env=env)
    parts = [geode.Image(png), geode.Document(pdf)]
    assert asyncio.run(client.aextract(Invoice, PROMPT, parts=parts)).value == EXPECTED
    with client.stream(Invoice, PROMPT, parts=parts) as stream:
        final = [e for e in stream if isinstance(e, geode.Final)]
    assert final and final[0].value == EXPECTED
    assert [r["sha256"] for r in final[0].ledger.inputs] == [sha256(PNG), sha256(PDF)]
    assert client.choose(["EUR", "USD"], "The currency?", parts=parts[0]).value == "EUR"
    assert asyncio.run(client.achoose(["EUR", "USD"], [geode.Image(png), "The currency?"])).value == "USD"
    requests = f.model_requests()
    assert len(requests) == 4
    for r in requests:
        assert content_of(r)[0]["image_url"] == f"data:image/png;base64,{b64(PNG)}"


def test_parts_come_from_paths_bytes_and_urls_and_the_type_from_the_bytes(files, tmp_path):
    png, pdf = files
    from_path = geode.Image(png)
    assert from_path == geode.Image(str(png)) == geode.Image.from_bytes(PNG) == geode.Image(PNG)
    assert from_path == geode.Image.from_url(f"data:image/png;base64,{b64(PNG)}")
    # A declared type is not trusted: these bytes are a PNG whatever the URL says.
    assert geode.Image(f"data:application/pdf;base64,{b64(PNG)}").media_type == "image/png"
    assert geode.Image.from_base64(b64(PNG)) == from_path
    assert from_path.record() == {
        "kind": "image", "source": "inline", "media_type": "image/png", "bytes": len(PNG), "sha256": sha256(PNG)
    }
    assert len({from_path, geode.Image(png)}) == 1
    doc = geode.Document.from_bytes(PDF, filename="a.pdf")
    assert (doc.kind, doc.media_type, doc.size, doc.filename) == ("document", "application/pdf", len(PDF), "a.pdf")
    assert geode.Document(pdf).filename == "invoice.pdf"
    assert geode.Document(pdf, filename="march.pdf").filename == "march.pdf"
    # A PDF named .png is a document: the name does not say what a file is.
    lying = tmp_path / "scan.png"
    lying.write_bytes(PDF)
    assert geode.Document(lying).media_type == "application/pdf"
    text = geode.Document.from_bytes("Paid by transfer.".encode(), filename="notes.txt")
    assert text.media_type == "text/plain"
    url = geode.Image.from_url("https://files.example/receipt.png")
    assert (url.source, url.media_type, url.size) == ("url", None, None)
    assert geode.Document("https://files.example/c.pdf").filename == "c.pdf"


def test_a_pdf_given_as_an_image_is_a_typed_error_and_nothing_is_sent(fake, files, tmp_path):
    png, pdf = files
    f, env = fake([ANSWER])
    client = geode.Client("openai-payg", env=env)
    with pytest.raises(geode.InputError, match=r"invoice\.pdf is a pdf file, not an image") as e:
        geode.Image(pdf)
    assert isinstance(e.value, geode.ConfigError) and isinstance(e.value, geode.Error)
    with pytest.raises(geode.InputError, match="not a document"):
        geode.Document.from_bytes(PNG)
    pdf_url = f"data:application/pdf;base64,{b64(PDF)}"
    message = [{"role": "user", "content": [{"type": "text", "text": "?"}, {"type": "image_url", "image_url": {"url": pdf_url}}]}]
    with pytest.raises(geode.InputError, match=r"prompt\[0\]\.content\[1\]: the data URL is a pdf file") as e:
        client.extract(Invoice, message)
    assert b64(PDF)[:40] not in str(e.value)
    secret = tmp_path / "tool.pdf"
    secret.write_bytes(b"\x7fELF\x02\x01\x01\0" + SECRET.encode())
    bad = [
        (lambda: geode.Document(secret), "is not a PNG, JPEG, GIF, WebP, PDF or UTF-8 text file"),
        (lambda: geode.Image(tmp_path / "missing.png"), "cannot read"),
        (lambda: geode.Image(tmp_path), "not a regular file"),
        (lambda: geode.Image("http://plain.example/a.png"), "only https URLs"),
        (lambda: geode.Image("file:///etc/passwd"), "only https URLs"),
        (lambda: geode.Image.from_url("https://user:hunter2@x.example/a.png"), "credentials"),
        (lambda: geode.Document.from_url("data:application/pdf,raw"), "only base64 data URLs"),
        (lambda: geode.Image.from_bytes(b""), "0 bytes"),
        (
            lambda: client.extract(Invoice, [{"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}]),
            "file ids are not taken",
        ),
    ]
    for make, needle in bad:
        with pytest.raises(geode.InputError, match=needle) as e:
            make()
        assert SECRET not in str(e.value) and "hunter2" not in str(e.value)
    with pytest.raises(TypeError, match="expected a path, bytes or a URL"):
        geode.Image(42)
    with pytest.raises(TypeError, match=r"parts\[0\]: expected geode.Image or geode.Document"):
        client.extract(Invoice, PROMPT, parts=[str(png)])
    with pytest.raises(TypeError, match="'input_audio' part is not sent") as e:
        client.extract(Invoice, [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": SECRET}}]}])
    assert SECRET not in str(e.value)
    with pytest.raises(geode.ConfigError, match="only user turns may hold images or documents"):
        client.extract(Invoice, [{"role": "assistant", "content": [geode.Image(png)]}, {"role": "user", "content": "?"}])
    assert f.model_requests() == []


def test_the_local_route_refuses_images_before_any_request():
    client = geode.Client("local")
    before = children()
    with pytest.raises(geode.InputsNotTaken) as e:
        client.extract(Invoice, [PROMPT, geode.Image(PNG)])
    message = str(e.value)
    assert "local" in message and "cannot take this call's images or documents" in message, message
    assert "text only" in message and "require=" not in message, message
    assert isinstance(e.value, geode.InputError) and isinstance(e.value, geode.ConfigError)
    assert e.value.ledger.attempts == [] and e.value.usage == geode.Usage()
    # No engine was started: nothing ran at all.
    assert children() == before


def test_a_text_only_provider_model_refuses_before_any_request(fake, files):
    png, pdf = files
    f, env = fake([ANSWER], adapter="glm-payg")
    client = geode.Client("glm-payg", env=env)
    for call in (
        lambda: client.extract(Invoice, PROMPT, parts=[geode.Image(png)]),
        lambda: asyncio.run(client.aextract(Invoice, PROMPT, parts=[geode.Document(pdf)])),
        lambda: list(client.stream(Invoice, PROMPT, parts=[geode.Image(png)])),
    ):
        with pytest.raises(geode.InputsNotTaken, match="glm-payg.*cannot take this call's images or documents"):
            call()
    assert f.model_requests() == []


def test_repr_and_errors_never_show_the_content(files):
    png, _ = files
    doc = geode.Document.from_bytes(SECRET.encode(), filename="contract.txt")
    shown = repr(doc) + str(doc)
    assert SECRET not in shown and b64(SECRET.encode())[:16] not in shown
    assert repr(doc) == f"geode.Document(text/plain, {len(SECRET)} bytes, sha256={sha256(SECRET.encode())[:12]}, filename='contract.txt')"
    image = geode.Image(png)
    assert repr(image) == f"geode.Image(image/png, {len(PNG)} bytes, sha256={sha256(PNG)[:12]})"
    assert b64(PNG)[:16] not in repr(image)
    signed = geode.Image.from_url("https://files.example/scan.png?sig=abc123secret")
    assert "abc123secret" not in repr(signed) and "files.example" not in repr(signed)
    assert repr(signed).startswith("geode.Image(url, sha256=")
    with pytest.raises(geode.InputError) as e:
        geode.Image.from_bytes(SECRET.encode())
    assert SECRET not in str(e.value) and "text file, not an image" in str(e.value)
