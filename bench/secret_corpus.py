"""A generated source tree with seeded secrets, for comparing scanners on recall and speed.

Files look like a small project (Python, YAML, JSON, .env, Markdown). Every seeded secret is
random (from a seeded generator, so runs are repeatable) and its file and line are recorded.
No token in this module is a literal: each is assembled at run time.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SECRET_KINDS", "Corpus", "Seeded", "make_secret", "write_corpus"]

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_B64 = string.ascii_letters + string.digits + "+/"
_URLSAFE = string.ascii_letters + string.digits + "-_"


def _pick(rng: random.Random, alphabet: str, count: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = _b64url(json.dumps({"sub": str(rng.randrange(10**9)), "iat": 1700000000}).encode())
    return f"{header}.{claims}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random) -> list[str]:
    body = base64.b64encode(rng.randbytes(48 * 12)).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    kind = "RSA PRIVATE KEY"
    return [f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"]


# kind -> line template producer (one line; the private key is the exception, several lines)
_LINES: dict[str, Callable[[random.Random], list[str]]] = {
    "aws-access-key-id": lambda r: [f'AWS_ACCESS_KEY_ID = "{"AK" + "IA" + _pick(r, _UPPER, 16)}"'],
    "aws-secret-access-key": lambda r: [f'aws_secret_access_key = "{_pick(r, _B64, 40)}"'],
    "github-token": lambda r: [f'GITHUB_TOKEN="{"gh" + "p_" + _pick(r, _ALNUM, 36)}"'],
    "gitlab-token": lambda r: [f"gitlab_token: {'gl' + 'pat-' + _pick(r, _URLSAFE, 20)}"],
    "slack-token": lambda r: [f'slack = "{"xo" + "xb-"}{r.randrange(10**11, 10**12)}-'
                              f'{r.randrange(10**12, 10**13)}-{_pick(r, _ALNUM, 24)}"'],
    "slack-webhook": lambda r: [f"webhook: https://hooks.slack.com/services/T{_pick(r, _UPPER, 8)}"
                                f"/B{_pick(r, _UPPER, 8)}/{_pick(r, _ALNUM, 24)}"],
    "stripe-key": lambda r: [f'stripe.api_key = "{"sk" + "_live_" + _pick(r, _ALNUM, 24)}"'],
    "openai-key": lambda r: [f'OPENAI_API_KEY={"sk-" + "proj-" + _pick(r, _URLSAFE, 48)}'],
    "anthropic-key": lambda r: [
        f'"anthropic_key": "{"sk-" + "ant-api03-" + _pick(r, _URLSAFE, 93)}AA"'],
    "gcp-api-key": lambda r: [f'maps_key = "{"AI" + "za" + _pick(r, _URLSAFE, 35)}"'],
    "jwt": lambda r: [f'Authorization = "Bearer {_jwt(r)}"'],
    "private-key": _pem,
    "password": lambda r: [f'db_password = "{_pick(r, _ALNUM, 14)}"'],
    "url-credentials": lambda r: [f"DATABASE_URL=postgres://app:{_pick(r, _ALNUM, 16)}"
                                  "@db.example.com:5432/app"],
    "high-entropy-base64": lambda r: [f'"signing_material": "{_pick(r, _B64, 44)}"'],
    "high-entropy-hex": lambda r: [f'checksum_secret = "{r.randbytes(32).hex()}"'],
}
SECRET_KINDS = tuple(_LINES)


def make_secret(kind: str, rng: random.Random) -> list[str]:
    """The line(s) that carry one secret of ``kind``; the secret is on the first line."""
    return _LINES[kind](rng)


_FILLER = {
    ".py": [
        "def handle(request, *, retries=3):",
        "    result = client.fetch(request.url, timeout=10)",
        "    if result.status != 200:",
        "        raise RuntimeError(f'unexpected status {result.status}')",
        "    return [item.name for item in result.items if item.enabled]",
        "# Keep the cache small: entries are rebuilt on demand.",
        "CACHE_SIZE = 256",
        "logger.info('processed %d records in %.2fs', count, elapsed)",
        "class Settings(BaseModel):",
        "    name: str = 'service'",
        "    version = '1.4.2'",
        "import os, sys, json",
    ],
    ".yaml": [
        "service:",
        "  name: billing",
        "  replicas: 3",
        "  image: registry.example.com/billing:1.4.2",
        "  resources: {cpu: 500m, memory: 256Mi}",
        "  env:",
        "    - {name: LOG_LEVEL, value: info}",
        "  ports: [8080, 9090]",
    ],
    ".json": [
        '  "name": "frontend",',
        '  "version": "2.3.0",',
        '  "description": "The customer-facing web application",',
        '  "main": "dist/index.js",',
        '  "license": "MIT",',
        '  "private": true,',
    ],
    ".md": [
        "## Running locally",
        "Install the dependencies, then start the development server on port 8080.",
        "The service reads its settings from the environment; see the table below.",
        "| name | default | meaning |",
        "|---|---|---|",
        "Requests time out after ten seconds and are retried three times.",
    ],
    ".env": [
        "LOG_LEVEL=info",
        "PORT=8080",
        "FEATURE_FLAGS=search,checkout",
        "REGION=eu-west-1",
    ],
}


# Lines that look a little like secrets but are not (they count as false positives if found).
_DECOYS: dict[str, Callable[[random.Random], str]] = {
    ".py": lambda r: f"REQUEST_ID = '{uuid.UUID(int=r.getrandbits(128), version=4)}'",
    ".yaml": lambda r: f"  image_digest: sha256:{r.randbytes(32).hex()}",
    ".json": lambda r: f'  "id": "{uuid.UUID(int=r.getrandbits(128), version=4)}",',
    ".md": lambda r: f"Fixed in commit {r.randbytes(20).hex()} (release 2.{r.randrange(9)}.0.1).",
    ".env": lambda r: f"DOCS_EXAMPLE_HOST=192.0.2.{r.randrange(1, 255)}",
}


@dataclass(frozen=True, slots=True)
class Seeded:
    kind: str
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class Corpus:
    root: Path
    files: list[Path]
    seeded: list[Seeded]
    size_bytes: int


def write_corpus(root: Path, *, files: int, lines_per_file: int, secrets_per_file: float = 0.5,
                 seed: int = 15) -> Corpus:
    """Write ``files`` files under ``root``; about one in 1/secrets_per_file holds a secret."""
    rng = random.Random(seed)
    written: list[Path] = []
    seeded: list[Seeded] = []
    size = 0
    kinds = list(SECRET_KINDS)
    extensions = list(_FILLER)
    for index in range(files):
        suffix = extensions[index % len(extensions)]
        relative = f"pkg{index % 7}/module_{index}{suffix}"
        lines = [rng.choice(_FILLER[suffix]) for _ in range(lines_per_file)]
        lines[rng.randrange(len(lines))] = _DECOYS[suffix](rng)
        count = int(secrets_per_file) + (rng.random() < secrets_per_file % 1)
        for _ in range(count):
            kind = kinds[len(seeded) % len(kinds)]
            position = rng.randrange(len(lines))
            carrier = make_secret(kind, rng)
            lines[position:position] = carrier
            # Lines after the insertion point moved down: shift the earlier seeds of this file.
            seeded = [Seeded(s.kind, s.path, s.line + len(carrier))
                      if s.path == relative and s.line > position else s for s in seeded]
            seeded.append(Seeded(kind, relative, position + 1))
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(lines) + "\n"
        path.write_text(text)
        size += len(text)
        written.append(path)
    return Corpus(root, written, seeded, size)
