"""Replay: recorded dispatches run again through a candidate hooks file.

- :mod:`hookgate.reply_recording` (outside this package: the audit writers use it): what
  a live dispatch keeps of each hook that calls out (its whole answer, sealed with the
  input) so replay can answer for it offline; which hooks call out is
  :mod:`hookgate.outcall_types`;
- :mod:`.records`: a recorded dispatch opened for replay (the sealed input and answers);
- :mod:`.replayer`: the candidate's chain run on each recorded input;
- :mod:`.report`: what would change, as JSON and as a table;
- :mod:`.sources`: where the records come from (a store, an export file).

Nothing is imported here.
"""
