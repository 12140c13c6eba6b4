"""A LangChain tool that runs Python in LLM Sandbox, in the style of the requirements'
``run_python_code``::

    from llm_sandbox import SandboxClient
    from llm_sandbox.integrations.langchain import create_run_python_code_tool

    client = SandboxClient(base_url="http://localhost:8080")
    run_python_code = create_run_python_code_tool(client, policies=["python-strict", "code-sandbox"])
    # agent = create_agent(model, tools=[run_python_code])      (LangChain >= 1.0)

The tool's arguments are ``code`` and ``policy`` (an enum of the policies the operator allowed);
its description tells the model what each policy is for. ``from
llm_sandbox.integrations.langchain import run_python_code`` builds one on first use from the
environment ($LLM_SANDBOX_URL, $LLM_SANDBOX_POLICIES).

Written against langchain-core's documented ``StructuredTool.from_function`` (langchain-core >=
0.2, pydantic 2); langchain-core is imported only when a tool is built.
"""
from __future__ import annotations

from typing import Any, Optional

from ..client import SandboxClient
from .common import SandboxToolConfig, framework_class, input_model, resolve_tool_config

INSTALL_HINT = ("the LangChain tool needs langchain-core: pip install langchain-core "
                "(llm_sandbox itself does not)")


def tool_from_config(config: SandboxToolConfig) -> Any:
    """A ``StructuredTool`` for an already resolved configuration (no request to the daemon)."""
    StructuredTool = framework_class("langchain_core.tools", "StructuredTool", INSTALL_HINT)
    run_python_code, arun_python_code = config.tool_functions()
    return StructuredTool.from_function(
        func=run_python_code, coroutine=arun_python_code, name=config.name,
        description=config.description, args_schema=input_model(config))


def create_run_python_code_tool(client: Optional[SandboxClient] = None, **options: Any) -> Any:
    """Fetches the daemon's policies, keeps the allowed ones and builds the tool.

    options: ``policies``, ``descriptions``, ``default_policy``, ``name`` (default
    "run_python_code"), ``language``, ``timeout``, ``max_output_chars``; see
    :func:`llm_sandbox.integrations.common.resolve_tool_config`.
    """
    return tool_from_config(resolve_tool_config(client, **options))


_default_tool: Any = None


def __getattr__(name: str) -> Any:
    """``run_python_code``: a tool built on first access from the environment."""
    global _default_tool
    if name == "run_python_code":
        if _default_tool is None:
            _default_tool = create_run_python_code_tool()
        return _default_tool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
