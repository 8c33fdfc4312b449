"""The one place that runs hooks.

A plain function registered in code (``@engine.hook``) is the embedding program's own code:
it runs in place on the caller's thread, as pluggy runs a hook, and an overrun on a blocking
event blocks when it returns (its answer came too late). A plain function marked
``isolate: thread`` (the default for functions a hooks file names: the CLI, the Claude Code
bridge, the gateway) runs on a worker with a hard wall-clock deadline, and the caller gets its
``on_timeout`` outcome at the deadline. A coroutine is cancelled at its deadline. Nothing here
touches the host's signals.

- :mod:`.runner`: :class:`~.runner.HookRunner`, which picks how a hook list's batches run;
- :mod:`.plain_functions`: a batch of plain functions, in place or as a worker's job;
- :mod:`.workers`: the worker pool of isolated functions, bounded per tenant;
- :mod:`.coroutines`: one hook's coroutine under its deadline;
- :mod:`.drivers`: the chain's driver on the event loop, and the loop thread of sync callers;
- :mod:`.background`: the bounded queue of non-blocking chains.
"""
