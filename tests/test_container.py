"""The container files, tested as far as this machine can without Docker: the image's command
and health check are real `docshelf` commands (the health check is run against a real server),
and the settings compose.yaml gives each container parse and build what they name (the health
check runs against a real server in test_ops_server.py). Building
the image and starting the compose stack are not tested here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from docshelf.blobs import S3BlobStore, open_blob_store
from docshelf.cli.main import main
from docshelf.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _one(word: str) -> str:
    found = [rest for w, rest in _instructions() if w == word]
    assert len(found) == 1, (word, found)
    return found[0]


def _exec_form(rest: str) -> list[str]:
    parsed: list[str] = json.loads(rest)
    return parsed


def test_dockerfile() -> None:
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", _one("FROM"))
    user = _one("USER")
    assert user not in {"root", "0"}
    runs = " ".join(rest for word, rest in _instructions() if word == "RUN")
    assert re.search(rf"useradd --system --uid 10001 --user-group .* {user}\b", runs)
    assert "chown docshelf:docshelf /data && chmod 0700 /data" in runs
    assert _exec_form(_one("VOLUME")) == ["/data"]
    env = dict(re.findall(r"(DOCSHELF_\w+)=(\S+)", _one("ENV")))
    assert env["DOCSHELF_DATA_DIR"] == "/data"
    assert env["DOCSHELF_HOST"] == "0.0.0.0"  # reachable from outside the container
    assert _exec_form(_one("CMD")) == ["docshelf", "serve"]
    health = _one("HEALTHCHECK")
    assert _exec_form(health.split(" CMD ", 1)[1]) == ["docshelf", "healthcheck"]
    # The image's settings parse as the container would read them.
    settings = Settings(**{k.removeprefix("DOCSHELF_").lower(): v for k, v in env.items()})
    assert (settings.host, settings.port, settings.log_format) == ("0.0.0.0", 8000, "json")


def test_image_commands_exist() -> None:
    for name in ("serve", "worker", "healthcheck", "backup", "restore"):
        assert name in main.commands, name


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def _env(service: dict[str, Any]) -> dict[str, str]:
    substitutions = {"POSTGRES_PASSWORD": "pw", "MINIO_ROOT_PASSWORD": "secret"}

    def expand(value: str) -> str:
        def one(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(3)
            return substitutions.get(name, default or "")

        return re.sub(r"\$\{(\w+)(:[-?]([^}]*))?\}", one, str(value))

    return {k: expand(v) for k, v in service["environment"].items()}


def test_compose_services() -> None:
    services = _compose()["services"]
    assert set(services) == {"postgres", "minio", "minio-init", "docshelf", "worker"}
    assert services["worker"]["command"] == ["docshelf", "worker"]
    assert services["worker"]["image"] == services["docshelf"]["image"]
    assert services["worker"]["healthcheck"] == {"disable": True}
    assert services["docshelf"]["volumes"] == ["docshelf-data:/data"]
    for name in ("docshelf", "worker"):
        env = _env(services[name])
        assert env["DOCSHELF_RUN_JOBS_IN_SERVER"] == "false"
        settings = Settings(**{k.removeprefix("DOCSHELF_").lower(): v for k, v in env.items()})
        assert settings.database_url == "postgresql+asyncpg://docshelf:pw@postgres:5432/docshelf"
        assert not settings.is_sqlite
        store = open_blob_store(settings)  # builds the client; contacts nothing yet
        assert isinstance(store, S3BlobStore)
        assert (store.bucket, store.prefix) == ("docshelf", "")
    # The bucket the init container creates is the one the app uses.
    init = " ".join(services["minio-init"]["entrypoint"])
    assert "mc mb --ignore-existing local/docshelf" in init
    assert services["postgres"]["image"] == "postgres:15"  # pg_dump 15 in the image


def test_the_image_installs_what_every_feature_needs() -> None:
    from docshelf.features import FEATURES

    (install,) = [
        rest for word, rest in _instructions() if word == "RUN" and "apt-get install" in rest
    ]
    installed = set(install.split("apt-get install", 1)[1].split("&&", 1)[0].split())
    needed = {need.package for feature in FEATURES for need in feature.needs}
    assert needed - installed == set()
