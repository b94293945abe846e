"""`npuwatch scan`: the summary of a log tree or a collection of hosts, with no server.

- `tree`: walks a tree (or a collection of host folders) and feeds every file's records through
  the aggregate, the rules, the cross-device part and the debugging tools' reports;
- `aggregate`: counts, error codes, first errors with their context, processes and devices, in
  bounded memory; `hosts`: a folder of host folders read as a collection;
- `findings`: rule events grouped by rule, and the verdict (the most likely first failure);
- `collectives`: the HCCL facts and failures of every file, and the incidents of
  `npuwatch.correlation`;
- `debug_reports`: msSanitizer reports and msaicerr folders found beside the logs;
- `text`: the report as a person reads it.

Only `npuwatch.commands` imports this package.
"""
