from __future__ import annotations


class ApplicationError(Exception):
    """A failure a person can act on. Views turn it into a form error or a
    message, the API into a 4xx with the one error shape — each in one place."""

    def __init__(self, message: str, *, status: int = 400, code: str = "invalid", field: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
