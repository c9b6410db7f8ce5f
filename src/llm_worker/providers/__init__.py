"""Model providers for the ``Worker``: each module is an ``LlmClient`` on a provider's SDK.

- ``llm_worker.providers.openai``: ``OpenAIChatClient``, the Chat Completions API of
  OpenAI and of every OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio...),
  and ``OpenAIResponsesClient``, OpenAI's Responses API.
  Needs ``pip install 'llm-worker[openai]'``.
- ``llm_worker.providers.anthropic``: ``AnthropicClient``, Anthropic's Messages API.
  Needs ``pip install 'llm-worker[anthropic]'``.

Importing this package imports no SDK; each module imports its own, and raises
``ImportError`` naming the extra to install when the SDK is missing. Every provider
failure is raised as ``llm_worker.ProviderError``. See docs/providers.md.
"""
