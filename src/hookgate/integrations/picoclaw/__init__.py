"""PicoClaw: its observe-only runtime event bus (`runtime_events`) and its hooks-file format
(`config`). Its JSON-RPC hook programs run through the generic ``process`` handler type
(:mod:`hookgate.handlers.process`)."""
