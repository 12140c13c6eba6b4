"""Agent-framework tools on the LLM Sandbox client.

- :mod:`llm_sandbox.integrations.langchain`: a LangChain tool, ``run_python_code``.
- :mod:`llm_sandbox.integrations.llamaindex`: a LlamaIndex ``FunctionTool``.

Each submodule imports its framework only when a tool is built, so ``import llm_sandbox`` (and
this package) never needs LangChain or LlamaIndex. What the tools share (which policies the agent
may choose, the description that says what each is for, running a call, formatting the result
for a model) is in :mod:`llm_sandbox.integrations.common`, standard library only.
"""
from .common import (SandboxToolConfig, ToolPolicy, describe_policies, error_for_model,
                     format_result, resolve_tool_config)

__all__ = ["SandboxToolConfig", "ToolPolicy", "describe_policies", "error_for_model",
           "format_result", "resolve_tool_config"]
