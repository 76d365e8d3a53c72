"""A hostile client on every write path, none of them listed by hand: the API operations come
from the URLconf (`get_resolver()`) and the OpenAPI schema generated from it, the page forms
from the pages as they are rendered, the uploads from the kinds the product accepts
(`parsing.SUPPORTED_EXTENSIONS`, `evals.formats.FORMATS`). Each gets NUL, lone surrogates,
control and right-to-left characters, deep nesting, huge values and wrong types (tests/hostile.py).

What a user would notice if it broke: no answer is a 5xx; every refusal is a 4xx with a message
— in the API's error shape, or on the page's form — and leaves the row count of every table as
it was; text no field may keep (NUL, lone surrogates, control characters) and a wrong JSON type
are refused wherever they are sent. Each request runs in a savepoint rolled back afterwards, so
every case meets the same workspace."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache, partial
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve, reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.views import APIView

from apps.documents import services as documents
from apps.documents.models import Document, DocumentStatus
from apps.evals.formats import FORMATS
from apps.pipeline.parsing import SUPPORTED_EXTENSIONS
from apps.sources.models import Source
from tests import hostile
from tests.factories import AuditRecordFactory, DocumentFactory, EvalRunFactory, EvalSetFactory, InvitationFactory, QueryRunFactory

WRITE_METHODS = ("post", "put", "patch", "delete")
UPLOAD_LIMIT = 100_000


# --- what the URLconf holds ----------------------------------------------------------------------------


@cache
def routes() -> dict[str, tuple[str, Callable]]:
    """Every named route: name → (its pattern, its view)."""
    found = {}

    def walk(patterns, prefix: str = "") -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif pattern.name:
                found[pattern.name] = (prefix + str(pattern.pattern), pattern.callback)

    walk(get_resolver().url_patterns)
    return found


def api_operations() -> list[tuple[str, str]]:
    """(route name, method) of every write an API view of the workspaces' API answers."""
    found = []
    for name, (route, view) in routes().items():
        view_class = getattr(view, "view_class", None)
        if route.startswith("api/v1/workspaces/") and view_class and issubclass(view_class, APIView):
            found += [(name, method) for method in WRITE_METHODS if hasattr(view_class, method)]
    return found


def page_routes() -> list[str]:
    """Every page of a workspace (its slug in the URL), and the workspace list."""
    return [name for name, (route, _) in routes().items() if route.startswith("w/")]


@cache
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def schema_operation(name: str, method: str) -> dict:
    path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", routes()[name][0])
    return schema()["paths"][path][method]


def body_fields(operation: dict, content_type: str) -> dict[str, dict]:
    """The request body's properties for `content_type`, from the schema; {} when it takes no body."""
    body = operation.get("requestBody", {}).get("content", {}).get(content_type)
    if not body:
        return {}
    component = _component(body["schema"])
    return {name: _resolved(prop) | {"required": name in component.get("required", [])} for name, prop in component["properties"].items()}


def _component(ref: dict) -> dict:
    return schema()["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def _resolved(prop: dict) -> dict:
    """A property with its `type` and `enum` read through the schema's $ref / allOf / oneOf."""
    for combined in ("allOf", "oneOf"):
        if combined in prop:
            return prop | _resolved(prop[combined][0])
    return prop | _component(prop) if "$ref" in prop else prop


def test_the_walks_cover_every_write_route_of_the_urlconf():
    """A new endpoint, page or upload kind is walked without anyone adding it here."""
    operations = api_operations()
    assert len(operations) >= 15, operations
    for name, method in operations:
        assert schema_operation(name, method), f"{method.upper()} {name} is missing from the schema"
    assert {"workspace_list", "ask", "documents", "evaluations", "members", "api_keys_page", "workspace_settings"} <= set(page_routes())
    assert {".pdf", ".docx", ".txt"} <= set(SUPPORTED_EXTENSIONS)
    assert {".jsonl", ".csv", ".json"} <= set(FORMATS)


# --- the workspace every case meets --------------------------------------------------------------------


@pytest.fixture
def world(personas, settings, tmp_path):
    settings.API_THROTTLE_RATE = "1000000/min"  # the limit is tested elsewhere; here every request must arrive
    settings.UPLOAD_MAX_BYTES = UPLOAD_LIMIT
    settings.MEDIA_ROOT = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # hostile logins cost no key stretching
    a = personas.workspace_a
    run = QueryRunFactory(workspace=a)
    eval_set = EvalSetFactory(workspace=a, question_count=1, answerable_count=1)
    from apps.apikeys.services import apikey_create

    ids = {
        "slug": a.slug,
        "workspace_id": a.pk,
        "document_id": DocumentFactory(workspace=a, status=DocumentStatus.READY, batch="5b0c1c43-5f0e-4c36-9a8a-1f1d6f0c2b77").pk,
        "batch_id": "5b0c1c43-5f0e-4c36-9a8a-1f1d6f0c2b77",
        "membership_id": personas.member.pk,
        "key_id": apikey_create(workspace=a, actor=None, name="ci", role="member")[0].pk,
        "set_id": eval_set.pk,
        "record_id": AuditRecordFactory(workspace=a, query_run_id=run.pk).pk,
        "query_run": run.pk,
        "eval_run": EvalRunFactory(eval_set=eval_set).pk,
        "invitation_id": InvitationFactory(workspace=a, identifier="nina").pk,
        "source_id": Source.objects.create(workspace=a, kind="url", url="https://example.org/page", status="done").pk,
        "fmt": "csv",
    }
    api = Client(HTTP_AUTHORIZATION=f"Token {personas.token('owner')}")
    return {"ids": ids, "api": api, "page": personas.client("owner"), "personas": personas}


def url_of(name: str, ids: dict) -> str:
    params = get_resolver().reverse_dict.getlist(name)[0][0][0][1]
    run = ids["eval_run"] if "eval" in name else ids["query_run"]
    return reverse(name, kwargs={p: run if p == "run_id" else ids[p] for p in params})


# --- sending, and what every answer must be ------------------------------------------------------------

TABLES = sorted(
    {
        m._meta.db_table
        for m in apps.get_models()
        if m._meta.app_label in {"core", "workspaces", "audits", "apikeys", "documents", "queries", "evals", "auth"}
    }
)


def row_counts() -> tuple[int, ...]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f'(SELECT count(*) FROM "{table}")' for table in TABLES))
        return cursor.fetchone()


class Walk:
    """Sends each case in a savepoint and keeps what went wrong, so one test reports every case."""

    def __init__(self):
        self.problems: list[str] = []
        self.sent = 0

    def send(self, what: str, request: Callable, *, check: Callable | None = None, must_refuse: bool = False):
        self.sent += 1
        with transaction.atomic():
            before = row_counts()
            try:
                response = request()
            except Exception as exc:  # a page view's exception: what a person would get as a 500
                self.problems.append(f"{what}: raised {exc.__class__.__name__}: {str(exc)[:200]}")
                transaction.set_rollback(True)
                return None
            refused = 400 <= response.status_code < 500
            if response.status_code >= 500:
                self.problems.append(f"{what}: {response.status_code} {response.content[:300]!r}")
            elif must_refuse and not refused:
                self.problems.append(f"{what}: accepted ({response.status_code}), must be refused")
            elif refused and row_counts() != before:
                self.problems.append(f"{what}: refused ({response.status_code}) but rows were written")
            elif check is not None and (problem := check(response)):
                self.problems.append(f"{what}: {problem}")
            transaction.set_rollback(True)
        return response

    def assert_clean(self):
        assert self.sent > 0
        assert not self.problems, f"{len(self.problems)} of {self.sent} cases:\n" + "\n".join(self.problems[:60])


def api_error(response) -> str | None:
    """What is wrong with an API answer: a refusal must be the one error shape, with a message."""
    if response.status_code < 400:
        return None
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return f"a {response.status_code} outside the error shape: {response.content[:200]!r}"
    if set(error) != {"code", "message", "details"} or not error["message"]:
        return f"a {response.status_code} without a message: {error}"
    return None


def page_error(response) -> str | None:
    """A page's refusal must say what is wrong: a form error beside the field, the plain text of
    a refused export, or Django's own page for a request it cannot read."""
    if response.status_code < 400 or response.status_code in (403, 404, 405, 429):
        return None
    if response.status_code not in (400, 413):
        return f"an unexpected {response.status_code}"
    body = response.content.decode(errors="replace")
    plain = response.get("Content-Type", "").startswith("text/plain") and body.strip()
    if 'class="errorlist' in body or "Bad Request" in body or plain:
        return None
    return f"a {response.status_code} without a message on the page"


# --- the API: every field of every write, and whole bodies ----------------------------------------------


def must_refuse_json(prop: dict, hostile_name: str, *, text: bool) -> bool:
    """Whether the strict fields must refuse this value for this property."""
    kind = prop.get("type")
    if text:
        return kind in ("integer", "number", "boolean") or hostile_name in hostile.UNSTORABLE
    if kind == "string":
        return hostile_name not in ("a number as text", "true as text")
    if kind == "boolean":
        return hostile_name not in ("true", "false")
    return hostile_name not in ("a number", "a fraction", "a negative number")


def baseline(fields: dict[str, dict]) -> dict[str, str]:
    """Valid JSON for the required fields (and every switch on: `async` queues rather than answers)."""
    values = {}
    for name, prop in fields.items():
        if prop.get("enum"):
            values[name] = json.dumps(prop["enum"][-1])
        elif prop.get("type") == "boolean":
            values[name] = "true"
        elif prop["required"]:
            values[name] = json.dumps({"integer": 1, "number": 0.5}.get(prop.get("type"), "Harbour notes"))
    return values


def json_object(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(name)}: {value}" for name, value in values.items()) + "}"


@pytest.mark.parametrize(("name", "method"), api_operations(), ids=[f"{m.upper()} {n}" for n, m in api_operations()])
def test_every_api_write_answers_hostile_json_without_a_server_error(name, method, world):
    walk, url, api = Walk(), url_of(name, world["ids"]), world["api"]
    operation = schema_operation(name, method)
    fields = body_fields(operation, "application/json")
    base = baseline(fields)
    for field, prop in fields.items():
        for hostile_name, text in hostile.TEXT.items():
            body = json_object(base | {field: hostile.json_string(text)})
            must = must_refuse_json(prop, hostile_name, text=True)
            send_json(walk, f"{field} holding {hostile_name}", api, method, url, body, must)
        for hostile_name, raw in hostile.JSON_VALUES.items():
            must = must_refuse_json(prop, hostile_name, text=False)
            send_json(walk, f"{field} as {hostile_name}", api, method, url, json_object(base | {field: raw}), must)
    for body_name, body in hostile.JSON_BODIES.items():
        send_json(walk, f"a body that is {body_name}", api, method, url, body, bool(fields) and body_name != "an object nested 40 deep")
    walk.assert_clean()


def send_json(walk: Walk, what: str, api: Client, method: str, url: str, body: str, must_refuse: bool) -> None:
    data = body.encode("utf-8", "surrogatepass")
    walk.send(
        what, partial(api.generic, method.upper(), url, data, content_type="application/json"), check=api_error, must_refuse=must_refuse
    )


def test_api_writes_read_as_forms_refuse_what_cannot_be_stored(world):
    """The API also parses form bodies: text there goes through the same guard."""
    walk, api = Walk(), world["api"]
    for name, method in api_operations():
        fields = body_fields(schema_operation(name, method), "application/x-www-form-urlencoded")
        text_fields = [field for field, prop in fields.items() if prop.get("type") == "string"]
        for field in text_fields:
            base = {f: json.loads(v) for f, v in baseline(fields).items()}
            for hostile_name, text in hostile.TEXT.items():
                body = urlencode(base | {field: text}, encoding="utf-8", errors="surrogatepass").encode()
                must = hostile_name in hostile.UNSTORABLE - hostile.SURROGATES
                url = url_of(name, world["ids"])
                request = partial(api.generic, method.upper(), url, body, content_type="application/x-www-form-urlencoded")
                walk.send(f"{method.upper()} {name}: {field} holding {hostile_name}", request, check=api_error, must_refuse=must)
    walk.assert_clean()


# --- pages: every form each page renders, and a hostile POST to every page ------------------------------


class Forms(HTMLParser):
    """The forms of a page: method, action, and each field's name, kind and value."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"method": (attrs.get("method") or "get").lower(), "action": attrs.get("action") or "", "fields": {}})
        elif self.forms and tag in ("input", "textarea", "select") and attrs.get("name"):
            kind = attrs.get("type", "text") if tag == "input" else tag
            if kind not in ("submit", "checkbox", "radio") or "checked" in attrs:
                self.forms[-1]["fields"].setdefault(attrs["name"], {"kind": kind, "value": attrs.get("value") or ""})
            self._select = attrs["name"] if tag == "select" else None
        elif tag == "option" and self._select and self.forms:
            field = self.forms[-1]["fields"][self._select]
            if not field["value"] or "selected" in attrs:
                field["value"] = attrs.get("value") or ""


def rendered_forms(client: Client, url: str) -> list[dict]:
    response = client.get(url)
    if response.status_code != 200 or response.streaming:
        return []
    parser = Forms()
    parser.feed(response.content.decode())
    for form in parser.forms:
        form["url"] = form["action"].split("#")[0] or url
    return [f for f in parser.forms if resolve(f["url"]).url_name in page_routes()]


NUMBER_TEXT = {"NaN": "NaN", "1e400": "1e400", "fullwidth digits": "０.５", "hexadecimal": "0x10", "a 400-digit integer": "1" + "0" * 400}


def form_cases(form: dict) -> list[tuple[str, dict, bool]]:
    """(what, data, must be refused) for each field of a rendered form."""
    base = {name: field["value"] for name, field in form["fields"].items() if field["kind"] != "file"}
    cases = []
    for name, field in form["fields"].items():
        if name == "csrfmiddlewaretoken" or field["kind"] == "file":
            continue
        values = dict(hostile.TEXT) | (NUMBER_TEXT if field["kind"] == "number" else {"not one of the choices": "<none>"})
        for hostile_name, text in values.items():
            must = hostile_name in hostile.UNSTORABLE - hostile.SURROGATES and field["kind"] not in ("select", "hidden")
            cases.append((f"{name} holding {hostile_name}", base | {name: text}, must))
    return cases


def post_form(client: Client, url: str, data: dict, files: dict | None = None):
    """POST `data` as a browser would send it, lone surrogates as the bytes a broken encoder writes."""
    if files:
        return client.post(url, {name: as_received(value) for name, value in data.items()} | files)
    return client.generic("POST", url, _form_encoded(data).encode(), content_type="application/x-www-form-urlencoded")


def as_received(text: str) -> str:
    """Text as the server reads it from a multipart body: its bytes decoded with replacement
    (the test client cannot write a lone surrogate's bytes into a multipart body itself)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def get_form(client: Client, url: str, data: dict):
    return client.get(f"{url}?{_form_encoded(data)}")


def _form_encoded(data: dict) -> str:
    return urlencode(data, encoding="utf-8", errors="surrogatepass")


@pytest.mark.parametrize("name", page_routes())
def test_every_page_answers_hostile_form_values_without_a_server_error(name, world):
    walk, page = Walk(), world["page"]
    url = url_of(name, world["ids"])
    seen = set()
    for form in rendered_forms(page, url):
        key = (resolve(form["url"]).url_name, form["method"], tuple(sorted(form["fields"])))
        if key in seen:
            continue
        seen.add(key)
        file_fields = [n for n, f in form["fields"].items() if f["kind"] == "file"]
        for what, data, must in form_cases(form):
            if form["method"] == "get":
                walk.send(f"GET {form['url']}: {what}", partial(get_form, page, form["url"], data), check=page_error, must_refuse=must)
            else:
                request = partial(post_form, page, form["url"], data, {n: valid_file(n) for n in file_fields})
                walk.send(f"POST {form['url']}: {what}", request, check=page_error, must_refuse=must)
    for hostile_name, text in hostile.TEXT.items():  # and the page's own URL, whether or not a form posts there
        walk.send(f"POST {url}: a body holding {hostile_name}", partial(post_form, page, url, {"name": text, "x": text}), check=page_error)
    walk.assert_clean()


def valid_file(field: str) -> SimpleUploadedFile:
    """A file the form's file field takes, so that the hostile value is what is judged."""
    if field == "files":
        return SimpleUploadedFile("notes.txt", hostile.SENTENCE.encode())
    return SimpleUploadedFile("notes.jsonl", hostile.eval_file("jsonl", [hostile.VALID_ROW]))


def test_read_only_pages_answer_405_to_other_methods_and_still_serve_head(world):
    page, ids = world["page"], world["ids"]
    read_only = {"workspace_home", "answer", "audit_list", "audit_detail", "audit_events", "audit_export", "eval_set", "eval_run"}
    assert read_only <= set(page_routes())
    for name in read_only:
        url = url_of(name, ids)
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            assert page.generic(method, url, b"q=1", content_type="application/x-www-form-urlencoded").status_code == 405, (method, name)
        assert page.head(url).status_code in (200, 302), name


def test_the_login_page_answers_hostile_usernames_and_passwords_without_a_server_error(world):
    walk = Walk()
    for field in ("username", "password"):
        for hostile_name, text in hostile.TEXT.items():
            data = {"username": "olivia", "password": "wrong password"} | {field: text}
            walk.send(f"login {field} holding {hostile_name}", partial(post_form, Client(), reverse("login"), data), check=page_error)
    walk.assert_clean()


# --- uploads: every kind the product accepts, with hostile content and names -----------------------------


def document_cases(extension: str) -> dict[str, tuple[str, bytes, bool]]:
    """name → (file name, content, must be refused at upload)."""
    cases = {
        f"text holding {name}": (f"hostile{extension}", hostile.document_bytes(extension, text), False)
        for name, text in hostile.TEXT.items()
    }
    cases |= {
        f"a file name with {name}": (pattern.format(ext=extension), hostile.document_bytes(extension, "ok"), False)
        for name, pattern in hostile.FILE_NAMES.items()
    }
    cases["an empty file"] = (f"empty{extension}", b"", True)
    cases["a file over the size limit"] = (f"big{extension}", b"x" * (UPLOAD_LIMIT + 1), True)
    cases["the content of another kind"] = (
        f"other{extension}",
        hostile.document_bytes(".pdf" if extension != ".pdf" else ".docx", "ok"),
        False,
    )
    if extension == ".pdf":
        broken_map = b"2 beginbfchar <41> <D800> <42> <0000> endbfchar"  # a font map yielding a lone surrogate and NUL
        cases["a font map yielding a lone surrogate and NUL"] = (
            "broken-font.pdf",
            hostile.pdf_bytes("AB AB", to_unicode=broken_map),
            False,
        )
    if extension == ".docx":
        cases["XML nested 100,000 deep"] = ("deep.docx", hostile.deep_docx(100_000), False)
    return cases


def eval_cases(extension: str) -> dict[str, tuple[str, bytes, bool]]:
    kind = FORMATS[extension]
    fields = [f for f in hostile.VALID_ROW if kind != "squad" or f != "expected_source"]
    cases = {}
    for field in fields:
        for name, text in hostile.TEXT.items():
            refuse = name in hostile.UNSTORABLE or field == "answerable" or (field == "question" and name in ("blank", "huge"))
            cases[f"{field} holding {name}"] = (
                f"set{extension}",
                hostile.eval_file(kind, [hostile.VALID_ROW, hostile.VALID_ROW | {field: text}]),
                refuse,
            )
        for name, value in hostile.WRONG_TYPES.items():
            rows = [hostile.VALID_ROW, hostile.VALID_ROW | {field: value}]
            # A CSV holds only text: 123 is the question "123". A missing expected answer or source is none.
            refuse = (field == "answerable" and value is not True) or (field == "question" and kind != "csv")
            cases[f"{field} as {name}"] = (f"set{extension}", hostile.eval_file(kind, rows), refuse)
    if kind != "csv":  # JSON keys: the API refuses these in a request body, and so does an evaluation set
        for name in sorted(hostile.UNSTORABLE):
            key = hostile.json_string(hostile.TEXT[name]).encode()
            data = hostile.eval_file(kind, [hostile.VALID_ROW]).replace(b'"question"', key + b': 1, "question"', 1)
            cases[f"a key holding {name}"] = (f"key{extension}", data, True)
    deep = b"[" * 100_000 + b"]" * 100_000
    cases |= {
        "nested 100,000 deep": (f"deep{extension}", deep if kind != "csv" else b"question,answerable\n" + deep + b",true", kind != "csv"),
        "NaN and Infinity": (f"nan{extension}", b'{"question": NaN, "answerable": Infinity}', True),
        "a NUL byte": (f"nul{extension}", hostile.eval_file(kind, [hostile.VALID_ROW]).replace(b"glow", b"gl\x00ow"), True),
        "bytes that are not UTF-8": (f"latin{extension}", hostile.eval_file(kind, [hostile.VALID_ROW]).replace(b"glow", b"gl\xffow"), True),
        "an empty file": (f"empty{extension}", b"", True),
        "over the size limit": (f"big{extension}", b"x" * (UPLOAD_LIMIT + 1), True),
        "more questions than a set holds": (f"many{extension}", hostile.eval_file(kind, [hostile.VALID_ROW] * 5001), True),
    }
    if kind == "csv":
        cases["a row longer than its header"] = ("extra.csv", b"question,answerable\nWhen?,true,surplus,more\n", False)
    cases |= {
        f"a file name with {name}": (pattern.format(ext=extension), hostile.eval_file(kind, [hostile.VALID_ROW]), False)
        for name, pattern in hostile.FILE_NAMES.items()
    }
    return cases


UPLOADS = [("documents", ext) for ext in SUPPORTED_EXTENSIONS] + [("evaluations", ext) for ext in FORMATS]


@pytest.mark.parametrize(("target", "extension"), UPLOADS, ids=[f"{t} {e}" for t, e in UPLOADS])
def test_every_upload_kind_answers_hostile_files_without_a_server_error(target, extension, world):
    walk, ids = Walk(), world["ids"]
    api_url = reverse("api_documents" if target == "documents" else "api_eval_sets", args=[ids["workspace_id"]])
    page_url = reverse(target, args=[ids["slug"]])
    field = "files" if target == "documents" else "file"
    cases = document_cases(extension) if target == "documents" else eval_cases(extension)
    for what, (filename, data, must) in cases.items():
        check = _ingests_cleanly(world) if target == "documents" else api_error
        walk.send(
            f"API {extension}: {what}",
            partial(world["api"].post, api_url, {field: SimpleUploadedFile(filename, data)}),
            check=check,
            must_refuse=must,
        )
        walk.send(
            f"page {extension}: {what}",
            partial(world["page"].post, page_url, {field: SimpleUploadedFile(filename, data)}),
            check=page_error,
            must_refuse=must,
        )
    walk.assert_clean()


def _ingests_cleanly(world) -> Callable:
    """An accepted document is ingested (in this process, in the savepoint) to `ready` or to
    `failed` with a message naming it — never an exception — and what it stored is text."""

    def check(response) -> str | None:
        body = response.json()
        if "results" not in body:
            return api_error(response) or (None if response.status_code >= 400 else "no per-file results")
        for result in body["results"]:
            if "error" in result:
                if not result["error"].get("message"):
                    return f"a refused file without a message: {result}"
                continue
            if not result["created"]:
                continue
            try:
                document = documents.document_ingest(workspace=world["personas"].workspace_a, document_id=result["document"]["id"])
            except Exception as exc:
                return f"ingestion raised {exc.__class__.__name__}: {str(exc)[:200]}"
            if document.status == DocumentStatus.FAILED and document.filename not in document.error:
                return f"failed without naming the file: {document.error!r}"
            if document.status == DocumentStatus.READY and not Document.objects.get(pk=document.pk).chunk_count:
                return "ready without chunks"
        return None

    return check


def multipart_operations() -> list[tuple[str, str, dict]]:
    found = []
    for name, method in api_operations():
        fields = body_fields(schema_operation(name, method), "multipart/form-data")
        if fields and not body_fields(schema_operation(name, method), "application/json"):
            found.append((name, method, fields))
    return found


def test_multipart_uploads_take_hostile_text_fields_and_files_in_the_wrong_fields(world):
    """The upload endpoints' other fields (an evaluation set's name), a text where the file
    belongs and a file where text belongs."""
    walk, api = Walk(), world["api"]
    assert {name for name, _, _ in multipart_operations()} == {"api_documents", "api_eval_sets"}
    for name, _, fields in multipart_operations():
        url = url_of(name, world["ids"])
        files = {f: valid_file(f) for f, prop in fields.items() if _is_file(prop)}
        for field, prop in fields.items():
            if _is_file(prop):
                walk.send(
                    f"{name}: text where the file “{field}” belongs",
                    partial(api.post, url, {field: "not a file"}),
                    check=api_error,
                    must_refuse=True,
                )
                continue
            for hostile_name, text in hostile.TEXT.items():
                data = {f: valid_file(f) for f in files} | {field: as_received(text)}
                must = hostile_name in hostile.UNSTORABLE - hostile.SURROGATES
                walk.send(f"{name}: {field} holding {hostile_name}", partial(api.post, url, data), check=api_error, must_refuse=must)
            data = {f: valid_file(f) for f in files} | {field: SimpleUploadedFile("name.txt", b"a file, not a name")}
            walk.send(f"{name}: a file where “{field}” belongs", partial(api.post, url, data), check=api_error, must_refuse=True)
    walk.assert_clean()


def _is_file(prop: dict) -> bool:
    return prop.get("format") == "binary" or prop.get("items", {}).get("format") == "binary"
