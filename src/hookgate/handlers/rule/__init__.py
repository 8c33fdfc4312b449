"""The ``rule`` handler: declarative session rules that run no code on the host.

A rule hook's ``config`` (:class:`~hookgate.handlers.rule.config.RuleConfig`) holds up to four
checks, judged for every call the hook's matcher and ``if_expr`` select:

* ``limit``: at most ``count`` calls per window, per session, agent or tenant;
* ``after``: no call once a call of ``tool`` was admitted earlier (taint);
* ``require``: a call needs an earlier call of ``tool`` (by default, one that succeeded);
* ``sequence``: a call needs earlier calls of ``tools``, each after the one before.

Counters and the session history live in the hook state store
(:mod:`hookgate.state.rules`); the engine writes the history
(:mod:`hookgate.handlers.rule.history`) for the tool patterns rule hooks name.
"""
