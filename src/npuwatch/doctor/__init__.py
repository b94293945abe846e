"""`npuwatch doctor`: the first step of every investigation, in the order Ascend users diagnose.

Environment first (CANN toolkit, driver, firmware, torch and torch_npu), then the devices (device
nodes, container, npu-smi and the health of every chip), then the logs (the ASCEND_* log
settings and the folder CANN writes to). Each check is one `Check`; `diagnose` runs them all
against a `Host` whose seams (environment, filesystem root, clocks) tests replace.
"""
