"""msprobe's training monitor: statistics CSVs per step range and anomaly alerts.

- `read` (a folder's statistics and alerts) and `read_files` (the step-range files, piece by
  piece): pure functions of the files' bytes;
- `digest` (one piece at a time, bounded memory), `spikes` (a value far above its median);
- `summary`: `npuwatch monitor summary`; `text` and `plot` render it.
"""
