"""A minimal client of an OpenAI-compatible chat-completions endpoint, with tool calling
(standard library only). Anything that speaks POST {base}/chat/completions works: OpenAI, a
local vLLM / llama.cpp / Ollama server, a gateway, or the scripted endpoint of the tests.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, List, Optional


class LLMError(RuntimeError):
    """The endpoint refused the request or answered something that is not a chat completion."""


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key: Optional[str] = None
    timeout: float = 120.0

    @classmethod
    def from_env(cls, model: Optional[str] = None) -> "ChatClient":
        """LLM_BASE_URL (e.g. https://api.openai.com/v1), LLM_MODEL (or `model`), LLM_API_KEY."""
        base = os.environ.get("LLM_BASE_URL")
        model = model or os.environ.get("LLM_MODEL")
        if not base or not model:
            raise LLMError("set LLM_BASE_URL (an OpenAI-compatible /v1 address) and LLM_MODEL; "
                           "LLM_API_KEY too if the endpoint needs one; or try --model scripted, an "
                           "offline stand-in that needs neither")
        return cls(base.rstrip("/"), model, os.environ.get("LLM_API_KEY") or None)

    def complete(self, messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        """One chat completion; returns the assistant message (content and/or tool_calls)."""
        body = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions", method="POST",
                                     data=json.dumps(body).encode(), headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                answer = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raise LLMError(f"chat completion failed: HTTP {e.code}: {e.read()[:500]!r}") from None
        except (urllib.error.URLError, OSError) as e:
            raise LLMError(f"cannot reach the LLM endpoint {self.base_url}: {e}") from None
        try:
            return answer["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"not a chat completion: {str(answer)[:500]}") from None


def tool_spec(name: str, description: str, parameters: Dict[str, Any]) -> Dict[str, Any]:
    """A tool in the chat-completions format."""
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}}
