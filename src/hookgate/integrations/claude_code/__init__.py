"""Claude Code: hookgate as Claude Code's hook, one module per job.

* :mod:`.relay`: ``hookgate claude-code``, the process Claude Code starts for every hook
  event: it hands the event to the warm process (:mod:`.warm`; :mod:`.warm_place` says where
  it listens and who may talk to it, :mod:`.warm_wire` how).
* :mod:`.startup`: what the relay and :mod:`.main` need before anything else (the command
  line, the events that fail closed, where the hooks file is), importing nothing but ``os``.
* :mod:`.main`: the event answered (in a worker of the warm process, or in the relay's own
  process when there is none), kept small for the latter.
* :mod:`.contract`: Claude Code's hook contract both ways (its stdin and answers ↔ hookgate
  events and outcomes).
* :mod:`.gateway_transport`: the ``python`` transport (``--gateway``), one HTTP request.
* :mod:`.settings_file`: ``install``/``uninstall`` in a Claude Code ``settings.json``;
  :mod:`.imported_twice`: imported hooks that would run twice.
* :mod:`.settings_format`: Claude Code settings read as a hooks file (``import claude-code``).
* :mod:`.cli`: the ``hookgate claude-code`` and ``hookgate import claude-code`` commands.
* :mod:`.endpoint`: the gateway's ``POST /api/v1/claude-code/hook``.
"""
