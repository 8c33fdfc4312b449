"""Replay: recorded dispatches run again through a candidate hooks file.

- :mod:`.recording`: what a live dispatch keeps of each hook that calls out (its whole
  answer, sealed with the input) so replay can answer for it offline;
- :mod:`.records`: a recorded dispatch opened for replay (the sealed input and answers);
- :mod:`.replayer`: the candidate's chain run on each recorded input;
- :mod:`.report`: what would change, as JSON and as a table;
- :mod:`.sources`: where the records come from (a store, an export file).

Nothing is imported here: the audit writer imports :mod:`.recording` on every gateway.
"""
