"""`read_file` on binary files: a zip's listing, a PDF's text (pypdf when installed, base64
otherwise), other binaries as base64 with their media type, up to a limit."""

from __future__ import annotations

import base64
import io
import sys
import time
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env import Workspace
from benchpack.runtime.env.binary import MAX_BASE64_BYTES, MAX_ZIP_ENTRIES, describe_binary

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256))
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws", clear=True)


def zip_bytes(entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def put(ws: Workspace, name: str, data: bytes) -> None:
    path = ws.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_zip_gives_its_listing(ws: Workspace) -> None:
    data = zip_bytes({"report.txt": b"hello world", "数据/表.csv": b"a,b\n1,2\n",
                      "empty/": b""}, zipfile.ZIP_STORED)
    put(ws, "in/archive.zip", data)
    out = ws.read_file("in/archive.zip")
    assert out == {"path": "in/archive.zip", "kind": "zip", "media_type": "application/zip",
                   "size": len(data), "total_entries": 3, "truncated": False, "entries": [
                       {"name": "report.txt", "size": 11, "compressed_size": 11,
                        "is_dir": False},
                       {"name": "数据/表.csv", "size": 8, "compressed_size": 8, "is_dir": False},
                       {"name": "empty/", "size": 0, "compressed_size": 0, "is_dir": True}]}
    assert ws.take_io()[0] == {"in/archive.zip"}


def test_an_empty_zip_is_a_zip_though_it_is_valid_utf8(ws: Workspace) -> None:
    data = zip_bytes({})
    assert data.decode("utf-8")  # would have been returned as "text" without sniffing
    put(ws, "e.zip", data)
    out = ws.read_file("e.zip")
    assert (out["kind"], out["entries"], out["total_entries"]) == ("zip", [], 0)


def test_a_zip_bomb_is_listed_not_inflated(ws: Workspace) -> None:
    data = zip_bytes({"bomb.bin": b"\x00" * (50 << 20)})
    assert len(data) < 100_000
    put(ws, "bomb.zip", data)
    t0 = time.monotonic()
    out = ws.read_file("bomb.zip")
    assert time.monotonic() - t0 < 1
    assert out["entries"][0]["size"] == 50 << 20
    assert out["entries"][0]["compressed_size"] < len(data)


def test_a_zip_with_too_many_entries_is_cut(ws: Workspace) -> None:
    data = zip_bytes({f"f{i}.txt": b"" for i in range(MAX_ZIP_ENTRIES + 7)}, zipfile.ZIP_STORED)
    out = describe_binary(data, "many.zip")
    assert len(out["entries"]) == MAX_ZIP_ENTRIES
    assert (out["total_entries"], out["truncated"]) == (MAX_ZIP_ENTRIES + 7, True)


def test_pdf_without_a_pdf_library_is_base64_with_a_note(ws: Workspace,
                                                         monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import fails, installed or not
    put(ws, "doc.pdf", PDF)
    out = ws.read_file("doc.pdf")
    assert out["kind"] == "binary" and out["media_type"] == "application/pdf"
    assert base64.b64decode(out["base64"]) == PDF and out["size"] == len(PDF)
    assert "pypdf" in out["note"]


def test_pdf_text_through_pypdf_when_installed(ws: Workspace, monkeypatch: Any) -> None:
    class Page:
        def __init__(self, text: str) -> None:
            self.text = text

        def extract_text(self) -> str:
            return self.text

    class Reader:
        def __init__(self, stream: Any) -> None:
            assert stream.read().startswith(b"%PDF-")
            self.pages = [Page("Invoice 42"), Page("合计：100 元")]

    monkeypatch.setitem(sys.modules, "pypdf", types.SimpleNamespace(PdfReader=Reader))
    put(ws, "invoice.pdf", PDF)
    assert ws.read_file("invoice.pdf") == {
        "path": "invoice.pdf", "kind": "pdf", "media_type": "application/pdf",
        "size": len(PDF), "pages": 2, "content": "Invoice 42\n\n合计：100 元",
        "truncated": False}

    class Broken:
        def __init__(self, stream: Any) -> None:
            raise ValueError("damaged xref")

    monkeypatch.setitem(sys.modules, "pypdf", types.SimpleNamespace(PdfReader=Broken))
    out = ws.read_file("invoice.pdf")
    assert out["kind"] == "binary" and "could not be read (ValueError)" in out["note"]


def test_other_binaries_are_base64_with_their_media_type(ws: Workspace) -> None:
    put(ws, "img/logo.png", PNG)
    out = ws.read_file("img/logo.png")
    assert out == {"path": "img/logo.png", "kind": "binary", "media_type": "image/png",
                   "size": len(PNG), "base64": base64.b64encode(PNG).decode("ascii")}
    put(ws, "blob.bin", b"\xff\xfe\x00\x01")
    assert ws.read_file("blob.bin")["media_type"] == "application/octet-stream"
    put(ws, "song.mp3", b"\xff\xfb\x90\x00")  # no signature we know: by its name
    assert ws.read_file("song.mp3")["media_type"] == "audio/mpeg"


def test_a_large_binary_gives_size_and_type_but_no_content(ws: Workspace) -> None:
    data = b"\x89PNG\r\n\x1a\n" + b"\xff" * MAX_BASE64_BYTES
    put(ws, "big.png", data)
    out = ws.read_file("big.png")
    assert "base64" not in out and out["size"] == MAX_BASE64_BYTES + 8
    assert out["media_type"] == "image/png"
    assert f"larger than {MAX_BASE64_BYTES} bytes" in out["note"]
    put(ws, "exact.bin", b"\xff" * MAX_BASE64_BYTES)
    assert len(base64.b64decode(ws.read_file("exact.bin")["base64"])) == MAX_BASE64_BYTES


def test_text_files_are_unchanged(ws: Workspace) -> None:
    put(ws, "notes.md", "第一行\nline two\n".encode())
    assert ws.read_file("notes.md") == {"path": "notes.md", "content": "第一行\nline two\n",
                                        "start_line": 1, "end_line": 2, "total_lines": 2}
    put(ws, "PK.txt", b"PK\x03\x04 is how a zip starts, but this is not one")
    assert ws.read_file("PK.txt")["content"].startswith("PK")


def _real_pdf(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica, built by hand (offsets computed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = b"%PDF-1.4\n", []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return out


def test_a_real_pdf_gives_its_text_through_the_locked_pypdf(ws: Workspace) -> None:
    data = _real_pdf("Quarterly VaR backtest: 3 exceptions")
    put(ws, "report.pdf", data)
    out = ws.read_file("report.pdf")
    assert out["kind"] == "pdf" and out["pages"] == 1
    assert "Quarterly VaR backtest: 3 exceptions" in out["content"]
