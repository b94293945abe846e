"""Precision compare (msprobe, ptdbg, msit), the overflow check and the API accuracy checker.

- `read/`: one reader per kind of result file, pure functions of a file's bytes;
- `files`: which result a path is by its name, and reading it with the right reader;
- `judge` (a tensor's verdict), `operators` (each operator's worst), `names` (the layer of a
  tensor), `bisect` (where the error starts to grow), `top` (the worst tensors by metric),
  `checks` (overflow and accuracy checker findings);
- `summary`: `npuwatch precision summary`; `text` and `plot` render it.
"""
