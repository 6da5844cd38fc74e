"""Conversation passages (memdex/query/passages/): messages ranked one by one, windows of messages
around the best, on Claude exports written under tmp_path and indexed into a real SQLite file.
Issue 15: "cut the passage around the matching messages ... do not hand out whole chunks"."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memdex.answer.sources import pack
from memdex.ingest.pipeline import index_paths
from memdex.models import Hit, est_tokens
from memdex.query.passages import merge, seeds
from memdex.query.search import search

USER = "Thanks, that sounds like a sensible plan for the next couple of weeks."
ASSISTANT = (
    "Glad it helps. Keep the routine simple, write down what you did each day, and check in "
    "again once you have tried it for a while, because small steady changes usually last "
    "longer than big ones and they are easier to adjust when something does not work out."
)


def _export(
    folder: Path, texts: dict[int, str], count: int = 14, uuid: str = "conv-1", name: str = "A long talk"
) -> Path:
    """A Claude export of one conversation of ``count`` messages, the user's (even) short and
    the assistant's (odd) long, two minutes apart; ``texts`` replaces some of them."""
    start = datetime.fromisoformat("2025-03-02T09:00:00+00:00")
    messages = [
        {
            "uuid": f"m{i}",
            "sender": "human" if i % 2 == 0 else "assistant",
            "text": texts.get(i, USER if i % 2 == 0 else ASSISTANT),
            "created_at": (start + timedelta(minutes=2 * i)).isoformat(),
        }
        for i in range(count)
    ]
    conversation = {
        "uuid": uuid,
        "name": name,
        "created_at": messages[0]["created_at"],
        "updated_at": messages[-1]["created_at"],
        "chat_messages": messages,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conversations.json").write_text(json.dumps([conversation]))
    return folder


def _window(hit: Hit) -> dict:
    return hit.matching_chunks[0]["window"]


def _chunk_of(conn: sqlite3.Connection, message: int) -> sqlite3.Row:
    return conn.execute(
        "SELECT * FROM chunks WHERE json_extract(meta, '$.msg_start') <= ? AND json_extract(meta, '$.msg_end') >= ?",
        (message, message),
    ).fetchone()


def test_a_window_is_the_matching_message_with_its_neighbours_speakers_and_times(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    index_paths(conn, [_export(tmp_path / "chats", {6: "We picked zanzibar marmalade for the shop."})])
    (hit,) = search(conn, "zanzibar marmalade", granularity="chunk", full_text=True).hits
    info = hit.matching_chunks[0]
    assert (info["msg_start"], info["msg_end"]) == (5, 7)
    assert _window(hit)["matched"] == [6]
    assert [(m["n"], m["role"], m["time"][11:16]) for m in _window(hit)["messages"]] == [
        (5, "assistant", "09:10"),
        (6, "user", "09:12"),
        (7, "assistant", "09:14"),
    ]
    assert info["time"].startswith("2025-03-02T09:10")
    assert "messages" not in info  # where messages start in a chunk is not shown
    text = hit.text or ""
    # The budget allows it: the messages around the match are shown whole (an answer is often
    # the message after a question, holding none of its words).
    assert (
        text
        == f"Assistant: {ASSISTANT}\n\nUser: We picked zanzibar marmalade for the shop.\n\nAssistant: {ASSISTANT}"
    )
    assert _window(hit)["cut"] == []
    assert hit.location.endswith("conversations.json (messages 6-8)")
    assert hit.est_tokens == est_tokens(len(text.encode())) < _chunk_of(conn, 6)["est_tokens"]
    assert "«zanzibar»" in hit.snippet


def test_under_a_short_budget_long_context_is_cut_and_not_evidence_short_context_is_whole(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """When the budget cannot pay for the messages around a match, the assistant's long replies
    are cut to their nearest words; the user's short messages are not."""
    index_paths(
        conn, [_export(tmp_path / "chats", {6: "Zanzibar it is.", 11: f"Zanzibar again. {ASSISTANT}"})]
    )
    hits = search(conn, "zanzibar", granularity="chunk", full_text=True, max_tokens=200).hits
    by_match = {tuple(_window(h)["matched"]): h for h in hits}
    around_user = by_match[(6,)]
    assert _window(around_user)["cut"] == [5, 7]  # long assistant replies, shown in part
    assert (around_user.text or "").startswith("Assistant: … ") and (around_user.text or "").endswith(" …")
    around_assistant = by_match[(11,)]
    info = around_assistant.matching_chunks[0]
    assert (info["msg_start"], info["msg_end"]) == (10, 12)
    assert _window(around_assistant)["cut"] == []  # the user's short messages on either side
    assert f"User: {USER}\n\nAssistant: Zanzibar again." in (around_assistant.text or "")


def test_an_answer_without_the_question_s_words_is_shown_whole_next_to_its_question(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """A message holding none of the query's words, next to one that holds them, is scored for
    its neighbour's words: here the assistant's long answer is shown whole where it used to be
    cut as context, and not listed as matched (issue 25: in LoCoMo the answer is often the
    turn after the question)."""
    answer = (
        "Definitely the octopus curry from Stone Town, slow cooked with coconut, cardamom and "
        "lime, served on the harbour front every evening with flatbread and a cold tamarind drink."
    )
    texts = {6: "What was your favourite zanzibar dish?", 7: answer}
    texts.update({i: f"Zanzibar again, day {i}." for i in (16, 20, 24)})
    index_paths(conn, [_export(tmp_path / "chats", texts, count=28)])
    hits = search(conn, "favourite zanzibar dish", granularity="chunk", full_text=True, max_tokens=300).hits
    (best,) = [h for h in hits if 6 in _window(h)["matched"]]
    assert f"Assistant: {answer}" in (best.text or "")
    assert 7 not in _window(best)["cut"] and 7 not in _window(best)["matched"]
    assert hits[0] is best


def test_windows_reach_across_a_chunk_edge(conn: sqlite3.Connection, tmp_path: Path) -> None:
    index_paths(conn, [_export(tmp_path / "chats", {})])
    first_of_second = _chunk_of(conn, 0)  # the first chunk; the next starts right after it
    edge = json.loads(first_of_second["meta"])["msg_end"] + 1
    conn.execute("DELETE FROM documents")  # index again with the match at that edge
    index_paths(conn, [_export(tmp_path / "chats2", {edge: "Zanzibar, finally."})])
    (hit,) = search(conn, "zanzibar", granularity="chunk").hits
    assert (hit.matching_chunks[0]["msg_start"], hit.matching_chunks[0]["msg_end"]) == (edge - 1, edge + 1)
    assert _chunk_of(conn, edge - 1)["id"] != _chunk_of(conn, edge)["id"]


def test_windows_that_touch_are_merged_and_paid_for_once(conn: sqlite3.Connection, tmp_path: Path) -> None:
    index_paths(conn, [_export(tmp_path / "chats", {6: "Zanzibar one.", 8: "Zanzibar two."})])
    (hit,) = search(conn, "zanzibar", granularity="chunk", full_text=True).hits
    assert (hit.matching_chunks[0]["msg_start"], hit.matching_chunks[0]["msg_end"]) == (5, 9)
    assert _window(hit)["matched"] == [6, 8]
    assert (hit.text or "").count("User: Zanzibar") == 2
    assert (hit.text or "").count("Assistant:") == 3  # message 7 once, not once per window


def test_the_best_message_leads_and_the_budget_holds(conn: sqlite3.Connection, tmp_path: Path) -> None:
    texts = {i: f"Zanzibar note {i}." for i in range(2, 40, 4)}
    texts[22] = "Zanzibar marmalade, the one we chose."
    index_paths(conn, [_export(tmp_path / "chats", texts, count=40)])
    result = search(conn, "zanzibar marmalade", granularity="chunk", max_tokens=120)
    assert _window(result.hits[0])["matched"] == [22]
    assert sum(h.est_tokens for h in result.hits) <= 120
    assert result.truncated_by_budget
    wide = search(conn, "zanzibar marmalade", granularity="chunk", max_tokens=4000)
    assert sum(len(_window(h)["matched"]) for h in wide.hits) == len(texts)
    assert not wide.truncated_by_budget


def _long_reply(words: str, sentences: int) -> str:
    "An assistant's long reply that repeats the question's words in every sentence."
    return " ".join(
        f"Step {k}: keep your {words} warm, and feed the {words} twice a day." for k in range(sentences)
    )


def test_what_the_person_said_in_several_conversations_goes_before_a_long_reply(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Issue 37: the first conversation's long replies no longer fill the budget before the others."
    advice = {1: _long_reply("sourdough starter", 40), 3: _long_reply("sourdough starter", 40)}
    advice[0] = "How should I look after a sourdough starter?"
    said = {
        "conv-2": "By the way, I fed my sourdough starter rye flour this morning.",
        "conv-3": "My sourdough starter is called Clint and lives on the fridge.",
    }
    folders = [_export(tmp_path / "advice", advice, uuid="conv-1", name="Bread advice")]
    for uuid, text in said.items():
        folders.append(_export(tmp_path / uuid, {6: text}, uuid=uuid, name=f"Talk {uuid}"))
    index_paths(conn, folders)
    result = search(conn, "sourdough starter", granularity="chunk", max_tokens=700, full_text=True)
    shown = "\n".join(h.text or "" for h in result.hits)
    assert all(text in shown for text in said.values())
    assert sum(h.est_tokens for h in result.hits) <= 700
    assert result.hits[0].title == "Bread advice"  # the best unit still leads


def test_a_result_says_what_the_budget_left_out_and_how_to_get_it(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Issue 37: the conversations and messages passed over are named, with what they would take."
    from memdex.doors.render import results_text

    folders = [
        _export(
            tmp_path / f"c{n}",
            {2 * k: f"Zanzibar marmalade batch {n}-{k}." for k in range(1, 6)},
            uuid=f"c{n}",
        )
        for n in range(4)
    ]
    index_paths(conn, folders)
    tight = search(conn, "zanzibar marmalade", granularity="chunk", max_tokens=150)
    shown = {(h.id, m) for h in tight.hits for m in _window(h)["matched"]}
    assert tight.truncated_by_budget and tight.left_out
    for entry in tight.left_out:
        assert entry["messages"] and entry["estimated_tokens"] > 0
        assert not {(entry["id"], m) for m in entry["messages"]} & shown  # only what is not shown
    assert tight.to_dict()["left_out"] == tight.left_out
    line = next(x for x in results_text(tight).splitlines() if x.startswith("Left out"))
    first = tight.left_out[0]
    assert f"id {first['id']}, message" in line and "memdex show" in line
    assert f" {first['messages'][0] + 1}" in line.split(f"id {first['id']}", 1)[1]  # said 1-based
    # raising the budget by what it says shows those messages
    wide = search(conn, "zanzibar marmalade", granularity="chunk", max_tokens=4000)
    assert not wide.left_out and not wide.truncated_by_budget
    assert sum(len(_window(h)["matched"]) for h in wide.hits) == 20


def test_notes_beside_conversations_are_handed_out_as_chunks(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "jam.md").write_text("# Jam\n\nZanzibar marmalade needs bitter oranges.\n")
    index_paths(conn, [_export(tmp_path / "chats", {6: "Zanzibar marmalade for the shop."}), notes])
    hits = search(conn, "zanzibar marmalade", granularity="chunk", full_text=True).hits
    assert {h.kind for h in hits} == {"claude", "note"}
    note = next(h for h in hits if h.kind == "note")
    assert "window" not in note.matching_chunks[0] and note.passage is None
    assert "bitter oranges" in (note.text or "")


def test_an_index_without_message_offsets_hands_out_whole_chunks(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "An index built before chunks said where their messages start: chunks, as before."
    index_paths(conn, [_export(tmp_path / "chats", {6: "Zanzibar marmalade for the shop."})])
    conn.execute("UPDATE chunks SET meta = json_remove(meta, '$.messages')")
    (hit,) = search(conn, "zanzibar marmalade", granularity="chunk").hits
    chunk = _chunk_of(conn, 6)
    assert hit.chunk_id == chunk["id"] and hit.est_tokens == chunk["est_tokens"]
    assert "window" not in hit.matching_chunks[0]


def test_seeds_and_merge_give_back_the_same_window(conn: sqlite3.Connection, tmp_path: Path) -> None:
    index_paths(conn, [_export(tmp_path / "chats", {6: "Zanzibar one.", 8: "Zanzibar marmalade two."})])
    (hit,) = search(conn, "zanzibar marmalade", granularity="chunk").hits
    window = hit.passage
    parts = seeds(window)
    assert [p.matched for p in parts] == [[6], [8]]
    assert parts[1].score > parts[0].score  # both words beat one
    (again,) = merge(parts)
    # the same messages, each match whole; its context in the cheap form seeds give it
    assert (again.msg_start, again.msg_end, again.matched) == (
        window.msg_start,
        window.msg_end,
        window.matched,
    )
    assert again.cut == [5, 7, 9] and window.cut == []
    assert again.est_tokens < window.est_tokens


def test_answers_send_windows_merged_within_the_budget(conn: sqlite3.Connection, tmp_path: Path) -> None:
    texts = {i: f"Zanzibar note {i}." for i in range(2, 40, 4)}
    index_paths(conn, [_export(tmp_path / "chats", texts, count=40)])
    hits = search(conn, "zanzibar", granularity="chunk", limit=30).hits
    (source,) = pack(conn, hits, budget=200)
    assert source.tokens <= 200
    ranges = [(p.meta["msg_start"], p.meta["msg_end"]) for p in source.passages]
    assert ranges == sorted(ranges)
    assert all(a[1] + 1 < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # none touch
    for p in source.passages:
        assert p.est_tokens == est_tokens(len(p.text.encode()))
        assert p.location.endswith(f"(messages {p.meta['msg_start'] + 1}-{p.meta['msg_end'] + 1})")
        assert set(p.meta["window"]["matched"]) <= set(texts)


@pytest.mark.slow
def test_with_meaning_a_message_in_other_words_goes_out_ahead_of_weak_word_matches(
    conn: sqlite3.Connection, tmp_path: Path, minilm: Path
) -> None:
    """Meaning counts in each message's score (ranking.MESSAGE_MEANING): before, a chunk only
    meaning found came after every word match, and a tight budget never reached it."""
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    from memdex.query.meaning.embed import embed, passage_encoder
    from memdex.query.meaning.model import load_spec

    question = "who bakes the bread in my shop every day?"
    gold = "Luis, my head baker, starts at four each morning and does all the croissants."
    errands = {i: f"The shop on corner {i} sells bicycles and fixes punctures." for i in range(0, 14, 2)}
    index_paths(
        conn, [_export(tmp_path / "bakery", {0: gold}, count=2), _export(tmp_path / "errands", errands)]
    )
    embed(conn, passage_encoder(load_spec(minilm)))

    def shown(semantic: bool) -> list[str]:
        result = search(
            conn, question, granularity="chunk", max_tokens=150, semantic=semantic, full_text=True
        )
        assert sum(h.est_tokens for h in result.hits) <= 150
        return [h.text or "" for h in result.hits]

    assert not any(gold in text for text in shown(False))  # no word of the question in it
    with_meaning = shown(True)
    assert gold in with_meaning[0]
    assert any("shop on corner" in text for text in with_meaning)  # the word matches still follow


def _training_talk(folder: Path) -> Path:
    """Twenty short messages in one chunk: three about training a dog with treats as rewards,
    then one more about it that is longer, one about a petrol card's rewards that is shorter,
    and one about the treats that never says "rewards"."""
    texts = {i: "Noted." for i in range(1, 20, 2)}
    texts.update(
        {
            2: "Rewards for Juniper: kangaroo treats during training.",
            4: "Kangaroo treats work best as rewards in training.",
            6: "Training rewards: small kangaroo treats, Juniper loves them.",
            10: "Juniper is doing well and we keep using rewards like kangaroo treats for training, every session.",
            16: "The rewards points on my petrol card expired at the garage yesterday.",
            19: "Kangaroo treats keep training sessions with Juniper short and happy.",
        }
    )
    return _export(folder, texts, count=20)


def test_related_words_put_the_message_about_the_same_thing_first(
    conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pseudo-relevance feedback (passages/feedback.py): of two messages holding the query's one
    word, the one that shares the best messages' other words goes first, though BM25 alone
    prefers the shorter one."""
    from memdex.query import ranking

    index_paths(conn, [_training_talk(tmp_path / "chats")])

    def order() -> tuple[list[int], list[str]]:
        result = search(conn, "rewards", granularity="chunk")
        matched = [m for h in result.hits for m in _window(h)["matched"]]
        return [m for m in matched if m in (10, 16)], result.related_words

    first, related = order()
    assert first == [10, 16]
    assert {"kangaroo", "treats", "juniper", "training"} <= set(related)
    monkeypatch.setattr(ranking, "FEEDBACK_MASS", 0.0)
    assert order()[0] == [16, 10]


def test_related_words_alone_never_make_a_message_evidence_where_the_query_words_reached(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Related words reorder the messages that hold a query word; they bring in no new one."
    index_paths(conn, [_training_talk(tmp_path / "chats")])
    result = search(conn, "rewards", granularity="chunk", full_text=True)
    assert result.related_words
    matched = {m for h in result.hits for m in _window(h)["matched"]}
    assert matched == {2, 4, 6, 10, 16}  # not 19, which holds every related word but not "rewards"
    payload = result.to_dict()
    assert payload["related_words"] == result.related_words


def test_related_words_add_at_most_what_a_message_s_own_words_earn(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """The cap: a long message full of related words, holding the query's word once, does not
    pass a message that holds it twice and none of them (without the cap it would)."""
    texts = {i: "Noted." for i in range(1, 20, 2)}
    texts.update(
        {
            2: "Rewards, rewards: kangaroo treats for Juniper.",
            4: "Kangaroo treats as rewards, rewards in training.",
            6: "Training rewards, rewards: kangaroo treats, Juniper.",
            10: "Rewards again: Juniper, kangaroo treats, training, kangaroo treats, Juniper training, "
            "small kangaroo treats, Juniper loves kangaroo treats and training with treats.",
            16: "Rewards, rewards: the shop's points scheme changed.",
        }
    )
    index_paths(conn, [_export(tmp_path / "chats", texts, count=20)])
    index_paths(conn, [_export(tmp_path / "other", {}, count=40, uuid="conv-2")])  # idf to weigh by
    result = search(conn, "rewards", granularity="chunk")
    assert {"kangaroo", "treats"} <= set(result.related_words)
    matched = [m for h in result.hits for m in _window(h)["matched"] if m in (10, 16)]
    assert matched == [16, 10]


def test_related_words_pick_out_the_messages_of_a_chunk_found_by_its_title(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """A conversation found only by its title goes out as the window around its message that
    holds the related words, not as its whole chunk."""
    index_paths(conn, [_training_talk(tmp_path / "training")])
    other = {i: "Noted." for i in range(1, 14, 2)}
    other.update({i: f"The weather on day {i} was mild and grey." for i in range(0, 14, 2)})
    other[8] = "Juniper got kangaroo treats after training today."
    index_paths(conn, [_export(tmp_path / "titled", other, count=14, uuid="conv-2", name="Rewards diary")])
    hits = [h for h in search(conn, "rewards", granularity="chunk").hits if h.title == "Rewards diary"]
    assert hits, "the conversation is found by its title"
    (hit,) = hits
    assert (hit.matching_chunks[0]["msg_start"], hit.matching_chunks[0]["msg_end"]) == (7, 9)
    assert _window(hit)["matched"] == [8]


def test_a_message_without_its_speaker_s_label() -> None:
    from memdex.query.passages import Turn

    assert Turn(0, "user", None, "User: Step 1: check the logs.", 1, 0).said == "Step 1: check the logs."
    # a long message's later piece has no label: a colon in it is not one
    assert Turn(3, "assistant", None, "Error: the disk is full.", 1, 1).said == "Error: the disk is full."
