"""Results as text for people and JSON for tools: the only place output formats live."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memdex.models import Hit, SearchResult
from memdex.query.period import days, describe
from memdex.query.ranking import LAYER_NAMES

if TYPE_CHECKING:
    from memdex.answer.answers import Answer


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _n(value: int) -> str:
    return f"{value:,}"


def _count(value: int, word: str, plural: str = "") -> str:
    "``1 chunk``, ``2 chunks``, ``1,024 files``: a number and its noun, agreeing."
    return f"{value:,} {word if value == 1 else plural or word + 's'}"


ECHO = 80  # characters of the query a text header repeats; JSON keeps it whole


def _echo(query: str) -> str:
    "The query as a header repeats it: a pasted page is cut to its first ECHO characters."
    return repr(query if len(query) <= ECHO else query[:ECHO] + "…")


def results_text(result: SearchResult) -> str:
    "The SEARCH layout: found N, showing M, which layer, total tokens; then one block a hit."
    hits = result.hits
    layers = sorted({h.match_layer for h in hits})
    layer_text = ", ".join(f"layer {n} ({LAYER_NAMES[n]})" for n in layers) or "no layer matched"
    unit = "chunk" if result.granularity == "chunk" else "result"
    plural = "" if result.found == 1 and result.found_is_total else "s"
    count = _n(result.found) if result.found_is_total else f"{_n(result.found)}+"
    searched = result.searched
    head = (
        f"Found {count} {unit}{plural} for {_echo(searched)}, showing {len(hits)}"
        f" · {layer_text} · ~{_count(result.total_tokens, 'token')}"
    )
    lines = [head]
    said = None
    if searched != result.query and result.typos:  # typos searched instead: said before anything else
        said = result.typos["note"]
        why = result.typos["why"]
        lines.insert(0, f"Showing results for {_echo(searched)} instead of {_echo(result.query)} ({why})")
    meaning = result.semantic or {}
    if meaning.get("used"):
        found, model, ms = meaning["found"], meaning["model"], meaning["ms"]
        lines.append(f"Meaning: {_count(found, 'near passage')} by {model} in {ms:.0f} ms")
    if result.filters:
        lines.append("Filters: " + ", ".join(_filter_text(k, v) for k, v in result.filters.items()))
    for note in result.notes:
        if note != said:
            lines.append(f"Note: {note}")
    if result.related_words:
        lines.append("Related words, from the best-matching messages: " + ", ".join(result.related_words))
    if result.themes:
        lines.append("Themes: " + themes_text(result.themes))
    if result.truncated_by_budget and hits:
        lines.append(_left_out_text(result.left_out))
    for i, h in enumerate(hits, 1):
        meta = " · ".join(x for x in [h.kind, h.namespace or "", _day(h), h.key] if x)
        lines += [
            "",
            f"{i:>2}. {h.title}",
            f"    {meta}",
            f"    {_count(h.size_bytes, 'byte')}, ~{_count(h.est_tokens, 'token')}"
            f" · relevance {h.relevance:.2f}",
            f"    why: {h.why_relevant['summary']}",
        ]
        if h.snippet:
            lines.append(f"    {h.snippet}")
        if h.chat:
            signals = [name[4:] for name, on in h.chat["signals"].items() if on]
            messages = _count(h.chat["message_count"], "message") if h.chat["message_count"] else "? messages"
            lines.append(
                f"    {h.platform or h.kind} chat · {messages}, "
                f"{_count(h.chat['chunk_count'], 'chunk')}" + (f" · {', '.join(signals)}" if signals else "")
            )
        lines.append(f"    read: {h.location or h.place or h.path}")
        if h.resume:
            lines.append(f"    resume: {h.resume['command']}")
        if h.source_deleted:
            lines.append(f"    source deleted {h.source_deleted[:10]}; kept in the index")
        if len(h.matching_chunks) > 1 and result.granularity != "chunk":
            lines.append(f"    {len(h.matching_chunks)} matching chunks")
    if not hits and result.truncated_by_budget:
        lines += ["", "Nothing shown: the first result alone is over the --max-tokens budget."]
    elif not hits:
        lines += ["", "Nothing matched. Try fewer or other words, or drop a filter."]
    if result.patterns:
        lines += ["", patterns_text(result.patterns)]
    return "\n".join(lines)


def _left_out_text(left: list[dict[str, Any]], shown: int = 5) -> str:
    "What the budget left out, and how to get it."
    if not left:
        return "Stopped at the --max-tokens budget; raise it to see more."
    tokens = sum(x["estimated_tokens"] for x in left)
    named = []
    for x in left[:shown]:
        messages = [n + 1 for n in x["messages"]]  # 1-based, as a location's "(messages 2-5)"
        listed = ", ".join(map(str, messages[:6])) + (", …" if len(messages) > 6 else "")
        said = f", {'message' if len(messages) == 1 else 'messages'} {listed}" if messages else ""
        named.append(f"{x['title']} (id {x['id']}{said})")
    more = f" and {len(left) - shown} more" if len(left) > shown else ""
    return (
        f"Left out by the --max-tokens budget (about {tokens:,} tokens more): {'; '.join(named)}{more}."
        " Read one with `memdex show ID`, or raise --max-tokens."
    )


def _day(hit: Hit) -> str:
    "A result's day, marked when it is only its file's modification time."
    day = (hit.date or "")[:10]
    return f"{day} (dated by file time)" if day and hit.date_source == "mtime" else day


def _filter_text(name: str, value: Any) -> str:
    if name == "dates":  # relative dates: the words, and the days they came to
        parts = [describe(value["words"], value["since"], value["until"])] if value["words"] else []
        if loose := value.get("loose"):
            said = days(loose["since"], loose["until"])
            parts.append(f"{' '.join(loose['words'])} ({said}, said loosely: first, not only)")
        return "dates=" + "; ".join(parts)
    return f"{name}={value}"


def themes_text(themes: list[dict[str, Any]]) -> str:
    "What a list is about, in one line: ``chatgpt 3 (platform) · deploy 2 (tag)``."
    return " · ".join(f"{t['term']} {t['count']} ({t['kind']})" for t in themes)


def patterns_text(patterns: list[dict[str, Any]]) -> str:
    "What the shown results share: ``Patterns noticed in the 10 results shown: deploy 4 (tag)…``."
    shown = patterns[0]["of"]
    return f"Patterns noticed in the {_count(shown, 'document')} shown: " + themes_text(patterns)


def search_sql(result: SearchResult) -> str:
    "Each layer's SQL with its parameters in place, ready to paste into sqlite3."
    blocks = []
    for run in result.layers:
        head = f"-- layer {run.layer} ({run.name}), {run.mode} terms: {run.found} found, {run.new} new"
        blocks.append(f"{head}\n{run.sql}")
    return "\n\n".join(blocks) if blocks else "-- no layer ran: the query has no words to search for"


def index_text(report: dict[str, Any]) -> str:
    "What a run did; ``skipped`` counts the problems it found (known ones: ``index_notices``)."
    roots = ", ".join(f"{r['path']} ({_root_kind(r)})" for r in report["roots"])
    new = [s for s in report["skipped"] if not s.get("known")]
    lines = [
        f"Indexed {roots}" if roots else "Indexed every root",
        f"{_count(report['seen'], 'file')}: {_n(report['added'])} added, {_n(report['updated'])} updated, "
        f"{_n(report['unchanged'])} unchanged, {_n(report['removed'])} removed, "
        + (f"{_n(report['kept_deleted'])} deleted and kept, " if report.get("kept_deleted") else "")
        + f"{_n(len(new))} skipped · {_count(report['documents'], 'document')} written "
        f"in {report['seconds']:.2f} s",
    ]
    return "\n".join(lines)


def meaning_text(meaning: dict[str, Any]) -> str:
    "What `memdex index` did for search by meaning after the words (its report's ``semantic``)."
    if meaning.get("skipped"):
        return f"Words only: {meaning['skipped']}"
    made = meaning["embedded"] + meaning["reused"]
    if not made:
        return "Meaning: every chunk has its vector"
    return f"Meaning: {_count(made, 'chunk')} embedded in {meaning['seconds']:.1f} s ({meaning['model']})"


def _root_kind(root: dict[str, Any]) -> str:
    "``note``, ``serena``; ``mixed: memory 2, note 3``; ``nothing memdex reads``."
    if root["kind"] == "mixed":
        return "mixed: " + ", ".join(f"{kind} {_n(n)}" for kind, n in root["holds"].items())
    return "nothing memdex reads" if root["kind"] == "none" else str(root["kind"])


def index_notices(report: dict[str, Any]) -> list[str]:
    "What a run has to tell besides its counts (stderr): notes, missing roots, known problems."
    lines = [f"Note: {note}." for note in report.get("notes", [])]
    for root in report.get("missing_roots", []):
        lines.append(
            f"Warning: root {root} is missing; its documents stay searchable until it returns. "
            f"If it moved or is gone for good: memdex roots remove {root}"
        )
    known = {s["file"] for s in report["skipped"] if s.get("known")}
    if known:
        lines.append(f"{_count(len(known), 'file')} with known problems: `memdex status` lists them.")
    return lines


def skipped_text(report: dict[str, Any]) -> str:
    "What this run could not index: whole files, and records inside indexed files (path#record)."
    skipped = [s for s in report["skipped"] if not s.get("known")]
    records = sum(1 for s in skipped if "#" in s["path"])
    files = len(skipped) - records
    parts = [_count(files, "file")] if files else []
    parts += [_count(records, "record")] if records else []
    lines = [f"Skipped {' and '.join(parts)}:"]
    lines += [f"  {s['path']}: {s['reason']}" for s in skipped]
    return "\n".join(lines)


def status_text(info: dict[str, Any]) -> str:
    c = info["counts"]
    d = info["database"]
    lines = [
        f"Index: {d['path']} ({_count(d['size_bytes'], 'byte')}, schema {d['schema_version']}, "
        f"SQLite {d['sqlite_version']})",
        f"{_count(c['documents'], 'document')}, {_count(c['chunks'], 'chunk')}, "
        f"{_count(c['topics'], 'topic')}, {_count(c['files'], 'file')}, "
        f"~{_count(c['est_tokens'], 'token')}, {_count(c['synonyms'], 'synonym')}",
    ]
    if c.get("source_deleted"):
        lines.append(
            f"Source deleted: {_count(c['source_deleted'], 'document')} kept in the index "
            "(memdex roots purge-deleted drops them)"
        )
    if info["kinds"]:
        lines.append("Kinds: " + ", ".join(f"{k['kind']} {_n(k['documents'])}" for k in info["kinds"]))
    lines += _writer_lines(info["writer"])
    if "server" in info:
        lines.append(_server_line(info["server"]))
    lines.append(_semantic_line(info["semantic"]))
    if "secrets" in info:
        lines.append(_secrets_line(info["secrets"]))
    lines.append("Roots:" if info["roots"] else "Roots: none yet (run `memdex index PATH`)")
    for r in info["roots"]:
        orphans = f", {_n(r['orphans'])} in no index (memdex lint)" if r.get("orphans") else ""
        missing = ", MISSING (memdex roots remove forgets it)" if r["state"] == "missing" else ""
        lines.append(
            f"  {r['path']}  {_root_kind(r)}, {r['scope']}, {_count(r['files'], 'file')}, "
            f"{_count(r['documents'], 'document')}{_deleted(r)}{orphans}, "
            f"indexed {r['indexed_at'] or 'never'}{missing}"
        )
    errors = info["errors"]
    note = " (skipped files keep their last good version; path#record is a record inside a file)"
    lines.append(f"Errors: {len(errors)}" + (note if errors else ""))
    for e in errors:
        lines.append(f"  {e['path']}: {e['reason']}")
    return "\n".join(lines)


def roots_text(roots: list[dict[str, Any]]) -> str:
    "`memdex roots`: one line a root, with its kind, counts and state."
    if not roots:
        return "No roots yet: `memdex index PATH` adds one."
    lines = []
    for r in roots:
        state = {"ok": "ok", "errors": f"{_count(r['errors'], 'problem')} (memdex status lists them)"}
        lines.append(
            f"{r['path']}  {_root_kind(r)} · {_count(r['files'], 'file')}, "
            f"{_count(r['documents'], 'document')}{_deleted(r)} · "
            + state.get(r["state"], f"missing: `memdex roots remove {r['path']}` forgets it")
        )
    return "\n".join(lines)


def _deleted(root: dict[str, Any]) -> str:
    """What a root keeps of deleted files, and whether it was told to (--keep-deleted or not);
    and that it keeps secrets, when it does (--keep-secrets)."""
    told = root.get("keep_deleted")
    setting = "" if told is None else " (keeps deleted files)" if told else " (drops deleted files)"
    kept = f", {_n(root['source_deleted'])} source deleted" if root.get("source_deleted") else ""
    secrets = " (keeps secrets: --keep-secrets)" if root.get("keep_secrets") else ""
    return kept + setting + secrets


def _secrets_line(secrets: dict[str, Any]) -> str:
    "`memdex status`: the secrets masked before they reached the index, by kind."
    line = f"Secrets masked: {_n(secrets['masked'])} in {_count(secrets['documents'], 'document')}"
    if secrets["by_kind"]:
        line += " (" + ", ".join(f"{k['kind']} {_n(k['masked'])}" for k in secrets["by_kind"]) + ")"
    if secrets["kept_by_roots"]:
        line += f"; kept as typed in {_count(len(secrets['kept_by_roots']), 'root')} (--keep-secrets)"
    return line


def purged_text(purged: dict[str, Any]) -> str:
    "What `memdex roots purge-deleted` dropped."
    where = f" of {purged['root']}" if purged["root"] else ""
    return (
        f"Purged {_count(purged['documents'], 'document')}{where} whose source was deleted: "
        f"{_count(purged['files'], 'file')}, {_count(purged['chunks'], 'chunk')} removed from the index."
    )


def forgotten_text(removed: dict[str, Any]) -> str:
    "What `memdex roots remove` removed."
    text = (
        f"Forgot {removed['path']}: {_count(removed['files'], 'file')}, "
        f"{_count(removed['documents'], 'document')}, {_count(removed['chunks'], 'chunk')}, "
        f"{_count(removed['vectors'], 'vector')} and {_count(removed['errors'], 'recorded problem')} removed."
    )
    if removed.get("outer_root"):
        text += f" Its files are under {removed['outer_root']}, whose next run indexes them again."
    return text


def _semantic_line(semantic: dict[str, Any]) -> str:
    "Meaning: which model, and how many chunks have its vectors; or why it is off."
    if not semantic["models"]:
        why = semantic["missing"] or "no vectors yet (`memdex index` or `memdex embed` makes them)"
        return f"Meaning: off, {why}"
    m = semantic["models"][0]
    have = "chunk has" if semantic["chunks"] == 1 else "chunks have"
    line = f"Meaning: {m['name']}, {_n(m['vectors'])} of {_n(semantic['chunks'])} {have} vectors"
    if not semantic["available"]:
        line += f" (off here: {semantic['missing']})"
    return line


def _writer_lines(writer: dict[str, Any]) -> list[str]:
    state = writer.get("watcher") or {}
    if writer["running"] and writer["role"] == "index":
        return [f"Writer: memdex index (pid {writer['pid']}) since {writer['since']}"]
    if not writer["running"]:
        stopped = state.get("stopped_at") or state.get("heartbeat_at")
        return ["Watcher: not running" + (f" (last seen {stopped})" if stopped else "")]
    lines = [
        f"Watcher: running (pid {writer['pid']}, since {writer['since']}), "
        f"last event {state.get('last_event_at') or 'none yet'}, "
        f"queue {state.get('queue', 0)}, lag {state.get('lag_s', 0):.2f} s"
    ]
    batch = state.get("last_batch")
    if batch:
        lines.append(
            f"  last batch {batch['at']}: {_count(batch['paths'], 'path')}, {batch['added']} added, "
            f"{batch['updated']} updated, {batch['removed']} removed in {batch['seconds']:.2f} s "
            f"(lag {batch['lag_s']:.2f} s)"
        )
    for error in state.get("errors", [])[-5:]:
        lines.append(f"  error {error['at']}: {error['message']}")
    return lines


def _server_line(server: dict[str, Any]) -> str:
    "memdex serve: where it answers and what it served, or when the last one stopped."
    if not server["running"]:
        stopped = server.get("stopped_at")
        return "Server: not running" + (f" (last stopped {stopped})" if stopped else "")
    requests = server.get("requests") or {}
    served = f"{_count(requests.get('cli', 0), 'command')} served"
    if server.get("http"):
        served += f", {_count(requests.get('http', 0), 'HTTP request')}"
    http = (
        f", HTTP at {server['http']}" + (" (token)" if server.get("token") else "")
        if server.get("http")
        else ""
    )
    mode = ", read-only" if server.get("read_only") else ""
    return (
        f"Server: {server.get('command', 'memdex serve')} (pid {server.get('pid')}, "
        f"since {server.get('started_at')}{mode}) "
        f"on {server.get('socket')}{http}; {served}"
    )


def synonyms_text(groups: list[dict[str, Any]]) -> str:
    "The plain synonym file format: `memdex synonyms list > file` re-imports as is."
    return "\n".join(f"{g['term']}: {', '.join(g['synonyms'])}" for g in groups)


def source_line(hit: Hit) -> str:
    "Where a source came from, in a few words: platform (or kind) and day."
    return " · ".join(x for x in [hit.platform or hit.kind, _day(hit)] if x)


def answer_text(answer: Answer) -> str:
    """The ANSWER layout, as markdown: summary, key findings by category, analysis, caveats,
    sources, paths to verify and the coverage of the search."""
    lines = [f"# {answer.question}", "", "## Summary", "", answer.summary]
    if answer.details:
        lines += ["", "## Key findings"]
        if answer.grouped_by and answer.grouped_by != "the model":
            lines += ["", f"_Grouped by the sources' {answer.grouped_by}: no model named the categories._"]
        for i, d in enumerate(answer.details, 1):
            if i == 1 or d.category != answer.details[i - 2].category:  # a category's first
                lines += ["", f"### {d.category}"] if d.category else [""]
            lines.append(f"{i}. {d.text} (confidence {d.confidence:.2f})")
    if answer.analysis:
        lines += ["", "## Analysis", "", answer.analysis]
    if answer.caveats:
        lines += ["", "## Caveats", ""] + [f"- {c}" for c in answer.caveats]
    if answer.sources:
        lines += ["", "## Sources", ""]
    for s in answer.sources:
        h = s.hit
        meta = " · ".join(x for x in [h.key, h.platform or h.kind, _day(h)] if x)
        lines.append(
            f"[{s.n}] {h.title} — {meta} · ~{_count(s.tokens, 'token')} sent"
            f" · layer {h.match_layer} ({LAYER_NAMES[h.match_layer]})"
            + ("" if s.cited else " · sent, not cited")
        )
        if s.cited:
            lines.append(f"    why cited: {s.why_cited}")
        lines.append(f"    why found: {h.why_relevant['summary']}")
    verify = answer.verify
    if verify["primary"]:
        lines += ["", "## To verify", "", f"- Primary: {verify['primary']}"]
        lines += [f"- Related: {p}" for p in verify["related"]]
    coverage = _coverage_line(answer)
    lines += ["", *([coverage] if coverage else []), _answer_footer(answer)]
    return "\n".join(lines)


def _coverage_line(answer: Answer) -> str:
    "Where the answer's search looked: the namespaces searched, and those suggested but not."
    if answer.refinement is None:
        return ""
    cov = answer.refinement.coverage
    line = "Coverage: searched " + (", ".join(cov["namespaces_searched"]) or "nothing")
    if cov["not_searched"]:
        line += " · suggested, not searched: " + ", ".join(cov["not_searched"])
    elif cov["namespaces_suggested"]:
        line += " · every suggested namespace searched"
    return line + "."


def _answer_footer(answer: Answer) -> str:
    ref = answer.refinement
    if ref is None:
        rounds = "no search run"
    else:
        rounds = f"{_count(len(ref.rounds), 'search round')} (stopped: {ref.stopped})"
    tokens = sum(s.tokens for s in answer.sources)
    sent = f"{_count(len(answer.sources), 'source')}, ~{_count(tokens, 'token')}"
    if answer.method == "claude":
        return f"_Synthesised by {answer.model} from {sent}; {rounds}._"
    return f"_Extractive answer from {sent} ({answer.reason}); {rounds}._"
