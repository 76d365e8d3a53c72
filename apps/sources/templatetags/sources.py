"""Where a cited document came from, beside its name wherever a citation is shown: "PMID 27633186"
linking to the article's PubMed page, or a web page's URL (documents and queries sit below
sources and do not import it)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from apps.sources.selectors import source_items_for_documents

register = template.Library()


@register.simple_tag(takes_context=True)
def cited_origin(context, document_id) -> str:
    request = context.get("request")
    workspace = getattr(request, "workspace", None)
    if workspace is None or not document_id:
        return ""
    cache = context.render_context.setdefault("cited_origins", {})
    key = str(document_id)
    if key not in cache:
        cache.update(source_items_for_documents(workspace=workspace, document_ids=[key]))
        cache.setdefault(key, None)
    item = cache[key]
    if item is None:
        return ""
    return format_html(' <a class="origin" href="{}" rel="noopener noreferrer nofollow">{}</a>', item.link, item.citation)
