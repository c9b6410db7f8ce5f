"""Model providers for the ``Worker``: each module is an ``LlmClient`` on a provider's SDK.

- ``llm_worker.providers.openai``: ``OpenAIChatClient``, the Chat Completions API of
  OpenAI and of every OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio,
  OpenRouter, Groq...), and ``OpenAIResponsesClient``, OpenAI's Responses API.
  Needs ``pip install 'llm-worker[openai]'``.
- ``llm_worker.providers.anthropic``: ``AnthropicClient``, Anthropic's Messages API.
  Needs ``pip install 'llm-worker[anthropic]'``.
- ``llm_worker.providers.gemini``: ``GeminiClient``, Google's Gemini API and Gemini on
  Vertex AI. Needs ``pip install 'llm-worker[gemini]'``.

What a provider needs back on later requests (Anthropic's thinking blocks with their
signatures and server-tool results, Responses reasoning items, Gemini's thought
signatures) is kept with each ``AssistantMessage`` as ``provider_items`` and saved with
the run state; each client sends back only its own provider's items.

Importing this package imports no SDK; each module imports its own, and raises
``ImportError`` naming the extra to install when the SDK is missing. Every provider
failure is raised as ``llm_worker.ProviderError``. See docs/providers.md.
"""
