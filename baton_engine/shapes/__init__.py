"""One adapter per API shape, reading and writing: chat completions, Anthropic Messages, the OpenAI Responses API,
Bedrock Converse.

Why a room of its own: everything that reads or CHANGES a request must know its shape (where the conversation
lives, what must stay together, how a note is written). Each shape's module turns a request into the
``ProviderRequest`` every count sees and into a neutral ``Conversation`` of units that must stay together (a tool
call and all its results, a thinking block and its turn), and writes a shortened conversation back in its own
shape. A new shape is one new module. Pure: no host imports, no I/O.
"""

from __future__ import annotations

from baton_engine.shapes.conversation import Conversation, Shape, Unit

__all__ = ["Conversation", "Shape", "Unit"]
