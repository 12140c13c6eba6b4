"""A LlamaIndex ``FunctionTool`` that runs Python in LLM Sandbox::

    from llm_sandbox import SandboxClient
    from llm_sandbox.integrations.llamaindex import create_function_tool

    client = SandboxClient(base_url="http://localhost:8080")
    run_python_code = create_function_tool(client, policies=["python-strict", "code-sandbox"])
    # agent = FunctionAgent(tools=[run_python_code], llm=llm)   (llama_index.core.agent.workflow)

Same arguments, policy enum and description as the LangChain tool. Written against
llama-index-core's documented ``FunctionTool.from_defaults(fn, name, description, fn_schema,
async_fn)``; llama-index-core is imported only when a tool is built.
"""
from __future__ import annotations

from typing import Any, Optional

from ..client import SandboxClient
from .common import SandboxToolConfig, framework_class, input_model, resolve_tool_config

INSTALL_HINT = ("the LlamaIndex tool needs llama-index-core: pip install llama-index-core "
                "(llm_sandbox itself does not)")


def tool_from_config(config: SandboxToolConfig) -> Any:
    """A ``FunctionTool`` for an already resolved configuration (no request to the daemon)."""
    FunctionTool = framework_class("llama_index.core.tools", "FunctionTool", INSTALL_HINT)
    run_python_code, arun_python_code = config.tool_functions()
    return FunctionTool.from_defaults(
        fn=run_python_code, async_fn=arun_python_code, name=config.name,
        description=config.description, fn_schema=input_model(config))


def create_function_tool(client: Optional[SandboxClient] = None, **options: Any) -> Any:
    """Fetches the daemon's policies, keeps the allowed ones and builds the FunctionTool
    (options as for :func:`llm_sandbox.integrations.langchain.create_run_python_code_tool`)."""
    return tool_from_config(resolve_tool_config(client, **options))
