"""msSanitizer's reports and msaicerr's AI Core error analyses.

- `read` (the loop that assembles a report's records), `read_grammar` (what each report line
  says), `read_records` (the records and the draft they are built from), `read_events` (a record
  in one line, as a log event), `read_msaicerr` (msaicerr's info_* folders): pure functions of
  the files' bytes;
- `sources`: the reports and msaicerr outputs under a path; `aicore`: each analysed AI Core
  error with its conclusion; `advice`: what to do about a kind;
- `summary`: `npuwatch sanitizer summary`; `text` renders it.
"""
