"""The deployment files against the code (no container runtime here): the Dockerfile,
``deploy/compose.yaml`` with nginx, the Kubernetes manifests and ``docs/deploy.md``.

Every ``HOOKGATE_*`` name they set is a setting ``hookgate serve`` reads, every flag they pass
is one it accepts, the probes they name answer on a real gateway started with their own
settings (PostgreSQL and Redis), the migration Job's command runs, and the objects fit each
other (selectors, names, the grace period around the drain).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
import pytest
import yaml
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env
from tests.support.replicas import REPLICA_SECRET_KEY, RedisServer, fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
SETTING = re.compile(r"\bHOOKGATE_[A-Z0-9_]+\b")


@cache
def serve_help() -> str:
    done = subprocess.run([*HOOKGATE, "serve", "--help"], capture_output=True, text=True,
                          cwd=REPO, env=gateway_env(), timeout=60, check=True)
    return done.stdout


def k8s_objects() -> dict[str, dict[str, Any]]:
    """Every manifest object by ``Kind/name``."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and "kind" in doc and doc["kind"] != "Kustomization":
                found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "compose.yaml").read_text()))


def gateway_container() -> dict[str, Any]:
    spec = k8s_objects()["Deployment/hookgate"]["spec"]["template"]["spec"]
    return dict(spec["containers"][0])


def configmap_env() -> dict[str, str]:
    return {k: str(v) for k, v in k8s_objects()["ConfigMap/hookgate"]["data"].items()}


def dockerfile_env() -> dict[str, str]:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def _flags(args: list[str]) -> list[str]:
    return [arg.split("=", 1)[0] for arg in args if arg.startswith("--")]


def _option(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


# -- settings and flags ------------------------------------------------------------------------


def used_settings() -> dict[str, set[str]]:
    """Each ``HOOKGATE_*`` name the deployment files set, with the files that set it."""
    used: dict[str, set[str]] = {}
    sources: list[tuple[str, list[str]]] = [
        ("Dockerfile", list(dockerfile_env())),
        ("compose.yaml", list(compose()["x-hookgate-env"])),
        ("configmap.yaml", list(configmap_env())),
    ]
    for obj in k8s_objects().values():
        template = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in template.get("containers", []):
            sources.append((obj["kind"], [e["name"] for e in container.get("env", [])]))
    for where, names in sources:
        for name in names:
            if name.startswith("HOOKGATE_"):
                used.setdefault(name, set()).add(where)
    return used


def test_every_setting_the_files_use_is_one_hookgate_serve_reads() -> None:
    used = used_settings()
    assert {"HOOKGATE_SECRET_KEY", "HOOKGATE_DATABASE_URL", "HOOKGATE_REDIS_URL"} <= set(used)
    documented = set(SETTING.findall(serve_help()))
    read_in_code = {
        name
        for path in (REPO / "src" / "hookgate").rglob("*.py")
        for name in re.findall(r"[\"'](HOOKGATE_[A-Z0-9_]+)[\"']", path.read_text())
    }
    unknown = {name: sorted(files) for name, files in used.items()
               if name not in documented or name not in read_in_code}
    assert not unknown, f"not settings of hookgate serve: {unknown}"


def test_every_flag_the_files_pass_is_accepted() -> None:
    known = set(re.findall(r"(--[a-z][a-z0-9-]*)", serve_help()))
    passed = [*gateway_container()["args"], *compose()["services"]["hookgate"]["command"]]
    assert passed[0] == "serve"
    unknown = sorted(set(_flags(passed)) - known)
    assert not unknown, f"hookgate serve has no {unknown}"


def test_the_docs_commands_are_real() -> None:
    """Each ``hookgate …`` line of docs/deploy.md names a real command and real flags."""
    text = (REPO / "docs" / "deploy.md").read_text()
    lines = [line.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
             for line in block.replace("\\\n", " ").splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("hookgate ")]
    assert any(c[:2] == ["hookgate", "serve"] for c in commands)
    for command in commands:
        words = [w for w in command[1:] if not w.startswith("-")][:2]
        done = subprocess.run([*HOOKGATE, *words, "--help"], capture_output=True, text=True,
                              cwd=REPO, env=gateway_env(), timeout=60)
        if done.returncode != 0:  # one word: the second was an argument
            words = words[:1]
            done = subprocess.run([*HOOKGATE, *words, "--help"], capture_output=True,
                                  text=True, cwd=REPO, env=gateway_env(), timeout=60)
        assert done.returncode == 0, (command, done.stderr)
        missing = [f for f in _flags(command) if f not in done.stdout]
        assert not missing, (command, missing)


# -- a real gateway with the deployment's own settings -------------------------------------------


@dataclass
class Deployed:
    gateway: GatewayProcess
    port: int


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """``hookgate serve`` with the Deployment's args and the ConfigMap's settings, on a fresh
    PostgreSQL database and a private Redis (host and port moved to a free loopback port)."""
    directory = tmp_path_factory.mktemp("deploy")
    args = list(gateway_container()["args"])[1:]  # without "serve"
    container_port = int(_option(args, "--port"))
    for flag in ("--host", "--port"):
        index = args.index(flag)
        del args[index:index + 2]
    args = [a for a in args if a != "json" and a != "--log-format"]  # the harness sets it
    env = configmap_env()
    with fresh_database("hg_deploy") as url, RedisServer(directory / "redis") as redis:
        env.update(HOOKGATE_REDIS_URL=redis.url, HOOKGATE_SECRET_KEY=REPLICA_SECRET_KEY,
                   HOOKGATE_PUBLIC_URL="http://127.0.0.1")
        gateway = GatewayProcess(directory / "data", args=tuple(args), env=env,
                                 database_url=url).start(timeout=60)
        try:
            yield Deployed(gateway, container_port)
        finally:
            gateway.stop()


def test_the_probes_answer_on_a_real_gateway(deployed: Deployed) -> None:
    container = gateway_container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["http"] == deployed.port
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        get = container[probe]["httpGet"]
        assert get["port"] in ("http", deployed.port), probe
        answer = httpx.get(deployed.gateway.url + get["path"], timeout=10)
        assert answer.status_code == 200, (probe, answer.text)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    ready = httpx.get(deployed.gateway.url + "/readyz").json()
    assert ready["checks"] == {"draining": "ok", "database": "ok", "migrations": "ok",
                               "redis": "ok"}
    # The compose and Dockerfile health checks name the same paths, on the same port.
    compose_check = " ".join(compose()["services"]["hookgate"]["healthcheck"]["test"])
    docker_check = re.search(r"HEALTHCHECK.*?CMD (.*)", (REPO / "Dockerfile").read_text(),
                             re.DOTALL)
    assert docker_check is not None
    for check in (compose_check, docker_check.group(1)):
        found = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", check)
        assert found is not None, check
        assert int(found.group(1)) == deployed.port
        assert httpx.get(deployed.gateway.url + found.group(2)).status_code == 200


def test_the_ports_agree_everywhere(deployed: Deployed) -> None:
    port = deployed.port
    assert dockerfile_env()["HOOKGATE_PORT"] == str(port)
    assert f"EXPOSE {port}" in (REPO / "Dockerfile").read_text()
    command = compose()["services"]["hookgate"]["command"]
    assert _option(command, "--port") == str(port)
    assert f"server hookgate:{port}" in (DEPLOY / "nginx.conf").read_text()
    service = k8s_objects()["Service/hookgate"]["spec"]["ports"][0]
    assert service["targetPort"] == "http"


def test_the_migration_job_command_runs() -> None:
    job = k8s_objects()["Job/hookgate-migrate"]["spec"]["template"]["spec"]["containers"][0]
    command = [*job["command"], *job["args"]]
    assert command[0] == "hookgate"
    assert compose()["services"]["migrate"]["command"] == command[1:]  # entrypoint: hookgate
    env_names = {e["name"] for e in job["env"]}
    assert env_names == {"HOOKGATE_DATABASE_URL"}
    with fresh_database("hg_deploy_job") as url:
        done = subprocess.run([*HOOKGATE, *command[1:]], capture_output=True, text=True,
                              cwd=REPO, env=gateway_env(HOOKGATE_DATABASE_URL=url), timeout=120)
        assert done.returncode == 0, done.stderr
        assert "schema upgraded" in done.stdout
        again = subprocess.run([*HOOKGATE, *command[1:]], capture_output=True, text=True,
                               cwd=REPO, env=gateway_env(HOOKGATE_DATABASE_URL=url), timeout=120)
        assert again.returncode == 0 and "current" in again.stdout


# -- the objects fit together --------------------------------------------------------------------


def test_the_kubernetes_objects_fit_together() -> None:
    objects = k8s_objects()
    deployment = objects["Deployment/hookgate"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert objects["Service/hookgate"]["spec"]["selector"].items() <= labels.items()
    pdb = objects["PodDisruptionBudget/hookgate"]["spec"]
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["minAvailable"] < deployment["spec"]["replicas"]
    hpa = objects["HorizontalPodAutoscaler/hookgate"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "hookgate"}
    assert hpa["minReplicas"] >= deployment["spec"]["replicas"] >= 1
    # The secret key comes from the Secret, never from a literal.
    secret = objects["Secret/hookgate"]["stringData"]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]
            if "valueFrom" in e}
    assert refs["HOOKGATE_SECRET_KEY"] == {"name": "hookgate", "key": "secret-key"}
    for ref in refs.values():
        assert ref["name"] == "hookgate" and ref["key"] in secret
    assert "HOOKGATE_SECRET_KEY" not in configmap_env()
    assert container["envFrom"] == [{"configMapRef": {"name": "hookgate"}}]
    # preStop pause + drain timeout fit in the grace period.
    pause = float(re.search(r"sleep\((\d+(?:\.\d+)?)\)",
                            " ".join(container["lifecycle"]["preStop"]["exec"]["command"]))[1])
    drain = float(configmap_env()["HOOKGATE_DRAIN_TIMEOUT"])
    assert pod["terminationGracePeriodSeconds"] >= pause + drain + 10
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"]
    # Replicas at the HPA's maximum fit PostgreSQL's default max_connections (100, 3 reserved).
    pool = int(configmap_env()["HOOKGATE_DB_POOL_SIZE"])
    assert hpa["maxReplicas"] * (pool + 3) <= 97
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in K8S.glob("*.yaml")
                                    if p.name != "kustomization.yaml")


def test_compose_runs_three_replicas_behind_a_websocket_proxy() -> None:
    services = compose()["services"]
    assert {"postgres", "redis", "migrate", "hookgate", "lb"} <= set(services)
    gateway = services["hookgate"]
    assert gateway["deploy"]["replicas"] == 3
    env = gateway["environment"]
    assert env["HOOKGATE_SECRET_KEY"].startswith("${HOOKGATE_SECRET_KEY:?")  # one key for all
    assert env["HOOKGATE_DATABASE_URL"].startswith("postgresql://")
    assert env["HOOKGATE_REDIS_URL"].startswith("redis://redis:")
    grace = int(gateway["stop_grace_period"].rstrip("s"))
    assert grace > float(env["HOOKGATE_DRAIN_TIMEOUT"])
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert gateway["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert "proxy_http_version 1.1;" in nginx
    assert "proxy_set_header Upgrade $http_upgrade;" in nginx
    assert "proxy_set_header Connection $connection_upgrade;" in nginx
    assert services["lb"]["image"].startswith("nginx:")


def test_the_image_is_slim_non_root_with_bubblewrap_and_the_panel() -> None:
    text = (REPO / "Dockerfile").read_text()
    bases = re.findall(r"^FROM (\S+)", text, re.MULTILINE)
    assert bases and all(base.endswith("-slim") for base in bases)
    users = re.findall(r"^USER (\S+)", text, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert re.search(r"apt-get install [^\n]*bubblewrap", text)
    assert re.search(r'^ENTRYPOINT \["hookgate"\]', text, re.MULTILINE)
    # The panel ships inside the package (hatch packs src/hookgate whole) and is not ignored.
    ignored = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert "src" not in ignored and not any(i.startswith("src/") for i in ignored)
    assert (REPO / "src" / "hookgate" / "server" / "static" / "index.html").exists()
    assert 'packages = ["src/hookgate"]' in (REPO / "pyproject.toml").read_text()
