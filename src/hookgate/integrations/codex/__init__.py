"""hookgate as OpenAI Codex CLI's hook: ``hookgate codex`` and ``hookgate codex install``."""
