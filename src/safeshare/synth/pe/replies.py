"""Replies kept as they come, so a resumed PE step never pays for a reply twice.

:class:`StoredReplies` wraps any chat backend (``chat_many(conversations, seed)``): each reply
is appended to a JSON-lines file, flushed to disk, as soon as its chunk of requests returns,
under a key made of the conversation, its request seed and the model's public settings.  A
later call that asks the same request (a resumed step: PE's checkpoint keeps the seed of each
step's public choices, so the same prompts come again) reads the reply back instead of asking.
A server failure loses nothing answered before it (:attr:`ModelAPIError.answered`); another
failure, at most the chunk in flight.  The file holds prompts and synthetic texts only,
as the requests do: never a private record.

>>> import tempfile
>>> class Echo:
...     model, asked = "echo", 0
...     def chat_many(self, conversations, seed):
...         Echo.asked += len(conversations)
...         return [c[-1]["content"].upper() for c in conversations]
>>> path = tempfile.mkdtemp() + "/replies.jsonl"
>>> hello = [{"role": "user", "content": "hello"}]
>>> StoredReplies(Echo(), path).chat_many([hello, hello], seed=0)
['HELLO', 'HELLO']
>>> StoredReplies(Echo(), path).chat_many([hello, hello], seed=0), Echo.asked   # read back
(['HELLO', 'HELLO'], 2)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from safeshare.errors import ModelAPIError

CHUNK = 32
"""Requests asked (and then written) at a time: what a failure can lose at most."""

_SETTINGS = ("model", "temperature", "top_p", "max_tokens", "max_new_tokens")


class StoredReplies:
    """``chat``'s replies, written to ``path`` as they come and read back when asked again."""

    def __init__(self, chat: Any, path: str | Path, chunk: int = CHUNK) -> None:
        self.chat = chat
        self.path = Path(path)
        self.chunk = chunk
        self.reused = 0  # replies read back instead of asked
        self._known: dict[str, str] | None = None

    def key(self, conversation: Sequence[dict[str, str]], seed: int) -> str:
        """The request's identity: conversation, seed and the model's public settings."""
        settings = {name: getattr(self.chat, name, None) for name in _SETTINGS}
        text = json.dumps([list(conversation), seed, settings], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def chat_many(self, conversations: Sequence[Sequence[dict[str, str]]], seed: int) -> list[str]:
        """One reply per conversation, in order; request ``i`` has the seed ``seed + i``."""
        known = self._load()
        keys = [self.key(c, seed + i) for i, c in enumerate(conversations)]
        missing = [i for i, k in enumerate(keys) if k not in known]
        self.reused += len(keys) - len(missing)
        for start in range(0, len(missing), self.chunk):
            rows = missing[start : start + self.chunk]
            try:
                replies = self.chat.chat_many([conversations[i] for i in rows], seed + rows[0])
            except ModelAPIError as error:  # keep what was answered before the failure
                self._append({keys[rows[j]]: reply for j, reply in error.answered.items()})
                raise
            self._append({keys[i]: reply for i, reply in zip(rows, replies, strict=True)})
        return [known[k] for k in keys]

    def _load(self) -> dict[str, str]:
        if self._known is None:
            self._known = {}
            if self.path.is_file():
                for line in self.path.read_text(encoding="utf-8").splitlines():
                    try:
                        entry = json.loads(line)
                        self._known[str(entry["key"])] = str(entry["reply"])
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut by a crash mid-write: that reply is asked again
        return self._known

    def _append(self, replies: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps({"key": k, "reply": r}) + "\n" for k, r in replies.items())
        with self.path.open("a+b") as file:
            if file.tell() and (file.seek(file.tell() - 1), file.read(1))[1] != b"\n":
                lines = "\n" + lines  # after a line a crash cut short
            file.write(lines.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        self._load().update(replies)
