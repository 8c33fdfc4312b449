"""Claude Code: hookgate as Claude Code's hook, one module per job.

* :mod:`.main`: ``hookgate claude-code``, the process Claude Code starts for every hook event
  (kept small: it starts once per event).
* :mod:`.contract`: Claude Code's hook contract both ways (its stdin and answers ↔ hookgate
  events and outcomes).
* :mod:`.gateway_transport`: the ``python`` transport (``--gateway``), one HTTP request.
* :mod:`.settings_file`: ``install``/``uninstall`` in a Claude Code ``settings.json``;
  :mod:`.doubles`: imported hooks that would run twice.
* :mod:`.settings_format`: Claude Code settings read as a hooks file (``import claude-code``).
* :mod:`.cli`: the ``hookgate claude-code`` and ``hookgate import claude-code`` commands.
* :mod:`.endpoint`: the gateway's ``POST /api/v1/claude-code/hook``.
"""
