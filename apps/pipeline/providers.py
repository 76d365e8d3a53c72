"""Answer generation behind one small interface, and the router that falls back from one
provider to the next: Groq and ZhipuAI through their own clients, the local extractive
provider always last."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from apps.pipeline.generation import INSUFFICIENT, Answerability, ExtractiveParams, local_extractive_answer
from apps.pipeline.prompting import UnusableOutput, messages_for, parse_answer, partial_answer, repair_messages
from apps.pipeline.types import Answer, Candidate

PROVIDERS = ("groq", "zhipuai", "local")
OnText = Callable[[str], None]
T = TypeVar("T")


@dataclass(frozen=True)
class GenerationRequest:
    question: str
    question_vector: np.ndarray
    sources: list[Candidate]
    max_claims: int


@dataclass(frozen=True)
class ProviderSpec:
    name: str  # one of PROVIDERS
    model: str
    api_key: str = field(default="", repr=False)
    base_url: str | None = None
    key_source: str = ""  # "workspace" or "server": whose key paid for the call


@dataclass(frozen=True)
class Attempt:
    provider: str
    model: str
    outcome: str  # "ok" | "failed" | "skipped" (no key)
    ms: float
    error_class: str = ""
    message: str = ""
    repaired: bool = False
    key_source: str = ""


class ProviderFailure(Exception):
    def __init__(self, error_class: str, message: str):
        super().__init__(message)
        self.error_class = error_class
        self.message = message


class ChatProvider:
    """An OpenAI-style chat API (Groq, ZhipuAI): JSON mode, streamed, one repair attempt."""

    def __init__(self, spec: ProviderSpec, *, timeout_s: float):
        self.spec, self.name, self.model, self.timeout_s = spec, spec.name, spec.model, timeout_s
        self.repaired = False

    def generate(self, request: GenerationRequest, on_text: OnText) -> Answer:
        if not self.spec.api_key:
            raise ProviderFailure("MissingKey", f"no API key is configured for {self.name}")
        messages = messages_for(request.question, request.sources, request.max_claims)
        reply = self._complete(messages, on_text)
        try:
            return parse_answer(reply, max_claims=request.max_claims, provider=self.name)
        except UnusableOutput as first:
            self.repaired = True
            reply = self._complete(repair_messages(messages, reply, str(first)), on_text)
            try:
                return parse_answer(reply, max_claims=request.max_claims, provider=self.name)
            except UnusableOutput as second:
                raise ProviderFailure("UnusableOutput", f"unusable output after one repair: {second}") from second

    def chat(self, messages: list[dict]) -> str:
        """One JSON-mode reply, for the small jobs beside generation (query rewrite, judging)."""
        if not self.spec.api_key:
            raise ProviderFailure("MissingKey", f"no API key is configured for {self.name}")
        return self._complete(messages, lambda text: None)

    def _complete(self, messages: list[dict], on_text: OnText) -> str:
        deadline = time.monotonic() + self.timeout_s
        stream = self._client().chat.completions.create(
            model=self.model, messages=messages, stream=True, temperature=0, response_format={"type": "json_object"}
        )
        buffer = ""
        for chunk in stream:
            if time.monotonic() > deadline:
                raise ProviderFailure("Timeout", f"no complete reply within {self.timeout_s:g} s")
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                buffer += delta
                on_text(partial_answer(buffer))
        return buffer

    def _client(self):
        if self.name == "groq":
            from groq import Groq

            return Groq(api_key=self.spec.api_key, base_url=self.spec.base_url, timeout=self.timeout_s, max_retries=0)
        from zhipuai import ZhipuAI

        return ZhipuAI(api_key=self.spec.api_key, base_url=self.spec.base_url, timeout=self.timeout_s, max_retries=0)


class LocalProvider:
    """The local extractive provider: deterministic, offline, always available."""

    name, model = "local", "extractive"
    repaired = False

    def __init__(self, embedder, answerability: Answerability | None = None):
        self.embedder = embedder
        self.answerability = answerability

    def generate(self, request: GenerationRequest, on_text: OnText) -> Answer:
        params = ExtractiveParams(max_claims=request.max_claims)
        answer = local_extractive_answer(
            request.question_vector, request.sources, self.embedder, params, question=request.question, answerability=self.answerability
        )
        on_text(answer.text)
        return answer


class Router:
    """Tries each provider in turn; any failure moves on to the next, and every attempt is kept."""

    def __init__(self, providers: list, *, secrets: list[str]):
        self.providers = providers
        self.secrets = [s for s in secrets if s]

    def generate(self, request: GenerationRequest, on_text: OnText = lambda text: None) -> tuple[Answer, list[Attempt]]:
        attempts: list[Attempt] = []
        for provider in self.providers:
            started = time.perf_counter()
            try:
                answer = provider.generate(request, on_text)
            except Exception as exc:  # any failure of one provider means: ask the next
                skipped = isinstance(exc, ProviderFailure) and exc.error_class == "MissingKey"
                attempts.append(self._attempt(provider, started, "skipped" if skipped else "failed", exc))
                on_text("")
                continue
            attempts.append(self._attempt(provider, started, "ok"))
            return answer, attempts
        failure = Answer(text=INSUFFICIENT, claims=(), insufficient=True, provider="none")
        return failure, attempts

    def first_reply(self, messages: list[dict], read: Callable[[str], T]) -> tuple[T | None, list[Attempt]]:
        """The first LLM provider's reply that `read` accepts (it raises on anything else);
        None when no LLM provider is configured or all failed. The local provider cannot chat."""
        attempts: list[Attempt] = []
        for provider in self.providers:
            if not isinstance(provider, ChatProvider) or not provider.spec.api_key:
                continue
            started = time.perf_counter()
            try:
                value = read(provider.chat(messages))
            except Exception as exc:  # any failure of one provider means: ask the next
                attempts.append(self._attempt(provider, started, "failed", exc))
                continue
            attempts.append(self._attempt(provider, started, "ok"))
            return value, attempts
        return None, attempts

    @property
    def can_chat(self) -> bool:
        return any(isinstance(p, ChatProvider) and p.spec.api_key for p in self.providers)

    def _attempt(self, provider, started: float, outcome: str, exc: Exception | None = None) -> Attempt:
        ms = round((time.perf_counter() - started) * 1000, 1)
        error_class, message = ("", "") if exc is None else _describe(exc)
        key_source = getattr(getattr(provider, "spec", None), "key_source", "")
        return Attempt(provider.name, provider.model, outcome, ms, error_class, self.scrub(message), provider.repaired, key_source)

    def scrub(self, text: str) -> str:
        """A message safe to store and show: no key, no bearer token."""
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        text = re.sub(r"(?i)(bearer\s+)[^\s'\",]+", r"\1[redacted]", text)
        return re.sub(r"\b(gsk|sk|tvly)[-_][A-Za-z0-9_\-]{8,}", "[redacted]", text)


def _describe(exc: Exception) -> tuple[str, str]:
    if isinstance(exc, ProviderFailure):
        return exc.error_class, exc.message
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    name = exc.__class__.__name__
    message = " ".join(str(exc).split())[:300]
    if status:
        message = f"HTTP {status}: {message}"
    return name, message
