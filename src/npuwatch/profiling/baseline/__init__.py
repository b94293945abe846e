"""The baseline library: operator tables of past profiles, kept to catch performance regressions.

- `names`: how a baseline is named (`<date>_<model>_<scenario>`, safe for a folder);
- `archive`: where baselines live, storing one atomically, listing, resolving a name the user
  typed;
- `rules`: what counts as a regression, and how the threshold is written;
- `snapshot`: a set of profiling runs, or a stored baseline, as one operator table with the step
  counts needed to compare two of them (pandas);
- `compare`: the comparison of two snapshots, operator by operator, and the gate (pandas);
- `opprof_figures`: msOpProf only, each operator's bound and key figures against the
  baseline's (a kernel no longer compute-bound or a drop of AI Core utilisation fails the gate);
- `report`: the comparison and the archive as text, JSON or CSV;
- `search`: `npuwatch grep --baseline`, over the archive's CSV files with the csv module.

`names`, `archive`, `rules` and `search` import no pandas: `grep --baseline` and `--help` use
them and must start fast.
"""
