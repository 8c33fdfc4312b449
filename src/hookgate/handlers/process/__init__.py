"""PicoClaw-style process hooks: a long-lived child speaking JSON-RPC 2.0 over stdio.

* :mod:`.spec`: the hook config (``command`` list, ``dir``, ``env``, ``observe``, ``intercept``).
* :mod:`.rpc`: one child process and its JSON-RPC channel (start, multiplex, restart, close).
* :mod:`.protocol`: PicoClaw's methods, params and answers, mapped onto hookgate's.
* :mod:`.handler`: the ``process`` handler the engine calls.
"""

from hookgate.handlers.process.handler import ProcessHandler

__all__ = ["ProcessHandler"]
