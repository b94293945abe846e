"""Importing a FaultDiag knowledge base (format in ../shared/design/formats/ascend_fd.md §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.examples import run_examples
from npuwatch.rules.faultdiag import convert_faultdiag
from npuwatch.rules.loader import load_rules
from tests.conftest import parse

KNOWLEDGE_BASE = {
    "knowledge-repository": {
        "AISW_CANN_Runtime_001": {
            "attribute": {
                "class": "Software",
                "component": "CANN",
                "module": "RUNTIME",
                "cause_zh": "context为空",
                "cause_en": "Empty context",
                "description_en": "No context is created before the thread calls the API.",
                "suggestion_en": ["1. Check whether the context is created or set."],
            },
            "rule": [{"dst_code": "AISW_PyTorch_Model_06"}],
            "source_file": "CANN_Plog",
            "regex": {"in": ["ctx is NULL"]},
        },
        "AISW_PyTorch_Model_06": {
            "attribute": {
                "class": "Software",
                "component": "AI Framework",
                "module": "PyTorch",
                "cause_en": "Model execution failed",
            },
            "source_file": "TrainLog",
            "regex": {"in": ["RuntimeError", "model execute failed"]},
        },
        "0x80C78008": {
            "attribute": {
                "class": "Hardware",
                "component": "NPU",
                "module": "TS",
                "cause_en": "TS multi-bit ECC error",
                "suggestion_en": ["1. It is advised to reset the SoC."],
            },
            "source_file": "NPU_OS",
            "regex": {"in": [["Node Type=0x63;", "event_state=8)"], ["event_id=0x80c78008"]]},
        },
        "NO_KEYWORDS": {"attribute": {"class": "User"}, "source_file": "OS"},
    }
}


def convert(tmp_path: Path, data: object) -> Path:
    source = tmp_path / "kg-config.json"
    source.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    text, _ = convert_faultdiag(source)
    pack = tmp_path / "faultdiag.yaml"
    pack.write_text(text, encoding="utf-8")
    return pack


def test_entries_become_rules_that_load_and_pass_their_examples(tmp_path: Path) -> None:
    ruleset = load_rules([convert(tmp_path, KNOWLEDGE_BASE)])
    rules = ruleset.by_id()
    assert set(rules) == {
        "faultdiag.aisw_cann_runtime_001",
        "faultdiag.aisw_pytorch_model_06",
        "faultdiag.0x80c78008",
    }
    assert run_examples(ruleset.rules)[1] == []
    hardware = rules["faultdiag.0x80c78008"].spec
    assert (hardware.severity, hardware.layer, hardware.category) == (
        "critical",
        "driver",
        "device",
    )
    assert "reset the SoC" in hardware.advice
    assert rules["faultdiag.aisw_pytorch_model_06"].spec.symptom  # the runtime entry points at it


def test_keywords_match_in_order_and_alternatives_are_or(tmp_path: Path) -> None:
    engine = RuleEngine(load_rules([convert(tmp_path, KNOWLEDGE_BASE)]))
    lines = [
        "[ERROR] RUNTIME(1,p):2025-01-01-00:00:00.000.000 [api.cc:1]1 Get:ctx is NULL!",
        "RuntimeError: model execute failed on device 0",
        "RuntimeError: the model execute failed again",
        "[EVENT] DRV(2,d):2025-01-01-00:00:01.000.000 [e.c:1] Node Type=0x63; x event_state=8)",
        "[EVENT] DRV(2,d):2025-01-01-00:00:02.000.000 [e.c:1] event_state=8) then Node Type=0x63;",
    ]
    records = parse("\n".join(lines) + "\n")
    stream = engine.stream(records[0].source)
    engine.process(records, stream)
    assert dict(engine.match_counts) == {
        "faultdiag.aisw_cann_runtime_001": 1,
        "faultdiag.aisw_pytorch_model_06": 2,
        "faultdiag.0x80c78008": 1,  # the keywords of the last line are in the wrong order
    }


def test_the_flattened_custom_entity_format_is_read(tmp_path: Path) -> None:
    custom = {
        "41001": {
            "attribute.class": "Software",
            "attribute.component": "AI Framework",
            "attribute.cause_en": "Abstract type merge failed",
            "regex.in": ["Abstract type", "cannot join with"],
            "source_file": "TrainLog",
        }
    }
    document = yaml.safe_load(convert(tmp_path, custom).read_text())
    (rule,) = document["rules"]
    assert rule["id"] == "faultdiag.41001"
    assert rule["when"] == "event.original ~ /Abstract\\ type.*cannot\\ join\\ with/"


@pytest.mark.parametrize("content", ["not json", "[]", '{"knowledge-repository": {}}'])
def test_a_file_that_is_not_a_knowledge_base_is_refused(tmp_path: Path, content: str) -> None:
    source = tmp_path / "x.json"
    source.write_text(content)
    with pytest.raises(ValueError):
        convert_faultdiag(source)
