"""``exp.framework=endpoint``: a model served behind an OpenAI-compatible HTTP API
(vLLM, SGLang, TGI, llama.cpp, Ollama, ``transformers serve``...), measured by a
client that keeps every request's timestamps (docs/serving.md)."""
