"""npuwatch: a log and telemetry pipeline for Huawei Ascend NPU clusters."""

__version__ = "0.2.0"
