"""hookgate as Google Gemini CLI's hook: ``hookgate gemini`` and ``hookgate gemini install``."""
