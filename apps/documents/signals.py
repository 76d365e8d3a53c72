"""What other apps hear of a document's text changing, so answers that cite it can notice.

Sent with `workspace` and `document_id`, inside the transaction that changed the document:
after a re-index wrote its new chunks (the text may or may not differ) and after a delete."""

from __future__ import annotations

from django.dispatch import Signal

document_text_changed = Signal()
