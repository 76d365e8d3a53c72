"""The production Dockerfile and docker-compose.yml agree with the code they run.

There is no Docker engine here, so these tests read both files and check every
name they use against the project: modules, management commands, settings
variables, ports, volumes and health checks. Where a step can run without
Docker (collectstatic with the build placeholders, the settings under the
compose environment, the web health check) it is run for real.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from celery import Celery
from celery.app.utils import find_app
from django.conf import settings
from django.core.management import get_commands
from django.http.request import split_domain_port, validate_host

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
SETTINGS_FILE = ROOT / "trustrag_site" / "settings.py"

APP_SERVICES = ("web", "worker")
BACKING_SERVICES = ("db", "redis")
TORCH_CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


# --- reading the files ------------------------------------------------------


def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def service(name: str) -> dict:
    return compose()["services"][name]


_INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}|\$(\w+)")


def interpolate(value: str, env: dict[str, str]) -> str:
    """What `docker compose` makes of a value: ${VAR:-default}, ${VAR:?error}, $$ -> $."""

    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        operator, argument = match.group(2), match.group(3)
        current = env.get(name)
        missing = current is None or (current == "" and operator and operator.startswith(":"))
        if operator in ("-", ":-") and missing:
            return argument
        if operator in ("?", ":?") and missing:
            raise LookupError(f"{name}: {argument}")
        return current or ""

    return _INTERPOLATION.sub(substitute, value)


def app_environment(name: str, env: dict[str, str] | None = None) -> dict[str, str]:
    raw = service(name)["environment"]
    assert isinstance(raw, dict), f"{name}: environment should be a mapping (the x-app-env anchor)"
    return {key: interpolate(str(value), env or {}) for key, value in raw.items()}


def command_argv(command: str | list[str]) -> list[list[str]]:
    """The simple commands a compose `command` or healthcheck runs, in order, `exec` dropped."""
    if isinstance(command, str):
        words = shlex.split(command)
    elif command[:2] == ["sh", "-c"] or command[:1] == ["CMD-SHELL"]:
        words = shlex.split(command[-1])
    elif command[:1] == ["CMD"]:
        words = list(command[1:])
    else:
        words = list(command)
    commands, current = [], []
    for word in [*words, "&&"]:
        if word in ("&&", ";"):
            if current:
                commands.append(current[1:] if current[0] == "exec" else current)
            current = []
        else:
            current.append(word)
    return commands


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line, continuations joined, comments dropped."""
    instructions, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1].strip() + " "
            continue
        current += stripped
        keyword, _, arguments = current.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        current = ""
    assert not current, "the Dockerfile ends inside a line continuation"
    return instructions


def dockerfile_env() -> dict[str, str]:
    env = {}
    for keyword, arguments in dockerfile_instructions():
        if keyword == "ENV":
            for word in shlex.split(arguments):
                name, _, value = word.partition("=")
                env[name] = value
    return env


def dockerfile_cmd() -> list[str]:
    cmds = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "CMD"]
    assert len(cmds) == 1
    return json.loads(cmds[0])


def collectstatic_step() -> tuple[dict[str, str], list[str]]:
    """The environment assignments and the command of the RUN step that collects static files."""
    runs = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "RUN" and "collectstatic" in arguments]
    assert len(runs) == 1
    words = shlex.split(runs[0])
    env = {}
    while words and re.fullmatch(r"\w+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


def gunicorn_invocation(argv: list[str]) -> tuple[str, dict[str, str]]:
    """The app module and the --option value pairs of a gunicorn command line."""
    assert argv[0] == "gunicorn", argv
    app, options, rest = None, {}, argv[1:]
    while rest:
        word = rest.pop(0)
        if word.startswith("--"):
            options[word] = rest.pop(0)
        else:
            app = word
    return app, options


def compose_gunicorn_argv() -> list[str]:
    commands = command_argv(service("web")["command"])
    gunicorns = [argv for argv in commands if argv[0] == "gunicorn"]
    assert len(gunicorns) == 1, commands
    return gunicorns[0]


def all_strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for value in node.values() for s in all_strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in all_strings(value)]
    return []


def settings_variables() -> set[str]:
    """Names the settings read through one of the apps.core.env readers."""
    return set(re.findall(r"\benv_\w+\(\s*\"(\w+)\"", SETTINGS_FILE.read_text()))


def clean_env(**extra: str) -> dict[str, str]:
    """The test process environment without anything that would steer the settings."""
    steering = settings_variables() | {"DJANGO_SETTINGS_MODULE", "TRUSTRAG_VAR_DIR"}
    return {k: v for k, v in os.environ.items() if k not in steering} | extra


# --- the compose file --------------------------------------------------------


def test_compose_file_parses_and_defines_the_four_services():
    data = compose()
    assert set(data["services"]) == {"db", "redis", "web", "worker"}
    assert data["services"]["db"]["image"] == "pgvector/pgvector:pg17"
    assert data["services"]["redis"]["image"] == "redis:7-alpine"
    assert set(data["volumes"]) == {"pgdata", "uploads"}
    assert "pgdata:/var/lib/postgresql/data" in data["services"]["db"]["volumes"]


def test_the_compose_postgres_takes_its_buffers_from_postgres_shared_buffers_or_a_gigabyte():
    command = service("db")["command"]
    assert command[:2] == ["postgres", "-c"]
    assert interpolate(command[2], {}) == "shared_buffers=1GB"
    assert interpolate(command[2], {"POSTGRES_SHARED_BUFFERS": "6GB"}) == "shared_buffers=6GB"


def test_web_and_worker_build_the_same_image_from_the_dockerfile_that_exists():
    images = set()
    for name in APP_SERVICES:
        build = service(name)["build"]
        context = (ROOT / build["context"]).resolve()
        assert context == ROOT
        assert (context / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE
        images.add(service(name)["image"])
    assert DOCKERFILE.is_file()
    assert len(images) == 1


def test_web_and_worker_share_one_environment_block():
    raw = compose()
    assert "x-app-env" in raw
    assert service("web")["environment"] == service("worker")["environment"] == raw["x-app-env"]
    assert "x-app-env" in COMPOSE_FILE.read_text()
    assert "*app-env" in COMPOSE_FILE.read_text()


def test_compose_commands_name_modules_that_exist():
    app, options = gunicorn_invocation(compose_gunicorn_argv())
    assert app == "trustrag_site.wsgi"
    assert importlib.util.find_spec(app) is not None
    assert callable(importlib.import_module(app).application)

    config = options["--config"]
    assert config == "python:trustrag_site.gunicorn_conf"
    config_module = config.removeprefix("python:")
    assert importlib.util.find_spec(config_module) is not None
    assert callable(importlib.import_module(config_module).post_worker_init)

    celery_apps = set()
    for argv in [*command_argv(service("worker")["command"]), *command_argv(service("worker")["healthcheck"]["test"])]:
        assert argv[0] == "celery"
        celery_apps.add(argv[argv.index("-A") + 1])
    assert celery_apps == {"trustrag_site"}
    assert importlib.util.find_spec("trustrag_site") is not None
    # the lookup `celery -A trustrag_site` itself performs
    assert isinstance(find_app("trustrag_site"), Celery)


def test_every_manage_py_command_in_the_compose_file_and_dockerfile_is_a_real_management_command():
    texts = [*all_strings(compose()), DOCKERFILE.read_text()]
    named = {name for text in texts for name in re.findall(r"manage\.py\s+([\w-]+)", text)}
    assert {"migrate", "collectstatic"} <= named
    available = get_commands()
    assert {name for name in named if name not in available} == set()


def test_web_migrates_before_gunicorn_starts_and_only_if_migrate_succeeds():
    command = service("web")["command"]
    assert command[:2] == ["sh", "-c"]
    script = command[2]
    assert re.search(r"python manage\.py migrate --noinput\s*&&\s*exec gunicorn ", script), script
    assert next(argv[:3] for argv in command_argv(command)) == ["python", "manage.py", "migrate"]


def test_the_image_and_compose_start_gunicorn_identically_on_the_published_port():
    image_app, image_options = gunicorn_invocation(dockerfile_cmd())
    compose_app, compose_options = gunicorn_invocation(compose_gunicorn_argv())
    assert (image_app, image_options) == (compose_app, compose_options)
    assert compose_options["--bind"] == "0.0.0.0:8000"
    assert "8000:8000" in service("web")["ports"]
    assert "EXPOSE 8000" in DOCKERFILE.read_text()


def test_the_worker_runs_celery_with_two_threads():
    (argv,) = command_argv(service("worker")["command"])
    assert argv[:4] == ["celery", "-A", "trustrag_site", "worker"]
    assert argv[argv.index("--pool") + 1] == "threads"
    assert argv[argv.index("--concurrency") + 1] == "2"


def test_every_service_but_db_and_redis_has_a_healthcheck_and_waits_for_healthy_backing_services():
    services = compose()["services"]
    for name in set(services) - set(BACKING_SERVICES):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert {backing: depends[backing]["condition"] for backing in BACKING_SERVICES} == {
            "db": "service_healthy",
            "redis": "service_healthy",
        }
    assert command_argv(services["db"]["healthcheck"]["test"])[0][0] == "pg_isready"
    assert command_argv(services["redis"]["healthcheck"]["test"]) == [["redis-cli", "ping"]]


def test_app_services_mount_the_uploads_volume_at_the_media_root_they_are_given():
    for name in APP_SERVICES:
        media_root = app_environment(name, {"SECRET_KEY": "x"})["MEDIA_ROOT"]
        assert media_root == "/data/media"
        assert f"uploads:{media_root}" in service(name)["volumes"]
    # an empty named volume takes the ownership of the image's directory
    assert re.search(r"mkdir -p /data/media", DOCKERFILE.read_text())
    assert re.search(r"chown -R trustrag:trustrag /data\b", DOCKERFILE.read_text())


def test_compose_defaults_point_the_app_at_the_compose_db_and_redis():
    env = app_environment("web", {"SECRET_KEY": "x"})
    db = service("db")["environment"]
    database = urlsplit(env["DATABASE_URL"])
    assert database.hostname == "db"
    assert database.port == 5432
    assert (database.username, database.password, database.path.lstrip("/")) == (
        db["POSTGRES_USER"],
        db["POSTGRES_PASSWORD"],
        db["POSTGRES_DB"],
    )
    redis = urlsplit(env["REDIS_URL"])
    assert (redis.scheme, redis.hostname, redis.port) == ("redis", "redis", 6379)
    assert env["DEBUG"] == "0"


def test_compose_refuses_to_start_without_a_secret_key():
    with pytest.raises(LookupError, match="set SECRET_KEY"):
        app_environment("web", {})
    assert app_environment("web", {"SECRET_KEY": "s3cret"})["SECRET_KEY"] == "s3cret"


def test_every_environment_variable_passed_to_web_and_worker_is_read_by_the_settings():
    read = settings_variables()
    assert {"MEDIA_ROOT", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "DEBUG"} <= read
    for name in APP_SERVICES:
        passed = set(service(name)["environment"])
        assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "MEDIA_ROOT"} <= passed
        assert passed - read == set(), f"{name} passes variables the settings never read"
    image_settings = set(dockerfile_env()) - {
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PIP_NO_CACHE_DIR",
        "PIP_DISABLE_PIP_VERSION_CHECK",
    }
    assert image_settings - read == {"DJANGO_SETTINGS_MODULE"}


def test_django_settings_modules_referenced_exist():
    referenced = re.findall(r"DJANGO_SETTINGS_MODULE[=:]\s*([\w.]+)", DOCKERFILE.read_text() + COMPOSE_FILE.read_text())
    assert referenced, "the image should name its settings module"
    for module in referenced:
        assert importlib.util.find_spec(module) is not None, module
    assert set(referenced) == {os.environ.get("DJANGO_SETTINGS_MODULE", "trustrag_site.settings")}


def test_the_compose_environment_loads_the_settings_without_starting_embedded_services(tmp_path):
    env = app_environment("web", {"SECRET_KEY": "compose-test-key"})
    probe = (
        "import json; from django.conf import settings as s; "
        "db = s.DATABASES['default']; "
        "print(json.dumps({'host': db['HOST'], 'port': db['PORT'], 'name': db['NAME'], 'redis': s.REDIS_URL, "
        "'embedded': s.USES_EMBEDDED_SERVICES, 'debug': s.DEBUG, 'media': str(s.MEDIA_ROOT), 'hosts': s.ALLOWED_HOSTS, "
        "'secret': s.SECRET_KEY}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=clean_env(
            **env,
            DJANGO_SETTINGS_MODULE="trustrag_site.settings",
            TRUSTRAG_VAR_DIR=str(tmp_path / "var"),
            STATIC_ROOT=str(tmp_path / "static"),
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {
        "host": "db",
        "port": "5432",
        "name": "trustrag",
        "redis": "redis://redis:6379/0",
        "embedded": False,
        "debug": False,
        "media": "/data/media",
        "hosts": ["localhost", "127.0.0.1"],
        "secret": "compose-test-key",
    }
    assert not (tmp_path / "var").exists(), "the settings started an embedded service"


# --- health checks -----------------------------------------------------------


class _Healthz(BaseHTTPRequestHandler):
    status = 200
    hosts: list[str] = []

    def do_GET(self):
        type(self).hosts.append(self.headers["Host"])
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_healthz():
    handler = type("Handler", (_Healthz,), {"status": 200, "hosts": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, handler
    server.shutdown()
    server.server_close()


def run_web_healthcheck(port: int, allowed_hosts: str) -> subprocess.CompletedProcess:
    test = service("web")["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3]
    assert "http://127.0.0.1:8000/healthz" in code
    return subprocess.run(
        [sys.executable, "-c", code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")],
        env=clean_env(ALLOWED_HOSTS=allowed_hosts),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "allowed_hosts",
    ["localhost,127.0.0.1", "trustrag.example.com", ".example.com,localhost", "*"],
)
def test_the_web_healthcheck_passes_on_200_with_a_host_django_allows(fake_healthz, allowed_hosts):
    server, handler = fake_healthz
    result = run_web_healthcheck(server.server_address[1], allowed_hosts)
    assert result.returncode == 0, result.stderr
    (host,) = handler.hosts
    domain, _port = split_domain_port(host)  # as HttpRequest.get_host() does
    assert validate_host(domain, [h.strip() for h in allowed_hosts.split(",")]), host


def test_the_web_healthcheck_fails_when_healthz_answers_503(fake_healthz):
    server, handler = fake_healthz
    handler.status = 503
    result = run_web_healthcheck(server.server_address[1], "localhost")
    assert result.returncode != 0
    assert "503" in result.stderr


def test_the_worker_healthcheck_pings_this_worker_by_its_node_name():
    test = service("worker")["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL"  # the shell expands $HOSTNAME, the default node name's host part
    (argv,) = command_argv([test[0], interpolate(test[1], {})])
    assert argv[:5] == ["celery", "-A", "trustrag_site", "inspect", "ping"]
    assert argv[argv.index("--destination") + 1] == "celery@$HOSTNAME"


def test_the_worker_healthcheck_command_is_valid_and_fails_when_no_worker_answers():
    (argv,) = command_argv(["CMD-SHELL", interpolate(service("worker")["healthcheck"]["test"][1], {})])
    argv = [a.replace("$HOSTNAME", "no-such-host") for a in argv]
    argv[argv.index("--timeout") + 1] = "1"
    db = settings.DATABASES["default"]
    result = subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=ROOT,
        env=clean_env(
            DATABASE_URL=f"postgresql://{db['USER']}:{db['PASSWORD']}@/{db['NAME']}?host={db['HOST']}",
            REDIS_URL=settings.REDIS_URL,
            SECRET_KEY="healthcheck-test-key",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "No nodes replied" in result.stdout + result.stderr, result.stdout + result.stderr


# --- the Dockerfile ----------------------------------------------------------


def test_dockerfile_installs_cpu_torch_first_then_requirements():
    runs = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "RUN"]
    torch = [i for i, run in enumerate(runs) if re.search(r"pip install .*torch==", run)]
    requirements = [i for i, run in enumerate(runs) if "pip install -r requirements.txt" in run]
    assert len(torch) == 1
    assert len(requirements) == 1
    assert torch[0] < requirements[0]
    assert TORCH_CPU_INDEX in runs[torch[0]]
    assert TORCH_CPU_INDEX not in runs[requirements[0]]
    pinned = re.search(r"^torch==\S+", (ROOT / "requirements.txt").read_text(), re.MULTILINE).group(0)
    assert re.search(r"torch==\S+", runs[torch[0]]).group(0) == pinned == "torch==2.13.0"


def test_dockerfile_uses_python_311_slim_and_runs_as_a_non_root_user():
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    users = [arguments for keyword, arguments in instructions if keyword == "USER"]
    assert users
    assert users[-1] not in ("root", "0")
    assert re.search(rf"useradd .*\b{users[-1]}\b", DOCKERFILE.read_text())
    keywords = [keyword for keyword, _ in instructions]
    assert keywords.index("USER") > max(i for i, keyword in enumerate(keywords) if keyword == "RUN")


def test_dockerfile_build_placeholders_never_reach_a_running_container():
    env, command = collectstatic_step()
    assert command == ["python", "manage.py", "collectstatic", "--noinput"]
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= set(env)
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}.isdisjoint(dockerfile_env())


def test_the_dockerfile_collectstatic_step_runs_without_starting_embedded_services(tmp_path):
    env, command = collectstatic_step()
    static_root = tmp_path / "static"
    result = subprocess.run(
        [sys.executable, *command[1:]],
        cwd=ROOT,
        env=clean_env(
            **env,
            DJANGO_SETTINGS_MODULE=dockerfile_env()["DJANGO_SETTINGS_MODULE"],
            STATIC_ROOT=str(static_root),
            TRUSTRAG_VAR_DIR=str(tmp_path / "var"),
        ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert (static_root / "app.css").is_file()
    assert (static_root / "admin").is_dir()
    assert not (tmp_path / "var").exists(), "collectstatic started an embedded service"


def test_dockerignore_keeps_local_state_out_but_lets_the_project_in():
    patterns = [line.strip() for line in DOCKERIGNORE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    for required in (".venv", "var", ".git", "tests", "bench", "training"):
        assert required in patterns
    assert any("__pycache__" in pattern for pattern in patterns)
    needed = ["requirements.txt", "manage.py", "trustrag_site", "apps", "static", "templates"]
    for path in needed:
        assert (ROOT / path).exists()
        assert not any(Path(path).match(pattern.removeprefix("**/")) for pattern in patterns), path
